"""Stdout is the protocol: in json and rpc mode it carries nothing but records, even when
a plugin prints, writes to file descriptor 1 or runs a child process that writes to its
stdout — all of that goes to stderr."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from reliability_helpers import RpcProcess, run_pi, scripted_model, write_plugin

NOISY = """
import os
import subprocess
import sys

print("noisy: print at import")


def _noise(where):
    print(f"noisy: print in {where}")
    sys.stdout.flush()
    os.write(1, f"noisy: fd 1 in {where}\\n".encode())
    subprocess.run(["echo", f"noisy: child in {where}"], check=True)


@hookimpl
def session_start(event, ctx):
    _noise("session_start")


@hookimpl
def turn_start(event, ctx):
    _noise("turn_start")


@hookimpl
def tool_execution_end(event, ctx):
    _noise("tool_execution_end")


@hookimpl
async def agent_end(event, ctx):
    _noise("agent_end")
"""

NOISES = [
    "noisy: print at import",
    *(
        f"noisy: {how} in {where}"
        for where in ("session_start", "turn_start", "tool_execution_end", "agent_end")
        for how in ("print", "fd 1", "child")
    ),
]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _noisy_plugin(folder: Path) -> list[str]:
    return ["-e", str(write_plugin(folder, "noisy", "from pi_hookspecs import hookimpl\n" + NOISY))]


def _records(stdout: str) -> list[dict[str, object]]:
    records = []
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            raise AssertionError(f"a line of stdout is not JSON: {line!r}") from None
        assert isinstance(record, dict), line
        records.append(record)
    return records


def test_json_mode_stdout_carries_only_events(cwd: Path, tmp_path: Path) -> None:
    out = run_pi(
        "--mode",
        "json",
        *scripted_model(tmp_path),
        *_noisy_plugin(tmp_path),
        "go",
        cwd=cwd,
        env={"SCRIPT_STEPS": json.dumps(["echo from-the-tool"])},
    )
    assert out.returncode == 0, out.stderr
    records = _records(out.stdout)
    assert records[0]["type"] == "session"
    assert records[-1] == {"type": "agent_settled", "aborted": False}
    assert "noisy" not in out.stdout
    for noise in NOISES:
        assert noise in out.stderr, (noise, out.stderr)
    # the bash tool's own output is captured as the tool result, not written anywhere
    assert "from-the-tool" not in out.stderr


def test_rpc_mode_stdout_carries_only_records(cwd: Path, tmp_path: Path) -> None:
    with RpcProcess(
        *scripted_model(tmp_path),
        *_noisy_plugin(tmp_path),
        cwd=cwd,
        env={"PI_EXTENSIONS": "", "SCRIPT_STEPS": json.dumps(["echo from-the-tool"])},
    ) as rpc:
        rpc.prompt_and_settle("go")
        rpc.close_stdin()
        rpc.rest()
        assert rpc.wait() == 0, rpc.stderr
        deadline = time.monotonic() + 5  # the stderr reader thread may lag behind the exit
        while "agent_end" not in rpc.stderr and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [r for r in rpc.records if r["type"] == "<not json>"], rpc.records
        for noise in NOISES:
            assert noise in rpc.stderr, (noise, rpc.stderr)
