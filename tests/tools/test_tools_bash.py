"""The bash tool against real subprocesses: output, truncation, exit codes, timeouts,
aborts that take the whole process group down, streaming updates, settings."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from tools_support import FakeToolContext, call, text

from pi_core.tools import create_bash_tool
from pi_hookspecs import Model, ToolResult

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")


@pytest.fixture
def bash():
    return create_bash_tool()


@pytest.fixture
def ctx(tmp_path: Path) -> FakeToolContext:
    return FakeToolContext(tmp_path)


def is_gone(pid: int) -> bool:
    """Dead or a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid: int, within: float = 3.0) -> bool:
    """Signal delivery is immediate but a process takes a moment to die."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.01)
    return is_gone(pid)


def read_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


async def test_stdout_and_stderr_arrive_combined_in_order(bash, ctx):
    result = await call(bash, ctx, command="echo one; echo two >&2; echo three")
    assert not result.is_error
    assert text(result) == "one\ntwo\nthree\n"
    assert result.details == {"exitCode": 0}


async def test_runs_in_the_working_directory(bash, ctx, tmp_path):
    assert text(await call(bash, ctx, command="pwd")).strip() == str(tmp_path.resolve())


async def test_no_output(bash, ctx):
    result = await call(bash, ctx, command="true")
    assert text(result) == "(no output)" and not result.is_error


async def test_nonzero_exit_is_an_error_with_the_output(bash, ctx):
    result = await call(bash, ctx, command="echo failing; exit 3")
    assert result.is_error
    assert text(result) == "failing\n\n\nCommand exited with code 3"  # as pi 1.6.0: the final newline stays
    assert result.details["exitCode"] == 3
    bare = await call(bash, ctx, command="exit 7")
    assert text(bare) == "Command exited with code 7"


async def test_a_shell_killed_by_a_signal_is_an_error(bash, ctx):
    result = await call(bash, ctx, command="kill -KILL $$")
    assert result.is_error and "Command was killed by signal SIGKILL" in text(result)


async def test_long_output_keeps_the_tail_and_saves_everything(bash, ctx):
    result = await call(bash, ctx, command="seq 1 3000")
    body = text(result)
    details = result.details
    path = details["fullOutputPath"]
    assert body.startswith("1001\n") and "\n3000\n\n[" in body
    assert body.endswith(f"[Showing lines 1001-3000 of 3000. Full output: {path}]")
    assert details["truncation"]["truncatedBy"] == "lines"
    assert Path(path).read_text() == "".join(f"{i}\n" for i in range(1, 3001))
    assert (os.stat(path).st_mode & 0o777) == 0o600
    os.unlink(path)


async def test_wide_output_is_cut_by_bytes(bash, ctx):
    result = await call(bash, ctx, command="for i in $(seq 1 100); do printf '%01000d\\n' $i; done")
    details = result.details
    assert details["truncation"]["truncatedBy"] == "bytes"
    assert "(50.0KB limit). Full output:" in text(result)
    os.unlink(details["fullOutputPath"])


async def test_one_huge_line_shows_its_end(bash, ctx):
    result = await call(bash, ctx, command="head -c 60000 /dev/zero | tr '\\0' x; echo END")
    body = text(result)
    assert "END\n\n[Showing last 50.0KB of line 1 (line is 58.6KB)." in body
    os.unlink(result.details["fullOutputPath"])


async def test_timeout_kills_the_command(bash, ctx, tmp_path):
    started = time.monotonic()
    result = await call(bash, ctx, command="echo waiting; sleep 30 & echo $! > pids; wait", timeout=0.3)
    assert time.monotonic() - started < 5
    assert result.is_error
    assert text(result) == "waiting\n\n\nCommand timed out after 0.3 seconds"
    assert "exitCode" not in result.details  # absent, not null: the command has none
    assert all(wait_gone(pid) for pid in read_pids(tmp_path / "pids"))


async def test_invalid_timeout(bash, ctx):
    result = await call(bash, ctx, command="true", timeout=0)
    assert result.is_error and text(result).startswith("Invalid timeout")


async def test_abort_kills_the_whole_process_group(tmp_path, bash):
    ctx = FakeToolContext(tmp_path)

    def on_update(partial: ToolResult) -> None:
        if "ready" in partial.text_content():
            ctx.abort()

    ctx._on_update = on_update
    command = "sleep 100 & echo $! >> pids; sh -c 'sleep 100' & echo $! >> pids; echo ready; wait"
    started = time.monotonic()
    result = await call(bash, ctx, command=command)
    assert time.monotonic() - started < 5
    assert result.is_error and text(result) == "ready\n\n\nCommand aborted"
    pids = read_pids(tmp_path / "pids")
    assert len(pids) == 2
    assert all(wait_gone(pid) for pid in pids)


async def test_abort_escalates_to_sigkill_for_processes_ignoring_sigterm(tmp_path, bash, monkeypatch):
    monkeypatch.setattr("pi_core.tools.shell.TERM_GRACE", 0.2)
    ctx = FakeToolContext(tmp_path)
    ctx._on_update = lambda partial: ctx.abort() if "ready" in partial.text_content() else None
    command = "sh -c 'trap \"\" TERM; echo $$ > pids; echo ready; while :; do sleep 0.05; done'"
    result = await call(bash, ctx, command=command)
    assert text(result).endswith("Command aborted")
    assert wait_gone(read_pids(tmp_path / "pids")[0])


async def test_already_aborted_signal_runs_nothing(bash, ctx, tmp_path):
    ctx.abort()
    result = await call(bash, ctx, command="touch ran")
    assert result.is_error and text(result) == "Operation aborted"
    assert not (tmp_path / "ran").exists()


async def test_cancelling_the_task_kills_the_process_group(tmp_path, bash):
    ready = asyncio.Event()
    ctx = FakeToolContext(tmp_path, on_update=lambda p: ready.set() if "ready" in p.text_content() else None)
    task = asyncio.ensure_future(call(bash, ctx, command="sleep 100 & echo $! > pids; echo ready; wait"))
    await asyncio.wait_for(ready.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_gone(read_pids(tmp_path / "pids")[0])


async def test_background_children_holding_the_output_do_not_outlive_the_command(bash, ctx, tmp_path):
    started = time.monotonic()
    result = await call(bash, ctx, command="sleep 100 & echo $! > pids; echo done")
    assert time.monotonic() - started < 5
    assert text(result) == "done\n"
    assert wait_gone(read_pids(tmp_path / "pids")[0])


async def test_fully_detached_background_processes_keep_running(bash, ctx, tmp_path):
    result = await call(bash, ctx, command="sleep 100 >/dev/null 2>&1 & echo $! > pids")
    pid = read_pids(tmp_path / "pids")[0]
    try:
        assert text(result) == "(no output)"
        assert not is_gone(pid)
    finally:
        os.kill(pid, 9)


async def test_progress_updates_stream_before_the_command_ends(tmp_path, bash):
    seen: list[str] = []

    def on_update(partial: ToolResult) -> None:
        seen.append(partial.text_content())
        if "first" in partial.text_content():
            (tmp_path / "go").touch()  # the command waits for this file before going on

    ctx = FakeToolContext(tmp_path, on_update=on_update)
    command = "echo first; while [ ! -e go ]; do sleep 0.01; done; echo second"
    result = await call(bash, ctx, command=command, timeout=10)
    assert text(result) == "first\nsecond\n"
    assert seen[0] == ""  # the start
    assert any("first" in s and "second" not in s for s in seen)
    assert seen[-1] == "first\nsecond\n"


async def test_shell_command_prefix_runs_first(tmp_path, bash):
    ctx = FakeToolContext(tmp_path, settings={"shellCommandPrefix": "export GREETING=prefixed"})
    assert text(await call(bash, ctx, command="echo $GREETING")) == "prefixed\n"


async def test_shell_path_setting(tmp_path, bash):
    ctx = FakeToolContext(tmp_path, settings={"shellPath": "/bin/sh"})
    assert text(await call(bash, ctx, command="echo $0")) == "/bin/sh\n"
    missing = FakeToolContext(tmp_path, settings={"shellPath": "/no/such/shell"})
    result = await call(bash, missing, command="true")
    assert result.is_error and text(result) == "Custom shell path not found: /no/such/shell"


async def test_missing_working_directory(tmp_path, bash):
    ctx = FakeToolContext(tmp_path / "gone")
    result = await call(bash, ctx, command="true")
    assert result.is_error and text(result).startswith("Working directory does not exist:")


async def test_session_variables_are_exported(tmp_path, bash, monkeypatch):
    monkeypatch.setenv("PI_MODEL", "leaked-from-parent")
    ctx = FakeToolContext(tmp_path)
    ctx.model = Model(id="test-model", provider="test-provider")  # type: ignore[attr-defined]
    result = await call(bash, ctx, command='echo "$PI_PROVIDER/$PI_MODEL"')
    assert text(result) == "test-provider/test-model\n"
    plain = await call(bash, FakeToolContext(tmp_path), command='echo "[$PI_MODEL]"')
    assert text(plain) == "[]\n"


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfds on this platform")
def test_commands_start_no_watcher_thread(tmp_path: Path) -> None:
    """Python 3.11's default child watcher starts a thread per child (≈1.5 ms a
    command); pi learns of exits through pidfds, in every event loop it runs."""
    import sys
    import threading

    from pi_core.tools.shell import run_in_process_group

    async def one(tag: str) -> tuple[bytes, int]:
        chunks: list[bytes] = []
        outcome = await run_in_process_group(
            ["sh", "-c", f"echo {tag}; exit 3"], cwd=str(tmp_path), env=None, on_data=chunks.append
        )
        if sys.version_info < (3, 12):
            watcher = asyncio.get_child_watcher()
            assert type(watcher).__name__ == "PidfdWatcher"
            started.extend(t for t in threading.enumerate() if t.name.startswith("waitpid-"))
        return b"".join(chunks), outcome.exit_code

    started: list[threading.Thread] = []
    assert asyncio.run(one("first loop")) == (b"first loop\n", 3)
    assert asyncio.run(one("second loop")) == (b"second loop\n", 3)  # a new loop is served too
    assert started == []  # ThreadedChildWatcher names its threads waitpid-N
