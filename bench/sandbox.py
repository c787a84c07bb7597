"""pluggable-pi-sandbox: the cost of confining one bash call.

Budget (docs/architecture.md, "Performance budgets"): a sandboxed bash call <= 15 ms above the same call unconfined
(median). Each case is a real session running ``true`` through pi's shell runner
(the ``bash_spawn`` hook included), the cases interleaved call by call. Printed,
never asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

CALLS = 40
WARMUP = 3
BUDGET_MS = 15.0

CASES: list[tuple[str, dict[str, Any] | None]] = [
    ("unconfined", None),
    ("bubblewrap, network off", {"backend": "bwrap"}),
    ("bubblewrap, proxy", {"backend": "bwrap", "allowedHosts": ["example.com"]}),
    ("landlock, network off", {"backend": "landlock"}),
    ("landlock, proxy", {"backend": "landlock", "allowedHosts": ["example.com"]}),
]


async def _session(root: Path, name: str, sandbox: dict[str, Any] | None) -> Any:
    from pi_sandbox import SandboxPlugin

    from pi_core.ai import FauxScript, faux_model
    from pi_core.runtime import create_agent_session

    agent = root / name.replace(" ", "").replace(",", "-")
    agent.mkdir(parents=True)
    if sandbox is not None:
        (agent / "settings.json").write_text(json.dumps({"sandbox": sandbox}))
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)  # the plugin reads its policy when the session starts
    runtime = await create_agent_session(
        cwd=root / "project",
        model=faux_model(FauxScript([])),
        plugins=[SandboxPlugin] if sandbox else [],
        installed_plugins=False,
        in_memory=True,
        agent_dir=agent,
    )
    for _ in range(WARMUP):
        message = await runtime.session.execute_bash("true")
        if message.exit_code != 0:
            raise RuntimeError(f"{name}: `true` failed: {message.output.strip()}")
    return runtime


async def _measure() -> dict[str, list[float]]:
    saved = os.environ.get("PI_CODING_AGENT_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        runtimes: dict[str, Any] = {}
        skipped: dict[str, str] = {}
        try:
            for name, sandbox in CASES:
                try:
                    runtimes[name] = await _session(root, name, sandbox)
                except Exception as exc:
                    skipped[name] = f"{type(exc).__name__}: {exc}"
            times: dict[str, list[float]] = {name: [] for name in runtimes}
            for _ in range(CALLS):
                for name, runtime in runtimes.items():
                    start = time.perf_counter()
                    await runtime.session.execute_bash("true")
                    times[name].append((time.perf_counter() - start) * 1000)
        finally:
            for runtime in runtimes.values():
                await runtime.dispose()
            if saved is None:
                os.environ.pop("PI_CODING_AGENT_DIR", None)
            else:
                os.environ["PI_CODING_AGENT_DIR"] = saved
    for name, why in skipped.items():
        times[name] = []
        print(f"  ({name}: not measured: {why})")
    return times


def report() -> list[str]:
    times = asyncio.run(_measure())
    base = statistics.median(times["unconfined"])
    lines = [
        f"pluggable-pi-sandbox: one bash call (`true`), median of {CALLS}; budget <= {BUDGET_MS:g} ms above unconfined"
    ]
    lines.append(f"  {'unconfined':<26} {base:6.1f} ms")
    for name, samples in times.items():
        if name == "unconfined" or not samples:
            continue
        median = statistics.median(samples)
        over = median - base
        verdict = "within budget" if over <= BUDGET_MS else "OVER budget"
        lines.append(f"  {name:<26} {median:6.1f} ms  +{over:5.1f} ms ({median / base:4.1f}x)  {verdict}")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
