"""pluggable-pi-acp (``pi acp``; this file is not bench/acp.py, which would shadow the ``acp`` SDK
here): how fast an editor gets its handshake, and what one streamed update costs.

Budgets: spawn -> ``initialize`` answered <= ``pi --version`` + 100 ms; the
per-update cost negligible next to the JSON mode's events. Both printed, never asserted.

* handshake: ``pi acp`` started as an editor starts it, the ``initialize`` request
  written at once, timed until its answer arrives; beside it ``pi --version`` (median
  of RUNS, interleaved).
* per update: one streamed text delta turned into its ``session/update`` notification
  (pluggable-pi-acp's event bridge, the SDK's model, JSON), next to the same event turned into
  the ``pi --mode json`` record (``event_record`` + JSON), in process.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = int(os.environ.get("PI_BENCH_RUNS", "10"))
UPDATES = 20_000
BUDGET_MS = 100.0
INITIALIZE = (
    json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}
    ).encode()
    + b"\n"
)


def _pi() -> list[str]:
    found = shutil.which("pi", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "pi_core"]


def _handshake(cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*_pi(), "acp"], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=60)
    if b'"protocolVersion"' not in line:
        raise RuntimeError(f"pi acp did not answer initialize: {line[:200]!r}")
    return elapsed


def _version(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([*_pi(), "--version"], env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def _per_update() -> tuple[float, float]:
    import asyncio

    from acp.schema import SessionNotification
    from pi_acp.session import Capabilities, EventBridge, Link

    from pi_core.cli.print_mode import event_record
    from pi_hookspecs import AssistantMessage, MessageUpdateEvent, TextContent
    from pi_hookspecs.streaming import TextDeltaEvent

    message = AssistantMessage(content=[TextContent(text="hello " * 50)], provider="p", api="a", model="m")
    event = MessageUpdateEvent(
        message=message, assistant_message_event=TextDeltaEvent(content_index=0, delta="word ", partial=message)
    )

    async def acp_cost() -> float:
        link = Link(client=None, capabilities=Capabilities(), cwd="/", session_id="s")
        bridge = EventBridge(link)
        start = time.perf_counter()
        for _ in range(UPDATES):
            bridge(event)
            update = link.queue.get_nowait()
            link.queue.task_done()
            note = SessionNotification(session_id="s", update=update)
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": note.model_dump(mode="json", by_alias=True, exclude_none=True),
                }
            )
        return (time.perf_counter() - start) / UPDATES

    acp = asyncio.run(acp_cost())
    start = time.perf_counter()
    for _ in range(UPDATES):
        json.dumps(event_record(event))
    jsonl = (time.perf_counter() - start) / UPDATES
    return acp, jsonl


def report() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}
        _handshake(tmp, env)  # warm the file cache
        acp_times: list[float] = []
        version_times: list[float] = []
        for _ in range(RUNS):
            acp_times.append(_handshake(tmp, env))
            version_times.append(_version(env))
    acp_ms = statistics.median(acp_times) * 1000
    version_ms = statistics.median(version_times) * 1000
    verdict = "within budget" if acp_ms <= version_ms + BUDGET_MS else "OVER budget"
    update_acp, update_json = _per_update()
    lines: list[Any] = [
        f"pluggable-pi-acp: spawn -> initialize answered, median of {RUNS}; budget <= pi --version + {BUDGET_MS:g} ms",
        f"  pi --version            {version_ms:7.1f} ms",
        f"  pi acp (initialize)     {acp_ms:7.1f} ms  "
        f"({acp_ms / version_ms:4.1f}x, +{acp_ms - version_ms:5.1f} ms)  {verdict}",
        f"pluggable-pi-acp: one streamed text delta, mean of {UPDATES}",
        f"  pi --mode json record   {update_json * 1e6:7.1f} us",
        f"  ACP session/update      {update_acp * 1e6:7.1f} us  ({update_acp / update_json:4.1f}x)",
    ]
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
