"""compact / generate_summary against a scripted model that records its requests."""

from __future__ import annotations

import pytest
from compaction_helpers import MODEL, Session, reply, scripted, text_of_size

from pi_core.compaction import (
    SUMMARIZER_SYSTEM_PROMPT,
    CompactionError,
    CompactionSettings,
    compact,
    generate_summary,
    prepare_compaction,
    summary_max_tokens,
)
from pi_hookspecs import (
    AbortController,
    AbortError,
    CompactionPreparation,
    FileOperations,
    Model,
    ToolCall,
    Usage,
    UserMessage,
)


def _preparation(**kw: object) -> CompactionPreparation:
    values: dict[str, object] = {
        "first_kept_entry_id": "keep0001",
        "messages_to_summarize": [UserMessage(content="please refactor parser.py")],
        "tokens_before": 12345,
    }
    values.update(kw)
    return CompactionPreparation.model_validate(values)


async def test_compact_builds_the_structured_request_and_result() -> None:
    model = scripted(reply("## Goal\nRefactor the parser", usage=Usage(input=500, output=50, total_tokens=550)))
    files = FileOperations(read=["README.md", "parser.py"], modified=["parser.py", "tests/test_parser.py"])
    result = await compact(_preparation(file_ops=files), MODEL, model)

    (call,) = model.calls
    assert call.context.system_prompt == SUMMARIZER_SYSTEM_PROMPT
    assert len(call.context.messages) == 1
    prompt = call.prompt
    assert prompt.startswith("<conversation>\n[User]: please refactor parser.py\n</conversation>\n\n")
    assert "<previous-summary>" not in prompt
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert heading in prompt
    assert call.options.max_tokens == MODEL.max_tokens
    assert call.options.session_id  # a fresh routing id, not the session's

    assert result.summary == (
        "## Goal\nRefactor the parser\n\n"
        "<read-files>\nREADME.md\n</read-files>\n\n"
        "<modified-files>\nparser.py\ntests/test_parser.py\n</modified-files>"
    )
    assert result.details == {"readFiles": ["README.md"], "modifiedFiles": ["parser.py", "tests/test_parser.py"]}
    assert (result.first_kept_entry_id, result.tokens_before) == ("keep0001", 12345)
    assert result.usage is not None and result.usage.total_tokens == 550


async def test_iterative_update_sends_the_previous_summary() -> None:
    model = scripted(reply("## Goal\nupdated"))
    result = await compact(_preparation(previous_summary="## Goal\nOLD CHECKPOINT"), MODEL, model)
    prompt = model.calls[0].prompt
    assert "<previous-summary>\n## Goal\nOLD CHECKPOINT\n</previous-summary>" in prompt
    assert prompt.index("</conversation>") < prompt.index("<previous-summary>")
    assert "previous checkpoint" in prompt  # the update instructions, not the fresh ones
    assert result.summary == "## Goal\nupdated"
    assert result.details == {"readFiles": [], "modifiedFiles": []}


async def test_custom_instructions_add_a_focus() -> None:
    model = scripted(reply())
    await compact(_preparation(), MODEL, model, custom_instructions="  keep the DB schema  ")
    assert model.calls[0].prompt.endswith("\n\nAdditional focus: keep the DB schema")


async def test_split_turn_gets_two_summaries_merged() -> None:
    model = scripted(
        reply("HISTORY", usage=Usage(input=10, output=1, total_tokens=11)),
        reply("PREFIX", usage=Usage(input=20, output=2, total_tokens=22, reasoning=5)),
    )
    preparation = _preparation(
        is_split_turn=True,
        turn_prefix_messages=[UserMessage(content="huge task")],
        previous_summary="PREVIOUS",
        file_ops=FileOperations(modified=["x.py"]),
    )
    result = await compact(preparation, MODEL, model)
    history_call, prefix_call = model.calls
    assert "<previous-summary>\nPREVIOUS" in history_call.prompt
    assert "huge task" not in history_call.prompt
    assert "[User]: huge task" in prefix_call.prompt
    assert "## Original Request" in prefix_call.prompt and "## Critical Context" not in prefix_call.prompt
    assert result.summary == (
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<modified-files>\nx.py\n</modified-files>"
    )
    assert result.usage is not None
    assert (result.usage.input, result.usage.output, result.usage.total_tokens) == (30, 3, 33)
    assert result.usage.reasoning == 5


async def test_split_turn_without_history_uses_the_previous_summary_or_a_placeholder() -> None:
    model = scripted(reply("PREFIX"))
    preparation = _preparation(
        messages_to_summarize=[], is_split_turn=True, turn_prefix_messages=[UserMessage(content="job")]
    )
    result = await compact(preparation, MODEL, model)
    assert len(model.calls) == 1
    assert result.summary.startswith("No prior history.\n\n---\n\n")

    model = scripted(reply("PREFIX"))
    result = await compact(preparation.model_copy(update={"previous_summary": "KEPT"}), MODEL, model)
    assert result.summary.startswith("KEPT\n\n---\n\n")


async def test_end_to_end_with_prepare() -> None:
    session = Session()
    session.user("Fix the bug in app.py " + text_of_size(200))
    session.assistant("", ("read", {"path": "app.py"}))
    session.tool_result("def main(): ...")
    session.assistant("", ("edit", {"path": "app.py", "oldText": "a", "newText": "b"}))
    session.tool_result("edited")
    session.user("now the docs " + text_of_size(200))
    preparation = prepare_compaction(session.entries, CompactionSettings(keep_recent_tokens=100))
    assert preparation is not None
    model = scripted(reply("## Goal\nFix app.py"))
    result = await compact(preparation, MODEL, model)
    prompt = model.calls[0].prompt
    assert '[Assistant tool calls]: read(path="app.py")' in prompt
    assert "[Tool result]: def main(): ..." in prompt
    assert result.summary.endswith("<modified-files>\napp.py\n</modified-files>")
    assert "<read-files>" not in result.summary  # app.py was modified, so not listed as read-only


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (reply("", stop_reason="error", error_message="rate limited"), "Summarization failed: rate limited"),
        (reply("## Goal\nhalf a summ", stop_reason="length"), "output limit"),
        (reply(content=[ToolCall(id="1", name="read", arguments={})], stop_reason="toolUse"), "call a tool"),
        (reply("   "), "empty summary"),
        (reply("partial", stop_reason="pending"), "stop reason 'pending'"),
    ],
)
async def test_failed_summaries_raise_and_produce_nothing(response: object, message: str) -> None:
    model = scripted(response)  # type: ignore[arg-type]
    with pytest.raises(CompactionError, match=message) as info:
        await compact(_preparation(), MODEL, model)
    assert not info.value.aborted


async def test_a_failing_turn_prefix_fails_the_whole_compaction() -> None:
    model = scripted(reply("HISTORY"), reply("cut off", stop_reason="length"))
    preparation = _preparation(is_split_turn=True, turn_prefix_messages=[UserMessage(content="x")])
    with pytest.raises(CompactionError, match="Turn prefix summarization failed"):
        await compact(preparation, MODEL, model)
    assert len(model.calls) == 2


async def test_exceptions_and_aborts() -> None:
    model = scripted(ConnectionError("socket closed"))
    with pytest.raises(CompactionError, match="Summarization failed: socket closed") as info:
        await compact(_preparation(), MODEL, model)
    assert isinstance(info.value.__cause__, ConnectionError)

    model = scripted(AbortError())
    with pytest.raises(CompactionError) as info:
        await compact(_preparation(), MODEL, model)
    assert info.value.aborted

    model = scripted(reply("", stop_reason="aborted"))
    with pytest.raises(CompactionError) as info:
        await compact(_preparation(), MODEL, model)
    assert info.value.aborted

    controller = AbortController()
    controller.abort()
    model = scripted()
    with pytest.raises(CompactionError) as info:
        await compact(_preparation(), MODEL, model, signal=controller.signal)
    assert info.value.aborted and model.calls == []


async def test_signal_reaches_the_request() -> None:
    controller = AbortController()
    model = scripted(reply())
    await generate_summary([UserMessage(content="hi")], MODEL, model, signal=controller.signal)
    assert model.calls[0].options.signal is controller.signal


async def test_nothing_to_summarise_is_an_error() -> None:
    with pytest.raises(CompactionError, match="Nothing to compact"):
        await compact(_preparation(messages_to_summarize=[]), MODEL, scripted())


async def test_thinking_level_only_for_reasoning_models() -> None:
    model = scripted(reply(), reply())
    await generate_summary([UserMessage(content="hi")], MODEL, model, thinking_level="high")
    reasoning = MODEL.model_copy(update={"reasoning": True})
    await generate_summary([UserMessage(content="hi")], reasoning, model, thinking_level="high")
    assert [c.options.thinking_level for c in model.calls] == [None, "high"]


def test_output_budget_shrinks_to_fit_the_context_window() -> None:
    assert summary_max_tokens(MODEL, "short prompt") == 8192
    small = Model(id="s", context_window=10_000, max_tokens=8192)
    prompt = "x" * 4 * 6000  # ~6,000 tokens of prompt
    assert 3000 < summary_max_tokens(small, prompt) < 4000
    assert summary_max_tokens(small, "x" * 4 * 20_000) == 1024  # never below the floor
    assert summary_max_tokens(Model(id="t", max_tokens=0), "p") == 16384
