"""convert_to_llm renders session-only roles exactly as the TypeScript pi does."""

from __future__ import annotations

from typing import Any

import pytest
from session_helpers import assistant, no_session_dir_env, system, tool_result, user  # noqa: F401

from pi_core.session import convert_to_llm, current_system_message
from pi_hookspecs import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    UnknownMessage,
    UserMessage,
)


def _text(message: UserMessage) -> str:
    assert isinstance(message, UserMessage) and isinstance(message.content, list)
    return message.content[0].text


def test_base_roles_pass_through_unchanged() -> None:
    messages = [system("p"), user("u"), assistant("a"), tool_result()]
    converted = convert_to_llm(messages)
    assert all(a is b for a, b in zip(converted, messages, strict=True))


def test_bash_execution_renderings() -> None:
    ok = BashExecutionMessage(command="ls -la", output="a\nb", exit_code=0, timestamp=7)
    converted = convert_to_llm([ok])[0]
    assert _text(converted) == "Ran `ls -la`\n```\na\nb\n```" and converted.timestamp == 7
    failed = BashExecutionMessage(
        command="make", output="", exit_code=2, truncated=True, full_output_path="/tmp/out.log"
    )
    assert _text(convert_to_llm([failed])[0]) == (
        "Ran `make`\n(no output)\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/out.log]"
    )
    cancelled = BashExecutionMessage(command="sleep 9", output="x", exit_code=130, cancelled=True)
    assert _text(convert_to_llm([cancelled])[0]) == "Ran `sleep 9`\n```\nx\n```\n\n(command cancelled)"
    truncated_without_path = BashExecutionMessage(command="c", output="o", truncated=True)
    assert _text(convert_to_llm([truncated_without_path])[0]) == "Ran `c`\n```\no\n```"
    hidden = BashExecutionMessage(command="secret", output="x", exclude_from_context=True)
    assert convert_to_llm([hidden]) == []


def test_custom_messages_become_user_messages_with_their_content() -> None:
    text = convert_to_llm([CustomMessage(custom_type="ext", content="note", details={"x": 1}, timestamp=3)])[0]
    assert text == UserMessage(content=[TextContent(text="note")], timestamp=3)
    image = ImageContent(data="AAAA", mime_type="image/png")
    blocks = convert_to_llm([CustomMessage(custom_type="ext", content=[TextContent(text="see"), image])])[0]
    assert isinstance(blocks, UserMessage) and blocks.content[1] == image


def test_summary_renderings() -> None:
    branch = convert_to_llm([BranchSummaryMessage(summary="tried A", from_id="abc", timestamp=4)])[0]
    assert _text(branch) == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\ntried A</summary>"
    )
    compaction = convert_to_llm([CompactionSummaryMessage(summary="## Goal\nx", tokens_before=9, timestamp=5)])[0]
    assert _text(compaction) == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\n## Goal\nx\n</summary>"
    )
    assert compaction.timestamp == 5


def test_unknown_roles_are_dropped() -> None:
    assert convert_to_llm([UnknownMessage(role="artifact")]) == []


def test_current_system_message_replays_content_sections_and_tools() -> None:
    assert current_system_message([user("u")]) is None
    replayed = current_system_message(
        [
            system("base", sections={"a": "A", "b": "B"}, tools=["read", "bash"]),
            user("u"),
            SystemMessage(
                content="extra", sections={"a": None, "c": "C"}, tools_removed=[{"name": "read"}], timestamp=5
            ),
            system(tools=["read"]),
        ]
    )
    assert replayed is not None
    assert replayed.content == "base\n\nextra"
    assert replayed.sections == {"b": "B", "c": "C"}
    assert [tool.name for tool in replayed.tools_added or []] == ["bash", "read"]
    assert replayed.timestamp == 0


def test_incremental_conversion_equals_a_full_one_and_converts_only_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pi_core.session import messages as module

    converted: list[int] = []
    original = module.convert_to_llm

    def counting(items: Any) -> Any:
        items = list(items)
        converted.append(len(items))
        return original(items)

    monkeypatch.setattr(module, "convert_to_llm", counting)
    conversion = module.LlmConversion()
    note = CustomMessage(custom_type="note", content="a note", display=True, timestamp=1)
    history: list[Any] = [system("p"), user("u0"), assistant("a0"), note]
    for turn in range(1, 30):
        history = [*history, user(f"u{turn}"), assistant(f"a{turn}")]
        converted.clear()
        result = conversion(history)
        assert [m.model_dump() for m in result] == [m.model_dump() for m in original(history)]
        if turn > 1:
            assert sum(converted) <= 5, converted  # the new messages and the last one again
    # a message replaced in the middle: converted from the start again, still right
    history[3] = CustomMessage(custom_type="note", content="edited", display=True, timestamp=1)
    result = conversion(history)
    assert [m.model_dump() for m in result] == [m.model_dump() for m in original(history)]
    assert conversion([]) == []
