"""Context building: settings, compaction boundaries, context edits, projections, caching."""

from __future__ import annotations

import random

import pytest
from session_helpers import assistant, no_session_dir_env, system, texts, tool_result, user  # noqa: F401

from pi_core.session import EntryNotFoundError, ModelRef, SessionManager
from pi_core.session.context import ContextCache
from pi_hookspecs import (
    BashExecutionMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextEditEntry,
    CustomMessage,
    DraftCompaction,
    DraftContextEdit,
    DraftCustom,
    DraftCustomMessage,
    SystemMessage,
    TextContent,
    Usage,
)

# --------------------------------------------------------------------------- settings


def test_settings_come_from_the_whole_path_and_the_later_source_wins() -> None:
    session = SessionManager.in_memory("/p")
    context = session.build_session_context()
    assert context.thinking_level == "off" and context.model is None
    session.append_model_change("openai", "gpt-4o")
    session.append_thinking_level_change("high")
    session.append_message(user("hi"))
    assert session.build_session_context().model == ModelRef("openai", "gpt-4o")
    session.append_message(assistant(provider="anthropic", model="claude-sonnet-4-5"))
    context = session.build_session_context()
    assert context.model == ModelRef("anthropic", "claude-sonnet-4-5")  # the assistant wins
    assert context.thinking_level == "high"
    session.append_model_change("openai", "gpt-5")
    assert session.build_session_context().model == ModelRef("openai", "gpt-5")


def test_settings_survive_compaction() -> None:
    session = SessionManager.in_memory("/p")
    session.append_thinking_level_change("low")
    session.append_message(user("old"))
    session.append_message(assistant(provider="openai", model="o3"))
    kept = session.append_message(user("new"))
    session.append_compaction("summary", kept, 100)
    context = session.build_session_context()
    assert context.thinking_level == "low" and context.model == ModelRef("openai", "o3")


# --------------------------------------------------------------------------- entry kinds


def test_entry_kinds_and_what_they_contribute() -> None:
    session = SessionManager.in_memory("/p")
    session.append_message(user("hello"))
    session.append_custom_entry("my-ext", {"count": 1})
    session.append_usage("cache_warm", "anthropic", "claude", Usage(cache_read=5), note="warm")
    session.append_session_info("named")
    custom = session.append_custom_message_entry("my-ext", "injected", display=False, details={"x": 1})
    session.append_message(BashExecutionMessage(command="ls", output="a", exit_code=0, timestamp=5))
    session.append_message(CustomMessage(custom_type="other", content="as message", timestamp=6))
    messages = session.build_session_context().messages
    assert texts(messages[:2]) == ["user:hello", "custom:injected"]
    assert isinstance(messages[1], CustomMessage)
    assert messages[1].custom_type == "my-ext" and messages[1].display is False and messages[1].details == {"x": 1}
    assert messages[1].timestamp > 0  # from the entry's ISO timestamp
    assert messages[2].role == "bashExecution" and messages[3].role == "custom"
    assert len(messages) == 4
    usage_entry = session.get_entries()[2]
    assert usage_entry.type == "usage" and usage_entry.to_json()["note"] == "warm"
    assert session.get_entry(custom).type == "custom_message"


def test_empty_branch_summary_contributes_nothing() -> None:
    session = SessionManager.in_memory("/p")
    start = session.append_message(user("x"))
    session.branch_with_summary(start, "")
    assert texts(session.build_session_context().messages) == ["user:x"]


def test_summaries_cannot_be_appended_as_messages() -> None:
    session = SessionManager.in_memory("/p")
    with pytest.raises(TypeError):
        session.append_message(CompactionSummaryMessage(summary="s"))


def test_messages_may_be_given_as_camel_case_dicts() -> None:
    session = SessionManager.in_memory("/p")
    session.append_message(
        {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": [], "isError": True}
    )
    message = session.build_session_context().messages[0]
    assert message.role == "toolResult" and message.is_error is True


# --------------------------------------------------------------------------- compaction


def _conversation(session: SessionManager, turns: int) -> list[str]:
    ids = []
    for turn in range(turns):
        ids.append(session.append_message(user(f"u{turn}")))
        ids.append(session.append_message(assistant(f"a{turn}")))
    return ids


def test_compaction_keeps_entries_from_first_kept_and_everything_after() -> None:
    session = SessionManager.in_memory("/p")
    ids = _conversation(session, 3)
    compaction = session.append_compaction("summary of u0", ids[2], 1234)
    session.append_message(user("after"))
    context = session.build_session_context()
    assert texts(context.messages) == [
        "compactionSummary:summary of u0",
        "user:u1",
        "assistant:a1",
        "user:u2",
        "assistant:a2",
        "user:after",
    ]
    assert context.messages[0].tokens_before == 1234
    assert [e.id for e in session.build_context_entries()][:2] == [compaction, ids[2]]


def test_retain_none_compaction_points_to_itself_and_keeps_nothing() -> None:
    session = SessionManager.in_memory("/p")
    _conversation(session, 2)
    compaction = session.append_compaction("everything", None, 10)
    entry = session.get_entry(compaction)
    assert isinstance(entry, CompactionEntry) and entry.first_kept_entry_id == compaction
    session.append_message(user("next"))
    assert texts(session.build_session_context().messages) == ["compactionSummary:everything", "user:next"]


def test_latest_compaction_wins_and_an_older_one_in_the_kept_range_is_not_sent() -> None:
    session = SessionManager.in_memory("/p")
    ids = _conversation(session, 2)
    first = session.append_compaction("first summary", ids[2], 10)
    after = session.append_message(user("u-after"))
    session.append_message(assistant("a-after"))
    session.append_compaction("second summary", ids[2], 20)
    assert texts(session.build_session_context().messages) == [
        "compactionSummary:second summary",
        "user:u1",
        "assistant:a1",
        "user:u-after",
        "assistant:a-after",
    ]
    selected = [e.id for e in session.build_context_entries()]
    assert first in selected and after in selected  # shown for rendering, not sent


def test_compaction_checkpoint_replaces_earlier_system_messages() -> None:
    session = SessionManager.in_memory("/p")
    session.append_message(system("base", sections={"preamble": "P", "tools": "T"}, tools=["read", "bash"]))
    kept_user = session.append_message(user("u0"))
    session.append_message(assistant("a0"))
    session.append_message(
        SystemMessage(
            content="", sections={"tools": None, "skills": "S"}, tools_removed=[{"name": "bash"}], timestamp=9
        )
    )
    session.append_message(user("u1"))
    compaction = session.append_compaction("sum", kept_user, 50)
    entry = session.get_entry(compaction)
    assert isinstance(entry, CompactionEntry) and entry.system_message is not None
    checkpoint = entry.system_message
    assert checkpoint.content == "base"
    assert checkpoint.sections == {"preamble": "P", "skills": "S"}
    assert [tool.name for tool in checkpoint.tools_added or []] == ["read"]
    session.append_message(system(sections={"late": "L"}))
    messages = session.build_session_context().messages
    assert texts(messages) == ["system:base", "compactionSummary:sum", "user:u0", "assistant:a0", "user:u1", "system:"]
    assert messages[0] is entry.system_message  # the checkpoint leads; kept system messages are dropped


def test_explicit_compaction_checkpoint_and_fields_are_written_as_given() -> None:
    session = SessionManager.in_memory("/p")
    first = session.append_message(user("u"))
    checkpoint = system("given")
    compaction = session.append_compaction(
        "s", first, 5, details={"readFiles": []}, from_hook=True, usage=Usage(input=3), system_message=checkpoint
    )
    raw = session.get_entry(compaction).to_json()
    assert raw["systemMessage"]["content"] == "given" and raw["fromHook"] is True and raw["usage"]["input"] == 3
    assert raw["firstKeptEntryId"] == first and raw["details"] == {"readFiles": []}


def test_compaction_with_unknown_first_kept_keeps_nothing_before_it() -> None:
    session = SessionManager.in_memory("/p")
    _conversation(session, 1)
    session.append_compaction("s", "unknown1", 5)
    assert texts(session.build_session_context().messages) == ["compactionSummary:s"]


# --------------------------------------------------------------------------- context edits


def test_context_edit_omits_and_replaces_latest_wins() -> None:
    session = SessionManager.in_memory("/p")
    question = session.append_message(user("secret question"))
    answer = session.append_message(assistant("long answer"))
    result_id = session.append_message(tool_result(text="huge output"))
    session.append_context_edit(result_id, "[output elided]")
    session.append_context_edit(question, "redacted question")
    edit = session.append_context_edit(answer, None)
    entry = session.get_entry(edit)
    assert isinstance(entry, ContextEditEntry) and entry.to_json()["replacement"] is None
    messages = session.build_session_context().messages
    assert texts(messages) == ["user:redacted question", "toolResult:[output elided]"]
    assert messages[0].content == "redacted question"  # user keeps string content
    assert messages[1].content == [TextContent(text="[output elided]")]  # normalised to one block
    assert messages[1].tool_call_id == "call_bash"  # metadata kept
    session.append_context_edit(answer, [TextContent(text="short answer")])
    assert texts(session.build_session_context().messages)[1] == "assistant:short answer"
    # the raw entries are untouched
    assert session.get_entry(result_id).message.content[0].text == "huge output"


def test_context_edit_of_assistant_string_is_stored_as_one_text_block() -> None:
    session = SessionManager.in_memory("/p")
    answer = session.append_message(assistant("x"))
    edit = session.append_context_edit(answer, "y")
    assert session.get_entry(edit).to_json()["replacement"] == {"content": [{"type": "text", "text": "y"}]}


def test_context_edits_are_branch_relative() -> None:
    session = SessionManager.in_memory("/p")
    question = session.append_message(user("original"))
    answer = session.append_message(assistant("a"))
    session.append_context_edit(question, "edited")
    assert texts(session.build_session_context().messages)[0] == "user:edited"
    session.branch(answer)  # before the edit
    assert texts(session.build_session_context().messages)[0] == "user:original"


def test_context_edit_of_custom_message_entry_and_compaction_kept_range() -> None:
    session = SessionManager.in_memory("/p")
    injected = session.append_custom_message_entry("ext", "injected")
    kept = session.append_message(user("kept"))
    session.append_message(assistant("a"))
    session.append_compaction("s", kept, 1)
    session.append_context_edit(kept, "kept, edited")
    assert texts(session.build_session_context().messages) == [
        "compactionSummary:s",
        "user:kept, edited",
        "assistant:a",
    ]
    # an edit of an entry before the boundary has no effect on the compacted context
    session.append_context_edit(injected, None)
    assert texts(session.build_session_context().messages)[1] == "user:kept, edited"


def test_context_edit_validation() -> None:
    session = SessionManager.in_memory("/p")
    other = session.append_message(user("other branch"))
    session.reset_leaf()
    question = session.append_message(user("q"))
    change = session.append_model_change("openai", "gpt-4o")
    with pytest.raises(EntryNotFoundError):
        session.append_context_edit("nope", None)
    with pytest.raises(EntryNotFoundError, match="active branch"):
        session.append_context_edit(other, None)
    with pytest.raises(ValueError, match="editable"):
        session.append_context_edit(change, None)
    session.append_message(system("s"))
    with pytest.raises(ValueError, match="editable"):
        session.append_context_edit(session.get_leaf_id(), None)
    session.append_context_edit(question, {"content": "dict form"})
    assert texts(session.build_session_context().messages)[0] == "user:dict form"


def test_drafts_are_appended_as_their_entries() -> None:
    session = SessionManager.in_memory("/p")
    question = session.append_message(user("q"))
    session.append_message(assistant("a"))
    session.append_draft(DraftCustom(custom_type="state", data={"n": 1}))
    session.append_draft(DraftCustomMessage(custom_type="note", content="remember this"))
    session.append_draft(DraftContextEdit(target_id=question, replacement="q (edited)"))
    session.append_draft({"type": "compaction", "summary": "all of it", "firstKeptEntryId": None, "tokensBefore": 7})
    kinds = [e.type for e in session.get_entries()]
    assert kinds[2:] == ["custom", "custom_message", "context_edit", "compaction"]
    assert texts(session.build_session_context().messages) == ["compactionSummary:all of it"]
    session.append_draft(DraftCompaction(summary="again", first_kept_entry_id=None))
    assert texts(session.build_session_context().messages) == ["compactionSummary:again"]


# --------------------------------------------------------------------------- projection & caching


def test_projection_pairs_messages_with_their_source_entries() -> None:
    session = SessionManager.in_memory("/p")
    session.append_message(user("q"))
    answer = session.append_message(assistant("a"))
    session.append_custom_entry("state")
    session.append_context_edit(answer, None)
    projection = session.build_session_projection()
    assert [p.source_entry.type for p in projection.entries] == ["message", "message", "custom", "context_edit"]
    assert [len(p.messages) for p in projection.entries] == [1, 0, 0, 0]
    assert texts(projection.messages) == ["user:q"]


def test_context_messages_are_immutable_snapshots() -> None:
    session = SessionManager.in_memory("/p")
    question = session.append_message(user("q"))
    snapshot = session.build_session_context().messages
    assert not hasattr(snapshot, "append")
    session.append_message(assistant("a"))  # extends the cached list in place
    assert texts(list(snapshot)) == ["user:q"] and len(snapshot) == 1
    with pytest.raises(IndexError):
        snapshot[1]
    session.append_context_edit(question, "edited")  # rebuilds the cache
    assert texts(list(snapshot)) == ["user:q"]
    latest = session.build_session_context().messages
    assert texts(latest[:]) == ["user:edited", "assistant:a"] and latest[-1].role == "assistant"
    assert latest == list(latest) and list(latest) == latest and latest != snapshot


def test_appends_under_the_leaf_extend_the_cached_context_without_rebuilding(monkeypatch: pytest.MonkeyPatch) -> None:
    session = SessionManager.in_memory("/p")
    _conversation(session, 5)
    session.build_session_context()
    rebuilds: list[int] = []
    original = ContextCache.rebuild

    def counting(self: ContextCache, path: list, leaf_id: str | None) -> None:
        rebuilds.append(len(path))
        original(self, path, leaf_id)

    monkeypatch.setattr(ContextCache, "rebuild", counting)
    for turn in range(20):
        session.append_message(user(f"more {turn}"))
        session.append_message(assistant(f"reply {turn}"))
        session.append_custom_entry("state", turn)
        session.append_thinking_level_change("low")
        assert len(session.build_session_context().messages) == 10 + 2 * (turn + 1)
    assert rebuilds == []
    session.append_context_edit(session.get_entries()[0].id, None)  # edits an earlier entry
    session.build_session_context()
    assert len(rebuilds) == 1


def test_incremental_context_equals_a_fresh_rebuild_under_random_operations() -> None:
    rng = random.Random(7)
    session = SessionManager.in_memory("/p")
    for step in range(400):
        ids = [e.id for e in session.get_branch()]
        message_ids = [e.id for e in session.get_branch() if e.type == "message" and e.message.role != "system"]
        action = rng.random()
        if action < 0.35:
            session.append_message(user(f"u{step}"))
        elif action < 0.6:
            session.append_message(assistant(f"a{step}", model=f"m{step % 3}"))
        elif action < 0.65 and ids:
            session.branch(rng.choice(ids))
        elif action < 0.7 and message_ids:
            session.append_context_edit(rng.choice(message_ids), rng.choice([None, f"edit{step}"]))
        elif action < 0.74 and ids:
            session.append_compaction(f"c{step}", rng.choice([*ids, None]), step)
        elif action < 0.78:
            session.append_message(system(sections={"s": str(step)}))
        elif action < 0.82:
            session.append_thinking_level_change(rng.choice(["low", "high"]))
        elif action < 0.86:
            session.append_model_change("p", f"x{step}")
        elif action < 0.9 and ids:
            session.set_label(rng.choice(ids), f"l{step}")
        else:
            session.append_custom_message_entry("ext", f"c{step}")
        cached = session.build_session_context()
        fresh = SessionManager.in_memory(entries=[session.get_header(), *session.get_entries()])
        fresh.branch(session.get_leaf_id()) if session.get_leaf_id() else fresh.reset_leaf()
        expected = fresh.build_session_context()
        assert [m.to_json() for m in cached.messages] == [m.to_json() for m in expected.messages], step
        assert (cached.model, cached.thinking_level) == (expected.model, expected.thinking_level)
        if step % 3 == 0:  # the projected entries are kept and extended between these calls
            kept, built = session.build_session_projection(), fresh.build_session_projection()
            assert [(p.source_entry.to_json(), [m.to_json() for m in p.messages]) for p in kept.entries] == [
                (p.source_entry.to_json(), [m.to_json() for m in p.messages]) for p in built.entries
            ], step
