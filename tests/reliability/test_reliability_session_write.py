"""The session file when the file system gets in the way: a disk that fills up while pi
writes, a read-only (or full) session folder before the first request, a session file
deleted or replaced while pi runs. Every test runs the real ``pi`` against a real
mount (a tiny or read-only tmpfs; mounting needs root, the tests are skipped without)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import (
    RpcProcess,
    configure_local_endpoint,
    of_type,
    run_pi,
    scripted_model,
    steps_env,
    text_reply,
    write_plugin,
)
from wire_server import WireServer, use_server

# four bash calls of 3,000 characters each: the first three results fit on a 12 KiB
# tmpfs, the fourth does not
BIG_STEPS = [f"head -c 3000 /dev/zero | tr '\\0' {letter}" for letter in "abcd"]
FULL = re.compile(r"^pi: cannot write session (/\S+\.jsonl): No space left on device$")
READ_ONLY = re.compile(r"^pi: cannot write session (/\S+\.jsonl): Read-only file system$")


def _mount_tmpfs(where: Path, options: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")


def _unmount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 12 KiB file system for the session folder."""
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "size=12k,mode=0700")
    try:
        yield disk
    finally:
        _unmount(disk)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def _message_key(message: dict[str, Any]) -> tuple[Any, ...]:
    return (message["role"], message.get("timestamp"), json.dumps(message.get("content"), sort_keys=True))


def _complete_records(path: Path) -> list[dict[str, Any]]:
    """The file's records; every line is whole (the file ends with a newline)."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"{path}: an incomplete last line"
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def _messages(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["message"] for r in records if r["type"] == "message"]


def _stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# ============================================================ a disk that fills up


@pytest.mark.parametrize("mode", ["print", "json"])
def test_a_full_disk_is_one_line_naming_the_file_and_status_1(
    mode: str, small_disk: Path, cwd: Path, tmp_path: Path
) -> None:
    mode_args = ["-p"] if mode == "print" else ["--mode", "json"]
    out = run_pi(
        *mode_args,
        *scripted_model(tmp_path),
        "--session-dir",
        str(small_disk),
        "go",
        cwd=cwd,
        env=steps_env(*BIG_STEPS),
    )
    assert out.returncode == 1, out.stderr
    lines = _stderr_lines(out.stderr)
    assert len(lines) == 1, out.stderr  # no traceback
    match = FULL.match(lines[0])
    assert match, lines[0]
    (session_file,) = small_disk.glob("*.jsonl")
    assert match.group(1) == str(session_file)
    records = _complete_records(session_file)
    on_disk = {_message_key(m) for m in _messages(records)}
    assert len(on_disk) >= 4  # the user message, the first answer and its result at least
    if mode == "print":
        assert out.stdout == ""  # no answer printed for a session that was not saved
        return
    stream = [json.loads(line) for line in out.stdout.splitlines()]
    (notice,) = [r for r in stream if r["type"] == "notice"]
    assert notice["level"] == "error" and notice["sessionFile"] == str(session_file)
    assert notice["message"] == lines[0].removeprefix("pi: ")
    acknowledged = [r["message"] for r in stream if r["type"] == "message_end"]
    assert [m for m in acknowledged if _message_key(m) not in on_disk] == []  # nothing acknowledged is lost
    after = stream[stream.index(notice) + 1 :]
    assert not [r for r in after if r["type"] == "message_end"]
    assert stream[-1] == {"type": "agent_settled", "aborted": True}


def test_a_full_disk_in_rpc_mode_is_an_error_notice_and_status_1(small_disk: Path, cwd: Path, tmp_path: Path) -> None:
    with RpcProcess(
        *scripted_model(tmp_path),
        "--session-dir",
        str(small_disk),
        cwd=cwd,
        env={"PI_EXTENSIONS": "", **steps_env(*BIG_STEPS)},
    ) as rpc:
        rpc.ok("get_state")
        rpc.command("prompt", message="go")
        notice = rpc.wait_for(of_type("notice"))
        rest = rpc.rest()  # pi stops by itself: stdin is still open
        status = rpc.wait()
        time.sleep(0.2)  # the stderr reader
        stderr = rpc.stderr
    assert status == 1, stderr
    (session_file,) = small_disk.glob("*.jsonl")
    assert notice["level"] == "error" and notice["sessionFile"] == str(session_file)
    assert notice["message"] == f"cannot write session {session_file}: No space left on device"
    lines = _stderr_lines(stderr)
    assert lines == [f"pi: {notice['message']}"], stderr
    assert {"type": "agent_settled", "aborted": False} not in rest
    assert not [r for r in rest if r["type"] == "message_end"]
    on_disk = {_message_key(m) for m in _messages(_complete_records(session_file))}
    acknowledged = [r["message"] for r in rpc.records if r["type"] == "message_end"]
    assert acknowledged and [m for m in acknowledged if _message_key(m) not in on_disk] == []


# ============================================================ checked before the first request


@pytest.fixture(params=["read-only", "full"])
def unwritable_folder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, re.Pattern[str]]]:
    folder = tmp_path / "sessions"
    if request.param == "read-only":
        _mount_tmpfs(folder, "ro,size=64k")
        expected = READ_ONLY
    else:
        _mount_tmpfs(folder, "size=8k")
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill it up to the last byte
            while os.write(fd, b"x" * 1024):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        expected = FULL
    try:
        yield folder, expected
    finally:
        _unmount(folder)


@pytest.mark.parametrize("mode", ["print", "json", "rpc"])
def test_an_unwritable_session_folder_stops_pi_before_any_request(
    mode: str, unwritable_folder: tuple[Path, re.Pattern[str]], wire: WireServer, cwd: Path
) -> None:
    folder, expected = unwritable_folder
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("a paid answer"))
    mode_args = {"print": ["-p", "hello"], "json": ["--mode", "json", "hello"], "rpc": ["--mode", "rpc"]}[mode]
    out = run_pi(
        *mode_args,
        "--model",
        model,
        "--session-dir",
        str(folder),
        cwd=cwd,
        stdin='{"type": "prompt", "message": "hello"}\n' if mode == "rpc" else None,
    )
    assert wire.requests == []  # nothing paid for
    assert out.returncode == 1, out.stderr
    lines = _stderr_lines(out.stderr)
    assert len(lines) == 1 and expected.match(lines[0]), out.stderr
    assert Path(expected.match(lines[0]).group(1)).parent == folder  # type: ignore[union-attr]
    assert out.stdout == ""
    assert not list(folder.glob("*.jsonl")) and not list(folder.glob(".*probe"))


# ============================================================ deleted or replaced while pi runs


def test_a_session_file_deleted_while_pi_runs_is_written_again(cwd: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    steps = steps_env("echo one", f"rm {sessions}/*.jsonl", "echo three")
    out = run_pi("--mode", "json", *scripted_model(tmp_path), "--session-dir", str(sessions), "go", cwd=cwd, env=steps)
    assert out.returncode == 0, out.stderr
    (session_file,) = sessions.glob("*.jsonl")
    lines = _stderr_lines(out.stderr)
    assert len(lines) == 1, out.stderr
    assert re.fullmatch(
        rf"pi: warning: session file {re.escape(str(session_file))} was deleted while pi ran; "
        r"the whole session \(\d+ lines\) was written to it again",
        lines[0],
    ), lines[0]
    stream = [json.loads(line) for line in out.stdout.splitlines()]
    (notice,) = [r for r in stream if r["type"] == "notice"]
    assert notice["level"] == "warning" and notice["recoveredFile"] == str(session_file)
    records = _complete_records(session_file)
    assert records[0]["type"] == "session"
    acknowledged = [r["message"] for r in stream if r["type"] == "message_end"]
    assert [_message_key(m) for m in _messages(records)] == [_message_key(m) for m in acknowledged]
    roles = [m["role"] for m in acknowledged if m["role"] != "system"]
    assert roles == ["user", *["assistant", "toolResult"] * 3, "assistant"]  # nothing lost


def test_a_session_file_replaced_while_pi_runs_continues_beside_it(cwd: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    replace = f"for f in {sessions}/*.jsonl; do echo '{{}}' > {sessions}/other; mv {sessions}/other $f; done"
    out = run_pi(
        "--mode",
        "json",
        *scripted_model(tmp_path),
        "--session-dir",
        str(sessions),
        "go",
        cwd=cwd,
        env=steps_env("echo one", replace, "echo three"),
    )
    assert out.returncode == 0, out.stderr
    (original,) = sessions.glob("*[0-9a-f].jsonl")
    assert original.read_text() == "{}\n"  # the file put there is left alone
    (recovered,) = sessions.glob("*.recovered-*.jsonl")
    assert recovered.name.startswith(original.name.removesuffix(".jsonl") + ".recovered-")
    lines = _stderr_lines(out.stderr)
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"pi: warning: session file {original} was replaced by another file while pi ran")
    assert lines[0].endswith(f"was written to {recovered} and continues there")
    stream = [json.loads(line) for line in out.stdout.splitlines()]
    (notice,) = [r for r in stream if r["type"] == "notice"]
    assert notice["level"] == "warning" and notice["sessionFile"] == str(original)
    assert notice["recoveredFile"] == str(recovered)
    acknowledged = [r["message"] for r in stream if r["type"] == "message_end"]
    assert [_message_key(m) for m in _messages(_complete_records(recovered))] == [_message_key(m) for m in acknowledged]
    # the recovered file is a session pi opens and goes on with
    again = run_pi(
        "-p", *scripted_model(tmp_path), "--session", str(recovered), "more", cwd=cwd, env=steps_env(answer="continued")
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == "continued\n"


def test_a_session_file_deleted_after_the_last_append_is_written_again_at_exit(cwd: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    plugin = write_plugin(
        tmp_path,
        "remover",
        """
        import os

        from pi_hookspecs import hookimpl


        @hookimpl
        def agent_settled(event, ctx):
            os.unlink(ctx.session_manager.get_session_file())
    """,
    )
    out = run_pi(
        "--mode",
        "json",
        *scripted_model(tmp_path),
        "-e",
        str(plugin),
        "--session-dir",
        str(sessions),
        "go",
        cwd=cwd,
        env=steps_env("echo one"),
    )
    assert out.returncode == 0, out.stderr
    (session_file,) = sessions.glob("*.jsonl")
    assert f"pi: warning: session file {session_file} was deleted while pi ran" in out.stderr
    stream = [json.loads(line) for line in out.stdout.splitlines()]
    acknowledged = [r["message"] for r in stream if r["type"] == "message_end"]
    assert [_message_key(m) for m in _messages(_complete_records(session_file))] == [
        _message_key(m) for m in acknowledged
    ]


def test_rpc_clients_get_a_warning_notice_and_the_new_file(cwd: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    replace = f"for f in {sessions}/*.jsonl; do echo '{{}}' > {sessions}/other; mv {sessions}/other $f; done"
    with RpcProcess(
        *scripted_model(tmp_path),
        "--session-dir",
        str(sessions),
        cwd=cwd,
        env={"PI_EXTENSIONS": "", **steps_env("echo one", replace)},
    ) as rpc:
        rpc.prompt_and_settle("go")
        (notice,) = rpc.seen(of_type("notice"))
        state = rpc.ok("get_state")
        rpc.prompt_and_settle("and more")  # goes on in the recovered file
        rpc.close_stdin()
        rpc.rest()
        assert rpc.wait() == 0, rpc.stderr
    (recovered,) = sessions.glob("*.recovered-*.jsonl")
    assert notice["level"] == "warning" and notice["recoveredFile"] == str(recovered)
    assert state["sessionFile"] == str(recovered)
    acknowledged = [r["message"] for r in rpc.records if r["type"] == "message_end"]
    assert [_message_key(m) for m in _messages(_complete_records(recovered))] == [_message_key(m) for m in acknowledged]


def test_the_terminal_says_so_when_the_session_file_is_deleted(cwd: Path, tmp_path: Path) -> None:
    from reliability_helpers import Pi

    sessions = tmp_path / "sessions"
    steps = steps_env("echo one", f"rm {sessions}/*.jsonl", "echo three")
    pi = Pi(*scripted_model(tmp_path), "--session-dir", str(sessions), cwd=cwd, env=steps)
    try:
        pi.expect("› ")
        pi.line("go")
        pi.expect("warning: session file")  # in the transcript, once
        pi.expect("deleted")  # the line wraps where the path makes it
        pi.expect("all done")
        pi.line("/quit")
        assert pi.wait_exit() == 0
    finally:
        pi.close()
    (session_file,) = sessions.glob("*.jsonl")
    roles = [m["role"] for m in _messages(_complete_records(session_file)) if m["role"] != "system"]
    assert roles == ["user", *["assistant", "toolResult"] * 3, "assistant"]
