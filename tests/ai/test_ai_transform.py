"""transform_messages, the system-message replay and prepare_context."""

from __future__ import annotations

from typing import Any

from pi_core.ai import current_system_prompt, current_tools, prepare_context, transform_messages
from pi_core.ai.transform import NO_RESULT_TEXT, TOOL_IMAGE_PLACEHOLDER, USER_IMAGE_PLACEHOLDER, to_llm_messages
from pi_hookspecs import (
    AssistantMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    LlmContext,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolReference,
    ToolResultMessage,
    UnknownMessage,
    UserMessage,
)

CLAUDE = Model(id="claude-x", provider="anthropic", api="anthropic-messages", input=["text", "image"])
GPT_CHAT = Model(id="gpt-x", provider="openai", api="openai-completions", input=["text"])
IMAGE = ImageContent(data="aGk=", mime_type="image/png")


def assistant(model: Model, *content: object, stop: str = "toolUse") -> AssistantMessage:
    return AssistantMessage(
        api=model.api, provider=model.provider, model=model.id, content=list(content), stop_reason=stop
    )  # type: ignore[arg-type]


def tool(name: str) -> ToolDeclaration:
    return ToolDeclaration(name=name, description=f"{name} tool")


def test_same_model_keeps_thinking_signatures_and_ids() -> None:
    message = assistant(
        CLAUDE,
        ThinkingContent(thinking="deep", thinking_signature="sig"),
        ThinkingContent(thinking="", thinking_signature="enc", redacted=True),
        ToolCall(id="toolu_1", name="bash", thought_signature="ts"),
    )
    result = ToolResultMessage(tool_call_id="toolu_1", tool_name="bash")
    out = transform_messages([message, result], CLAUDE)
    assert out[0] is message
    assert out[1] is result


def test_same_model_requires_provider_api_and_id() -> None:
    other_provider = CLAUDE.model_copy(update={"provider": "proxy"})
    message = assistant(CLAUDE, ThinkingContent(thinking="deep", thinking_signature="sig"), stop="stop")
    out = transform_messages([message], other_provider)
    assert out[0].content == [TextContent(text="deep")]


def test_cross_model_thinking_and_signatures() -> None:
    source = Model(id="gpt-5", provider="openai", api="openai-responses")
    message = assistant(
        source,
        ThinkingContent(thinking="visible reasoning", thinking_signature='{"type":"reasoning"}'),
        ThinkingContent(thinking="   "),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="blob", redacted=True),
        TextContent(text="answer", text_signature='{"v":1,"id":"msg_1"}'),
        ToolCall(id="call_abc|fc_+/=xyz", name="bash", arguments={"a": 1}, thought_signature="sigx"),
    )
    result = ToolResultMessage(tool_call_id="call_abc|fc_+/=xyz", tool_name="bash", content=[TextContent(text="ok")])
    out = transform_messages([message, result], CLAUDE)
    content = out[0].content
    assert content[0] == TextContent(text="visible reasoning")
    assert content[1] == TextContent(text="answer")
    call = content[2]
    assert isinstance(call, ToolCall)
    assert call.id == "call_abc_fc____xyz" and call.thought_signature is None and call.arguments == {"a": 1}
    assert out[1].tool_call_id == "call_abc_fc____xyz"
    assert message.content[4].id == "call_abc|fc_+/=xyz"  # the input is not modified


def test_anthropic_ids_are_cut_to_64() -> None:
    source = Model(id="gpt-5", provider="openai", api="openai-responses")
    long_id = "call_" + "x" * 100 + "|fc_" + "y" * 300
    out = transform_messages(
        [assistant(source, ToolCall(id=long_id, name="t")), ToolResultMessage(tool_call_id=long_id, tool_name="t")],
        CLAUDE,
    )
    assert len(out[0].content[0].id) == 64 and out[1].tool_call_id == out[0].content[0].id


def test_completions_ids_take_the_call_part() -> None:
    source = Model(id="gpt-5", provider="openai", api="openai-responses")
    long_call = "call_" + "z" * 60
    calls = [ToolCall(id="call_1|fc_aaa", name="a"), ToolCall(id=f"{long_call}|fc_b", name="b")]
    results = [ToolResultMessage(tool_call_id=c.id, tool_name=c.name) for c in calls]
    out = transform_messages([assistant(source, *calls), *results], GPT_CHAT)
    ids = [c.id for c in out[0].content]
    assert ids == ["call_1", long_call[:40]]
    assert [r.tool_call_id for r in out[1:]] == ids


def test_same_model_ids_are_not_normalised() -> None:
    responses = Model(id="gpt-5", provider="openai", api="openai-responses")
    message = assistant(responses, ToolCall(id="call_1|fc_1", name="t"))
    out = transform_messages([message, ToolResultMessage(tool_call_id="call_1|fc_1", tool_name="t")], responses)
    assert out[0].content[0].id == "call_1|fc_1"


def test_orphan_tool_calls_get_synthetic_results() -> None:
    first = assistant(CLAUDE, ToolCall(id="a", name="bash"), ToolCall(id="b", name="read"))
    answered = ToolResultMessage(tool_call_id="a", tool_name="bash", content=[TextContent(text="fine")])
    out = transform_messages(
        [first, answered, UserMessage(content="stop"), assistant(CLAUDE, ToolCall(id="c", name="x"))], CLAUDE
    )
    roles = [(m.role, getattr(m, "tool_call_id", None)) for m in out]
    assert roles == [
        ("assistant", None),
        ("toolResult", "a"),
        ("toolResult", "b"),
        ("user", None),
        ("assistant", None),
        ("toolResult", "c"),
    ]
    synthetic = out[2]
    assert synthetic.is_error and synthetic.tool_name == "read" and synthetic.content[0].text == NO_RESULT_TEXT


def test_failed_turns_are_dropped_with_their_results() -> None:
    failed = assistant(CLAUDE, TextContent(text="partial"), ToolCall(id="x", name="t"), stop="error")
    aborted = assistant(CLAUDE, TextContent(text="cut"), stop="aborted")
    out = transform_messages(
        [
            UserMessage(content="q"),
            failed,
            ToolResultMessage(tool_call_id="x", tool_name="t"),
            aborted,
            UserMessage(content="again"),
        ],
        CLAUDE,
    )
    assert [m.role for m in out] == ["user", "user"]


def test_images_become_placeholders_for_text_only_models() -> None:
    user = UserMessage(content=[TextContent(text="see"), IMAGE, IMAGE, TextContent(text="and"), IMAGE])
    call = assistant(CLAUDE, ToolCall(id="t1", name="read"))
    result = ToolResultMessage(tool_call_id="t1", tool_name="read", content=[IMAGE])
    out = transform_messages([user, call, result], GPT_CHAT)
    assert [b.text for b in out[0].content] == ["see", USER_IMAGE_PLACEHOLDER, "and", USER_IMAGE_PLACEHOLDER]
    assert [b.text for b in out[2].content] == [TOOL_IMAGE_PLACEHOLDER]
    kept = transform_messages([user], CLAUDE)
    assert kept[0] is user


def test_missing_content_is_normalised() -> None:
    broken = AssistantMessage.model_construct(
        role="assistant",
        content=None,
        api="anthropic-messages",
        provider="anthropic",
        model="claude-x",
        stop_reason="stop",
    )
    out = transform_messages([broken], CLAUDE)
    assert out[0].content == []


def test_system_prompt_sections_replay() -> None:
    messages = [
        SystemMessage(
            sections={"intro": "You are pi.", "tools": "Tools: bash", "cwd": "cwd: /a"},
            tools_added=[tool("bash"), tool("read")],
        ),
        UserMessage(content="hi"),
        SystemMessage(sections={"cwd": "cwd: /b", "tools": None, "skills": "Skills: x"}),
        SystemMessage(
            content="Remember the deadline.", tools_removed=[ToolReference(name="bash")], tools_added=[tool("grep")]
        ),
        SystemMessage(tools_added=[ToolDeclaration(name="read", description="read v2")]),
    ]
    assert current_system_prompt(messages) == "You are pi.\n\ncwd: /b\n\nSkills: x\n\nRemember the deadline."
    tools = current_tools(messages)
    assert [t.name for t in tools] == ["read", "grep"]
    assert tools[0].description == "read v2"


def test_system_content_blocks_and_empty_parts() -> None:
    messages = [
        SystemMessage(content=[TextContent(text="line 1"), TextContent(text="line 2")], sections={"a": "", "b": "B"}),
    ]
    assert current_system_prompt(messages) == "line 1\nline 2\n\nB"


def test_prepare_context_prefers_system_messages() -> None:
    context = LlmContext(
        system_prompt="ignored",
        tools=[tool("ignored")],
        messages=[SystemMessage(sections={"p": "Prompt"}, tools_added=[tool("bash")]), UserMessage(content="x")],
    )
    prepared = prepare_context(CLAUDE, context)
    assert prepared.system_prompt == "Prompt"
    assert [t.name for t in prepared.tools] == ["bash"]
    assert [m.role for m in prepared.messages] == ["user"]
    plain = prepare_context(CLAUDE, LlmContext(system_prompt="Hello", tools=[tool("t")], messages=[]))
    assert plain.system_prompt == "Hello" and [t.name for t in plain.tools] == ["t"]


def test_prepare_context_in_place_unless_a_section_is_removed() -> None:
    messages = [
        SystemMessage(sections={"p": "Prompt", "q": "Q"}),
        UserMessage(content="x"),
        SystemMessage(content="Update"),
        UserMessage(content="y"),
    ]
    in_place = prepare_context(CLAUDE, LlmContext(messages=messages), mid_conversation_system=True)
    assert in_place.system_prompt == "Prompt\n\nQ"
    assert [m.role for m in in_place.messages] == ["user", "system", "user"]
    removing = [*messages, SystemMessage(sections={"q": None})]
    folded = prepare_context(CLAUDE, LlmContext(messages=removing), mid_conversation_system=True)
    assert folded.system_prompt == "Prompt\n\nUpdate"
    assert [m.role for m in folded.messages] == ["user", "user"]


def test_coding_agent_roles_become_user_text() -> None:
    messages = [
        CustomMessage(custom_type="note", content="from a plugin"),
        BashExecutionMessage(command="git status", output="clean", exit_code=1),
        BashExecutionMessage(command="secret", output="x", exclude_from_context=True),
        CompactionSummaryMessage(summary="we did things"),
        UnknownMessage(role="future"),
    ]
    out = to_llm_messages(messages)
    assert [m.role for m in out] == ["user", "user", "user"]
    assert out[0].content == "from a plugin"
    assert out[1].content[0].text.startswith("Ran `git status`\n```\nclean\n```")
    assert "exited with code 1" in out[1].content[0].text
    assert "<summary>\nwe did things\n</summary>" in out[2].content[0].text


# ----------------------------------------------------------------------------- max_tokens


def _window_model(window: int, max_tokens: int = 16384) -> Model:
    return Model(id="m", provider="p", api="openai-completions", name="M", context_window=window, max_tokens=max_tokens)


def _answer(total: int, timestamp: int, stop: str = "stop") -> AssistantMessage:
    from pi_hookspecs import Usage

    return AssistantMessage(
        content=[TextContent(text="ok")],
        api="openai-completions",
        provider="p",
        model="m",
        usage=Usage(total_tokens=total),
        stop_reason=stop,
        timestamp=timestamp,
    )


def test_max_tokens_are_fitted_into_the_window_as_pi_1_6_0_does() -> None:
    from pi_core.ai.token_budget import clamp_max_tokens, estimate_request_input_tokens

    def clamp(window: int, messages: list[Any], max_tokens: int = 16384) -> int:
        return clamp_max_tokens(_window_model(window), LlmContext(messages=messages), max_tokens)

    prose = [UserMessage(content="a" * 35_000, timestamp=1)]  # 10,000 tokens at 3.5 characters a token
    assert estimate_request_input_tokens(prose) == 10_000
    assert clamp(128_000, prose) == 16_384  # room enough: what was asked
    assert clamp(32_000, [UserMessage(content="a" * 70_000, timestamp=1)]) == 32_000 - 20_000 - 4_096
    # a large input: a 15% margin would leave under 32,768 tokens, so the fixed margin
    # is kept and the output capped at 32,768
    big = [UserMessage(content="a" * 525_000, timestamp=1)]  # 150,000 tokens
    assert clamp(200_000, big, 64_000) == 32_768
    assert clamp(10, big) == 1
    # the last usable usage is the base; only what follows is estimated
    history = [UserMessage(content="q", timestamp=1), _answer(50_000, 2), UserMessage(content="abc", timestamp=3)]
    assert estimate_request_input_tokens(history) == 50_001
    assert estimate_request_input_tokens([*history, _answer(60_000, 4, stop="error")]) == 50_001 + 1  # "ok"
    # an answer older than a message before it (a summary inserted later) does not count
    summary_first = [
        UserMessage(content="summary", timestamp=10),
        _answer(50_000, 5),
        UserMessage(content="x", timestamp=11),
    ]
    assert estimate_request_input_tokens(summary_first) == 2 + 1 + 1


def test_the_usage_scan_goes_on_where_the_last_request_ended() -> None:
    from pi_core.ai.token_budget import estimate_request_input_tokens

    messages: list[Any] = [UserMessage(content="q", timestamp=1), _answer(1_000, 2)]
    for turn in range(3, 40):
        messages.append(UserMessage(content="q" * 7, timestamp=turn))
        assert estimate_request_input_tokens(messages) == 1_000 + 2 * (turn - 2)
        fresh = list(messages)  # a different list with the same messages: same answer
        assert estimate_request_input_tokens(fresh) == 1_000 + 2 * (turn - 2)
    messages[0] = UserMessage(content="changed", timestamp=1)  # an earlier message replaced
    assert estimate_request_input_tokens(messages) == 1_000 + 2 * 37


def test_a_long_history_finds_the_usage_the_forward_scan_finds() -> None:
    """A long history read from nothing (a resumed session) is searched from its end;
    every arrangement of timestamps, failed turns and empty usages gives the answer of
    pi 1.6.0's forward scan."""
    import random

    from pi_core.ai.token_budget import _NO_USAGE, _usage_scan, _usage_state

    rng = random.Random(3)
    for _ in range(60):
        messages: list[Any] = []
        for n in range(rng.choice([256, 300, 700])):
            stamp = n if rng.random() > 0.05 else rng.randint(0, 2_000)  # some out of order
            if rng.random() < 0.5:
                messages.append(UserMessage(content="q", timestamp=stamp))
            else:
                stop = rng.choice(["stop", "stop", "toolUse", "error", "aborted"])
                messages.append(_answer(rng.choice([0, 10, 500]), stamp, stop=stop))
        if rng.random() < 0.3:  # a summary inserted later, newer than what follows it
            messages.insert(rng.randrange(len(messages)), UserMessage(content="summary", timestamp=5_000))
        stop = len(messages) - rng.choice([0, 1, 5])
        assert _usage_state(messages, stop) == _usage_scan(messages, 0, stop, _NO_USAGE)
    # a message without a numeric timestamp takes the forward scan
    odd = [UserMessage(content="q", timestamp=1)] * 300
    odd[10] = odd[10].model_copy(update={"timestamp": None})
    assert _usage_state(odd, 300) == _usage_scan(odd, 0, 300, _NO_USAGE)
