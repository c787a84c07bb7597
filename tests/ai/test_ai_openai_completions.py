"""openai-completions through pi's own HTTP + SSE client against a local server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from wire_server import (
    WireServer,
    chat_chunks,
    collect,
    json_error,
    use_server,
)

from pi_core.ai import classify_error, is_context_overflow, is_retryable_error, stream
from pi_core.ai.apis.openai_completions import resolve_compat
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

BASH = ToolDeclaration(name="bash", description="Run a command", parameters={"type": "object", "properties": {}})


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def model_for(server: WireServer, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "local-model",
        "provider": "ollama",
        "api": "openai-completions",
        "base_url": f"{server.url}/v1",
        "cost": ModelCost(input=1, output=2),
        "context_window": 32_000,
        "max_tokens": 4_000,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


OPTIONS = StreamOptions(api_key="local-key")


def ctx(*messages: object, tools: list[ToolDeclaration] | None = None, prompt: str | None = "Be brief.") -> LlmContext:
    return LlmContext(system_prompt=prompt, messages=list(messages or [UserMessage(content="hi")]), tools=tools or [])


async def test_text_usage_and_request_shape(wire: WireServer) -> None:
    wire.enqueue(
        chat_chunks(
            [{"content": "Hel"}, {"content": "lo!"}],
            usage={
                "prompt_tokens": 120,
                "completion_tokens": 30,
                "total_tokens": 150,
                "prompt_tokens_details": {"cached_tokens": 20},
            },
        )
    )
    s = stream(model_for(wire), ctx(), OPTIONS)
    events = await collect(s)
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    message = await s.result()
    assert message.text() == "Hello!" and message.stop_reason == "stop"
    assert message.response_id == "chatcmpl-1"
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (100, 30, 20)
    assert message.usage.total_tokens == 150
    assert message.usage.cost.total == pytest.approx((100 * 1 + 30 * 2) / 1e6)

    request = wire.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer local-key"
    body = request.body
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 4000
    assert body["store"] is False and "tools" not in body  # as pi 1.6.0: every host not known to reject it


async def test_reasoning_tokens_and_the_cost_openrouter_billed(wire: WireServer) -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 40,
        "total_tokens": 140,
        "completion_tokens_details": {"reasoning_tokens": 25},
        "cost": 0.0123,
        "is_byok": False,
    }
    wire.enqueue(chat_chunks([{"content": "ok"}], usage=usage))
    message = await stream(model_for(wire, provider="openrouter"), ctx(), OPTIONS).result()
    assert message.usage.reasoning == 25
    assert message.usage.cost.total == pytest.approx(0.0123) and message.usage.cost.total_from_provider is True
    # with the user's own key, the upstream cost is added to OpenRouter's fee
    byok = {**usage, "is_byok": True, "cost": 0.001, "cost_details": {"upstream_inference_cost": 0.02}}
    wire.enqueue(chat_chunks([{"content": "ok"}], usage=byok))
    message = await stream(model_for(wire, provider="openrouter"), ctx(), OPTIONS).result()
    assert message.usage.cost.total == pytest.approx(0.021) and message.usage.cost.total_from_provider is True
    # elsewhere the total is pi's computation, and reasoning is 0 when not reported
    wire.enqueue(
        chat_chunks(
            [{"content": "ok"}], usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12, "cost": 5}
        )
    )
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.usage.reasoning == 0 and message.usage.cost.total_from_provider is False
    assert message.usage.cost.total == pytest.approx((10 * 1 + 2 * 2) / 1e6)


async def test_reasoning_deltas_and_parallel_tool_calls(wire: WireServer) -> None:
    wire.enqueue(
        chat_chunks(
            [
                {"reasoning_content": "Need to "},
                {"reasoning_content": "look."},
                {
                    "tool_calls": [
                        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "bash", "arguments": ""}}
                    ]
                },
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "bash", "arguments": '{"command":'},
                        }
                    ]
                },
                {"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "ls"}'}}]},
                {"tool_calls": [{"index": 1, "function": {"arguments": ' "pwd"}'}}]},
            ],
            finish_reason="tool_calls",
        )
    )
    model = model_for(wire, reasoning=True)
    s = stream(model, ctx(tools=[BASH]), OPTIONS.model_copy(update={"thinking_level": "high"}))
    events = await collect(s)
    message = await s.result()
    thinking, first, second = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Need to look."
    assert thinking.thinking_signature == "reasoning_content"
    assert isinstance(first, ToolCall) and first.id == "call_a" and first.arguments == {"command": "ls"}
    assert isinstance(second, ToolCall) and second.id == "call_b" and second.arguments == {"command": "pwd"}
    assert message.stop_reason == "toolUse"
    assert [e.type for e in events].count("toolcall_end") == 2
    body = wire.requests[0].body
    assert body["reasoning_effort"] == "high"
    assert body["tools"][0]["function"]["name"] == "bash"
    assert body["messages"][0]["role"] == "system"


async def test_reasoning_field_replayed_and_tool_results(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "ok"}]))
    model = model_for(wire, reasoning=True, input=["text", "image"])
    previous = AssistantMessage(
        api="openai-completions",
        provider="ollama",
        model="local-model",
        stop_reason="toolUse",
        content=[
            ThinkingContent(thinking="think", thinking_signature="reasoning"),
            ToolCall(id="call_1", name="bash", arguments={"command": "ls"}),
        ],
    )
    image = ImageContent(data="aW1n", mime_type="image/png")
    result = ToolResultMessage(tool_call_id="call_1", tool_name="bash", content=[TextContent(text="a.txt"), image])
    await stream(model, ctx(UserMessage(content="go"), previous, result, tools=[BASH]), OPTIONS).result()
    messages = wire.requests[0].body["messages"]
    assistant = messages[2]
    assert assistant["reasoning"] == "think" and assistant["content"] is None
    assert assistant["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}
    assert messages[4]["role"] == "user"
    assert messages[4]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,aW1n"}}


async def test_compat_options_shape_the_request(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "fine"}]))
    compat = {
        "supportsDeveloperRole": True,
        "supportsUsageInStreaming": False,
        "maxTokensField": "max_tokens",
        "requiresToolResultName": True,
        "requiresAssistantAfterToolResult": True,
        "requiresNonNullAssistantContent": True,
        "requiresThinkingAsText": True,
        "supportsStrictMode": True,
        "supportsStore": True,
        "thinkingFormat": "qwen",
    }
    model = model_for(wire, reasoning=True, compat=compat)
    previous = AssistantMessage(
        api="openai-completions",
        provider="ollama",
        model="local-model",
        stop_reason="toolUse",
        content=[
            ThinkingContent(thinking="hmm", thinking_signature="reasoning_content"),
            ToolCall(id="call_1", name="bash", arguments={}),
        ],
    )
    messages = [
        UserMessage(content="go"),
        previous,
        ToolResultMessage(tool_call_id="call_1", tool_name="bash", content=[TextContent(text="out")]),
        UserMessage(content="next"),
    ]
    await stream(model, ctx(*messages, tools=[BASH]), OPTIONS.model_copy(update={"thinking_level": "low"})).result()
    body = wire.requests[0].body
    sent = body["messages"]
    assert sent[0] == {"role": "developer", "content": "Be brief."}
    assert sent[2]["content"] == "hmm" and "reasoning_content" not in sent[2]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "out", "name": "bash"}
    assert sent[4] == {"role": "assistant", "content": "I have processed the tool results."}
    assert sent[5] == {"role": "user", "content": "next"}
    assert "stream_options" not in body and body["max_tokens"] == 4000 and body["store"] is False
    assert body["tools"][0]["function"]["strict"] is False
    assert body["enable_thinking"] is True and body["reasoning_effort"] == "low"


async def test_non_null_assistant_content(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "fine"}]))
    model = model_for(wire, compat={"requiresNonNullAssistantContent": True})
    previous = AssistantMessage(
        api="openai-completions",
        provider="ollama",
        model="local-model",
        stop_reason="toolUse",
        content=[ToolCall(id="call_1", name="bash", arguments={})],
    )
    result = ToolResultMessage(tool_call_id="call_1", tool_name="bash", content=[])
    await stream(model, ctx(UserMessage(content="go"), previous, result), OPTIONS).result()
    sent = wire.requests[0].body["messages"]
    assert sent[2]["content"] == ""
    assert sent[3]["content"] == "(no tool output)"


def test_compat_defaults_by_endpoint() -> None:
    openai = resolve_compat(
        Model(id="gpt-4o", provider="openai", api="openai-completions", base_url="https://api.openai.com/v1")
    )
    local = resolve_compat(
        Model(id="qwen", provider="ollama", api="openai-completions", base_url="http://localhost:11434/v1")
    )
    deepseek = resolve_compat(
        Model(id="deepseek-chat", provider="deepseek", api="openai-completions", base_url="https://api.deepseek.com")
    )
    assert openai["supportsDeveloperRole"] and openai["supportsStore"]
    assert not local["supportsDeveloperRole"] and local["supportsStore"]
    assert local["maxTokensField"] == "max_completion_tokens"
    assert deepseek["maxTokensField"] == "max_tokens" and deepseek["thinkingFormat"] == "deepseek"
    overridden = resolve_compat(
        Model(id="x", provider="ollama", api="openai-completions", compat={"supportsDeveloperRole": True})
    )
    assert overridden["supportsDeveloperRole"] is True


async def test_no_finish_reason_is_inferred_when_unsupported(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "hi"}], finish_reason=None))
    model = model_for(wire, compat={"supportsFinishReason": False})
    message = await stream(model, ctx(), OPTIONS).result()
    assert message.stop_reason == "stop"


async def test_missing_finish_reason_is_an_error(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "hi"}], finish_reason=None))
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "Stream ended without finish_reason"


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached for requests",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            },
            "retryable",
        ),
        (503, {"error": {"message": "Service Unavailable", "type": "server_error"}}, "retryable"),
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 32768 tokens. However, you requested "
                    "40000 tokens",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            "context_overflow",
        ),
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            "auth",
        ),
        (
            429,
            {
                "error": {
                    "message": "You exceeded your current quota",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            "auth_or_other",
        ),
    ],
)
async def test_http_errors_are_classified(wire: WireServer, status: int, body: dict, kind: str) -> None:
    wire.enqueue(json_error(status, body))
    statuses: list[int] = []
    options = OPTIONS.model_copy(update={"on_response": lambda s, h: statuses.append(s)})
    message = await stream(model_for(wire), ctx(), options).result()
    assert message.stop_reason == "error"
    assert message.error_message.startswith(f"ollama API error ({status}): {body['error']['message']}")
    if kind == "auth_or_other":
        assert not is_retryable_error(message)
    else:
        assert classify_error(message) == kind
        assert is_context_overflow(message) is (kind == "context_overflow")
    assert statuses == [status]
    assert len(wire.requests) == 1


async def test_error_object_in_stream(wire: WireServer) -> None:
    canned = chat_chunks([{"content": "par"}], finish_reason=None, done=False)
    canned.body.append(b'data: {"error": {"message": "upstream overloaded", "code": 502}}\n\n')
    wire.enqueue(canned)
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert "upstream overloaded" in message.error_message
    assert is_retryable_error(message)


async def test_stream_cut_in_the_middle(wire: WireServer) -> None:
    canned = chat_chunks([{"content": "a"}, {"content": "b"}], finish_reason=None, done=False)
    canned.cut = True
    wire.enqueue(canned)
    message = await stream(model_for(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.text() == "ab"
    assert is_retryable_error(message), message.error_message


async def test_abort_mid_stream(wire: WireServer) -> None:
    canned = chat_chunks([{"content": "one "}, {"content": "two "}], finish_reason=None, done=False)
    canned.hold = True
    wire.enqueue(canned)
    controller = AbortController()
    s = stream(model_for(wire), ctx(), OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort("user pressed escape")
    message = await s.result()
    assert message.stop_reason == "aborted"
    assert message.text().startswith("one")


async def test_hooks(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "x"}]))
    received: list[object] = []

    def on_headers(headers: dict[str, str | None]) -> None:
        headers["X-Org"] = "acme"
        headers["User-Agent"] = None

    options = OPTIONS.model_copy(
        update={
            "on_headers": on_headers,
            "on_payload": lambda payload: {**payload, "temperature": 0.25},
            "on_raw_event": received.append,
        }
    )
    await stream(model_for(wire), ctx(), options).result()
    request = wire.requests[0]
    assert request.headers["x-org"] == "acme"
    assert "pi-python" not in request.headers.get("user-agent", "")
    assert request.body["temperature"] == 0.25
    assert received and all(isinstance(item, dict) for item in received)
    assert received[0]["object"] == "chat.completion.chunk"


async def test_mid_conversation_system_messages(wire: WireServer) -> None:
    wire.enqueue(chat_chunks([{"content": "a"}]), chat_chunks([{"content": "b"}]))
    messages = [
        SystemMessage(content="", sections={"base": "You are pi.", "cwd": "cwd: /a"}),
        UserMessage(content="one"),
        SystemMessage(sections={"cwd": "cwd: /b"}, content="Be terse."),
        UserMessage(content="two"),
    ]
    folded = model_for(wire)
    await stream(folded, ctx(*messages, prompt="ignored"), OPTIONS).result()
    sent = wire.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "You are pi.\n\ncwd: /b\n\nBe terse."}
    assert [m["role"] for m in sent] == ["system", "user", "user"]

    in_place = model_for(wire, compat={"supportsMidConvoSystemMessages": True})
    await stream(in_place, ctx(*messages, prompt="ignored"), OPTIONS).result()
    sent = wire.requests[1].body["messages"]
    assert sent[0] == {"role": "system", "content": "You are pi.\n\ncwd: /a"}
    assert sent[2] == {"role": "system", "content": "Be terse.\n\ncwd: /b"}
    assert [m["role"] for m in sent] == ["system", "user", "system", "user"]


async def test_reasoning_details_round_trip(wire: WireServer) -> None:
    details = [{"type": "reasoning.text", "text": "step 1", "format": "x"}]
    wire.enqueue(chat_chunks([{"reasoning_details": details}, {"content": "answer"}]))
    model = model_for(wire, provider="openrouter", reasoning=True)
    message = await stream(model, ctx(), OPTIONS).result()
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent) and json.loads(thinking.thinking_signature or "") == details
    wire.enqueue(chat_chunks([{"content": "again"}]))
    await stream(model, ctx(UserMessage(content="q"), message, UserMessage(content="more")), OPTIONS).result()
    replayed = wire.requests[1].body["messages"][2]
    assert replayed["reasoning_details"] == details
