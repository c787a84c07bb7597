"""A signal ends the run, also before the first model request; an ``async`` handler
that blocks the event loop is detected and reported.

* SIGINT (or SIGTERM) while a plugin handler that runs before the request hangs —
  ``input``, ``before_agent_start``, ``context`` — ends ``pi -p`` within a second with
  ``128 + signal``: the model is never asked (the local server sees no request) and no
  tool runs.
* A coroutine handler that blocks the loop (``time.sleep`` inside ``async def``) cannot
  be interrupted, but pi's loop watchdog notices: once the loop has not moved for
  ``hookTimeout`` seconds it reports the plugin and the hook (one line), and a signal
  that arrives while the loop is blocked ends the process at once with ``128 + signal``
  (bash commands' process groups killed first).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import (
    PI,
    RpcProcess,
    configure_local_endpoint,
    env_with,
    session_files,
    session_records,
    text_reply,
    write_plugin,
    write_settings,
)
from wire_server import Canned, WireServer, chat_chunks, use_server

WAIT = 20.0

HANGING = """
import os
import time
from pathlib import Path

from pi_hookspecs import hookimpl

HOOK = os.environ["HOOK"]


def _hang():
    marker = Path(os.environ["MARKER"])
    if marker.exists():
        return  # only the first call hangs
    marker.write_text("in the handler")
    time.sleep(3600)


if HOOK == "input":
    @hookimpl
    def input(event):
        _hang()
elif HOOK == "before_agent_start":
    @hookimpl
    def before_agent_start(event):
        _hang()
elif HOOK == "context":
    @hookimpl
    def context(event):
        _hang()
elif HOOK == "input_async":
    import asyncio

    @hookimpl
    async def input(event):
        Path(os.environ["MARKER"]).write_text("in the handler")
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass
"""


def tool_reply(name: str, args: dict[str, str]) -> Canned:
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ]
            }
        ],
        finish_reason="tool_calls",
    )


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _wait_in(proc: subprocess.Popen[bytes], ready: Path) -> None:
    """Wait for ``ready`` to exist; pi ending first fails with what it said."""
    deadline = time.monotonic() + WAIT
    while not ready.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"pi ended ({proc.returncode}) before {ready.name}: {err.decode()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {ready.name}")
        time.sleep(0.02)


def _start(wire: WireServer, cwd: Path, tmp_path: Path, plugin: Path, **env: str) -> subprocess.Popen[bytes]:
    model = configure_local_endpoint(wire.url)
    never = tmp_path / "never"
    # what the model would do if it were asked: run a tool, then answer
    wire.enqueue(tool_reply("bash", {"command": f"touch {never}"}), text_reply("all done"))
    return subprocess.Popen(
        [*PI, "-p", "--model", model, "-e", str(plugin), "go"],
        cwd=cwd,
        env=env_with(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _signal_when(ready: Path, proc: subprocess.Popen[bytes], signum: int) -> tuple[bytes, bytes, float]:
    try:
        _wait_in(proc, ready)
        time.sleep(0.1)  # inside the handler's sleep
        started = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=WAIT)
        return out, err, time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize(
    ("hook", "signum"),
    [
        ("input", signal.SIGINT),
        ("input", signal.SIGTERM),
        ("input_async", signal.SIGINT),
        ("before_agent_start", signal.SIGINT),
        ("before_agent_start", signal.SIGTERM),
        ("context", signal.SIGINT),
        ("context", signal.SIGTERM),
    ],
)
def test_a_signal_while_a_hook_before_the_request_hangs_ends_the_run(
    hook: str, signum: int, wire: WireServer, cwd: Path, tmp_path: Path
) -> None:
    """No model request after the signal, no tool call, ``128 + signal`` within 1 s
    (the handler's grace is half a second)."""
    marker = tmp_path / "marker"
    plugin = write_plugin(tmp_path, "hanging", HANGING)
    proc = _start(wire, cwd, tmp_path, plugin, HOOK=hook, MARKER=str(marker))
    out, err, took = _signal_when(marker, proc, signum)
    assert proc.returncode == 128 + signum, err
    assert took < 1.5, took  # ABORT_GRACE (0.5 s) and the exit; 1 s plus a loaded machine's slack
    assert wire.requests == [], [r.body for r in wire.requests]
    assert not (tmp_path / "never").exists()
    assert out == b""
    assert b"Traceback" not in err
    assert b"hanging" in err and b"aborted" in err  # the handler is reported, naming the plugin
    for session_file in session_files():  # whatever was written is whole, and holds no answer
        answers = [
            r["message"]
            for r in session_records(session_file)
            if r["type"] == "message" and r["message"]["role"] == "assistant"
        ]
        # a run already under way (the context hook) ends with pi 1.6.0's empty aborted message
        assert all(a["stopReason"] == "aborted" and not a["content"] for a in answers), answers


LOOP_BLOCKER = """
import os
import time
from pathlib import Path

from pi_hookspecs import hookimpl


@hookimpl
async def {hook}(event):
    Path(os.environ["MARKER"]).write_text("in the handler")
    end = time.monotonic() + float(os.environ["BLOCK_FOR"])
    while time.monotonic() < end:
        try:
            time.sleep(max(0.0, end - time.monotonic()))  # blocks the event loop
        except BaseException:
            if os.environ.get("STUBBORN") != "1":
                raise
            # a stubborn handler: ignores the interrupt and blocks on
"""


def _start_blocker(wire: WireServer, cwd: Path, tmp_path: Path, hook: str, **env: str) -> subprocess.Popen[bytes]:
    marker = tmp_path / "marker"
    plugin = write_plugin(tmp_path, "blocker", LOOP_BLOCKER.format(hook=hook))
    model = configure_local_endpoint(wire.url)
    wire.enqueue(tool_reply("bash", {"command": f"touch {tmp_path / 'tool-ran'}"}), text_reply("all done"))
    return subprocess.Popen(
        [*PI, "-p", "--model", model, "-e", str(plugin), "go"],
        cwd=cwd,
        env=env_with(MARKER=str(marker), **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    try:
        return proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize("hook", ["input", "tool_call"])
def test_a_coroutine_handler_blocking_the_loop_past_hook_timeout_is_interrupted_and_reported(
    hook: str, wire: WireServer, cwd: Path, tmp_path: Path
) -> None:
    """``hookTimeout: 1``, a handler that would block the loop for 30 s: interrupted
    after about 1 s, reported once naming the plugin and the hook, and the run goes on
    (a ``tool_call`` gate fails closed: the tool does not run)."""
    write_settings({"hookTimeout": 1})
    started = time.monotonic()
    proc = _start_blocker(wire, cwd, tmp_path, hook, BLOCK_FOR="30")
    out, err = _finish(proc)
    assert time.monotonic() - started < 15  # not the 30 s the handler wanted
    assert proc.returncode == 0, err
    assert out == b"all done\n"
    assert b"Traceback" not in err
    lines = [line for line in err.splitlines() if b"blocked the event loop" in line]
    assert len(lines) == 1, err  # once
    assert b"blocker" in lines[0] and hook.encode() in lines[0] and b"longer than 1 s (setting hookTimeout)" in lines[0]
    assert b"interrupted" in lines[0]
    assert len(wire.requests) == 2  # the run went on: the tool call, then the answer
    assert (tmp_path / "tool-ran").exists() == (hook != "tool_call")  # a failed gate blocks the tool


def test_a_stubborn_loop_blocker_is_reported_when_it_returns(wire: WireServer, cwd: Path, tmp_path: Path) -> None:
    """A handler that ignores the interrupt keeps the loop until it returns (4 s); pi
    then goes on without its result and reports it once."""
    write_settings({"hookTimeout": 1})
    proc = _start_blocker(wire, cwd, tmp_path, "tool_call", BLOCK_FOR="4", STUBBORN="1")
    out, err = _finish(proc)
    assert proc.returncode == 0, err
    assert out == b"all done\n"
    lines = [line for line in err.splitlines() if b"blocked the event loop" in line]
    assert len(lines) == 1, err
    assert b"blocker" in lines[0] and b"tool_call" in lines[0] and b"without its result" in lines[0]
    assert not (tmp_path / "tool-ran").exists()  # the gate failed closed


@pytest.mark.parametrize(
    ("hook", "signum", "stubborn"),
    [
        ("input", signal.SIGINT, "0"),
        ("input", signal.SIGINT, "1"),
        ("before_agent_start", signal.SIGTERM, "0"),
        ("context", signal.SIGTERM, "1"),
    ],
)
def test_a_signal_while_a_coroutine_handler_blocks_the_loop_ends_pi(
    hook: str, signum: int, stubborn: str, wire: WireServer, cwd: Path, tmp_path: Path
) -> None:
    """The default two-minute hookTimeout, a handler blocking the loop for 30 s, SIGINT:
    the handler is interrupted and pi stops in order; one that ignores the interrupt
    gets another half second, then the process ends at once. Either way: 130 within
    about a second and a half, no model request, one line naming the plugin."""
    proc = _start_blocker(wire, cwd, tmp_path, hook, BLOCK_FOR="30", STUBBORN=stubborn)
    try:
        _wait_in(proc, tmp_path / "marker")
        time.sleep(0.3)
        started = time.monotonic()
        proc.send_signal(signum)
        out, err = _finish(proc)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signum, err
    assert took < 2.5, took
    assert wire.requests == []
    assert not (tmp_path / "tool-ran").exists()
    assert out == b""
    assert b"Traceback" not in err
    lines = [line for line in err.splitlines() if b"blocked the event loop" in line]
    assert len(lines) == 1 and b"blocker" in lines[0] and hook.encode() in lines[0], err
    if stubborn == "1":
        assert b"could not be interrupted; exiting at once" in lines[0]
    else:
        assert f"when pi was stopping ({signal.Signals(signum).name})".encode() in lines[0]


BLOCKING_SHUTDOWN = """
import os
import time
from pathlib import Path

from pi_hookspecs import hookimpl


@hookimpl
async def session_shutdown(event):
    Path(os.environ["MARKER"]).write_text("stopping")
    time.sleep(3600)  # blocks the loop while pi stops
"""


def test_a_coroutine_shutdown_handler_blocking_the_loop_ends_by_the_stop_deadline(
    wire: WireServer, cwd: Path, tmp_path: Path
) -> None:
    """SIGTERM during a bash command; a ``session_shutdown`` coroutine handler then
    blocks the loop for an hour: it is interrupted at the stop deadline (5 s from the
    signal), reported, and pi exits with 143 - not after the two-minute hookTimeout."""
    from pi_core.extensions.guard import STOP_DEADLINE

    marker, running = tmp_path / "marker", tmp_path / "running"
    plugin = write_plugin(tmp_path, "blocker", BLOCKING_SHUTDOWN)
    model = configure_local_endpoint(wire.url)
    wire.enqueue(tool_reply("bash", {"command": f"touch {running}; sleep 300"}), text_reply("all done"))
    proc = subprocess.Popen(
        [*PI, "-p", "--model", model, "-e", str(plugin), "go"],
        cwd=cwd,
        env=env_with(MARKER=str(marker)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_in(proc, running)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _out, err = _finish(proc)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert marker.exists()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert took < STOP_DEADLINE + 3, took
    lines = [line for line in err.splitlines() if b"blocked the event loop" in line]
    assert len(lines) == 1 and b"blocker" in lines[0] and b"session_shutdown" in lines[0], err
    assert b"stop deadline" in lines[0]
    assert b"Traceback" not in err


def test_an_rpc_abort_while_an_input_handler_hangs_starts_no_run(wire: WireServer, cwd: Path, tmp_path: Path) -> None:
    """Over RPC too: ``abort`` while the ``input`` handler hangs drops the prompt (its
    response says ``handled``), the model is never asked, and the next prompt runs."""
    marker = tmp_path / "marker"
    plugin = write_plugin(tmp_path, "hanging", HANGING)
    model = configure_local_endpoint(wire.url)
    env = {"HOOK": "input", "MARKER": str(marker), "PI_EXTENSIONS": ""}
    with RpcProcess("--model", model, "-e", str(plugin), cwd=cwd, env=env) as rpc:
        rpc.ok("get_state")
        prompt = rpc.command("prompt", message="go")
        deadline = time.monotonic() + WAIT
        while not marker.exists():
            assert time.monotonic() < deadline, rpc.stderr
            time.sleep(0.02)
        started = time.monotonic()
        rpc.ok("abort")
        response = rpc.response(prompt)
        assert time.monotonic() - started < 1.5
        assert response.get("data") == {"disposition": "handled"}, response
        errors = [r for r in rpc.records if r.get("type") == "extension_error"]
        assert errors and "hanging" in errors[-1]["extensionPath"] and "aborted" in errors[-1]["error"]
        assert wire.requests == []
        wire.enqueue(text_reply("all done"))
        records = rpc.prompt_and_settle("again")  # pi goes on: the next prompt runs
        assert len(wire.requests) == 1
        ends = [r for r in records if r.get("type") == "message_end" and r["message"]["role"] == "assistant"]
        assert ends and ends[-1]["message"]["stopReason"] == "stop", records
        rpc.close_stdin()
        assert rpc.wait() == 0, rpc.stderr
