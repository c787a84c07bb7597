"""The file: format compatibility, lazy creation, repair, migration, locking, crashes."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from session_helpers import assistant, lines, no_session_dir_env, texts, tool_result, user  # noqa: F401

from pi_core.session import (
    InvalidSessionError,
    ModelRef,
    SessionClosedError,
    SessionLockedError,
    SessionManager,
    SessionReadOnlyError,
)
from pi_hookspecs import CompactionEntry, CustomMessage, UnknownEntry

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def _flushed_session(directory: Path, turns: int = 1) -> SessionManager:
    session = SessionManager.create("/proj", session_dir=directory)
    for turn in range(turns):
        session.append_message(user(f"u{turn}"))
        session.append_message(assistant(f"a{turn}"))
    return session


# --------------------------------------------------------------------------- the TypeScript format


def test_fixture_written_per_session_format_loads_into_the_expected_context(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "ts_session.jsonl", path)
    with SessionManager.open(path) as session:
        assert session.diagnostics == []
        assert session.get_cwd() == "/path/to/project"
        assert session.get_session_id() == "0195b2a4-7c1e-7d2a-9f10-3c4d5e6f7a8b"
        assert session.get_session_name() == "Refactor auth module"
        assert session.get_label("a1b2c3d4") == "checkpoint-1"
        assert session.get_leaf_id() == "k1l2m3n4"
        context = session.build_session_context()
        assert [m.role for m in context.messages] == ["system", "user", "assistant", "toolResult", "system", "user"]
        assert context.model == ModelRef("openai", "gpt-4o")
        assert context.thinking_level == "high"
        system = context.messages[0]
        assert set(system.sections or {}) == {"preamble", "tools", "cwd"}
        assert [tool.name for tool in system.tools_added or []] == ["read", "write"]
        call = context.messages[2].tool_calls()[0]
        assert (call.id, call.name, call.arguments) == ("call_123", "read", {"path": "README.md"})
        assert context.messages[3].tool_call_id == "call_123"
        assert context.messages[5].content[1].mime_type == "image/png"
        # every line round-trips through its model unchanged
        raw = lines(path)[1:]
        assert [entry.to_json() for entry in session.get_entries()] == raw
        # a compaction now checkpoints the replayed prompt and tools
        compaction = session.append_compaction("summary", "g7h8i9j0", 1000)
        checkpoint = session.get_entry(compaction)
        assert isinstance(checkpoint, CompactionEntry) and checkpoint.system_message is not None
        assert set(checkpoint.system_message.sections or {}) == {"preamble", "tools", "cwd", "skills"}
        assert [tool.name for tool in checkpoint.system_message.tools_added or []] == ["read"]
        assert texts(session.build_session_context().messages)[:3] == [
            "system:",
            "compactionSummary:summary",
            "user:Thanks",
        ]


def test_reopening_and_appending_keeps_existing_bytes(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "ts_session.jsonl", path)
    before = path.read_bytes()
    with SessionManager.open(path) as session:
        session.append_message(user("more"))
    after = path.read_bytes()
    assert after.startswith(before)
    new = json.loads(after[len(before) :])
    assert new["parentId"] == "k1l2m3n4" and new["message"]["content"] == "more"


def test_written_lines_follow_the_typescript_layout(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    session.append_message(tool_result())
    session.close()
    header, *entries = lines(session.get_session_file())
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3 and header["cwd"] == "/proj"
    assert all(list(entry)[:4] == ["type", "id", "parentId", "timestamp"] for entry in entries)
    assert entries[0]["parentId"] is None
    assert entries[2]["message"]["toolCallId"] == "call_bash" and entries[2]["message"]["isError"] is False
    text = Path(session.get_session_file()).read_text(encoding="utf-8")
    assert ", " not in text.splitlines()[0] and text.endswith("\n")


# --------------------------------------------------------------------------- lazy creation


def test_nothing_is_written_before_the_first_assistant_message(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", session_dir=tmp_path / "sessions")
    path = Path(session.get_session_file())
    session.append_model_change("anthropic", "claude")
    session.append_thinking_level_change("medium")
    session.append_message(user("question"))
    session.append_custom_entry("ext", {"a": 1})
    assert not path.exists() and not session.is_flushed
    session.append_message(assistant("answer"))
    assert session.is_flushed
    written = lines(path)
    assert [line["type"] for line in written] == [
        "session",
        "model_change",
        "thinking_level_change",
        "message",
        "custom",
        "message",
    ]
    session.append_message(user("next"))
    assert len(lines(path)) == 7  # later appends are immediate
    session.close()


def test_a_session_without_an_assistant_message_leaves_no_file(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", session_dir=tmp_path)
    session.append_message(user("never answered"))
    session.close()
    assert list(tmp_path.iterdir()) == []


def test_flush_writes_the_header_early(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", session_dir=tmp_path, session_id="my-session")
    session.flush()
    assert [line["id"] for line in lines(session.get_session_file())] == ["my-session"]
    session.append_message(user("u"))
    assert len(lines(session.get_session_file())) == 2
    session.close()


# --------------------------------------------------------------------------- damaged files


def test_malformed_lines_are_skipped_with_diagnostics_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = _flushed_session(tmp_path, turns=2)
    session.close()
    good = Path(session.get_session_file()).read_text().splitlines()
    good.insert(2, '{"type":"message", broken')
    good.insert(4, "[1, 2]")
    path.write_text("\n".join(good) + "\n")
    reopened = SessionManager.open(path)
    malformed, not_object = (str(d) for d in reopened.diagnostics)
    assert malformed.startswith(f"{path}:3: malformed line skipped (Expecting property name")
    assert not_object == f"{path}:5: line is not a JSON object; skipped"
    assert texts(reopened.build_session_context().messages) == ["user:u0", "assistant:a0", "user:u1", "assistant:a1"]
    reopened.close()


def test_entry_not_matching_its_format_is_kept_out_of_the_context_with_a_diagnostic(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    session.close()
    path = Path(session.get_session_file())
    bad = {
        "type": "message",
        "id": "badbad00",
        "parentId": lines(path)[-1]["id"],
        "timestamp": "2024-01-01T00:00:00Z",
        "message": {"role": "toolResult", "content": []},
    }
    with path.open("a") as handle:
        handle.write(json.dumps(bad) + "\n")
    reopened = SessionManager.open(path)
    assert texts(reopened.build_session_context().messages) == ["user:u0", "assistant:a0"]
    assert isinstance(reopened.get_entry("badbad00"), UnknownEntry)
    assert reopened.get_entry("badbad00").to_json() == bad
    assert [d.line for d in reopened.diagnostics] == [4]
    assert "badbad00" in reopened.diagnostics[0].message
    reopened.close()


def test_a_torn_last_line_is_dropped_and_later_appends_are_clean(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    session.close()
    path = Path(session.get_session_file())
    intact = path.read_bytes()
    path.write_bytes(intact + b'{"type":"message","id":"torn0000","parentId":null,"mess')
    reopened = SessionManager.open(path)
    assert len(reopened.diagnostics) == 1 and reopened.diagnostics[0].line == 4
    assert "incomplete last line" in reopened.diagnostics[0].message
    assert path.read_bytes() == intact  # truncated back to the last complete line
    reopened.append_message(user("after the crash"))
    reopened.close()
    again = SessionManager.open(path)
    assert again.diagnostics == []
    assert texts(again.build_session_context().messages)[-1] == "user:after the crash"
    again.close()


def test_a_torn_multibyte_character_at_the_end_is_dropped_too(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    session.close()
    path = Path(session.get_session_file())
    intact = path.read_bytes()
    path.write_bytes(intact + '{"type":"message","message":{"role":"user","content":"café'.encode()[:-1])
    reopened = SessionManager.open(path)
    assert [d.line for d in reopened.diagnostics] == [4] and path.read_bytes() == intact
    assert texts(reopened.build_session_context().messages) == ["user:u0", "assistant:a0"]
    reopened.close()


def test_null_content_of_old_files_is_read_as_empty(tmp_path: Path) -> None:
    session = SessionManager.in_memory(
        entries=[
            {"type": "session", "version": 3, "id": "s", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/p"},
            {
                "type": "message",
                "id": "a",
                "parentId": None,
                "timestamp": "t",
                "message": {"role": "user", "content": None},
            },
            {
                "type": "custom_message",
                "id": "b",
                "parentId": "a",
                "timestamp": "t",
                "customType": "x",
                "content": None,
            },
        ]
    )
    assert [m.content for m in session.build_session_context().messages] == [[], []]
    assert session.diagnostics == []


def test_a_complete_last_line_without_newline_is_kept_and_terminated(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    session.close()
    path = Path(session.get_session_file())
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    reopened = SessionManager.open(path)
    assert texts(reopened.build_session_context().messages) == ["user:u0", "assistant:a0"]
    reopened.append_message(user("next"))
    reopened.close()
    assert len(lines(path)) == 4 and SessionManager.open(path, read_only=True).diagnostics == []


def test_empty_file_gets_a_header_and_missing_path_becomes_a_new_session(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    session = SessionManager.open(empty, cwd="/proj")
    assert [line["type"] for line in lines(empty)] == ["session"]
    session.append_message(user("u"))
    session.close()
    assert len(lines(empty)) == 2
    missing = tmp_path / "new" / "explicit.jsonl"
    fresh = SessionManager.open(missing, cwd="/proj")
    assert fresh.get_session_file() == str(missing) and not missing.exists()
    fresh.append_message(user("u"))
    fresh.append_message(assistant("a"))
    fresh.close()
    assert len(lines(missing)) == 3


def test_a_file_that_is_not_a_session_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(InvalidSessionError, match=r"notes\.jsonl"):
        SessionManager.open(path)
    assert path.read_text() == '{"hello": "world"}\n'
    SessionManager.open(path.with_name("other.jsonl")).close()  # the lock of the failed open was released


def test_a_failed_write_is_rolled_back_and_not_committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _flushed_session(tmp_path)
    path = Path(session.get_session_file())
    size = path.stat().st_size
    leaf = session.get_leaf_id()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space"):
        session.append_message(user("lost"))
    monkeypatch.setattr(os, "write", real_write)
    assert path.stat().st_size == size and session.get_leaf_id() == leaf
    session.append_message(user("kept"))
    session.close()
    reopened = SessionManager.open(path)
    assert reopened.diagnostics == []
    assert texts(reopened.build_session_context().messages)[-1] == "user:kept"
    reopened.close()


# --------------------------------------------------------------------------- migration


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def test_v1_linear_file_is_migrated_and_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    _write_jsonl(
        path,
        [
            {"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/proj"},
            {
                "type": "message",
                "timestamp": "2024-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": "one", "timestamp": 1},
            },
            {
                "type": "message",
                "timestamp": "2024-01-01T00:00:02.000Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "two"}],
                    "provider": "anthropic",
                    "model": "claude",
                    "timestamp": 2,
                },
            },
            {
                "type": "message",
                "timestamp": "2024-01-01T00:00:03.000Z",
                "message": {"role": "user", "content": "three", "timestamp": 3},
            },
            {
                "type": "compaction",
                "timestamp": "2024-01-01T00:00:04.000Z",
                "summary": "one and two",
                "firstKeptEntryIndex": 3,
                "tokensBefore": 50,
            },
        ],
    )
    session = SessionManager.open(path)
    records = lines(path)
    assert records[0]["version"] == 3
    ids = [record["id"] for record in records[1:]]
    assert [record["parentId"] for record in records[1:]] == [None, *ids[:-1]]
    assert records[4]["firstKeptEntryId"] == ids[2] and "firstKeptEntryIndex" not in records[4]
    assert texts(session.build_session_context().messages) == ["compactionSummary:one and two", "user:three"]
    session.close()
    assert lines(path) == records  # stable once migrated


def test_v2_hook_message_role_becomes_custom(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    _write_jsonl(
        path,
        [
            {"type": "session", "version": 2, "id": "old2", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/proj"},
            {
                "type": "message",
                "id": "aaaaaaaa",
                "parentId": None,
                "timestamp": "2024-01-01T00:00:01.000Z",
                "message": {
                    "role": "hookMessage",
                    "customType": "ext",
                    "content": "from a hook",
                    "display": True,
                    "timestamp": 1,
                },
            },
        ],
    )
    session = SessionManager.open(path)
    message = session.build_session_context().messages[0]
    assert isinstance(message, CustomMessage) and message.content == "from a hook"
    assert lines(path)[1]["message"]["role"] == "custom" and lines(path)[0]["version"] == 3
    session.close()


def test_in_memory_sessions_migrate_too() -> None:
    session = SessionManager.in_memory(
        entries=[
            {"type": "session", "id": "x", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/proj"},
            {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "hi", "timestamp": 1}},
        ]
    )
    assert texts(session.build_session_context().messages) == ["user:hi"]
    assert session.get_header().version == 3


# --------------------------------------------------------------------------- locking and life cycle


def test_a_second_open_of_a_locked_file_fails_naming_the_file(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    path = session.get_session_file()
    with pytest.raises(SessionLockedError) as caught:
        SessionManager.open(path)
    assert path in str(caught.value) and caught.value.path == path
    viewer = SessionManager.open(path, read_only=True)  # reading needs no lock
    assert texts(viewer.build_session_context().messages) == ["user:u0", "assistant:a0"]
    with pytest.raises(SessionReadOnlyError):
        viewer.append_message(user("no"))
    session.close()
    with pytest.raises(SessionClosedError):
        session.append_message(user("closed"))
    SessionManager.open(path).close()


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ},
    )


def test_two_processes_cannot_append_to_one_session(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    path = session.get_session_file()
    session.close()
    holder = _child(
        """
        import sys
        from pi_core.session import SessionManager
        session = SessionManager.open(sys.argv[1])
        print("locked", flush=True)
        sys.stdin.readline()
        session.close()
        """,
        path,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionLockedError, match="in use by another pi process"):
            SessionManager.open(path)
    finally:
        holder.communicate("done\n", timeout=30)
    assert holder.returncode == 0
    SessionManager.open(path).close()


def test_appends_survive_sigkill_and_the_file_stays_appendable(tmp_path: Path) -> None:
    session = _flushed_session(tmp_path)
    path = session.get_session_file()
    session.close()
    writer = _child(
        """
        import sys
        from pi_core.session import SessionManager
        from pi_hookspecs import TextContent, ToolResultMessage
        session = SessionManager.open(sys.argv[1])
        i = 0
        while True:
            text = ("line %d " % i) * (50 + i % 400)
            entry_id = session.append_message(
                ToolResultMessage(tool_call_id="c%d" % i, tool_name="bash", content=[TextContent(text=text)])
            )
            print(entry_id, flush=True)
            i += 1
        """,
        path,
    )
    assert writer.stdout is not None
    confirmed = [writer.stdout.readline().strip() for _ in range(300)]
    writer.send_signal(signal.SIGKILL)
    rest, _ = writer.communicate(timeout=30)
    confirmed += rest.split()
    assert writer.returncode == -signal.SIGKILL

    reopened = SessionManager.open(path)
    ids = {entry.id for entry in reopened.get_entries()}
    assert set(confirmed) <= ids  # every append that returned is on disk
    assert len(reopened.diagnostics) <= 1  # at most the one line being written when killed
    reopened.append_message(user("resumed"))
    reopened.close()
    final = SessionManager.open(path)
    assert final.diagnostics == []
    branch = final.get_branch()
    assert branch[-1].message.content == "resumed" and len(branch) == len(ids) + 1
    final.close()
