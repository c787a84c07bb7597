"""Signals against a running bash tool leave nothing behind: SIGTERM, SIGHUP and
SIGINT stop the command's whole process group (the shell and a background child),
the session keeps every entry written so far, and pi exits with ``128 + signal``.
A handler blocking synchronously (or swallowing cancellation) does not delay SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability_helpers import (
    PI,
    RpcProcess,
    agent_dir,
    env_with,
    group_members,
    of_type,
    scripted_model,
    session_files,
    session_records,
    steps_env,
    write_plugin,
)

WAIT = 20.0


def _wait_for(predicate: object, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def _command(pidfile: Path) -> str:
    # the shell writes its pid (= its process group), starts a background child and waits
    return f"echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}; sleep 300 & sleep 301"


def _running_group(pidfile: Path) -> int:
    _wait_for(pidfile.exists)
    pgid = int(pidfile.read_text())
    _wait_for(lambda: len(group_members(pgid)) >= 3)  # the shell and both sleeps
    return pgid


def _no_orphans(pgid: int) -> None:
    _wait_for(lambda: not group_members(pgid), timeout=5)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.mark.parametrize(
    ("mode", "signum"),
    [("print", signal.SIGTERM), ("print", signal.SIGHUP), ("print", signal.SIGINT), ("json", signal.SIGTERM)],
)
def test_a_signal_stops_the_bash_group_and_pi(mode: str, signum: int, cwd: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "shell.pid"
    flags = ["-p"] if mode == "print" else ["--mode", "json"]
    proc = subprocess.Popen(
        [*PI, *flags, *scripted_model(tmp_path), "go"],
        cwd=cwd,
        env=env_with(**steps_env(_command(pidfile))),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        pgid = _running_group(pidfile)
        started = time.monotonic()
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=WAIT)
        assert time.monotonic() - started < 5
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert b"Traceback" not in err
    _no_orphans(pgid)
    (session_file,) = session_files()
    records = session_records(session_file)  # every line complete
    roles = [r["message"]["role"] for r in records if r["type"] == "message" and r["message"]["role"] != "system"]
    assert roles[:2] == ["user", "assistant"]  # the prompt and the tool call are on disk


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_rpc_mode_stops_the_bash_group_on_a_signal(signum: int, cwd: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "shell.pid"
    env = {**steps_env(_command(pidfile)), "PI_EXTENSIONS": ""}
    with RpcProcess(*scripted_model(tmp_path), cwd=cwd, env=env) as rpc:
        rpc.ok("get_state")
        rpc.command("prompt", message="go")
        rpc.wait_for(of_type("tool_execution_start"))
        pgid = _running_group(pidfile)
        rpc.send_signal(signum)
        assert rpc.wait(timeout=WAIT) == 128 + signum, rpc.stderr
    _no_orphans(pgid)


HANGING_SHUTDOWN = """
import time
from pathlib import Path

from pi_hookspecs import hookimpl


@hookimpl
def session_shutdown(event):
    time.sleep(3600)  # never returns: the stop deadline cuts it off
"""
FIXTURE_SERVER = Path(__file__).resolve().parents[2] / "plugins" / "mcp" / "tests" / "servers" / "fixture_server.py"


def test_sigterm_stops_mcp_servers_and_bash_even_with_a_hanging_shutdown_handler(cwd: Path, tmp_path: Path) -> None:
    """The MCP server's process is gone, the bash group is gone, and a
    ``session_shutdown`` handler that never returns holds the exit up for at most the
    stop deadline (5 s), not the two-minute hookTimeout."""
    from pi_core.extensions.guard import STOP_DEADLINE

    pidfile, server_pids = tmp_path / "shell.pid", tmp_path / "server.pids"
    (agent_dir() / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fx": {"command": sys.executable, "args": [str(FIXTURE_SERVER), "--pidfile", str(server_pids)]}
                }
            }
        )
    )
    plugin = write_plugin(tmp_path, "stuck", HANGING_SHUTDOWN)
    proc = subprocess.Popen(
        [*PI, "-p", *scripted_model(tmp_path), "-e", str(plugin), "go"],
        cwd=cwd,
        env=env_with(**steps_env(_command(pidfile)), PI_EXTENSIONS="mcp,stuck"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        pgid = _running_group(pidfile)
        _wait_for(server_pids.exists)
        server = int(server_pids.read_text().split()[0])
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert took < STOP_DEADLINE + 4, took
    assert b"stuck" in err and b"did not finish before pi stopped" in err
    _no_orphans(pgid)
    _wait_for(
        lambda: (
            not Path(f"/proc/{server}").exists()
            or "Z" in Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0]
        ),
        timeout=5,
    )


BLOCKING = """
import asyncio
import os
import time
from pathlib import Path

from pi_hookspecs import hookimpl

if os.environ["HANG"] == "sync":
    @hookimpl
    def tool_call(event):
        Path(os.environ["MARKER"]).write_text("in the handler")
        time.sleep(3600)
else:
    @hookimpl
    async def tool_call(event):
        Path(os.environ["MARKER"]).write_text("in the handler")
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass
"""


def _interrupt_when(ready: Callable[[], bool], proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes, float]:
    """SIGINT to ``proc`` once ``ready()``: its output and how long it took to end."""
    try:
        _wait_for(ready)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT)
        return out, err, time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("hang", ["sync", "async"])
def test_sigint_ends_print_mode_at_once_while_a_handler_hangs(hang: str, cwd: Path, tmp_path: Path) -> None:
    """The default deadline is two minutes; SIGINT does not wait for it."""
    marker = tmp_path / "marker"
    plugin = write_plugin(tmp_path, "blocking", BLOCKING)
    proc = subprocess.Popen(
        [*PI, "-p", *scripted_model(tmp_path), "-e", str(plugin), "go"],
        cwd=cwd,
        env=env_with(**steps_env("echo never"), HANG=hang, MARKER=str(marker)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err, took = _interrupt_when(marker.exists, proc)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert took < 3, took  # the abort leaves the handler behind within ABORT_GRACE
    assert b"blocking" in err and b"aborted" in err
    assert b"Traceback" not in err
    assert not os.path.exists(tmp_path / "never")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_acp_mode_exits_with_the_conventional_status(signum: int, cwd: Path) -> None:
    proc = subprocess.Popen(
        [*PI, "acp"],
        cwd=cwd,
        env=env_with(PI_EXTENSIONS=""),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}).encode()
            + b"\n"
        )
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        proc.stdin.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}}
            ).encode()
            + b"\n"
        )
        proc.stdin.flush()
        while "id" not in json.loads(proc.stdout.readline()):
            pass  # session/update notifications, then the session: pi is serving
        proc.send_signal(signum)
        assert proc.wait(timeout=WAIT) == 128 + signum
    finally:
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


HANGING_START = """
import os
import time
from pathlib import Path

from pi_hookspecs import hookimpl


@hookimpl
def session_start(ctx):
    Path(os.environ["MARKER"]).write_text("starting")
    time.sleep(3600)  # no run to abort yet: the stop deadline ends the wait
"""


def test_sigint_ends_print_mode_while_a_session_start_handler_hangs(cwd: Path, tmp_path: Path) -> None:
    from pi_core.extensions.guard import STOP_DEADLINE

    marker = tmp_path / "marker"
    plugin = write_plugin(tmp_path, "slowstart", HANGING_START)
    proc = subprocess.Popen(
        [*PI, "-p", *scripted_model(tmp_path), "-e", str(plugin), "go"],
        cwd=cwd,
        env=env_with(**steps_env(), MARKER=str(marker)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err, took = _interrupt_when(marker.exists, proc)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert took < STOP_DEADLINE + 3, took
    assert out == b""  # no prompt ran
    assert b"slowstart" in err and b"did not finish before pi stopped" in err


@pytest.mark.parametrize("hang", ["sync", "async"])
def test_an_rpc_abort_ends_the_run_while_a_handler_hangs(hang: str, cwd: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    plugin = write_plugin(tmp_path, "blocking", BLOCKING)
    env = {**steps_env("echo never"), "HANG": hang, "MARKER": str(marker), "PI_EXTENSIONS": ""}
    with RpcProcess(*scripted_model(tmp_path), "-e", str(plugin), cwd=cwd, env=env) as rpc:
        rpc.ok("get_state")
        rpc.command("prompt", message="go")
        _wait_for(marker.exists)
        started = time.monotonic()
        rpc.ok("abort")  # answered once the run is idle
        if not rpc.seen(of_type("agent_settled")):
            rpc.wait_for(of_type("agent_settled"))
        assert time.monotonic() - started < 3
        errors = [r for r in rpc.records if r.get("type") == "extension_error"]
        assert errors and "aborted" in errors[-1]["error"] and "blocking" in errors[-1]["extensionPath"]
        rpc.close_stdin()
        assert rpc.wait() == 0
