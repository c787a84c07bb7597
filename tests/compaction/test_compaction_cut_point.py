"""find_cut_point: budgets, valid cut points, split turns, recovery suffixes."""

from __future__ import annotations

from compaction_helpers import Session, text_of_size

from pi_core.compaction import find_cut_point, find_turn_start_index, project_path
from pi_hookspecs import MessageEntry, ToolResultMessage


def _tool_heavy_session() -> Session:
    session = Session()
    for turn in range(4):
        session.user(f"task {turn} " + text_of_size(50))
        session.assistant("reading", ("read", {"path": f"f{turn}.py"}))
        session.tool_result(text_of_size(300))
        session.assistant("editing", ("edit", {"path": f"f{turn}.py"}), ("read", {"path": "g.py"}))
        session.tool_result(text_of_size(200))
        session.tool_result(text_of_size(10))
        session.assistant("done " + text_of_size(20))
    return session


def test_cut_is_never_at_a_tool_result_whatever_the_budget() -> None:
    session = _tool_heavy_session()
    entries = session.entries
    for keep in range(0, 3500, 7):
        cut = find_cut_point(entries, 0, len(entries), keep)
        kept = entries[cut.first_kept_entry_index]
        assert isinstance(kept, MessageEntry)
        assert not isinstance(kept.message, ToolResultMessage), keep


def test_cut_at_user_message_does_not_split() -> None:
    session = Session()
    session.user(text_of_size(100))
    session.assistant(text_of_size(100))
    second = session.user(text_of_size(100))
    session.assistant(text_of_size(100))
    cut = find_cut_point(session.entries, 0, len(session.entries), 150)
    assert cut.first_kept_entry_index == session.index(second.id)
    assert (cut.turn_start_index, cut.is_split_turn) == (None, False)


def test_one_oversized_span_is_split_at_an_assistant_message() -> None:
    session = Session()
    user = session.user("do a big job")
    session.assistant("step", ("bash", {"command": "make"}))
    session.tool_result(text_of_size(500), "bash")
    keep_from = session.assistant("step 2", ("bash", {"command": "make test"}))
    session.tool_result(text_of_size(500), "bash")
    cut = find_cut_point(session.entries, 0, len(session.entries), 400)
    assert cut.first_kept_entry_index == session.index(keep_from.id)
    assert cut.is_split_turn
    assert cut.turn_start_index == session.index(user.id)


def test_budget_landing_on_a_tool_result_keeps_the_next_cut_point() -> None:
    session = Session()
    session.user("go")
    session.assistant("a", ("read", {"path": "x"}))
    session.tool_result(text_of_size(1000))
    after = session.assistant("b")
    session.user(text_of_size(10))
    # The budget is reached inside the big tool result: the cut moves forward.
    cut = find_cut_point(session.entries, 0, len(session.entries), 100)
    assert cut.first_kept_entry_index == session.index(after.id)


def test_metadata_right_before_the_cut_is_kept_with_it() -> None:
    session = Session()
    session.user(text_of_size(100))
    session.assistant(text_of_size(100))
    change = session.model_change()
    session.label("e0000001")
    session.user(text_of_size(100))
    session.assistant(text_of_size(100))
    cut = find_cut_point(session.entries, 0, len(session.entries), 150)
    assert cut.first_kept_entry_index == session.index(change.id)
    assert not cut.is_split_turn


def test_budget_never_reached_keeps_everything_from_the_first_cut_point() -> None:
    session = Session()
    session.model_change()
    first = session.user("hi")
    session.assistant("hello")
    cut = find_cut_point(session.entries, 0, len(session.entries), 20_000)
    # The leading metadata is absorbed; nothing would be summarised.
    assert cut.first_kept_entry_index == 0
    assert session.index(first.id) == 1


def test_without_cut_points_the_start_is_kept() -> None:
    session = Session()
    session.model_change()
    session.label("x")
    cut = find_cut_point(session.entries, 1, 2, 10)
    assert (cut.first_kept_entry_index, cut.is_split_turn) == (1, False)


def test_custom_messages_and_branch_summaries_are_cut_points_and_turn_starts() -> None:
    session = Session()
    session.user(text_of_size(200))
    note = session.custom_message(text_of_size(50))
    session.assistant(text_of_size(50))
    cut = find_cut_point(session.entries, 0, len(session.entries), 90)
    assert cut.first_kept_entry_index == session.index(note.id)
    assert not cut.is_split_turn

    session = Session()
    session.user(text_of_size(200))
    summary = session.branch_summary(text_of_size(50))
    session.assistant(text_of_size(50))
    cut = find_cut_point(session.entries, 0, len(session.entries), 90)
    assert cut.first_kept_entry_index == session.index(summary.id)


def test_bash_execution_starts_a_span() -> None:
    session = Session()
    session.user(text_of_size(200))
    bash = session.bash("ls", text_of_size(10))
    session.assistant(text_of_size(300))
    cut = find_cut_point(session.entries, 0, len(session.entries), 250)
    # The budget is reached at the assistant message, inside the span started by !ls.
    assert cut.first_kept_entry_index == session.index(bash.id) + 1
    assert cut.is_split_turn and cut.turn_start_index == session.index(bash.id)
    assert find_turn_start_index(session.entries, 2, 0) == session.index(bash.id)


def test_omitted_entries_weigh_nothing_in_a_projection() -> None:
    session = Session()
    session.user(text_of_size(100))
    session.assistant(text_of_size(100))
    second = session.user(text_of_size(100))
    huge = session.assistant(text_of_size(10_000))
    session.edit(huge.id, None)
    session.user(text_of_size(10))
    raw = find_cut_point(session.entries, 0, len(session.entries), 100)
    assert raw.first_kept_entry_index == session.index(huge.id)  # raw: the huge reply fills the budget
    projection = project_path(session.entries)
    cut = find_cut_point(projection, 0, len(projection), 100)
    assert projection[cut.first_kept_entry_index].entry.id == second.id


def test_recovery_moves_the_cut_past_an_over_budget_input() -> None:
    session = Session()
    session.user(text_of_size(100))
    session.assistant(text_of_size(100))
    big_input = session.user(text_of_size(50_000))
    attempt = session.assistant("", stop_reason="length")
    session.edit(attempt.id, None)  # recovery omitted the failed attempt
    projection = project_path(session.entries)
    cut = find_cut_point(projection, 0, len(projection), 20_000)
    assert projection[cut.first_kept_entry_index].entry.id == attempt.id
    assert cut.is_split_turn
    assert cut.turn_start_index is not None
    assert projection[cut.turn_start_index].entry.id == big_input.id


def test_recovery_advance_is_blocked_by_a_replacement_of_the_input_or_a_visible_suffix() -> None:
    session = Session()
    big_input = session.user(text_of_size(50_000))
    attempt = session.assistant("", stop_reason="length")
    session.edit(attempt.id, None)
    session.edit(big_input.id, "shorter input " + text_of_size(30_000))
    projection = project_path(session.entries)
    cut = find_cut_point(projection, 0, len(projection), 20_000)
    assert projection[cut.first_kept_entry_index].entry.id == big_input.id

    session = Session()
    big_input = session.user(text_of_size(50_000))
    attempt = session.assistant("", stop_reason="length")
    session.edit(attempt.id, None)
    note = session.custom_message("queued note")  # visible: the suffix is not invisible
    projection = project_path(session.entries)
    cut = find_cut_point(projection, 0, len(projection), 20_000)
    assert projection[cut.first_kept_entry_index].entry.id in {big_input.id, note.id}
    assert projection[cut.first_kept_entry_index].entry.id != attempt.id

    session = Session()
    big_input = session.user(text_of_size(50_000))
    session.label(big_input.id)  # metadata alone does not move the cut
    projection = project_path(session.entries)
    cut = find_cut_point(projection, 0, len(projection), 20_000)
    assert projection[cut.first_kept_entry_index].entry.id == big_input.id
