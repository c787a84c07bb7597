"""Per-turn overhead of the whole runtime: scripted model, 5 plugins, persistence on.

Budget (docs/architecture.md, "Performance budgets"): flat from turn 10 to turn 1,000 (no O(history) work per turn).
Each turn is one model request answered with a tool call (``noop``) and its result.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_core.ai import FauxResponse, FauxScript, faux_model
from pi_core.runtime import create_agent_session
from pi_hookspecs import hookimpl, tool

TURNS = 1000


def make_plugin(i: int) -> Any:
    class Plugin:
        @hookimpl
        def tool_call(self, event: Any) -> None:
            return None

        @hookimpl
        def tool_result(self, event: Any) -> None:
            return None

        @hookimpl
        def message_end(self, event: Any) -> None:
            return None

        @hookimpl
        def turn_end(self, event: Any) -> None:
            return None

        @hookimpl
        def tool_execution_end(self, event: Any) -> None:
            return None

    Plugin.__name__ = f"Plugin{i}"
    return Plugin


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def measure() -> tuple[list[float], str]:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PI_CODING_AGENT_DIR"] = str(Path(tmp) / "agent")
        stamps: list[float] = []
        calls = iter(range(TURNS))

        def respond(context: Any) -> FauxResponse:
            n = next(calls, None)
            if n is None or n == TURNS - 1:
                return FauxResponse(text="finished")
            return FauxResponse(tool_calls=[("noop", {})])

        script = FauxScript(fallback=respond, keep_contexts=False)
        runtime = await create_agent_session(
            cwd=tmp,
            model=faux_model(script),
            plugins=[make_plugin(i) for i in range(5)],
            custom_tools=[noop],
            installed_plugins=False,
        )

        def on_event(event: Any) -> None:
            if event.type == "turn_end":
                stamps.append(time.perf_counter())

        runtime.subscribe(on_event)
        await runtime.session.prompt("loop")
        path = runtime.session.session_file or ""
        await runtime.dispose()
        return [b - a for a, b in itertools.pairwise(stamps)], path


def report() -> list[str]:
    gaps, _ = asyncio.run(measure())
    early = statistics.median(gaps[5:25])
    late = statistics.median(gaps[-20:])
    return [
        "runtime per turn (scripted model, 5 plugins with 5 hooks each, session file on)",
        f"  turns ~10: {early * 1000:.2f} ms   turns ~1000: {late * 1000:.2f} ms   "
        f"ratio {late / early:.2f} (budget: flat)",
    ]


if __name__ == "__main__":
    print("\n".join(report()))
