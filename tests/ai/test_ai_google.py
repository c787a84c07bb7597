"""google-generative-ai and google-vertex through pi's own HTTP + SSE client against a
local server speaking Gemini's ``streamGenerateContent?alt=sse``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from google_wire import chunk, gemini_stream, gemini_text
from wire_server import WireServer, collect, json_error, use_server

from pi_core.ai import ModelRegistry, classify_error, is_context_overflow, is_retryable_error, stream
from pi_core.ai.apis import google_shared, google_vertex
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
    parameters={"type": "object", "properties": {"command": {"type": "string"}}},
)
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0"  # base64
OPTIONS = StreamOptions(api_key="gemini-key")


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def gemini(server: WireServer, model_id: str = "gemini-2.5-flash", **fields: object) -> Model:
    values: dict[str, object] = {
        "id": model_id,
        "provider": "google",
        "api": "google-generative-ai",
        "base_url": f"{server.url}/v1beta",
        "input": ["text", "image"],
        "cost": ModelCost(input=1, output=2, cache_read=0.5),
        "context_window": 1_000_000,
        "max_tokens": 8_192,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def ctx(*messages: object, tools: list[ToolDeclaration] | None = None, prompt: str | None = "Be brief.") -> LlmContext:
    return LlmContext(system_prompt=prompt, messages=list(messages or [UserMessage(content="hi")]), tools=tools or [])


USAGE = {
    "promptTokenCount": 120,
    "candidatesTokenCount": 30,
    "cachedContentTokenCount": 20,
    "thoughtsTokenCount": 7,
    "totalTokenCount": 157,
}


# --------------------------------------------------------------------------- the Gemini API


async def test_text_usage_with_cached_tokens_and_request_shape(wire: WireServer) -> None:
    wire.enqueue(
        gemini_stream(
            [
                chunk([{"text": "Hel"}]),
                chunk([{"text": "lo!"}]),
                chunk([{"text": ""}], finish="STOP", usage=USAGE),
            ]
        )
    )
    s = stream(gemini(wire), ctx(), OPTIONS)
    events = await collect(s)
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    message = await s.result()
    assert message.text() == "Hello!" and message.stop_reason == "stop" and message.raw_stop_reason == "STOP"
    assert message.response_id == "resp-1" and message.response_model == "gemini-test"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.reasoning) == (100, 37, 20, 7)
    assert usage.total_tokens == 157
    assert usage.cost.total == pytest.approx((100 * 1 + 37 * 2 + 20 * 0.5) / 1e6)

    request = wire.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == "gemini-key"
    assert "authorization" not in request.headers
    body = request.body
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["systemInstruction"] == {"role": "user", "parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {"maxOutputTokens": 8192}
    assert "tools" not in body and "toolConfig" not in body


async def test_thinking_with_signatures_is_replayed_to_the_same_model(wire: WireServer) -> None:
    wire.enqueue(
        gemini_stream(
            [
                chunk([{"text": "Let me ", "thought": True, "thoughtSignature": SIGNATURE}]),
                chunk([{"text": "think.", "thought": True}]),  # the signature is kept when later pieces omit it
                chunk([{"text": "Answer", "thoughtSignature": SIGNATURE}], finish="STOP", usage=USAGE),
            ]
        ),
        gemini_text("again"),
        gemini_text("other"),
    )
    model = gemini(wire, reasoning=True)
    s = stream(model, ctx(), OPTIONS.model_copy(update={"thinking_level": "high"}))
    types = [e.type for e in await collect(s)]
    assert types[:5] == ["start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_end"]
    message = await s.result()
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Let me think."
    assert thinking.thinking_signature == SIGNATURE
    assert isinstance(text, TextContent) and text.text == "Answer" and text.text_signature == SIGNATURE
    assert wire.requests[0].body["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True,
        "thinkingBudget": 24576,
    }

    follow = [UserMessage(content="hi"), message, UserMessage(content="more")]
    await stream(model, ctx(*follow), OPTIONS).result()
    replayed = wire.requests[1].body["contents"][1]
    assert replayed == {
        "role": "model",
        "parts": [
            {"thought": True, "text": "Let me think.", "thoughtSignature": SIGNATURE},
            {"text": "Answer", "thoughtSignature": SIGNATURE},
        ],
    }
    # thinking off on a 2.5 model: a zero budget
    assert wire.requests[1].body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}

    # another model gets the thinking as plain text and no signature
    await stream(gemini(wire, "gemini-2.5-pro", reasoning=True), ctx(*follow), OPTIONS).result()
    assert wire.requests[2].body["contents"][1] == {
        "role": "model",
        "parts": [{"text": "Let me think."}, {"text": "Answer"}],
    }


def test_thinking_config_per_model_family() -> None:
    def config(model_id: str, level: str | None, **fields: object) -> object:
        model = Model(id=model_id, provider="google", api="google-generative-ai", reasoning=True, **fields)  # type: ignore[arg-type]
        return google_shared.thinking_config(model, StreamOptions(thinking_level=level), flash_lite=True)

    assert config("gemini-3-pro-preview", "low") == {"includeThoughts": True, "thinkingLevel": "LOW"}
    assert config("gemini-3.1-flash", "xhigh") == {"includeThoughts": True, "thinkingLevel": "HIGH"}
    assert config("gemini-2.5-pro", "minimal") == {"includeThoughts": True, "thinkingBudget": 128}
    assert config("gemini-2.5-flash-lite", "minimal") == {"includeThoughts": True, "thinkingBudget": 512}
    assert config("gemini-exp", "medium") == {"includeThoughts": True, "thinkingBudget": -1}
    # a model that cannot turn thinking off gets its lowest level instead
    assert config("gemini-3-pro-preview", None, thinking_level_map={"off": None, "minimal": None}) == {
        "thinkingLevel": "LOW"
    }
    assert config("gemini-3-flash", "off") == {"thinkingBudget": 0}
    # a level map that names a Google level
    assert config("gemini-3-flash", "medium", thinking_level_map={"medium": "HIGH"}) == {
        "includeThoughts": True,
        "thinkingLevel": "HIGH",
    }
    model = Model(id="gemini-2.5-flash", provider="google", api="google-generative-ai", reasoning=True)
    budgets = StreamOptions(thinking_level="low", extra={"thinking_budgets": {"low": 999}})
    assert google_shared.thinking_config(model, budgets, flash_lite=True) == {
        "includeThoughts": True,
        "thinkingBudget": 999,
    }


async def test_parallel_tool_calls_and_their_results(wire: WireServer) -> None:
    wire.enqueue(
        gemini_stream(
            [
                chunk([{"text": "Running both."}]),
                chunk(
                    [
                        {
                            "functionCall": {"id": "fc-1", "name": "bash", "args": {"command": "ls"}},
                            "thoughtSignature": SIGNATURE,
                        },
                        {"functionCall": {"id": "fc-2", "name": "bash", "args": {"command": "pwd"}}},
                    ],
                    finish="STOP",
                    usage=USAGE,
                ),
            ]
        ),
        gemini_text("done"),
    )
    model = gemini(wire, "gemini-3-flash-preview")
    s = stream(model, ctx(tools=[BASH]), OPTIONS)
    events = await collect(s)
    message = await s.result()
    assert message.stop_reason == "toolUse" and message.raw_stop_reason == "STOP"
    _, first, second = message.content
    assert isinstance(first, ToolCall) and first.id == "fc-1" and first.arguments == {"command": "ls"}
    assert first.thought_signature == SIGNATURE
    assert isinstance(second, ToolCall) and second.id == "fc-2" and second.arguments == {"command": "pwd"}
    assert [e.type for e in events].count("toolcall_end") == 2
    assert [e.type for e in events][1:4] == ["text_start", "text_delta", "text_end"]
    body = wire.requests[0].body
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "bash", "description": "Run a command", "parametersJsonSchema": BASH.parameters}
            ]
        }
    ]

    results = [
        ToolResultMessage(tool_call_id="fc-1", tool_name="bash", content=[TextContent(text="a.txt")]),
        ToolResultMessage(tool_call_id="fc-2", tool_name="bash", content=[TextContent(text="denied")], is_error=True),
    ]
    await stream(model, ctx(UserMessage(content="hi"), message, *results, tools=[BASH]), OPTIONS).result()
    contents = wire.requests[1].body["contents"]
    assert contents[1]["parts"][1:] == [
        {"functionCall": {"name": "bash", "args": {"command": "ls"}, "id": "fc-1"}, "thoughtSignature": SIGNATURE},
        {"functionCall": {"name": "bash", "args": {"command": "pwd"}, "id": "fc-2"}},
    ]
    # both answers in one user turn, with the ids Gemini 3 needs
    assert contents[2:] == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "bash", "response": {"output": "a.txt"}, "id": "fc-1"}},
                {"functionResponse": {"name": "bash", "response": {"error": "denied"}, "id": "fc-2"}},
            ],
        }
    ]


async def test_calls_without_ids_get_unique_ones_and_older_models_send_none(wire: WireServer) -> None:
    wire.enqueue(
        gemini_stream(
            [
                chunk(
                    [
                        {"functionCall": {"name": "bash", "args": {"command": "ls"}}},
                        {"functionCall": {"name": "bash", "args": {}}},
                    ],
                    finish="STOP",
                )
            ]
        ),
        gemini_text("ok"),
    )
    model = gemini(wire)  # gemini-2.5: no ids on the wire
    message = await stream(model, ctx(tools=[BASH]), OPTIONS).result()
    first, second = message.tool_calls()
    assert first.id.startswith("bash_") and second.id.startswith("bash_") and first.id != second.id
    result = ToolResultMessage(tool_call_id=first.id, tool_name="bash", content=[TextContent(text="x")])
    other = ToolResultMessage(tool_call_id=second.id, tool_name="bash", content=[TextContent(text="y")])
    await stream(model, ctx(UserMessage(content="hi"), message, result, other, tools=[BASH]), OPTIONS).result()
    contents = wire.requests[1].body["contents"]
    assert contents[1]["parts"][0] == {"functionCall": {"name": "bash", "args": {"command": "ls"}}}
    assert contents[2]["parts"][0] == {"functionResponse": {"name": "bash", "response": {"output": "x"}}}


async def test_tool_call_ids_of_another_model_are_normalised(wire: WireServer) -> None:
    wire.enqueue(gemini_text("ok"))
    foreign = AssistantMessage(
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        stop_reason="toolUse",
        content=[ToolCall(id="call_abc|fc_123", name="bash", arguments={}, thought_signature="sig")],
    )
    result = ToolResultMessage(tool_call_id="call_abc|fc_123", tool_name="bash", content=[TextContent(text="x")])
    await stream(
        gemini(wire, "gemini-3-pro-preview"), ctx(UserMessage(content="go"), foreign, result), OPTIONS
    ).result()
    contents = wire.requests[0].body["contents"]
    assert contents[1]["parts"] == [{"functionCall": {"name": "bash", "args": {}, "id": "call_abc_fc_123"}}]
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "call_abc_fc_123"


async def test_images_in_user_messages_and_tool_results(wire: WireServer) -> None:
    wire.enqueue(gemini_text("a"), gemini_text("b"))
    image = ImageContent(data=PIXEL, mime_type="image/png")
    call = AssistantMessage(
        api="google-generative-ai",
        provider="google",
        model="x",
        stop_reason="toolUse",
        content=[ToolCall(id="c1", name="screenshot", arguments={})],
    )
    messages = [
        UserMessage(content=[TextContent(text="look"), image]),
        call,
        ToolResultMessage(tool_call_id="c1", tool_name="screenshot", content=[image]),
    ]
    # Gemini 2.5: the tool's image goes in a user turn of its own
    await stream(gemini(wire), ctx(*messages), OPTIONS).result()
    contents = wire.requests[0].body["contents"]
    assert contents[0]["parts"] == [{"text": "look"}, {"inlineData": {"mimeType": "image/png", "data": PIXEL}}]
    assert contents[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "screenshot", "response": {"output": "(see attached image)"}}}],
    }
    assert contents[3] == {
        "role": "user",
        "parts": [{"text": "Tool result image:"}, {"inlineData": {"mimeType": "image/png", "data": PIXEL}}],
    }
    # Gemini 3: inside the function response
    await stream(gemini(wire, "gemini-3-pro-preview"), ctx(*messages), OPTIONS).result()
    contents = wire.requests[1].body["contents"]
    assert len(contents) == 3
    assert contents[2]["parts"][0]["functionResponse"]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": PIXEL}}
    ]


async def test_tool_schemas_and_tool_choice(wire: WireServer) -> None:
    wire.enqueue(gemini_text("ok"))
    tool = ToolDeclaration(
        name="pick",
        description="Pick",
        parameters={
            "type": "object",
            "properties": {
                "mode": {"const": "fast"},
                "n": {"anyOf": [{"const": 1}, {"const": True}]},
                "const": {"type": "string"},
            },
        },
    )
    options = OPTIONS.model_copy(update={"extra": {"tool_choice": "any"}, "temperature": 0.2})
    await stream(gemini(wire), ctx(tools=[tool]), options).result()
    body = wire.requests[0].body
    schema = body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]
    assert schema["properties"] == {
        "mode": {"enum": ["fast"]},
        "n": {"anyOf": [{"enum": [1]}, {"const": True}]},
        "const": {"type": "string"},
    }
    assert tool.parameters["properties"]["mode"] == {"const": "fast"}  # the declaration is left alone
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert body["generationConfig"]["temperature"] == 0.2


@pytest.mark.parametrize(
    ("finish", "stop", "error"),
    [
        ("MAX_TOKENS", "length", None),
        ("SAFETY", "error", "Provider stopped with: SAFETY"),
        ("RECITATION", "error", "Provider stopped with: RECITATION"),
        ("MALFORMED_FUNCTION_CALL", "error", "Provider stopped with: MALFORMED_FUNCTION_CALL"),
    ],
)
async def test_stop_reasons(wire: WireServer, finish: str, stop: str, error: str | None) -> None:
    wire.enqueue(gemini_text("partial", finish=finish))
    message = await stream(gemini(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == stop and message.raw_stop_reason == finish
    assert message.error_message == error
    assert message.text() == "partial"


async def test_a_blocked_prompt_and_a_stream_without_finish_are_errors(wire: WireServer) -> None:
    wire.enqueue(
        gemini_stream([{"promptFeedback": {"blockReason": "SAFETY"}, "responseId": "r"}]),
        gemini_stream([chunk([{"text": "cut"}])]),
    )
    blocked = await stream(gemini(wire), ctx(), OPTIONS).result()
    assert blocked.stop_reason == "error" and blocked.error_message == "Provider blocked the prompt: SAFETY"
    cut = await stream(gemini(wire), ctx(), OPTIONS).result()
    assert cut.stop_reason == "error" and cut.error_message == "Google stream ended without a finish reason"
    assert is_retryable_error(cut)


GOOGLE_429 = {
    "error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}
}


async def test_http_error_with_retry_after(wire: WireServer) -> None:
    wire.enqueue(json_error(429, GOOGLE_429, {"retry-after": "0"}), gemini_text("after the wait"))
    options = OPTIONS.model_copy(update={"extra": {"max_retries": 2}})
    message = await stream(gemini(wire), ctx(), options).result()
    assert message.text() == "after the wait"
    assert len(wire.requests) == 2

    wire.enqueue(json_error(429, GOOGLE_429, {"retry-after": "0"}))
    statuses: list[int] = []
    options = OPTIONS.model_copy(update={"on_response": lambda status, headers: statuses.append(status)})
    message = await stream(gemini(wire), ctx(), options).result()
    assert message.stop_reason == "error"
    assert message.error_message == (
        "Google API error (429): Resource has been exhausted (e.g. check quota). [RESOURCE_EXHAUSTED]"
    )
    assert classify_error(message) == "retryable"
    assert statuses == [429]


async def test_http_errors_are_classified(wire: WireServer) -> None:
    wire.enqueue(
        json_error(
            400,
            {
                "error": {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "message": "The input token count (1200000) exceeds the maximum number of tokens allowed "
                    "(1048576).",
                }
            },
        ),
        json_error(
            400,
            [
                {
                    "error": {
                        "code": 400,
                        "status": "INVALID_ARGUMENT",
                        "message": "API key not valid. Please pass a valid API key.",
                    }
                }
            ],
        ),
    )
    overflow = await stream(gemini(wire), ctx(), OPTIONS).result()
    assert is_context_overflow(overflow), overflow.error_message
    bad_key = await stream(gemini(wire), ctx(), OPTIONS).result()
    assert bad_key.error_message == (
        "Google API error (400): API key not valid. Please pass a valid API key. [INVALID_ARGUMENT]"
    )
    assert classify_error(bad_key) == "auth"


async def test_error_in_the_middle_of_the_stream(wire: WireServer) -> None:
    canned = gemini_stream([chunk([{"text": "par"}])])
    canned.body.append(
        b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\n\n'
    )
    wire.enqueue(canned)
    message = await stream(gemini(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "Google API error (503): The model is overloaded. [UNAVAILABLE]"
    assert message.text() == "par"
    assert is_retryable_error(message)


async def test_abort_mid_stream(wire: WireServer) -> None:
    canned = gemini_stream([chunk([{"text": "one "}]), chunk([{"text": "two "}])])
    canned.hold = True
    wire.enqueue(canned)
    controller = AbortController()
    s = stream(gemini(wire), ctx(), OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort("user pressed escape")
    message = await s.result()
    assert message.stop_reason == "aborted"
    assert message.text().startswith("one")


async def test_no_key_names_the_provider(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    message = await stream(gemini(wire), ctx(), StreamOptions()).result()
    assert message.stop_reason == "error"
    assert message.error_message.startswith("No API key for provider: google")
    assert not wire.requests


async def test_hooks_see_headers_payload_and_raw_events(wire: WireServer) -> None:
    wire.enqueue(gemini_text("x"))
    received: list[object] = []

    def on_headers(headers: dict[str, str | None]) -> None:
        headers["X-Org"] = "acme"

    options = OPTIONS.model_copy(
        update={
            "on_headers": on_headers,
            "on_payload": lambda payload: {**payload, "safetySettings": []},
            "on_raw_event": received.append,
        }
    )
    await stream(gemini(wire), ctx(), options).result()
    request = wire.requests[0]
    assert request.headers["x-org"] == "acme" and request.body["safetySettings"] == []
    assert received and all(isinstance(item, dict) and "responseId" in item for item in received)


async def test_the_converted_start_of_a_conversation_is_reused(wire: WireServer) -> None:
    wire.enqueue(gemini_text("a"), gemini_text("b"))
    model = gemini(wire)
    history: list[object] = [UserMessage(content="one")]
    for turn in range(3):
        history.append(
            AssistantMessage(
                api="google-generative-ai",
                provider="google",
                model=model.id,
                stop_reason="stop",
                content=[TextContent(text=f"answer {turn}")],
            )
        )
        history.append(UserMessage(content=f"question {turn}"))
    first = google_shared.convert_messages(model, list(history))
    history.append(
        AssistantMessage(
            api="google-generative-ai",
            provider="google",
            model=model.id,
            stop_reason="stop",
            content=[TextContent(text="later")],
        )
    )
    history.append(UserMessage(content="last"))
    second = google_shared.convert_messages(model, list(history))
    assert len(second) == len(first) + 2
    assert all(a is b for a, b in zip(first, second, strict=False))  # the same objects: converted once


# --------------------------------------------------------------------------- Vertex AI (the core API)


def vertex(base_url: str | None, model_id: str = "gemini-2.5-pro", **fields: object) -> Model:
    return Model(
        id=model_id,
        provider="google-vertex",
        api="google-vertex",
        base_url=base_url,  # type: ignore[arg-type]
        reasoning=True,
        input=["text", "image"],
        context_window=1_000_000,
        max_tokens=8192,
        **fields,
    )


def test_vertex_endpoints() -> None:
    def url(base: str | None, *, express: bool = False, **extra: str) -> str:
        return google_vertex.endpoint(vertex(base), StreamOptions(extra=extra), express=express)

    template = google_vertex.DEFAULT_BASE_URL
    suffix = "publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert url(template, project="p", location="europe-west4") == (
        f"https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/{suffix}"
    )
    assert url(None, project="p", location="global") == (
        f"https://aiplatform.googleapis.com/v1/projects/p/locations/global/{suffix}"
    )
    assert url(template, project="p", location="eu") == (
        f"https://aiplatform.eu.rep.googleapis.com/v1/projects/p/locations/eu/{suffix}"
    )
    assert url(template, express=True) == f"https://aiplatform.googleapis.com/v1/{suffix}"
    assert url("https://proxy.example/vertex") == f"https://proxy.example/vertex/v1/{suffix}"
    assert url("https://proxy.example/v1beta1/") == f"https://proxy.example/v1beta1/{suffix}"


def test_vertex_needs_a_project_and_a_location(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(Exception, match="set GOOGLE_CLOUD_PROJECT"):
        google_vertex.endpoint(vertex(None), StreamOptions(), express=False)
    monkeypatch.setenv("GCLOUD_PROJECT", "from-env")
    with pytest.raises(Exception, match="set GOOGLE_CLOUD_LOCATION"):
        google_vertex.endpoint(vertex(None), StreamOptions(), express=False)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
    assert "/projects/from-env/locations/us-east5/" in google_vertex.endpoint(
        vertex(None), StreamOptions(), express=False
    )


async def test_vertex_with_a_bearer_token_streams_from_the_project_endpoint(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    wire.enqueue(
        gemini_stream(
            [
                chunk([{"text": "Hmm", "thought": True, "thoughtSignature": SIGNATURE}]),
                chunk([{"text": "Hi from Vertex"}], finish="STOP", usage=USAGE),
            ]
        )
    )
    model = vertex(f"{wire.url}/{{location}}")
    options = StreamOptions(headers={"Authorization": "Bearer ya29.token"}, thinking_level="minimal")
    message = await stream(model, ctx(), options).result()
    assert message.text() == "Hi from Vertex" and message.api == "google-vertex"
    request = wire.requests[0]
    assert request.path == (
        "/us-central1/v1/projects/my-project/locations/us-central1/publishers/google/models/"
        "gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert request.headers["authorization"] == "Bearer ya29.token"
    assert "x-goog-api-key" not in request.headers
    # Vertex has no Flash-Lite budget table of its own; 2.5 Pro's minimal budget
    assert request.body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 128}


async def test_vertex_with_an_api_key(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_API_KEY", "vertex-key")
    wire.enqueue(gemini_text("keyed"))
    message = await stream(vertex(wire.url), ctx(), StreamOptions()).result()
    assert message.text() == "keyed"
    request = wire.requests[0]
    assert request.path == "/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == "vertex-key"


async def test_vertex_without_credentials_says_what_to_install(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_API_KEY", raising=False)
    # the marker pi 1.6.0 uses for "Google Cloud credentials, no key" is no key
    options = StreamOptions(api_key=google_vertex.CREDENTIALS_MARKER)
    message = await stream(vertex(wire.url), ctx(), options).result()
    assert message.stop_reason == "error"
    assert message.error_message.startswith("No API key for provider: google-vertex.")
    assert "pi install pluggable-pi-vertex" in message.error_message
    assert classify_error(message) == "auth"
    assert not wire.requests


async def test_a_credential_source_lends_the_token_through_the_registry(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from pathlib import Path

    from pi_hookspecs import CredentialRequest, CredentialSource, RequestCredentials

    monkeypatch.delenv("GOOGLE_CLOUD_API_KEY", raising=False)
    models = Path(str(tmp_path)) / "models.json"
    models.write_text(
        json.dumps(
            {
                "providers": {
                    "google-vertex": {
                        "baseUrl": f"{wire.url}/{{location}}",
                        "api": "google-vertex",
                        "models": [
                            {"id": "gemini-2.5-flash", "reasoning": True, "contextWindow": 1000000, "maxTokens": 8192}
                        ],
                    }
                }
            }
        )
    )
    seen: list[CredentialRequest] = []

    async def resolve(request: CredentialRequest) -> RequestCredentials | None:
        seen.append(request)
        if request.api_key:
            return None
        return RequestCredentials(
            headers={"Authorization": "Bearer lent"}, extra={"project": "lent-project", "location": "asia-east1"}
        )

    registry = ModelRegistry(models_path=models)
    model = registry.get("google-vertex", "gemini-2.5-flash")
    assert model is not None
    assert not registry.has_auth("google-vertex")
    registry.add_credential_source(
        CredentialSource(provider="google-vertex", resolve=resolve, available=lambda env: True)
    )
    assert registry.has_auth("google-vertex") and model in registry.available()
    wire.enqueue(gemini_text("lent"))
    message = await registry.complete(model, ctx())
    assert message.text() == "lent", message.error_message
    assert wire.requests[0].headers["authorization"] == "Bearer lent"
    assert "/projects/lent-project/locations/asia-east1/" in wire.requests[0].path
    assert seen[0].provider == "google-vertex" and seen[0].api_key is None and seen[0].model.id == model.id

    registry.remove_providers("plugin")
    assert not registry.has_auth("google-vertex")
