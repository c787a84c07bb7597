"""serialize_conversation and the stand-alone conversion of session-only roles."""

from __future__ import annotations

from pi_core.compaction import convert_for_summary, serialize_conversation
from pi_hookspecs import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def test_documented_format() -> None:
    messages = [
        UserMessage(content="What does foo.ts do?"),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="private reasoning"),
                TextContent(text="Let me look."),
                ToolCall(id="1", name="read", arguments={"path": "foo.ts"}),
                ToolCall(id="2", name="edit", arguments={"path": "bar.ts", "edits": [{"old": "a", "new": "é"}]}),
            ]
        ),
        ToolResultMessage(tool_call_id="1", tool_name="read", content=[TextContent(text="export const x = 1")]),
        AssistantMessage(content=[TextContent(text="Done."), TextContent(text="Anything else?")]),
    ]
    assert serialize_conversation(messages) == (
        "[User]: What does foo.ts do?\n\n"
        "[Assistant]: Let me look.\n\n"
        '[Assistant tool calls]: read(path="foo.ts"); edit(path="bar.ts", edits=[{"old":"a","new":"é"}])\n\n'
        "[Tool result]: export const x = 1\n\n"
        "[Assistant]: Done.\nAnything else?"
    )


def test_thinking_is_omitted_and_empty_parts_are_skipped() -> None:
    messages = [
        AssistantMessage(content=[ThinkingContent(thinking="hmm")]),
        UserMessage(content=[ImageContent(data="AA", mime_type="image/png")]),
        ToolResultMessage(tool_call_id="1", tool_name="x", content=[]),
        SystemMessage(content="You are pi."),
    ]
    assert serialize_conversation(messages) == ""


def test_tool_results_are_truncated_with_a_marker() -> None:
    result = ToolResultMessage(tool_call_id="1", tool_name="bash", content=[TextContent(text="a" * 2500)])
    text = serialize_conversation([result])
    assert text == "[Tool result]: " + "a" * 2000 + "\n\n[... 500 more characters truncated]"
    exact = ToolResultMessage(tool_call_id="1", tool_name="bash", content=[TextContent(text="b" * 2000)])
    assert serialize_conversation([exact]) == "[Tool result]: " + "b" * 2000


def test_session_roles_are_rendered_as_user_text() -> None:
    messages = [
        BashExecutionMessage(command="ls", output="a.py", exit_code=0),
        BashExecutionMessage(command="false", output="", exit_code=1),
        BashExecutionMessage(command="secret", output="x", exclude_from_context=True),
        CustomMessage(custom_type="note", content="plugin note"),
        CompactionSummaryMessage(summary="old work"),
        BranchSummaryMessage(summary="other branch"),
        SystemMessage(content="dropped"),
    ]
    text = serialize_conversation(convert_for_summary(messages))
    parts = text.split("\n\n[User]: ")
    assert parts[0] == "[User]: Ran `ls`\n```\na.py\n```"
    assert parts[1] == "Ran `false`\n(no output)\n\nCommand exited with code 1"
    assert parts[2] == "plugin note"
    assert "<summary>\nold work\n</summary>" in parts[3]
    assert "<summary>\nother branch\n</summary>" in parts[4]
    assert "secret" not in text and "dropped" not in text
