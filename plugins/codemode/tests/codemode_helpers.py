"""Helpers for pluggable-pi-codemode's tests (a plain module: the root tests own ``conftest``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pi_codemode import CodemodePlugin
from pydantic import BaseModel

from pi_core.testing import PiHarness, Run, ToolOutcome, call
from pi_hookspecs import ToolNamespace, tool


def codemode(pi: PiHarness, *scripts: str, prompt: str = "go") -> tuple[Run, list[ToolOutcome]]:
    """Run one prompt whose model calls ``codemode`` once per script, then answers."""
    pi.script(*(call("codemode", code=code) for code in scripts), "done")
    run = pi.prompt(prompt)
    results = [r for r in run.tool_results if r.tool_name == "codemode"]
    assert len(results) == len(scripts), [r.text for r in run.tool_results]
    return run, results


def setup(pi: PiHarness, *tools: Any, **settings: Any) -> PiHarness:
    """pi with the codemode plugin active and ``tools``."""
    pi.use(CodemodePlugin).configure(defaultTools=["+codemode"], **settings)
    if tools:
        pi.tool(*tools)
    return pi


@dataclass
class Ledger:
    """Side effects of the test tools, to check what ran."""

    calls: list[tuple[str, Any]] = field(default_factory=list)


class Total(BaseModel):
    total: int
    items: list[str]


def inventory_tools(ledger: Ledger) -> list[Any]:
    """Tools with a namespace and structured output (MCP-like), plus plain ones."""
    shop = ToolNamespace(
        name="mcp__shop-db",
        aliases=["shop-db"],
        description="The shop's inventory database",
        instructions="Prices are in cents. Search before you count.",
    )

    @tool(name="mcp__shop-db__count", namespace=shop, exposure="codemode")
    def count(category: str) -> Total:
        """Count the items of a category."""
        ledger.calls.append(("count", category))
        items = {"fruit": ["apple", "pear"], "veg": ["leek"]}.get(category, [])
        return Total(total=len(items), items=items)

    @tool(name="mcp__shop-db__price_list", namespace=shop, exposure="deferred")
    def price_list() -> str:
        """List every price in cents."""
        ledger.calls.append(("price_list", None))
        return "apple 30\npear 45"

    @tool
    def bump(n: int) -> str:
        """Add n to the counter (a side effect)."""
        ledger.calls.append(("bump", n))
        return f"bumped {n}"

    @tool
    def explode(message: str) -> str:
        """Always fails."""
        ledger.calls.append(("explode", message))
        raise RuntimeError(message)

    return [count, price_list, bump, explode]


def rendezvous_tool() -> Any:
    """``meet(name)``: returns only once two calls are in flight at the same time, so a
    script that gets both answers ran them concurrently."""
    arrived: list[str] = []
    both = asyncio.Event()

    @tool
    async def meet(name: str) -> str:
        """Wait for a partner call."""
        arrived.append(name)
        if len(arrived) >= 2:
            both.set()
        try:
            await both.wait()
        except asyncio.CancelledError:
            arrived.remove(name)  # a partner that gave up does not count
            raise
        return f"{name} met {next(n for n in arrived if n != name)}"

    return meet
