"""The entry tree: ids, parents, the leaf, branching, labels and names."""

from __future__ import annotations

import re

import pytest
from session_helpers import assistant, no_session_dir_env, texts, tool_result, user  # noqa: F401

from pi_core.session import EntryNotFoundError, SessionManager
from pi_hookspecs import BranchSummaryEntry, LabelEntry, SessionView


def test_entries_chain_by_parent_id_with_unique_8_hex_ids_and_iso_timestamps() -> None:
    session = SessionManager.in_memory("/p")
    ids = [session.append_message(user(f"u{i}")) for i in range(50)]
    assert len(set(ids)) == 50
    assert all(re.fullmatch(r"[0-9a-f]{8}", entry_id) for entry_id in ids)
    entries = session.get_entries()
    assert entries[0].parent_id is None
    assert [e.parent_id for e in entries[1:]] == ids[:-1]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e.timestamp) for e in entries)
    assert session.get_leaf_id() == ids[-1]


def test_manager_is_a_session_view() -> None:
    session = SessionManager.in_memory("/p")
    assert isinstance(session, SessionManager)
    view: SessionView = session
    assert view.get_cwd() == "/p" and view.get_session_file() is None and view.get_session_dir() is None
    assert view.get_header() is not None and view.get_header().version == 3
    assert view.get_session_id() == view.get_header().id


def test_branch_moves_the_leaf_and_new_entries_fork_the_tree() -> None:
    session = SessionManager.in_memory("/p")
    first = session.append_message(user("first"))
    session.append_message(assistant("answer one"))
    session.append_message(user("second"))
    session.branch(first)
    alternative = session.append_message(assistant("answer two"))
    assert session.get_entry(alternative).parent_id == first
    assert texts(session.build_session_context().messages) == ["user:first", "assistant:answer two"]
    # the abandoned branch is intact
    tree = session.get_tree()
    assert len(tree) == 1 and len(tree[0].children) == 2
    assert [child.entry.id for child in tree[0].children][1] == alternative
    assert [e.id for e in session.get_branch(alternative)] == [first, alternative]


def test_branch_to_unknown_entry_raises() -> None:
    session = SessionManager.in_memory("/p")
    with pytest.raises(EntryNotFoundError, match="nope"):
        session.branch("nope")


def test_reset_leaf_starts_a_new_root() -> None:
    session = SessionManager.in_memory("/p")
    session.append_message(user("one"))
    session.reset_leaf()
    assert session.get_leaf_id() is None
    assert session.build_session_context().messages == []
    root = session.append_message(user("two"))
    assert session.get_entry(root).parent_id is None
    assert len(session.get_tree()) == 2


def test_branch_with_summary_records_the_left_leaf_and_adds_a_summary_to_the_context() -> None:
    session = SessionManager.in_memory("/p")
    start = session.append_message(user("task"))
    session.append_message(assistant("tried A"))
    left = session.append_message(tool_result())
    summary_id = session.branch_with_summary(start, "A did not work", details={"readFiles": ["a.py"]})
    entry = session.get_entry(summary_id)
    assert isinstance(entry, BranchSummaryEntry)
    assert entry.parent_id == start and entry.from_id == left and entry.details == {"readFiles": ["a.py"]}
    assert texts(session.build_session_context().messages) == ["user:task", "branchSummary:A did not work"]
    session.reset_leaf()
    root_summary = session.branch_with_summary(None, "from nothing")
    assert session.get_entry(root_summary).parent_id is None
    assert session.get_entry(root_summary).from_id == "root"


def test_labels_last_wins_none_clears_unknown_id_raises() -> None:
    session = SessionManager.in_memory("/p")
    target = session.append_message(user("hello"))
    session.set_label(target, "first")
    session.set_label(target, "second")
    assert session.get_label(target) == "second"
    label_entries = [e for e in session.get_entries() if isinstance(e, LabelEntry)]
    assert [e.label for e in label_entries] == ["first", "second"]
    session.set_label(target, None)
    assert session.get_label(target) is None
    cleared = session.get_entries()[-1]
    assert isinstance(cleared, LabelEntry) and "label" not in cleared.to_json()
    session.set_label(target, "again")
    session.set_label(target, "")
    assert session.get_label(target) is None
    with pytest.raises(EntryNotFoundError):
        session.set_label("deadbeef", "x")
    # labels are not context
    assert texts(session.build_session_context().messages) == ["user:hello"]


def test_labels_show_in_the_tree() -> None:
    session = SessionManager.in_memory("/p")
    target = session.append_message(user("hello"))
    session.set_label(target, "checkpoint")
    node = session.get_tree()[0]
    assert node.label == "checkpoint" and node.label_timestamp is not None


def test_session_name_latest_wins_and_is_sanitised() -> None:
    session = SessionManager.in_memory("/p")
    assert session.get_session_name() is None
    session.append_session_info("Refactor\nauth  ")
    assert session.get_session_name() == "Refactor auth"
    session.set_session_name("")
    assert session.get_session_name() is None


def test_orphans_and_repeated_ids_are_roots_and_first_wins_in_tree() -> None:
    raw = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2024-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "a", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "missing",
            "timestamp": "2024-01-01T00:00:02.000Z",
            "message": {"role": "user", "content": "b", "timestamp": 2},
        },
        {
            "type": "message",
            "id": "c",
            "parentId": "c",
            "timestamp": "2024-01-01T00:00:03.000Z",
            "message": {"role": "user", "content": "c", "timestamp": 3},
        },
    ]
    session = SessionManager.in_memory(entries=raw)
    assert session.get_cwd() == "/p"
    assert [node.entry.id for node in session.get_tree()] == ["a", "b", "c"]
    # a self-parented entry must not loop forever
    assert [e.id for e in session.get_branch("c")] == ["c"]


def test_get_children_and_leaf_entry() -> None:
    session = SessionManager.in_memory("/p")
    root = session.append_message(user("r"))
    a = session.append_message(assistant("a"))
    session.branch(root)
    b = session.append_message(assistant("b"))
    assert {e.id for e in session.get_children(root)} == {a, b}
    assert session.get_leaf_entry().id == b


def _walk(session: SessionManager, leaf: str | None) -> list[str]:
    """The path to ``leaf`` by following parent ids (the definition of a branch)."""
    by_id = {}
    for entry in session.get_entries():
        by_id.setdefault(entry.id, entry)
    path: list[str] = []
    entry = by_id.get(leaf) if leaf else None
    while entry is not None and entry.id not in path:
        path.append(entry.id)
        entry = by_id.get(entry.parent_id) if entry.parent_id else None
    return path[::-1]


@pytest.mark.parametrize("seed", range(12))
def test_the_branch_of_a_session_with_or_without_forks_is_the_parent_walk(seed: int) -> None:
    """A session without forks answers its branch from the file order; appending,
    branching, resetting the leaf and reloading must keep that answer the walk's."""
    import random

    rng = random.Random(seed)
    session = SessionManager.in_memory("/p")
    for step in range(60):
        action = rng.random()
        ids = [e.id for e in session.get_entries()]
        if action < 0.08 and ids:
            session.branch(rng.choice(ids))
        elif action < 0.1:
            session.reset_leaf()
        elif action < 0.15 and ids:
            session = SessionManager.in_memory(entries=[session.get_header(), *session.get_entries()])
        else:
            session.append_message(user(f"m{step}"))
        leaf = session.get_leaf_id()
        assert [e.id for e in session.get_branch()] == _walk(session, leaf)
        assert [m.content for m in session.build_session_context().messages] == [
            session.get_entry(i).message.content
            for i in _walk(session, leaf)  # type: ignore[union-attr]
        ]
