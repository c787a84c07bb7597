"""mistral-conversations through pi's own HTTP + SSE client against a local server
speaking Mistral's streaming chat completions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from wire_server import Canned, WireServer, collect, json_error, sse, use_server

from pi_core.ai import classify_error, is_retryable_error, stream
from pi_core.ai.tool_call_ids import mistral_tool_call_id
from pi_hookspecs import (
    AbortController,
    AssistantMessage,
    ImageContent,
    LlmContext,
    Model,
    ModelCost,
    StreamOptions,
    SystemMessage,
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
    parameters={"type": "object", "properties": {"command": {"type": "string"}}},
)
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
OPTIONS = StreamOptions(api_key="mistral-key")


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def mistral(server: WireServer, model_id: str = "mistral-medium-latest", **fields: object) -> Model:
    values: dict[str, object] = {
        "id": model_id,
        "provider": "mistral",
        "api": "mistral-conversations",
        "base_url": server.url,
        "cost": ModelCost(input=1, output=2, cache_read=0.1),
        "context_window": 128_000,
        "max_tokens": 4_096,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def ctx(*messages: object, tools: list[ToolDeclaration] | None = None, prompt: str | None = "Be brief.") -> LlmContext:
    return LlmContext(system_prompt=prompt, messages=list(messages or [UserMessage(content="hi")]), tools=tools or [])


def chunks(
    deltas: list[dict[str, Any]],
    *,
    finish: str | None = "stop",
    usage: dict[str, Any] | None = None,
    done: bool = True,
) -> Canned:
    """A Mistral stream: one chunk per delta, the last one with the finish reason and usage."""
    events: list[tuple[str | None, Any]] = []
    for position, delta in enumerate(deltas):
        last = position == len(deltas) - 1
        body: dict[str, Any] = {
            "id": "cmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "mistral-medium-latest",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish if last else None}],
        }
        if last and usage is not None:
            body["usage"] = usage
        events.append((None, body))
    if done:
        events.append((None, "[DONE]"))
    return Canned(body=sse(events))


USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 20},
}


async def test_text_usage_with_cached_tokens_and_request_shape(wire: WireServer) -> None:
    wire.enqueue(chunks([{"role": "assistant", "content": "Hel"}, {"content": "lo!"}], usage=USAGE))
    s = stream(mistral(wire), ctx(), OPTIONS.model_copy(update={"session_id": "session-1"}))
    events = await collect(s)
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"], events
    message = await s.result()
    assert message.text() == "Hello!" and message.stop_reason == "stop" and message.response_id == "cmpl-1"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (100, 30, 20, 150)
    assert usage.cost.total == pytest.approx((100 * 1 + 30 * 2 + 20 * 0.1) / 1e6)

    request = wire.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer mistral-key"
    assert request.headers["x-affinity"] == "session-1"
    assert request.body == {
        "model": "mistral-medium-latest",
        "stream": True,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "max_tokens": 4096,
        "prompt_cache_key": "session-1",
    }


async def test_no_prompt_cache_without_a_session_or_when_turned_off(wire: WireServer) -> None:
    wire.enqueue(chunks([{"content": "a"}]), chunks([{"content": "b"}]))
    await stream(mistral(wire), ctx(), OPTIONS).result()
    off = OPTIONS.model_copy(update={"session_id": "s", "extra": {"cache_retention": "none"}})
    await stream(mistral(wire), ctx(), off).result()
    for request in wire.requests:
        assert "prompt_cache_key" not in request.body and "x-affinity" not in request.headers


async def test_thinking_chunks_and_their_replay(wire: WireServer) -> None:
    wire.enqueue(
        chunks(
            [
                {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}]}]},
                {"content": ""},  # an empty delta does not split the thinking
                {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "think."}]}]},
                {"content": [{"type": "text", "text": "Answer"}]},
            ],
            usage=USAGE,
        ),
        chunks([{"content": "again"}]),
    )
    model = mistral(wire, "magistral-medium-latest", reasoning=True)
    s = stream(model, ctx(), OPTIONS.model_copy(update={"thinking_level": "high"}))
    types = [e.type for e in await collect(s)]
    assert types == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    message = await s.result()
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Let me think."
    assert isinstance(text, TextContent) and text.text == "Answer"
    body = wire.requests[0].body
    assert body["prompt_mode"] == "reasoning" and "reasoning_effort" not in body

    await stream(model, ctx(UserMessage(content="hi"), message, UserMessage(content="more")), OPTIONS).result()
    assert wire.requests[1].body["messages"][2] == {
        "role": "assistant",
        "prefix": False,
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}]},
            {"type": "text", "text": "Answer"},
        ],
    }
    assert "prompt_mode" not in wire.requests[1].body  # thinking off


def test_reasoning_effort_follows_the_thinking_level_map() -> None:
    from pi_core.ai.apis.mistral import _reasoning

    level_map = {"off": "none", "minimal": None, "low": "low", "medium": None, "high": "high"}
    model = Model(id="m", provider="mistral", api="mistral-conversations", reasoning=True, thinking_level_map=level_map)
    assert _reasoning(model, StreamOptions(thinking_level="low")) == (None, "low")
    assert _reasoning(model, StreamOptions(thinking_level="medium")) == (None, "high")  # clamped up
    assert _reasoning(model, StreamOptions()) == (None, "none")
    plain = Model(id="m", provider="mistral", api="mistral-conversations", reasoning=True)
    assert _reasoning(plain, StreamOptions(thinking_level="low")) == ("reasoning", None)
    assert _reasoning(plain, StreamOptions(thinking_level="off")) == (None, None)


async def test_parallel_tool_calls_and_their_results(wire: WireServer) -> None:
    wire.enqueue(
        chunks(
            [
                {"content": "Running both."},
                {"tool_calls": [{"id": "AbCdEf123", "index": 0, "function": {"name": "bash", "arguments": '{"comm'}}]},
                {
                    "tool_calls": [
                        {"id": "AbCdEf123", "index": 0, "function": {"name": "bash", "arguments": 'and": "ls"}'}}
                    ]
                },
                {
                    "tool_calls": [
                        {"id": "XyZ987654", "index": 1, "function": {"name": "bash", "arguments": {"command": "pwd"}}}
                    ]
                },
            ],
            finish="tool_calls",
        ),
        chunks([{"content": "done"}]),
    )
    model = mistral(wire)
    s = stream(model, ctx(tools=[BASH]), OPTIONS)
    events = await collect(s)
    message = await s.result()
    assert message.stop_reason == "toolUse"
    _, first, second = message.content
    assert isinstance(first, ToolCall) and first.id == "AbCdEf123" and first.arguments == {"command": "ls"}
    assert isinstance(second, ToolCall) and second.id == "XyZ987654" and second.arguments == {"command": "pwd"}
    types = [e.type for e in events]
    assert types.count("toolcall_end") == 2 and types.index("text_end") < types.index("toolcall_start")
    assert wire.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a command",
                "parameters": BASH.parameters,
                "strict": False,
            },
        }
    ]

    results = [
        ToolResultMessage(tool_call_id="AbCdEf123", tool_name="bash", content=[TextContent(text="a.txt\n")]),
        ToolResultMessage(
            tool_call_id="XyZ987654", tool_name="bash", content=[TextContent(text="nope")], is_error=True
        ),
    ]
    await stream(model, ctx(UserMessage(content="hi"), message, *results, tools=[BASH]), OPTIONS).result()
    sent = wire.requests[1].body["messages"]
    assert sent[2] == {
        "role": "assistant",
        "prefix": False,
        "content": [{"type": "text", "text": "Running both."}],
        "tool_calls": [
            {
                "id": "AbCdEf123",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                "index": 0,
            },
            {
                "id": "XyZ987654",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command":"pwd"}'},
                "index": 0,
            },
        ],
    }
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "AbCdEf123", "name": "bash", "content": [{"type": "text", "text": "a.txt"}]},
        {
            "role": "tool",
            "tool_call_id": "XyZ987654",
            "name": "bash",
            "content": [{"type": "text", "text": "[tool error] nope"}],
        },
    ]


async def test_tool_call_ids_of_other_models_become_nine_characters(wire: WireServer) -> None:
    wire.enqueue(chunks([{"content": "ok"}]))
    foreign = AssistantMessage(
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
        stop_reason="toolUse",
        content=[ToolCall(id="toolu_01ABCdef", name="bash", arguments={})],
    )
    result = ToolResultMessage(tool_call_id="toolu_01ABCdef", tool_name="bash", content=[TextContent(text="x")])
    await stream(mistral(wire), ctx(UserMessage(content="go"), foreign, result), OPTIONS).result()
    sent = wire.requests[0].body["messages"]
    expected = mistral_tool_call_id("toolu_01ABCdef")
    assert expected == "9o5szclp9"  # pi 1.6.0's id for it
    assert sent[2]["tool_calls"][0]["id"] == expected and sent[3]["tool_call_id"] == expected
    assert mistral_tool_call_id("abc-def-123") == "abcdef123"


async def test_tool_calls_without_ids(wire: WireServer) -> None:
    wire.enqueue(
        chunks(
            [{"tool_calls": [{"id": "null", "index": 0, "function": {"name": "bash", "arguments": "{}"}}]}],
            finish="tool_calls",
        )
    )
    message = await stream(mistral(wire), ctx(tools=[BASH]), OPTIONS).result()
    (call,) = message.tool_calls()
    assert call.id == mistral_tool_call_id("toolcall:0") == "toolcall0"  # as pi 1.6.0


async def test_images(wire: WireServer) -> None:
    wire.enqueue(chunks([{"content": "a"}]), chunks([{"content": "b"}]))
    image = ImageContent(data=PIXEL, mime_type="image/png")
    call = AssistantMessage(
        api="mistral-conversations",
        provider="mistral",
        model="m",
        stop_reason="toolUse",
        content=[ToolCall(id="abcdefghi", name="shot", arguments={})],
    )
    messages = [
        UserMessage(content=[TextContent(text="look"), image]),
        call,
        ToolResultMessage(tool_call_id="abcdefghi", tool_name="shot", content=[image]),
    ]
    await stream(mistral(wire, input=["text", "image"]), ctx(*messages), OPTIONS).result()
    sent = wire.requests[0].body["messages"]
    assert sent[1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": f"data:image/png;base64,{PIXEL}"},
    ]
    assert sent[3]["content"] == [
        {"type": "text", "text": "(see attached image)"},
        {"type": "image_url", "image_url": f"data:image/png;base64,{PIXEL}"},
    ]
    # a text-only model gets placeholders
    await stream(mistral(wire), ctx(*messages), OPTIONS).result()
    sent = wire.requests[1].body["messages"]
    assert sent[1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": "(image omitted: model does not support images)"},
    ]
    assert sent[3]["content"] == [{"type": "text", "text": "(tool image omitted: model does not support images)"}]


async def test_mid_conversation_system_messages(wire: WireServer) -> None:
    wire.enqueue(chunks([{"content": "a"}]), chunks([{"content": "b"}]))
    messages = [
        SystemMessage(content="", sections={"base": "You are pi.", "cwd": "cwd: /a"}),
        UserMessage(content="one"),
        SystemMessage(sections={"cwd": "cwd: /b"}, content="Be terse."),
        UserMessage(content="two"),
    ]
    await stream(mistral(wire), ctx(*messages, prompt="ignored"), OPTIONS).result()
    assert [m["role"] for m in wire.requests[0].body["messages"]] == ["system", "user", "user"]
    in_place = mistral(wire, compat={"supportsMidConvoSystemMessages": True})
    await stream(in_place, ctx(*messages, prompt="ignored"), OPTIONS).result()
    sent = wire.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "system", "user"]
    assert sent[2] == {"role": "system", "content": "Be terse.\n\ncwd: /b"}


@pytest.mark.parametrize(
    ("finish", "stop", "error"),
    [
        ("length", "length", None),
        ("model_length", "length", None),
        ("error", "error", "Provider stopped with: error (server error)"),
        ("content_filter", "error", "Provider stopped with: content_filter"),
    ],
)
async def test_stop_reasons(wire: WireServer, finish: str, stop: str, error: str | None) -> None:
    wire.enqueue(chunks([{"content": "partial"}], finish=finish))
    message = await stream(mistral(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == stop and message.raw_stop_reason == finish and message.error_message == error
    if finish == "error":
        assert is_retryable_error(message)


async def test_http_error_with_retry_after(wire: WireServer) -> None:
    error = {"object": "error", "message": "Requests rate limit exceeded", "type": "rate_limited", "code": "1300"}
    wire.enqueue(json_error(429, error, {"retry-after": "0"}), chunks([{"content": "after the wait"}]))
    message = await stream(mistral(wire), ctx(), OPTIONS.model_copy(update={"extra": {"max_retries": 1}})).result()
    assert message.text() == "after the wait" and len(wire.requests) == 2

    wire.enqueue(json_error(429, error, {"retry-after": "0"}))
    message = await stream(mistral(wire), ctx(), OPTIONS).result()
    assert message.error_message == "Mistral API error (429): Requests rate limit exceeded [1300]"
    assert classify_error(message) == "retryable"

    wire.enqueue(json_error(401, {"detail": "Unauthorized"}))
    message = await stream(mistral(wire), ctx(), OPTIONS).result()
    assert message.error_message.startswith("Mistral API error (401)")
    assert classify_error(message) == "auth"


async def test_error_in_the_middle_of_the_stream(wire: WireServer) -> None:
    canned = chunks([{"content": "par"}], finish=None, done=False)
    canned.body.append(b'data: {"object": "error", "message": "Service unavailable", "type": "internal"}\n\n')
    wire.enqueue(canned)
    message = await stream(mistral(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error" and message.text() == "par"
    assert message.error_message == "Mistral API error: Service unavailable [internal]"
    assert is_retryable_error(message)

    canned = chunks([{"content": "x"}], finish=None, done=False)
    canned.body.append(b'data: {"unexpected": true}\n\n')
    wire.enqueue(canned)
    message = await stream(mistral(wire), ctx(), OPTIONS).result()
    assert message.error_message == "Invalid Mistral streaming event"


async def test_a_stream_without_finish_is_an_error(wire: WireServer) -> None:
    wire.enqueue(chunks([{"content": "cut"}], finish=None))
    message = await stream(mistral(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error" and message.error_message == "Mistral stream ended without a finish reason"


async def test_abort_mid_stream(wire: WireServer) -> None:
    canned = chunks([{"content": "one "}, {"content": "two "}], finish=None, done=False)
    canned.hold = True
    wire.enqueue(canned)
    controller = AbortController()
    s = stream(mistral(wire), ctx(), OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort("user pressed escape")
    message = await s.result()
    assert message.stop_reason == "aborted" and message.text().startswith("one")


async def test_tool_choice_temperature_and_hooks(wire: WireServer) -> None:
    wire.enqueue(chunks([{"content": "x"}]))
    options = OPTIONS.model_copy(
        update={
            "temperature": 0.3,
            "extra": {"tool_choice": {"type": "function", "function": {"name": "bash"}}},
            "on_payload": lambda payload: {**payload, "random_seed": 7},
            "headers": {"x-affinity": "mine"},
            "session_id": "s",
        }
    )
    await stream(mistral(wire), ctx(tools=[BASH]), options).result()
    request = wire.requests[0]
    assert request.body["tool_choice"] == {"type": "function", "function": {"name": "bash"}}
    assert request.body["temperature"] == 0.3 and request.body["random_seed"] == 7
    assert request.headers["x-affinity"] == "mine"  # an explicit affinity header is kept
    assert json.dumps(request.body)  # plain JSON
