"""prepare_compaction: spans, boundaries of repeated compactions, context edits, files."""

from __future__ import annotations

from compaction_helpers import Session, text_of_size

from pi_core.compaction import (
    RETAIN_NONE,
    CompactionSettings,
    prepare_compaction,
    resolve_first_kept_entry_id,
)
from pi_hookspecs import (
    AssistantMessage,
    CompactionSummaryMessage,
    NestedToolCallRecord,
    NestedToolCalls,
    SystemMessage,
    TextContent,
    UserMessage,
)

KEEP_140 = CompactionSettings(keep_recent_tokens=140)


def _texts(messages: list[object]) -> list[str]:
    out = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append(message.content if isinstance(message.content, str) else message.content[0].text)
        elif isinstance(message, AssistantMessage):
            out.append(message.text())
        else:
            out.append(type(message).__name__)
    return [t[:12] if isinstance(t, str) else t for t in out]


def _two_spans() -> tuple[Session, str]:
    session = Session()
    session.user("first " + text_of_size(100))
    session.assistant("reply1 " + text_of_size(100))
    second = session.user("second " + text_of_size(100))
    session.assistant("reply2 " + text_of_size(40))
    return session, second.id


def test_summarises_everything_before_the_first_kept_entry() -> None:
    session, second = _two_spans()
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.first_kept_entry_id == second
    assert _texts(preparation.messages_to_summarize) == ["first xxxxxx", "reply1 xxxxx"]
    assert preparation.turn_prefix_messages == []
    assert not preparation.is_split_turn
    assert preparation.previous_summary is None
    assert preparation.tokens_before == sum([102, 102, 102, 42])
    assert preparation.settings == {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 140}


def test_nothing_to_do() -> None:
    session, _ = _two_spans()
    assert prepare_compaction([], KEEP_140) is None
    assert prepare_compaction(session.entries, CompactionSettings()) is None  # everything fits
    session.compaction("done", session.entries[2].id)
    assert prepare_compaction(session.entries, KEEP_140) is None  # already ends with a compaction


def test_settings_may_be_a_camel_case_dict() -> None:
    session, second = _two_spans()
    preparation = prepare_compaction(session.entries, {"keepRecentTokens": 140})
    assert preparation is not None and preparation.first_kept_entry_id == second


def test_split_turn_separates_history_and_turn_prefix() -> None:
    session = Session()
    session.user("old " + text_of_size(50))
    session.assistant("old reply")
    turn = session.user("big job")
    session.assistant("step 1", ("bash", {"command": "make"}))
    session.tool_result(text_of_size(300), "bash")
    kept = session.assistant("step 2", ("bash", {"command": "make test"}))
    session.tool_result(text_of_size(300), "bash")
    preparation = prepare_compaction(session.entries, CompactionSettings(keep_recent_tokens=250))
    assert preparation is not None
    assert preparation.is_split_turn
    assert preparation.first_kept_entry_id == kept.id
    assert _texts(preparation.messages_to_summarize) == ["old xxxxxxxx", "old reply"]
    assert _texts(preparation.turn_prefix_messages)[:2] == ["big job", "step 1"]
    assert len(preparation.turn_prefix_messages) == 3
    assert session.index(turn.id) == 2


def test_repeated_compaction_starts_at_the_previous_kept_boundary() -> None:
    session = Session()
    session.user("u1 " + text_of_size(100))
    session.assistant("a1 " + text_of_size(100))
    u2 = session.user("u2 " + text_of_size(100))
    session.assistant("a2 " + text_of_size(100))
    session.compaction("SUMMARY ONE", u2.id, details={"readFiles": ["old.py"], "modifiedFiles": []})
    session.user("u3 " + text_of_size(100))
    session.assistant("a3 " + text_of_size(100))
    u4 = session.user("u4 " + text_of_size(100))
    session.assistant("a4 " + text_of_size(40))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.previous_summary == "SUMMARY ONE"
    assert preparation.first_kept_entry_id == u4.id
    # The messages the first compaction kept are summarised now; u1/a1 and the old
    # summary itself are not part of the span.
    texts = _texts(preparation.messages_to_summarize)
    assert [t[:2] for t in texts] == ["u2", "a2", "u3", "a3"]
    assert not any(isinstance(m, CompactionSummaryMessage) for m in preparation.messages_to_summarize)
    assert preparation.file_ops.read == ["old.py"]
    # tokens_before measures the compacted projection: summary + kept + new messages.
    assert preparation.tokens_before == -(-len("SUMMARY ONE") // 4) + 5 * 101 + 41


def test_previous_kept_entry_missing_falls_back_to_after_the_compaction() -> None:
    session = Session()
    session.user("u1 " + text_of_size(100))
    session.compaction("S", "not-on-this-path")
    session.user("u2 " + text_of_size(100))
    session.assistant("a2 " + text_of_size(100))
    u3 = session.user("u3 " + text_of_size(100))
    session.assistant("a3 " + text_of_size(40))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert [t[:2] for t in _texts(preparation.messages_to_summarize)] == ["u2", "a2"]
    assert preparation.first_kept_entry_id == u3.id


def test_after_a_retain_none_compaction_the_span_starts_after_it() -> None:
    session = Session()
    session.user("u1 " + text_of_size(100))
    session.assistant("a1 " + text_of_size(100))
    own = session.compaction("EVERYTHING", None)
    assert own.first_kept_entry_id == own.id
    session.user("u2 " + text_of_size(100))
    session.assistant("a2 " + text_of_size(100))
    u3 = session.user("u3 " + text_of_size(100))
    session.assistant("a3 " + text_of_size(40))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.previous_summary == "EVERYTHING"
    assert [t[:2] for t in _texts(preparation.messages_to_summarize)] == ["u2", "a2"]
    assert preparation.first_kept_entry_id == u3.id


def test_retain_none_preparation_summarises_everything() -> None:
    session, _ = _two_spans()
    preparation = prepare_compaction(session.entries, CompactionSettings(), retain_none=True)
    assert preparation is not None
    assert preparation.first_kept_entry_id == RETAIN_NONE
    assert len(preparation.messages_to_summarize) == 4
    assert not preparation.is_split_turn
    assert resolve_first_kept_entry_id(preparation.first_kept_entry_id, "abcd1234") == "abcd1234"
    assert resolve_first_kept_entry_id(None, "abcd1234") == "abcd1234"
    assert resolve_first_kept_entry_id("e0000001", "abcd1234") == "e0000001"


def test_context_edits_shape_what_is_summarised_and_counted() -> None:
    session = Session()
    session.user("u1 " + text_of_size(100))
    secret = session.assistant("a1 secret " + text_of_size(5000))
    session.edit(secret.id, None)
    replaced = session.user("u2 original")
    session.edit(replaced.id, "u2 replaced")
    session.assistant("a2 " + text_of_size(100))
    u3 = session.user("u3 " + text_of_size(100))
    session.assistant("a3 " + text_of_size(40))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.first_kept_entry_id == u3.id
    assert [t[:11] for t in _texts(preparation.messages_to_summarize)] == ["u1 xxxxxxxx", "u2 replaced", "a2 xxxxxxxx"]
    assert preparation.tokens_before == 101 + 3 + 101 + 101 + 41  # the omitted reply weighs nothing


def test_assistant_string_replacement_becomes_a_text_block() -> None:
    session = Session()
    answer = session.assistant("long answer " + text_of_size(100))
    session.edit(answer.id, "short answer")
    session.user("next " + text_of_size(200))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    (message,) = preparation.messages_to_summarize
    assert isinstance(message, AssistantMessage)
    assert message.content == [TextContent(text="short answer")]


def test_file_operations_from_tool_calls_and_previous_compaction() -> None:
    session = Session()
    session.user("start")
    session.compaction("S", "e0000001", details={"readFiles": ["a.py", "shared.py"], "modifiedFiles": ["b.py"]})
    session.user("go " + text_of_size(100))
    session.assistant("", ("read", {"path": "c.py"}), ("edit", {"path": "shared.py"}), ("bash", {"command": "ls"}))
    session.tool_result("ok")
    session.assistant("", ("write", {"path": "d.py"}), ("read", {"file_path": "e.py"}))
    session.tool_result("ok")
    session.user("next " + text_of_size(200))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.file_ops.read == ["a.py", "c.py", "e.py", "shared.py"]
    assert preparation.file_ops.modified == ["b.py", "d.py", "shared.py"]


def test_file_operations_of_nested_calls_recorded_on_tool_results() -> None:
    session = Session()
    session.user("go " + text_of_size(100))
    session.assistant("", ("codemode", {"code": "..."}))
    result = session.tool_result("ok", name="codemode").message
    result.nested_calls = NestedToolCalls(
        calls=[
            NestedToolCallRecord(id="c/1", name="read", arguments={"path": "n.py"}),
            NestedToolCallRecord(id="c/2", name="edit", arguments={"path": "m.py"}, status="error", error="no match"),
            NestedToolCallRecord(id="c/3", name="write", arguments=None, arguments_bytes=9000),  # arguments dropped
            NestedToolCallRecord(id="c/4", name="write", arguments={"path": "u.py"}, status="unfinished"),
        ],
        complete=False,
    )
    session.user("next " + text_of_size(200))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.file_ops.read == ["n.py"] and preparation.file_ops.modified == ["m.py"]


def test_plugin_supplied_compaction_details_are_not_carried_over() -> None:
    session = Session()
    session.user("start")
    session.compaction("S", "e0000001", details={"readFiles": ["plugin.py"]}, from_hook=True)
    session.user("go " + text_of_size(100))
    session.user("next " + text_of_size(200))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert preparation.file_ops.read == []


def test_system_messages_are_not_summarised() -> None:
    session = Session()
    session.system("You are pi.")
    session.user("u1 " + text_of_size(100))
    session.system("patched prompt")
    session.assistant("a1 " + text_of_size(100))
    session.user("u2 " + text_of_size(200))
    preparation = prepare_compaction(session.entries, KEEP_140)
    assert preparation is not None
    assert not any(isinstance(m, SystemMessage) for m in preparation.messages_to_summarize)
    assert [t[:2] for t in _texts(preparation.messages_to_summarize)] == ["u1", "a1"]
