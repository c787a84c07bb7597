"""A plugin cannot take pi down: one misbehaving plugin per fault, in print, json and
rpc mode. The run goes on, the fault is reported once naming the plugin, a failing
``tool_call`` handler blocks the tool (fail closed), and pi exits normally.

Faults: an exception, ``SystemExit``, ``KeyboardInterrupt``, a synchronous handler that
never returns, a coroutine handler that swallows cancellation (both cut off by the
``hookTimeout`` deadline, here 1 s), and changes made in place to invalid values (undone
and reported; in a ``tool_call`` handler that is a failure, so the tool is blocked)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import (
    RpcProcess,
    jsonl,
    run_pi,
    scripted_model,
    session_files,
    session_records,
    steps_env,
    write_plugin,
    write_settings,
)

FAULTY = """
import asyncio
import os
import time

from pi_hookspecs import hookimpl

FAULT = os.environ["FAULT"]

if FAULT == "raise":
    @hookimpl
    def tool_call(event):
        raise RuntimeError("boom")

elif FAULT == "exit":
    @hookimpl
    def tool_call(event):
        raise SystemExit(3)

elif FAULT == "interrupt":
    @hookimpl
    async def tool_call(event):
        raise KeyboardInterrupt

elif FAULT == "hang_sync":
    @hookimpl
    def tool_call(event):
        time.sleep(3600)

elif FAULT == "hang_async":
    @hookimpl
    async def tool_call(event):
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass  # swallowed: the handler refuses to stop

elif FAULT == "in_place_gate":
    @hookimpl
    def tool_call(event):
        event.input = 5

elif FAULT == "in_place":
    @hookimpl
    def before_agent_start(event):
        event.system_prompt_options.sections = None

    @hookimpl
    def tool_result(event):
        event.content = 5
"""

BLOCKING = {
    "raise": "RuntimeError: boom",
    "exit": "SystemExit: 3",
    "interrupt": "KeyboardInterrupt",
    "hang_sync": "did not finish within 1 s",
    "hang_async": "did not finish within 1 s",
    "in_place_gate": "input: Input should be a valid dictionary",
}
FAULTS = [*BLOCKING, "in_place"]
MODES = ["print", "json", "rpc"]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    write_settings({"hookTimeout": 1})
    return root


def _tool_results(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["message"] for r in records if r.get("type") == "message" and r["message"]["role"] == "toolResult"]


def _text(message: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in message["content"])


def _run(mode: str, fault: str, cwd: Path, tmp_path: Path) -> tuple[str, list[dict[str, Any]]]:
    """Run one prompt with the faulty plugin; returns what pi reported about plugins
    (stderr, or the RPC extension_error records) and the session's records."""
    options = [*scripted_model(tmp_path), "-e", str(write_plugin(tmp_path, "faulty", FAULTY))]
    env = {**steps_env("echo tool-ran"), "FAULT": fault, "PI_EXTENSIONS": ""}
    if mode == "rpc":
        with RpcProcess(*options, cwd=cwd, env=env) as rpc:
            records = rpc.prompt_and_settle("go")
            session_file = rpc.ok("get_state")["sessionFile"]
            rpc.close_stdin()
            assert rpc.wait() == 0, rpc.stderr
            errors = [r for r in rpc.records if r.get("type") == "extension_error"]
            assert "Traceback" not in rpc.stderr
            reported = "\n".join(f"{r.get('extensionPath')} {r.get('event')} {r.get('error')}" for r in errors)
            assert [m for m in records if m.get("type") == "agent_settled"]
        return reported, session_records(session_file)
    flags = ["-p"] if mode == "print" else ["--mode", "json"]
    out = run_pi(*flags, *options, "go", cwd=cwd, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    if mode == "print":
        assert out.stdout == "all done\n"
    else:
        assert jsonl(out.stdout)[-1]["type"] == "agent_settled"
    (session_file,) = session_files()
    return out.stderr, session_records(session_file)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fault", FAULTS)
def test_a_faulty_plugin_is_reported_and_contained(mode: str, fault: str, cwd: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    reported, records = _run(mode, fault, cwd, tmp_path)
    assert time.monotonic() - started < 20  # the 1 s deadline, not a hang
    (result,) = _tool_results(records)
    answers = [r["message"] for r in records if r.get("type") == "message" and r["message"]["role"] == "assistant"]
    assert _text(answers[-1]) == "all done"
    if fault in BLOCKING:
        assert "faulty" in reported and "tool_call" in reported and BLOCKING[fault] in reported, reported
        assert reported.count(BLOCKING[fault]) == 1  # once
        assert result["isError"] and "Blocked" in _text(result) and "faulty" in _text(result)
    else:
        # each invalid change is undone, reported naming the plugin and the field
        for hook, field in [("before_agent_start", "system_prompt_options.sections"), ("tool_result", "content")]:
            line = next((line for line in reported.splitlines() if hook in line and "in place" in line), "")
            assert "faulty" in line and field in line, reported
        assert not result["isError"] and "tool-ran" in _text(result)
