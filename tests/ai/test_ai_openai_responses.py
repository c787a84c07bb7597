"""openai-responses through pi's own HTTP + SSE client against a local server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from wire_server import (
    WireServer,
    collect,
    json_error,
    responses_events,
    responses_stream,
    use_server,
)

from pi_core.ai import classify_error, is_retryable_error, stream
from pi_hookspecs import (
    AbortController,
    AssistantMessage,
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

BASH = ToolDeclaration(name="bash", description="Run a command", parameters={"type": "object", "properties": {}})
OPTIONS = StreamOptions(api_key="sk-openai", session_id="session-1")


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def model_for(server: WireServer, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "gpt-test",
        "provider": "openai",
        "api": "openai-responses",
        "base_url": f"{server.url}/v1",
        "reasoning": True,
        "cost": ModelCost(input=2, output=8, cache_read=0.5),
        "context_window": 400_000,
        "max_tokens": 64_000,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def ctx(*messages: object, tools: list[ToolDeclaration] | None = None) -> LlmContext:
    return LlmContext(
        system_prompt="You are pi.", messages=list(messages or [UserMessage(content="hi")]), tools=tools or []
    )


async def test_reasoning_text_and_parallel_tool_calls(wire: WireServer) -> None:
    wire.enqueue(
        responses_stream(
            responses_events(
                [
                    {"type": "reasoning", "summary": ["First part.", "Second part."], "encrypted_content": "ENC"},
                    {"type": "message", "text": "Running two commands."},
                    {"type": "function_call", "call_id": "call_1", "name": "bash", "json": ['{"command"', ': "ls"}']},
                    {"type": "function_call", "call_id": "call_2", "name": "bash", "json": ['{"command": "pwd"}']},
                ],
                usage={
                    "input_tokens": 1000,
                    "output_tokens": 100,
                    "total_tokens": 1100,
                    "input_tokens_details": {"cached_tokens": 400},
                    "output_tokens_details": {"reasoning_tokens": 60},
                },
            )
        )
    )
    s = stream(model_for(wire), ctx(tools=[BASH]), OPTIONS.model_copy(update={"thinking_level": "high"}))
    events = await collect(s)
    message = await s.result()
    thinking, text, first, second = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "First part.\n\nSecond part."
    item = json.loads(thinking.thinking_signature or "")
    assert item["type"] == "reasoning" and item["id"] == "rs_0" and item["encrypted_content"] == "ENC"
    assert isinstance(text, TextContent) and text.text == "Running two commands."
    assert json.loads(text.text_signature or "") == {"v": 1, "id": "msg_1"}
    assert isinstance(first, ToolCall) and first.id == "call_1|fc_2" and first.arguments == {"command": "ls"}
    assert isinstance(second, ToolCall) and second.id == "call_2|fc_3" and second.arguments == {"command": "pwd"}
    assert message.stop_reason == "toolUse" and message.response_id == "resp_1"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.reasoning, usage.total_tokens) == (
        600,
        100,
        400,
        60,
        1100,
    )
    assert usage.cost.total == pytest.approx((600 * 2 + 100 * 8 + 400 * 0.5) / 1e6)
    thinking_deltas = "".join(e.delta for e in events if e.type == "thinking_delta")
    assert thinking_deltas == "First part.\n\nSecond part."

    request = wire.requests[0]
    assert request.path == "/v1/responses"
    body = request.body
    assert body["input"][0] == {"role": "developer", "content": "You are pi."}
    assert body["input"][1] == {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False and body["prompt_cache_key"] == "session-1"
    assert body["tools"] == [
        {
            "type": "function",
            "name": "bash",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
    ]
    assert request.headers["session_id"] == "session-1"


async def test_reasoning_items_replayed_for_the_same_model_only(wire: WireServer) -> None:
    wire.enqueue(
        responses_stream(
            responses_events(
                [
                    {"type": "reasoning", "summary": ["Plan."], "encrypted_content": "SECRET"},
                    {"type": "function_call", "call_id": "call_1", "name": "bash", "json": ['{"command": "ls"}']},
                ]
            )
        )
    )
    model = model_for(wire)
    first = await stream(model, ctx(tools=[BASH]), OPTIONS).result()
    result = ToolResultMessage(tool_call_id=first.content[1].id, tool_name="bash", content=[TextContent(text="a")])
    history = [UserMessage(content="hi"), first, result]

    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "done"}])))
    await stream(model, ctx(*history, tools=[BASH]), OPTIONS).result()
    replay = wire.requests[1].body["input"]
    assert replay[2]["type"] == "reasoning" and replay[2]["encrypted_content"] == "SECRET"
    assert replay[3] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "bash",
        "arguments": '{"command":"ls"}',  # as JSON.stringify writes it
        "id": "fc_1",
    }
    assert replay[4] == {"type": "function_call_output", "call_id": "call_1", "output": "a"}

    other = model_for(wire, id="gpt-other")
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "done"}])))
    await stream(other, ctx(*history, tools=[BASH]), OPTIONS).result()
    replay = wire.requests[2].body["input"]
    assert all(item.get("type") != "reasoning" for item in replay)
    assert {"role": "assistant", "type": "message"}.items() <= replay[2].items()
    assert replay[2]["content"][0]["text"] == "Plan."
    assert replay[3] == {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": '{"command":"ls"}'}


async def test_non_reasoning_model_uses_system_role(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "ok"}])))
    await stream(model_for(wire, reasoning=False), ctx(), OPTIONS).result()
    body = wire.requests[0].body
    assert body["input"][0]["role"] == "system" and "reasoning" not in body


async def test_thinking_off_sends_effort_none(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "ok"}])))
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert wire.requests[0].body["reasoning"] == {"effort": "none"}
    assert message.thinking_level == "off"


async def test_incomplete_max_output_tokens_is_length(wire: WireServer) -> None:
    wire.enqueue(
        responses_stream(
            responses_events(
                [{"type": "message", "text": "trunc"}], status="incomplete", incomplete_reason="max_output_tokens"
            )
        )
    )
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "length"
    assert message.raw_stop_reason == "incomplete.max_output_tokens"


async def test_failed_response_and_overflow(wire: WireServer) -> None:
    events = responses_events([])[:1]
    events.append(
        {
            "type": "response.failed",
            "response": {
                "id": "resp_1",
                "object": "response",
                "created_at": 1,
                "model": "gpt-test",
                "output": [],
                "status": "failed",
                "error": {
                    "code": "context_length_exceeded",
                    "message": "Your input exceeds the context window of this model.",
                },
            },
        }
    )
    wire.enqueue(responses_stream(events))
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert classify_error(message) == "context_overflow"


@pytest.mark.parametrize(
    ("status", "message_text", "kind"),
    [
        (429, "Rate limit reached", "retryable"),
        (500, "The server had an error processing your request", "retryable"),
        (400, "Your input exceeds the context window of this model.", "context_overflow"),
        (401, "Incorrect API key provided", "auth"),
    ],
)
async def test_http_errors(wire: WireServer, status: int, message_text: str, kind: str) -> None:
    wire.enqueue(
        json_error(
            status, {"error": {"message": message_text, "type": "requests", "code": None}}, headers={"retry-after": "2"}
        )
    )
    seen: list[tuple[int, dict[str, str]]] = []
    options = OPTIONS.model_copy(update={"on_response": lambda status, headers: seen.append((status, headers))})
    message = await stream(model_for(wire), ctx(), options).result()
    assert message.error_message.startswith(f"OpenAI API error ({status}): {message_text}")
    assert classify_error(message) == kind
    assert is_retryable_error(message) is (kind == "retryable")
    assert seen[0][0] == status and seen[0][1]["retry-after"] == "2"
    assert len(wire.requests) == 1


async def test_stream_without_terminal_event(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "cut short"}])[:-1]))
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "OpenAI Responses stream ended before a terminal response event"
    assert message.text() == "cut short"
    assert is_retryable_error(message)


async def test_stream_cut_in_the_middle(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "never finished"}])[:4], cut=True))
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert is_retryable_error(message), message.error_message


async def test_abort_mid_stream(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "slow stream"}])[:4], hold=True))
    controller = AbortController()
    s = stream(model_for(wire), ctx(), OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    message = await s.result()
    assert message.stop_reason == "aborted"


async def test_hooks(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "ok"}])))
    types: list[str] = []

    async def on_headers(headers: dict[str, str | None]) -> None:
        headers["X-Tenant"] = "t-9"
        headers["session_id"] = None

    async def on_raw_event(data: dict) -> None:
        types.append(data["type"])

    options = OPTIONS.model_copy(
        update={
            "on_headers": on_headers,
            "on_payload": lambda p: {**p, "service_tier": "flex"},
            "on_raw_event": on_raw_event,
        }
    )
    await stream(model_for(wire), ctx(), options).result()
    request = wire.requests[0]
    assert request.headers["x-tenant"] == "t-9" and "session_id" not in request.headers
    assert request.body["service_tier"] == "flex"
    assert types[0] == "response.created" and types[-1] == "response.completed"


async def test_cross_provider_history(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "ok"}])))
    foreign = AssistantMessage(
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
        stop_reason="toolUse",
        content=[
            ThinkingContent(thinking="hidden", thinking_signature="sig"),
            ToolCall(id="toolu_01|x", name="bash", arguments={"command": "ls"}),
        ],
    )
    result = ToolResultMessage(tool_call_id="toolu_01|x", tool_name="bash", content=[TextContent(text="out")])
    await stream(model_for(wire), ctx(UserMessage(content="go"), foreign, result), OPTIONS).result()
    sent = wire.requests[0].body["input"]
    assert sent[2]["type"] == "message" and sent[2]["content"][0]["text"] == "hidden"
    assert sent[3]["call_id"] == "toolu_01" and "id" not in sent[3]
    assert sent[4] == {"type": "function_call_output", "call_id": "toolu_01", "output": "out"}


def test_max_output_tokens_fit_the_window_as_pi_1_6_0s() -> None:
    from pi_core.ai.apis.openai_responses import build_payload
    from pi_hookspecs import LlmContext, Model, StreamOptions, UserMessage

    model = Model(id="g", provider="p", api="openai-responses", name="G", context_window=32_000, max_tokens=8_000)
    big = LlmContext(messages=[UserMessage(content="a" * 70_000, timestamp=1)])  # 20,000 tokens
    assert build_payload(model, big, StreamOptions())["max_output_tokens"] == 32_000 - 20_000 - 4_096
    small = LlmContext(messages=[UserMessage(content="hi", timestamp=1)])
    assert build_payload(model, small, StreamOptions())["max_output_tokens"] == 8_000
