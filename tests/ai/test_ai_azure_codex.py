"""azure-openai-responses and openai-codex-responses: OpenAI's Responses request and
stream, sent to an Azure OpenAI resource and to the ChatGPT (Codex) backend, through
pi's own HTTP + SSE client against a local server."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import pytest
from wire_server import WireServer, collect, json_error, responses_events, responses_stream, use_server

from pi_core.ai import classify_error, is_retryable_error, stream
from pi_core.ai.apis import azure_openai_responses as azure
from pi_core.ai.apis import openai_codex_responses as codex
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
PARALLEL = [
    {"type": "reasoning", "summary": ["Look first."], "encrypted_content": "ENC"},
    {"type": "message", "text": "Two commands."},
    {"type": "function_call", "call_id": "call_1", "name": "bash", "json": ['{"command"', ': "ls"}']},
    {"type": "function_call", "call_id": "call_2", "name": "bash", "json": ['{"command": "pwd"}']},
]
CACHED_USAGE = {
    "input_tokens": 1000,
    "output_tokens": 100,
    "total_tokens": 1100,
    "input_tokens_details": {"cached_tokens": 400, "cache_write_tokens": 100},
    "output_tokens_details": {"reasoning_tokens": 60},
}


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
def no_azure_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "AZURE_OPENAI_BASE_URL",
        "AZURE_OPENAI_RESOURCE_NAME",
        "AZURE_OPENAI_API_VERSION",
        "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
        "AZURE_OPENAI_API_KEY",
        "PI_CACHE_RETENTION",
    ):
        monkeypatch.delenv(name, raising=False)


def ctx(*messages: object, tools: list[ToolDeclaration] | None = None) -> LlmContext:
    return LlmContext(
        system_prompt="You are pi.", messages=list(messages or [UserMessage(content="hi")]), tools=tools or []
    )


def assert_parallel_answer(message: AssistantMessage) -> None:
    thinking, text, first, second = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Look first."
    assert json.loads(thinking.thinking_signature or "")["encrypted_content"] == "ENC"
    assert isinstance(text, TextContent) and text.text == "Two commands."
    assert isinstance(first, ToolCall) and first.id == "call_1|fc_2" and first.arguments == {"command": "ls"}
    assert isinstance(second, ToolCall) and second.id == "call_2|fc_3" and second.arguments == {"command": "pwd"}
    assert message.stop_reason == "toolUse"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.reasoning) == (500, 100, 400, 100, 60)


# --------------------------------------------------------------------------- Azure OpenAI


def azure_model(server: WireServer | None = None, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "gpt-test",
        "provider": "azure",
        "api": "azure-openai-responses",
        "base_url": f"{server.url}/openai/v1" if server else "",
        "reasoning": True,
        "cost": ModelCost(input=2, output=8, cache_read=0.5, cache_write=2),
        "max_tokens": 64_000,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


AZURE_OPTIONS = StreamOptions(api_key="azure-key", session_id="session-1")


async def test_azure_url_api_version_key_header_and_deployment(wire: WireServer) -> None:
    wire.enqueue(responses_stream(responses_events(PARALLEL, usage=CACHED_USAGE)))
    options = AZURE_OPTIONS.model_copy(update={"thinking_level": "high", "extra": {"cache_retention": "long"}})
    s = stream(azure_model(wire), ctx(tools=[BASH]), options)
    events = await collect(s)
    message = await s.result()
    assert_parallel_answer(message)
    assert message.api == "azure-openai-responses" and message.provider == "azure"
    assert [e.type for e in events].count("toolcall_end") == 2

    request = wire.requests[0]
    assert request.path == "/openai/v1/responses?api-version=v1"
    assert request.headers["api-key"] == "azure-key" and "authorization" not in request.headers
    body = request.body
    assert body["model"] == "gpt-test" and body["store"] is False and body["stream"] is True
    assert body["input"][0] == {"role": "developer", "content": "You are pi."}
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["prompt_cache_key"] == "session-1" and "prompt_cache_retention" not in body
    assert body["tools"][0]["name"] == "bash" and body["tools"][0]["strict"] is False


async def test_azure_deployment_map_version_and_base_url_from_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", f"{wire.url}/openai/v1/")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "other=x, gpt-test = my-deployment")
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "ok"}])))
    message = await stream(azure_model(None), ctx(), AZURE_OPTIONS).result()
    assert message.stop_reason == "stop" and message.text() == "ok"
    request = wire.requests[0]
    assert request.path == "/openai/v1/responses?api-version=2025-04-01-preview"
    assert request.body["model"] == "my-deployment"


def test_azure_base_url_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    options = StreamOptions()
    model = azure_model(None)
    with pytest.raises(azure.AzureConfigError, match="AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME"):
        azure.request_url(model, options)
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "contoso")
    assert azure.request_url(model, options) == "https://contoso.openai.azure.com/openai/v1/responses?api-version=v1"
    assert azure.normalize_base_url("https://contoso.cognitiveservices.azure.com/") == (
        "https://contoso.cognitiveservices.azure.com/openai/v1"
    )
    assert azure.normalize_base_url("https://contoso.openai.azure.com/openai/v1/responses") == (
        "https://contoso.openai.azure.com/openai/v1"
    )
    assert azure.normalize_base_url("https://proxy.example/azure/") == "https://proxy.example/azure"
    explicit = StreamOptions(
        extra={
            "azure_base_url": "https://x.ai.azure.com",
            "azure_api_version": "preview",
            "azure_deployment_name": "dep",
        }
    )
    assert azure.request_url(model, explicit) == "https://x.ai.azure.com/openai/v1/responses?api-version=preview"
    assert azure.deployment_name(model, explicit) == "dep"


async def test_azure_missing_endpoint_and_key_are_one_line_errors(wire: WireServer) -> None:
    message = await stream(azure_model(None), ctx(), AZURE_OPTIONS).result()
    assert message.stop_reason == "error"
    assert "AZURE_OPENAI_BASE_URL" in (message.error_message or "")
    message = await stream(azure_model(wire), ctx(), StreamOptions()).result()
    assert message.stop_reason == "error" and "No API key for provider: azure" in (message.error_message or "")
    assert wire.requests == []


async def test_azure_http_error_with_retry_after(wire: WireServer) -> None:
    wire.enqueue(
        json_error(
            429,
            {
                "error": {
                    "code": "429",
                    "message": "Requests to the Responses API have exceeded the rate limit of your current tier.",
                }
            },
            headers={"retry-after": "0"},
        )
    )
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "second try"}])))
    options = AZURE_OPTIONS.model_copy(update={"extra": {"max_retries": 1}})
    message = await stream(azure_model(wire), ctx(), options).result()
    assert message.text() == "second try" and len(wire.requests) == 2

    wire.enqueue(
        json_error(429, {"error": {"code": "RateLimit", "message": "Rate limit reached"}}, headers={"retry-after": "7"})
    )
    seen: list[tuple[int, dict[str, str]]] = []
    options = AZURE_OPTIONS.model_copy(update={"on_response": lambda status, headers: seen.append((status, headers))})
    message = await stream(azure_model(wire), ctx(), options).result()
    assert message.error_message == "Azure OpenAI API error (429): Rate limit reached [RateLimit]"
    assert is_retryable_error(message) and seen[0][0] == 429 and seen[0][1]["retry-after"] == "7"


async def test_azure_error_mid_stream_and_abort(wire: WireServer) -> None:
    events = responses_events([{"type": "message", "text": "partial"}])[:4]
    events.append({"type": "error", "code": "server_error", "message": "The server had an error"})
    wire.enqueue(responses_stream(events))
    message = await stream(azure_model(wire), ctx(), AZURE_OPTIONS).result()
    assert message.stop_reason == "error" and "The server had an error" in (message.error_message or "")
    assert message.text() == "partial"

    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "slow stream"}])[:4], hold=True))
    controller = AbortController()
    s = stream(azure_model(wire), ctx(), AZURE_OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    assert (await s.result()).stop_reason == "aborted"


# --------------------------------------------------------------------------- ChatGPT / Codex


def jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.signature"


TOKEN = jwt(
    {
        "https://api.openai.com/auth": {"chatgpt_account_id": "acct-1234", "chatgpt_plan_type": "plus"},
        "exp": 4_102_444_800,
    }
)
CODEX_OPTIONS = StreamOptions(api_key=TOKEN, session_id="session-1")


def codex_model(server: WireServer, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "gpt-codex-test",
        "provider": "openai-codex",
        "api": "openai-codex-responses",
        "base_url": f"{server.url}/backend-api",
        "reasoning": True,
        "cost": ModelCost(input=2, output=8, cache_read=0.5, cache_write=2),
        "max_tokens": 64_000,
        "thinking_level_map": {"minimal": "low"},
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def codex_events(items: list[dict[str, object]], **options: object) -> list[dict[str, object]]:
    """What the Codex backend streams: the Responses events, ending with ``response.done``."""
    events = responses_events(items, **options)  # type: ignore[arg-type]
    events[-1] = {**events[-1], "type": "response.done"}
    return events


async def test_codex_request_headers_and_body(wire: WireServer) -> None:
    wire.enqueue(responses_stream(codex_events(PARALLEL, usage=CACHED_USAGE)))
    options = CODEX_OPTIONS.model_copy(update={"thinking_level": "minimal", "headers": {"X-Extra": "1"}})
    message = await stream(codex_model(wire), ctx(tools=[BASH]), options).result()
    assert_parallel_answer(message)
    assert message.api == "openai-codex-responses"

    request = wire.requests[0]
    assert request.path == "/backend-api/codex/responses"
    headers = request.headers
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["chatgpt-account-id"] == "acct-1234"
    assert headers["originator"] == "pi" and headers["openai-beta"] == "responses=experimental"
    assert headers["accept"] == "text/event-stream" and headers["x-extra"] == "1"
    assert headers["session-id"] == "session-1" and headers["x-client-request-id"] == "session-1"
    body = request.body
    assert body["store"] is False and body["stream"] is True and body["model"] == "gpt-codex-test"
    # pi 1.6.0 keeps the system prompt in a leading developer item, not in `instructions`
    assert "instructions" not in body
    assert body["input"][0] == {"role": "developer", "content": "You are pi."}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["text"] == {"verbosity": "low"} and body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is True and body["prompt_cache_key"] == "session-1"
    assert body["tools"] == [
        {
            "type": "function",
            "name": "bash",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {}},
            "strict": None,
        }
    ]


async def test_codex_thinking_off_retention_none_and_incomplete(wire: WireServer) -> None:
    wire.enqueue(
        responses_stream(
            codex_events(
                [{"type": "message", "text": "trunc"}], status="incomplete", incomplete_reason="max_output_tokens"
            )
        )
    )
    options = CODEX_OPTIONS.model_copy(update={"extra": {"cache_retention": "none"}})
    message = await stream(codex_model(wire), ctx(), options).result()
    assert message.stop_reason == "length"
    request = wire.requests[0]
    assert request.body["reasoning"] == {"effort": "none"}
    assert "prompt_cache_key" not in request.body and "session-id" not in request.headers


async def test_codex_replays_its_own_reasoning(wire: WireServer) -> None:
    wire.enqueue(responses_stream(codex_events(PARALLEL[:1] + PARALLEL[2:3])))
    model = codex_model(wire)
    first = await stream(model, ctx(tools=[BASH]), CODEX_OPTIONS).result()
    result = ToolResultMessage(tool_call_id=first.content[1].id, tool_name="bash", content=[TextContent(text="a")])
    wire.enqueue(responses_stream(codex_events([{"type": "message", "text": "done"}])))
    await stream(model, ctx(UserMessage(content="hi"), first, result, tools=[BASH]), CODEX_OPTIONS).result()
    replay = wire.requests[1].body["input"]
    assert replay[2]["type"] == "reasoning" and replay[2]["encrypted_content"] == "ENC"
    assert replay[3]["call_id"] == "call_1" and replay[3]["id"] == "fc_1"
    assert replay[4] == {"type": "function_call_output", "call_id": "call_1", "output": "a"}


async def test_codex_token_without_account_id(wire: WireServer) -> None:
    options = CODEX_OPTIONS.model_copy(update={"api_key": jwt({"sub": "x"})})
    message = await stream(codex_model(wire), ctx(), options).result()
    assert message.stop_reason == "error" and "pi auth login openai-codex" in (message.error_message or "")
    message = await stream(codex_model(wire), ctx(), StreamOptions()).result()
    assert "No API key for provider: openai-codex" in (message.error_message or "")
    assert wire.requests == []


async def test_codex_usage_limit_and_retry_after(wire: WireServer) -> None:
    resets = int(time.time()) + 600
    wire.enqueue(
        json_error(
            429,
            {
                "error": {
                    "type": "usage_limit_reached",
                    "message": "The usage limit has been reached",
                    "plan_type": "PLUS",
                    "resets_at": resets,
                }
            },
        )
    )
    message = await stream(codex_model(wire), ctx(), CODEX_OPTIONS).result()
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("You have hit your ChatGPT usage limit (plus plan). Try again in ~")

    wire.enqueue(json_error(503, {"error": {"message": "upstream overloaded"}}, headers={"retry-after-ms": "0"}))
    wire.enqueue(responses_stream(codex_events([{"type": "message", "text": "back"}])))
    options = CODEX_OPTIONS.model_copy(update={"extra": {"max_retries": 2}})
    message = await stream(codex_model(wire), ctx(), options).result()
    assert message.text() == "back" and len(wire.requests) == 3

    wire.enqueue(json_error(500, {"error": {"message": "upstream overloaded"}}))
    message = await stream(codex_model(wire), ctx(), CODEX_OPTIONS).result()
    assert message.error_message == "OpenAI Codex API error (500): upstream overloaded"
    assert classify_error(message) == "retryable"


async def test_codex_error_events_mid_stream(wire: WireServer) -> None:
    events = codex_events([{"type": "message", "text": "partial"}])[:4]
    wire.enqueue(
        responses_stream([*events, {"type": "error", "error": {"code": "server_error", "message": "stream broke"}}])
    )
    message = await stream(codex_model(wire), ctx(), CODEX_OPTIONS).result()
    assert message.stop_reason == "error" and message.error_message == "Codex error: stream broke"
    assert message.text() == "partial"

    failed = {
        "type": "response.failed",
        "response": {
            "status": "failed",
            "error": {
                "code": "context_length_exceeded",
                "message": "Your input exceeds the context window of this model.",
            },
        },
    }
    wire.enqueue(responses_stream([*events[:1], failed]))
    message = await stream(codex_model(wire), ctx(), CODEX_OPTIONS).result()
    assert classify_error(message) == "context_overflow"

    wire.enqueue(responses_stream(events))
    message = await stream(codex_model(wire), ctx(), CODEX_OPTIONS).result()
    assert message.error_message == "Codex stream ended without a stop reason"


async def test_codex_abort(wire: WireServer) -> None:
    wire.enqueue(responses_stream(codex_events([{"type": "message", "text": "slow stream"}])[:4], hold=True))
    controller = AbortController()
    s = stream(codex_model(wire), ctx(), CODEX_OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    message = await s.result()
    assert message.stop_reason == "aborted" and message.text().startswith("slow ")


def test_codex_url_and_account_id() -> None:
    assert codex.resolve_url(None) == "https://chatgpt.com/backend-api/codex/responses"
    assert codex.resolve_url("https://proxy.example/codex/") == "https://proxy.example/codex/responses"
    assert codex.resolve_url("https://proxy.example/codex/responses") == "https://proxy.example/codex/responses"
    assert codex.account_id(TOKEN) == "acct-1234"
