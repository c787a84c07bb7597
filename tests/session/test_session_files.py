"""Where sessions live, how they are found, resumed, forked and cloned."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from session_helpers import assistant, lines, no_session_dir_env, texts, user  # noqa: F401

from pi_core.session import (
    AmbiguousSessionError,
    EntryNotFoundError,
    SessionManager,
    SessionNotFoundError,
    encode_cwd,
)


def _answered(session: SessionManager, question: str, answer: str = "a") -> None:
    session.append_message(user(question))
    session.append_message(assistant(answer))


def test_cwd_encoding_matches_the_typescript_pi() -> None:
    assert encode_cwd("/home/u/my proj") == "--home-u-my proj--"
    assert encode_cwd("C:\\src\\x").endswith("C--src-x--")


def test_default_location_and_file_name(agent_dir: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    session = SessionManager.create(cwd)
    path = Path(session.get_session_file())
    assert path.parent == agent_dir / "sessions" / encode_cwd(cwd)
    assert session.get_session_dir() == str(path.parent)
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z)_(.+)\.jsonl", path.name)
    assert match is not None and match.group(2) == session.get_session_id()
    header = session.get_header()
    assert header is not None and header.timestamp.replace(":", "-").replace(".", "-") == match.group(1)
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", session.get_session_id()
    )


def test_session_dir_argument_and_environment_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "from-env"))
    assert Path(SessionManager.create("/proj").get_session_file()).parent == tmp_path / "from-env"
    explicit = SessionManager.create("/proj", session_dir=tmp_path / "explicit")
    assert Path(explicit.get_session_file()).parent == tmp_path / "explicit"


def test_custom_session_id_is_validated() -> None:
    assert SessionManager.create("/proj", session_id="run-42").get_session_id() == "run-42"
    with pytest.raises(ValueError, match="Session id"):
        SessionManager.create("/proj", session_id="../escape")


def test_list_is_newest_first_with_summary_fields(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    older = SessionManager.create(cwd)
    _answered(older, "first question")
    older.close()
    newer = SessionManager.create(cwd)
    newer.append_message(user("second question", timestamp=10**13))
    newer.append_message(assistant("answer"))
    newer.append_session_info("Named one")
    newer.close()
    other = SessionManager.create(tmp_path / "elsewhere")
    _answered(other, "other project")
    other.close()

    infos = SessionManager.list(cwd)
    assert [info.id for info in infos] == [newer.get_session_id(), older.get_session_id()]
    first = infos[0]
    assert first.name == "Named one" and first.message_count == 2 and first.first_message == "second question"
    assert first.cwd == str(cwd) and first.path == newer.get_session_file()
    assert first.all_messages_text == "second question answer"
    assert first.modified.timestamp() == pytest.approx(10**10, rel=1e-6)
    assert {info.id for info in SessionManager.list_all()} == {
        older.get_session_id(),
        newer.get_session_id(),
        other.get_session_id(),
    }


def test_a_shared_session_dir_is_filtered_by_cwd(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    mine = SessionManager.create("/proj/a", session_dir=shared)
    _answered(mine, "mine")
    mine.close()
    theirs = SessionManager.create("/proj/b", session_dir=shared)
    _answered(theirs, "theirs")
    theirs.close()
    assert [info.first_message for info in SessionManager.list("/proj/a", session_dir=shared)] == ["mine"]
    assert len(SessionManager.list_all(session_dir=shared)) == 2
    resumed = SessionManager.continue_recent("/proj/a", session_dir=shared)
    assert resumed.get_session_id() == mine.get_session_id()
    resumed.close()


def test_continue_recent_opens_the_latest_session_or_creates_one(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    fresh = SessionManager.continue_recent(cwd)
    assert fresh.get_entries() == [] and not fresh.is_flushed
    _answered(fresh, "hello")
    fresh.close()
    later = SessionManager.create(cwd)
    _answered(later, "later")
    later.close()
    os.utime(fresh.get_session_file(), (1, 1))  # make the first one clearly older
    resumed = SessionManager.continue_recent(cwd)
    assert resumed.get_session_id() == later.get_session_id()
    assert texts(resumed.build_session_context().messages) == ["user:later", "assistant:a"]
    resumed.close()


def test_find_by_full_or_partial_id(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    made = []
    for session_id in ("abc-111", "abc-222", "xyz-333"):
        session = SessionManager.create(cwd, session_id=session_id)
        session.flush()
        session.close()
        made.append(session.get_session_file())
    assert SessionManager.find("abc-111", cwd=cwd) == made[0]
    assert SessionManager.find("xyz") == made[2]
    with pytest.raises(AmbiguousSessionError) as caught:
        SessionManager.find("abc", cwd=cwd)
    assert sorted(caught.value.paths) == sorted(made[:2])
    with pytest.raises(SessionNotFoundError):
        SessionManager.find("nothing")


def test_fork_before_a_user_message_and_at_an_entry(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", session_dir=tmp_path)
    first = session.append_message(user("first"))
    session.append_message(assistant("one"))
    second = session.append_message(user("second"))
    answer = session.append_message(assistant("two"))
    session.set_label(first, "start")

    before = session.fork(second, "before")
    assert before.get_header().parent_session == session.get_session_file()
    assert before.get_session_file() != session.get_session_file()
    assert texts(before.build_session_context().messages) == ["user:first", "assistant:one"]
    assert before.get_label(first) == "start"
    assert before.is_flushed  # it holds an assistant message: written at once
    written = lines(before.get_session_file())
    assert written[0]["parentSession"] == session.get_session_file()
    assert [line["type"] for line in written[1:]] == ["message", "message", "label"]

    at = session.fork(answer, "at")
    assert texts(at.build_session_context().messages) == ["user:first", "assistant:one", "user:second", "assistant:two"]
    assert [e.id for e in at.get_branch()][:4] == [e.id for e in session.get_branch()][:4]

    nothing_before = session.fork(first, "before")
    assert nothing_before.get_entries() == [] and not nothing_before.is_flushed
    assert nothing_before.get_header().parent_session == session.get_session_file()

    with pytest.raises(ValueError, match="not a user message"):
        session.fork(answer, "before")
    with pytest.raises(EntryNotFoundError):
        session.fork("missing0", "at")
    # the original is untouched and still appendable
    session.append_message(user("third"))
    for manager in (session, before, at, nothing_before):
        manager.close()


def test_clone_drops_other_branches_and_rechains_around_labels(tmp_path: Path) -> None:
    session = SessionManager.create("/proj", session_dir=tmp_path)
    root = session.append_message(user("root"))
    session.append_message(assistant("abandoned"))
    session.branch(root)
    session.set_label(root, "mark")  # a label in the middle of the path
    kept = session.append_message(assistant("kept"))
    session.append_compaction("summary", kept, 5)
    clone = session.clone()
    entries = clone.get_entries()
    assert [e.type for e in entries] == ["message", "message", "compaction", "label"]
    assert entries[1].parent_id == root and entries[2].first_kept_entry_id == kept
    assert texts(clone.build_session_context().messages) == texts(session.build_session_context().messages)
    assert clone.get_label(root) == "mark"
    session.close()
    clone.close()


def test_in_memory_fork_stays_in_memory() -> None:
    session = SessionManager.in_memory("/proj")
    question = session.append_message(user("q"))
    session.append_message(assistant("a"))
    fork = session.fork(question, "at")
    assert fork.get_session_file() is None and fork.get_header().parent_session is None
    assert texts(fork.build_session_context().messages) == ["user:q"]


def test_fork_from_copies_a_session_into_another_project(tmp_path: Path) -> None:
    source = SessionManager.create("/proj/old")
    _answered(source, "old work")
    source.close()
    copy = SessionManager.fork_from(source.get_session_file(), tmp_path / "new")
    assert copy.get_cwd() == str(tmp_path / "new")
    assert copy.get_header().parent_session == source.get_session_file()
    header = json.loads(Path(copy.get_session_file()).read_text().splitlines()[0])
    assert header["cwd"] == str(tmp_path / "new")
    assert texts(copy.build_session_context().messages) == ["user:old work", "assistant:a"]
    copy.close()
