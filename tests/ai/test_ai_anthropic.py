"""anthropic-messages through pi's own HTTP + SSE client against a local server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from wire_server import (
    WireServer,
    anthropic_message,
    anthropic_stream,
    json_error,
    use_server,
)

from pi_core.ai import classify_error, is_context_overflow, is_retryable_error, stream
from pi_hookspecs import (
    AbortController,
    AssistantMessage,
    ImageContent,
    LlmContext,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

BASH = ToolDeclaration(
    name="bash",
    description="Run a command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
READ = ToolDeclaration(name="read", description="Read a file", parameters={"type": "object", "properties": {}})


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def model_for(server: WireServer, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "claude-test",
        "provider": "anthropic",
        "api": "anthropic-messages",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
        "context_window": 200_000,
        "max_tokens": 32_000,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def context(*messages: object, prompt: str = "You are pi.", tools: list[ToolDeclaration] | None = None) -> LlmContext:
    return LlmContext(system_prompt=prompt, messages=list(messages or [UserMessage(content="hi")]), tools=tools or [])


OPTIONS = StreamOptions(api_key="sk-test")


async def collect(s: object) -> list[object]:
    return [event async for event in s]  # type: ignore[attr-defined]


async def test_text_stream_usage_and_cost(wire: WireServer) -> None:
    wire.enqueue(
        anthropic_stream(
            anthropic_message(
                [{"type": "text", "text": "Hello there, friend."}],
                usage={
                    "input_tokens": 1000,
                    "output_tokens": 200,
                    "cache_read_input_tokens": 500,
                    "cache_creation_input_tokens": 100,
                },
            )
        )
    )
    s = stream(model_for(wire), context(), OPTIONS)
    events = await collect(s)
    kinds = [e.type for e in events]  # type: ignore[attr-defined]
    assert kinds[0] == "start" and kinds[1] == "text_start" and kinds[-2:] == ["text_end", "done"]
    # each event carries the message as it was when emitted (the stream runs ahead of
    # its consumer): the start is empty, the final message comes with done
    start = events[0].partial  # type: ignore[attr-defined]
    assert start.content == [] and start.stop_reason == "pending" and start.usage.output == 0
    assert events[-1].partial is events[-1].message  # type: ignore[attr-defined]
    deltas = "".join(e.delta for e in events if e.type == "text_delta")  # type: ignore[attr-defined]
    assert deltas == "Hello there, friend."
    message = await s.result()
    assert message.text() == "Hello there, friend."
    assert message.stop_reason == "stop" and message.raw_stop_reason == "end_turn"
    assert (message.api, message.provider, message.model) == ("anthropic-messages", "anthropic", "claude-test")
    assert message.response_id == "msg_01"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (1000, 200, 500, 100)
    assert usage.total_tokens == 1800
    assert usage.cost.input == pytest.approx(0.003)
    assert usage.cost.output == pytest.approx(0.003)
    assert usage.cost.total == pytest.approx(0.003 + 0.003 + 0.00015 + 0.000375)
    assert message.thinking_level == "off"

    request = wire.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test" and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = request.body
    assert body["model"] == "claude-test" and body["stream"] is True
    assert body["system"] == [{"type": "text", "text": "You are pi.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert body["thinking"] == {"type": "disabled"}


async def test_thinking_signature_redacted_and_parallel_tool_calls(wire: WireServer) -> None:
    wire.enqueue(
        anthropic_stream(
            anthropic_message(
                [
                    {"type": "thinking", "thinking": "Let me look around.", "signature": "sig-abc"},
                    {"type": "redacted_thinking", "data": "opaque=="},
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "json": ['{"comm', 'and": "ls', ' -la"}']},
                    {"type": "tool_use", "id": "toolu_2", "name": "read", "json": ['{"path"', ': "a.txt"}']},
                ],
                stop_reason="tool_use",
            )
        )
    )
    options = OPTIONS.model_copy(update={"thinking_level": "medium", "max_tokens": 4000})
    s = stream(model_for(wire), context(tools=[BASH, READ]), options)
    events = await collect(s)
    message = await s.result()
    assert message.stop_reason == "toolUse"
    thinking, redacted, first, second = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "Let me look around." and thinking.thinking_signature == "sig-abc"
    assert isinstance(redacted, ThinkingContent) and redacted.redacted and redacted.thinking_signature == "opaque=="
    assert isinstance(first, ToolCall) and first.arguments == {"command": "ls -la"} and first.id == "toolu_1"
    assert isinstance(second, ToolCall) and second.arguments == {"path": "a.txt"}
    tool_deltas = [e.delta for e in events if e.type == "toolcall_delta" and e.content_index == 2]  # type: ignore[attr-defined]
    assert tool_deltas == ['{"comm', 'and": "ls', ' -la"}']
    ends = [e for e in events if e.type == "toolcall_end"]  # type: ignore[attr-defined]
    assert [e.tool_call.name for e in ends] == ["bash", "read"]  # type: ignore[attr-defined]
    assert message.thinking_level == "medium"

    body = wire.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert body["max_tokens"] == 4000 + 8192
    assert "interleaved-thinking-2025-05-14" in wire.requests[0].headers["anthropic-beta"]
    assert [t["name"] for t in body["tools"]] == ["bash", "read"]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][0]["input_schema"]["required"] == ["command"]


async def test_adaptive_thinking_uses_effort(wire: WireServer) -> None:
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "ok"}])))
    model = model_for(wire, compat={"forceAdaptiveThinking": True}, thinking_level_map={"xhigh": "xhigh"})
    options = OPTIONS.model_copy(update={"thinking_level": "xhigh"})
    await stream(model, context(), options).result()
    body = wire.requests[0].body
    assert body["thinking"]["type"] == "adaptive"
    assert body["output_config"] == {"effort": "xhigh"}
    assert "anthropic-beta" not in wire.requests[0].headers


async def test_replays_signatures_images_and_tool_results(wire: WireServer) -> None:
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "done"}])))
    model = model_for(wire)
    previous = AssistantMessage(
        api="anthropic-messages",
        provider="anthropic",
        model="claude-test",
        stop_reason="toolUse",
        content=[
            ThinkingContent(thinking="plan", thinking_signature="sig-1"),
            ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="enc==", redacted=True),
            ToolCall(id="toolu_9", name="bash", arguments={"command": "ls"}),
        ],
    )
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    messages = [
        UserMessage(content=[TextContent(text="look"), image]),
        previous,
        ToolResultMessage(tool_call_id="toolu_9", tool_name="bash", content=[TextContent(text="a.txt"), image]),
    ]
    await stream(model, context(*messages, tools=[BASH]), OPTIONS).result()
    sent = wire.requests[0].body["messages"]
    assert sent[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="},
    }
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "enc=="},
            {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"command": "ls"}},
        ],
    }
    result = sent[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_9" and result["is_error"] is False
    assert result["content"][0] == {"type": "text", "text": "a.txt"}
    assert result["content"][1]["type"] == "image"
    assert result["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}},
            "retryable",
        ),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "retryable"),
        (500, {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}, "retryable"),
        (
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 213462 tokens > 200000 maximum",
                },
            },
            "context_overflow",
        ),
        (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, "auth"),
    ],
)
async def test_http_errors_are_classified(wire: WireServer, status: int, body: dict, kind: str) -> None:
    wire.enqueue(json_error(status, body, headers={"x-request-id": "req_1"}))
    seen: list[tuple[int, dict[str, str]]] = []
    options = OPTIONS.model_copy(update={"on_response": lambda s, h: seen.append((s, h))})
    s = stream(model_for(wire), context(), options)
    events = await collect(s)
    assert [e.type for e in events] == ["error"]  # type: ignore[attr-defined]
    message = await s.result()
    assert message.stop_reason == "error"
    assert message.error_message.startswith(f"Anthropic API error ({status}): ")
    assert body["error"]["message"] in message.error_message
    assert classify_error(message) == kind
    assert is_retryable_error(message) is (kind == "retryable")
    assert is_context_overflow(message) is (kind == "context_overflow")
    assert seen and seen[0][0] == status and seen[0][1]["x-request-id"] == "req_1"
    assert len(wire.requests) == 1  # the SDK does not retry


async def test_error_event_mid_stream(wire: WireServer) -> None:
    events = anthropic_message([{"type": "text", "text": "partial answer"}])[:4]
    events.append({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    wire.enqueue(anthropic_stream(events))
    message = await stream(model_for(wire), context(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "Anthropic API error: Overloaded [overloaded_error]"
    assert is_retryable_error(message)
    assert message.text().startswith("parti")


async def test_stream_cut_in_the_middle(wire: WireServer) -> None:
    events = anthropic_message([{"type": "text", "text": "this answer never ends"}])[:4]
    wire.enqueue(anthropic_stream(events, cut=True))
    s = stream(model_for(wire), context(), OPTIONS)
    kinds = [e.type for e in await collect(s)]  # type: ignore[attr-defined]
    assert kinds[0] == "start" and kinds[-1] == "error" and "done" not in kinds
    message = await s.result()
    assert message.stop_reason == "error"
    assert is_retryable_error(message), message.error_message


async def test_stream_ending_without_message_stop(wire: WireServer) -> None:
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "half"}])[:-2]))
    message = await stream(model_for(wire), context(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "Anthropic stream ended before message_stop"
    assert is_retryable_error(message)


async def test_abort_mid_stream(wire: WireServer) -> None:
    events = anthropic_message([{"type": "text", "text": "streaming slowly"}])[:4]
    wire.enqueue(anthropic_stream(events, hold=True))
    controller = AbortController()
    s = stream(model_for(wire), context(), OPTIONS.model_copy(update={"signal": controller.signal}))
    kinds = []
    async for event in s:
        kinds.append(event.type)
        if event.type == "text_delta":
            controller.abort()
    message = await s.result()
    assert kinds[-1] == "error"
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.text().startswith("strea")
    assert classify_error(message) == "aborted"


async def test_aborted_before_start_sends_nothing(wire: WireServer) -> None:
    controller = AbortController()
    controller.abort()
    s = stream(model_for(wire), context(), OPTIONS.model_copy(update={"signal": controller.signal}))
    message = await s.result()
    assert message.stop_reason == "aborted"
    assert wire.requests == []


async def test_hooks_headers_payload_response_raw_events(wire: WireServer) -> None:
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "hooked"}]), headers={"x-trace": "t1"}))
    raw: list[str] = []
    statuses: list[int] = []

    def on_headers(headers: dict[str, str | None]) -> None:
        headers["X-Added"] = "yes"
        headers["X-Remove-Me"] = None
        headers["X-Stainless-Lang"] = None

    async def on_payload(payload: dict) -> dict:
        return {**payload, "max_tokens": 77, "metadata": {"user_id": "u-1"}}

    async def on_response(status: int, headers: dict[str, str]) -> None:
        statuses.append(status)
        assert headers["x-trace"] == "t1"

    options = StreamOptions(
        api_key="sk-test",
        headers={"X-Remove-Me": "1", "X-Kept": "2"},
        on_headers=on_headers,
        on_payload=on_payload,
        on_response=on_response,
        on_raw_event=lambda data: raw.append(data["type"]),
    )
    message = await stream(model_for(wire), context(), options).result()
    assert message.text() == "hooked"
    request = wire.requests[0]
    assert request.headers["x-added"] == "yes" and request.headers["x-kept"] == "2"
    assert "x-remove-me" not in request.headers
    assert "x-stainless-lang" not in request.headers
    assert request.body["max_tokens"] == 77 and request.body["metadata"] == {"user_id": "u-1"}
    assert statuses == [200]
    assert raw[0] == "message_start" and raw[-1] == "message_stop" and "content_block_delta" in raw


async def test_missing_api_key_is_an_auth_error(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    message = await stream(model_for(wire), context()).result()
    assert message.stop_reason == "error"
    assert message.error_message.startswith("No API key for provider: anthropic")
    assert classify_error(message) == "auth"
    assert wire.requests == []


async def test_refusal_is_an_error(wire: WireServer) -> None:
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "I can"}], stop_reason="refusal")))
    message = await stream(model_for(wire), context(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "The model refused to complete the request"


async def test_system_messages_give_the_prompt_and_tools(wire: WireServer) -> None:
    from pi_hookspecs import SystemMessage, ToolReference

    messages = [
        SystemMessage(sections={"base": "You are pi.", "cwd": "cwd: /a"}, tools_added=[BASH, READ]),
        UserMessage(content="one"),
        SystemMessage(sections={"cwd": "cwd: /b"}, tools_removed=[ToolReference(name="read")]),
        UserMessage(content="two"),
    ]
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "a"}])))
    await stream(model_for(wire), context(*messages, prompt="not used", tools=[READ]), OPTIONS).result()
    body = wire.requests[0].body
    assert body["system"][0]["text"] == "You are pi.\n\ncwd: /b"
    assert [t["name"] for t in body["tools"]] == ["bash"]
    assert [m["role"] for m in body["messages"]] == ["user", "user"]

    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "b"}])))
    in_place = model_for(wire, compat={"supportsMidConvoSystemMessages": True})
    await stream(in_place, context(*messages), OPTIONS).result()
    body = wire.requests[1].body
    assert body["system"][0]["text"] == "You are pi.\n\ncwd: /a"
    assert [m["role"] for m in body["messages"]] == ["user", "system", "user"]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "cwd: /b"}]


def test_max_tokens_and_the_thinking_budget_fit_the_window_as_pi_1_6_0s() -> None:
    """Near a full context window the requested output shrinks (pi 1.6.0's clamp), and
    a thinking budget leaves 1,024 tokens of it for the answer."""
    from pi_core.ai.apis.anthropic import build_request
    from pi_hookspecs import AssistantMessage, LlmContext, Model, StreamOptions, TextContent, Usage, UserMessage

    model = Model(
        id="c",
        provider="p",
        api="anthropic-messages",
        name="C",
        context_window=32_000,
        max_tokens=8_000,
        reasoning=True,
    )
    answered = AssistantMessage(
        content=[TextContent(text="ok")],
        api="anthropic-messages",
        provider="p",
        model="c",
        usage=Usage(total_tokens=20_000),
        stop_reason="stop",
        timestamp=2,
    )
    context = LlmContext(
        messages=[UserMessage(content="q", timestamp=1), answered, UserMessage(content="more", timestamp=3)]
    )
    roomy = LlmContext(messages=[UserMessage(content="q", timestamp=1)])

    plain, _ = build_request(model, roomy, StreamOptions(thinking_level="off"))
    assert plain["max_tokens"] == 8_000  # room enough: the model's limit
    tight, _ = build_request(model, context, StreamOptions(thinking_level="off"))
    assert tight["max_tokens"] == 32_000 - 20_002 - 4_096  # the fixed margin, output under 32,768
    thinking, _ = build_request(model, context, StreamOptions(thinking_level="medium"))
    assert thinking["max_tokens"] == 32_000 - 20_002 - 4_096
    assert thinking["thinking"]["budget_tokens"] == thinking["max_tokens"] - 1_024
