"""Event dispatch against pluggy's own ``pm.hook.x()`` on the same handlers.

Budget (docs/architecture.md, "Performance budgets"): 0 handlers ~ free; a notification to
synchronous handlers costs one thread hop (15-100 µs) whatever their number (they run
contained in a worker thread, docs/reliability.md); pluggy's inline call is the reference.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pluggy

import pi_hookspecs as h
from pi_core.extensions import EventRunner
from pi_hookspecs import hookimpl, specs

ROUNDS = 5


def make_plugin(i: int) -> Any:
    class Plugin:
        @hookimpl
        def agent_start(self, event: Any, ctx: Any) -> None:
            return None

        @hookimpl
        def tool_call(self, event: Any, ctx: Any) -> None:
            return None

    Plugin.__name__ = f"P{i}"
    return Plugin()


def build(n: int) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("pi")
    pm.add_hookspecs(specs)
    for i in range(n):
        pm.register(make_plugin(i), name=f"p{i}")
    return pm


def best(fn: Any, loops: int) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn(loops)
        times.append(time.perf_counter() - start)
    return min(times) / loops * 1e6


async def abest(fn: Any, loops: int) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        await fn(loops)
        times.append(time.perf_counter() - start)
    return min(times) / loops * 1e6


async def measure(hook: str, event: Any, n: int, loops: int) -> tuple[float, float]:
    pm = build(n)
    ctx = object()
    runner = EventRunner(pm, ctx=ctx, on_error=lambda e: None, trace=False)
    caller = getattr(pm.hook, hook)

    def pluggy_loop(k: int) -> None:
        for _ in range(k):
            caller(event=event, ctx=ctx)

    async def pi_loop(k: int) -> None:
        emit = runner.emit
        for _ in range(k):
            await emit(hook, event)

    return best(pluggy_loop, loops), await abest(pi_loop, loops)


async def main() -> list[tuple[str, float, float]]:
    rows = []
    cases = [
        ("agent_start", h.AgentStartEvent()),
        ("tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="1", input={"command": "ls"})),
    ]
    for hook, event in cases:
        for n in (0, 1, 10):
            plug, ours = await measure(hook, event, n, 20_000)
            rows.append((f"{hook} x{n} handlers", plug, ours))
    return rows


def report() -> list[str]:
    rows = asyncio.run(main())
    lines = ["dispatch (µs per event: pluggy pm.hook.x() | pi runner.emit | ratio)"]
    for label, plug, ours in rows:
        lines.append(f"  {label:<26} {plug:7.2f} | {ours:7.2f} | {ours / plug:5.2f}x")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
