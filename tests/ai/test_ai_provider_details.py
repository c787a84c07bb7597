"""Provider details pi 1.6.0 has and the wire APIs keep, each against the local wire
server: GitHub Copilot's per-request headers, Google's ``retryDelay`` (RetryInfo) as
the server-requested wait, Cloudflare's account and gateway ids in the base URL, and
strict tool schemas for Gemini 3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google_wire import gemini_text
from wire_server import Canned, WireServer, anthropic_message, anthropic_stream, json_error, sse, use_server

from pi_core.ai import ModelRegistry, stream
from pi_core.ai.apis import _common, google_shared
from pi_core.ai.apis._common import HttpStatusError, body_retry_delay
from pi_core.ai.auth import AuthStore
from pi_core.ai.errors import requested_retry_delay
from pi_hookspecs import (
    AssistantMessage,
    ImageContent,
    LlmContext,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
OPTIONS = StreamOptions(api_key="test-key")


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def model(server: WireServer, provider: str, api: str, *, base_url: str | None = None, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": "test-model",
        "provider": provider,
        "api": api,
        "base_url": base_url if base_url is not None else server.url,
        "input": ["text", "image"],
        "cost": ModelCost(input=1, output=2),
        "context_window": 100_000,
        "max_tokens": 4_000,
    }
    values.update(fields)
    return Model(**values)


def chat_answer(text: str = "ok") -> list[bytes]:
    return sse(
        [
            (None, {"id": "c1", "choices": [{"index": 0, "delta": {"content": text}}]}),
            (None, {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (None, "[DONE]"),
        ]
    )


def responses_answer(text: str = "ok") -> list[bytes]:
    item = {"type": "message", "id": "m1", "role": "assistant", "status": "completed"}
    part = {"type": "output_text", "text": text, "annotations": []}
    return sse(
        [
            ("response.created", {"type": "response.created", "response": {"id": "r1", "status": "in_progress"}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            (
                "response.content_part.added",
                {"type": "response.content_part.added", "item_id": "m1", "output_index": 0, "part": part},
            ),
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "delta": text},
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": {**item, "content": [part]}},
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        "id": "r1",
                        "status": "completed",
                        "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
                    },
                },
            ),
        ]
    )


def canned(body: list[bytes]) -> Canned:
    return Canned(body=body)


def answer(api: str) -> Canned:
    """A short successful answer in ``api``'s wire format."""
    if api == "openai-completions":
        return canned(chat_answer())
    if api == "openai-responses":
        return canned(responses_answer())
    return anthropic_stream(anthropic_message([{"type": "text", "text": "ok"}]))


# --------------------------------------------------------------------------- GitHub Copilot


def _tool_turn(image: bool) -> list[object]:
    call = ToolCall(id="call_1", name="read", arguments={"path": "a.png"})
    result_content: list[TextContent | ImageContent] = [TextContent(text="the file")]
    if image:
        result_content.append(ImageContent(data=PIXEL, mime_type="image/png"))
    return [
        UserMessage(content="look"),
        AssistantMessage(
            provider="github-copilot",
            model="test-model",
            api="openai-completions",
            content=[call],
            stop_reason="toolUse",
        ),
        ToolResultMessage(tool_call_id="call_1", tool_name="read", content=result_content),
    ]


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses", "anthropic-messages"])
async def test_copilot_headers_follow_the_conversation(wire: WireServer, api: str) -> None:
    copilot = model(wire, "github-copilot", api, headers={"Copilot-Integration-Id": "vscode-chat"})

    # the user's own turn, text only
    wire.enqueue(answer(api))
    message = await stream(copilot, LlmContext(messages=[UserMessage(content="hi")]), OPTIONS).result()
    assert message.stop_reason == "stop", message.error_message
    sent = wire.requests[-1].headers
    assert sent["x-initiator"] == "user"
    assert sent["openai-intent"] == "conversation-edits"
    assert "copilot-vision-request" not in sent
    assert sent["copilot-integration-id"] == "vscode-chat"
    assert sent["authorization"] == "Bearer test-key"
    assert "x-api-key" not in sent

    # a follow-up after a tool result with an image: the agent's, with vision
    wire.enqueue(answer(api))
    message = await stream(copilot, LlmContext(messages=_tool_turn(image=True)), OPTIONS).result()
    assert message.stop_reason == "stop", message.error_message
    sent = wire.requests[-1].headers
    assert sent["x-initiator"] == "agent"
    assert sent["copilot-vision-request"] == "true"

    # an image in a user message; the request's own headers still win
    wire.enqueue(answer(api))
    user_image = UserMessage(content=[TextContent(text="see"), ImageContent(data=PIXEL, mime_type="image/png")])
    options = OPTIONS.model_copy(update={"headers": {"X-Initiator": "agent"}})
    await stream(copilot, LlmContext(messages=[user_image]), options).result()
    sent = wire.requests[-1].headers
    assert sent["x-initiator"] == "agent"
    assert sent["copilot-vision-request"] == "true"


async def test_other_providers_get_no_copilot_headers(wire: WireServer) -> None:
    wire.enqueue(canned(chat_answer()))
    await stream(model(wire, "openai", "openai-completions"), LlmContext(messages=_tool_turn(True)), OPTIONS).result()
    sent = wire.requests[-1].headers
    assert not {"x-initiator", "openai-intent", "copilot-vision-request"} & set(sent)


def test_copilot_initiator_rules() -> None:
    copilot = Model(id="m", provider="github-copilot", api="openai-completions")
    assert _common.copilot_headers(copilot, [])["X-Initiator"] == "user"
    assert _common.copilot_headers(copilot, _tool_turn(False)) == {
        "X-Initiator": "agent",
        "Openai-Intent": "conversation-edits",
    }
    assert _common.copilot_headers(copilot, _tool_turn(False)[:2])["X-Initiator"] == "agent"
    assert _common.copilot_headers(Model(id="m", provider="openai", api="openai-completions"), []) == {}


# --------------------------------------------------------------------------- Google retryDelay


def _google_429(delay: object) -> dict[str, object]:
    return {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
            ],
        }
    }


def _gemini(server: WireServer) -> Model:
    return model(server, "google", "google-generative-ai", base_url=f"{server.url}/v1beta", id="gemini-2.5-flash")


def test_retry_delay_is_read_from_the_body() -> None:
    assert body_retry_delay(_google_429("13s")) == 13.0
    assert body_retry_delay(_google_429("0.5s")) == 0.5
    assert body_retry_delay([_google_429("2s")]) == 2.0  # a list body, as Gemini sometimes sends
    assert body_retry_delay(_google_429({"seconds": 3, "nanos": 500_000_000})) == 3.5
    assert body_retry_delay(_google_429("soon")) is None
    assert body_retry_delay({"error": {"message": "x"}}) is None
    assert body_retry_delay("text") is None
    # headers win over the body
    assert HttpStatusError(429, _google_429("13s"), {"retry-after": "4"}).retry_after == 4.0
    assert HttpStatusError(429, _google_429("13s")).retry_after == 13.0


async def test_google_retry_delay_is_the_requested_wait(wire: WireServer) -> None:
    wire.enqueue(json_error(429, _google_429("13s")))
    message = await stream(_gemini(wire), LlmContext(messages=[UserMessage(content="hi")]), OPTIONS).result()
    assert message.stop_reason == "error"
    assert "You exceeded your current quota." in (message.error_message or "")
    assert requested_retry_delay(message) == 13.0


async def test_google_retry_delay_paces_the_provider_retries(wire: WireServer) -> None:
    wire.enqueue(json_error(429, _google_429("0s")), gemini_text("after the wait"))
    options = OPTIONS.model_copy(update={"extra": {"max_retries": 2}})
    message = await stream(_gemini(wire), LlmContext(messages=[UserMessage(content="hi")]), options).result()
    assert message.text() == "after the wait"
    assert len(wire.requests) == 2

    # a wait longer than max_retry_delay: not retried, the error says so through the policy
    wire.reset()
    wire.enqueue(json_error(429, _google_429("90s")))
    options = OPTIONS.model_copy(update={"extra": {"max_retries": 2, "max_retry_delay": 60}})
    message = await stream(_gemini(wire), LlmContext(messages=[UserMessage(content="hi")]), options).result()
    assert message.stop_reason == "error"
    assert len(wire.requests) == 1
    assert requested_retry_delay(message) == 90.0


# --------------------------------------------------------------------------- Cloudflare


def _cloudflare(server: WireServer, provider: str, api: str, path: str) -> Model:
    return model(server, provider, api, base_url=server.url + path)


async def test_workers_ai_fills_the_account_id(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "acct-123")
    workers = _cloudflare(
        wire, "cloudflare-workers-ai", "openai-completions", "/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1"
    )
    wire.enqueue(canned(chat_answer("hello")))
    message = await stream(workers, LlmContext(messages=[UserMessage(content="hi")]), OPTIONS).result()
    assert message.text() == "hello", message.error_message
    assert wire.requests[-1].path == "/client/v4/accounts/acct-123/ai/v1/chat/completions"
    assert wire.requests[-1].headers["authorization"] == "Bearer test-key"


async def test_missing_account_id_fails_with_one_line(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOUDFLARE_ACCOUNT_ID", raising=False)
    monkeypatch.setenv("CLOUDFLARE_GATEWAY_ID", "gw")
    workers = _cloudflare(
        wire, "cloudflare-workers-ai", "openai-completions", "/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1"
    )
    message = await stream(workers, LlmContext(messages=[UserMessage(content="hi")]), OPTIONS).result()
    assert message.stop_reason == "error"
    error = message.error_message or ""
    assert "CLOUDFLARE_ACCOUNT_ID is not set" in error and "\n" not in error
    assert wire.requests == []  # nothing was sent


async def test_missing_gateway_id_is_named(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "acct")
    monkeypatch.delenv("CLOUDFLARE_GATEWAY_ID", raising=False)
    gateway = _cloudflare(
        wire, "cloudflare-ai-gateway", "openai-responses", "/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/openai"
    )
    message = await stream(gateway, LlmContext(messages=[UserMessage(content="hi")]), OPTIONS).result()
    assert "CLOUDFLARE_GATEWAY_ID is not set" in (message.error_message or "")
    assert wire.requests == []


@pytest.mark.parametrize(
    ("api", "path", "sent_path"),
    [
        ("openai-responses", "/openai", "/openai/responses"),
        ("anthropic-messages", "/anthropic", "/anthropic/v1/messages"),
        ("openai-completions", "/compat", "/compat/chat/completions"),
    ],
)
async def test_gateway_url_and_authorization(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, api: str, path: str, sent_path: str
) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "acct")
    monkeypatch.setenv("CLOUDFLARE_GATEWAY_ID", "gw")
    gateway = _cloudflare(
        wire, "cloudflare-ai-gateway", api, "/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}" + path
    )
    wire.enqueue(answer(api))
    message = await stream(gateway, LlmContext(messages=[UserMessage(content="hi")]), OPTIONS).result()
    assert message.stop_reason == "stop", message.error_message
    sent = wire.requests[-1]
    assert sent.path == "/v1/acct/gw" + sent_path
    assert sent.headers["cf-aig-authorization"] == "Bearer test-key"
    assert "authorization" not in sent.headers and "x-api-key" not in sent.headers


async def test_registry_takes_the_account_id_from_the_credential(
    wire: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "from-process")
    auth = tmp_path / "auth.json"
    auth.write_text(
        json.dumps(
            {"cloudflare-workers-ai": {"type": "api_key", "key": "cf-key", "env": {"CLOUDFLARE_ACCOUNT_ID": "stored"}}}
        )
    )
    registry = ModelRegistry(auth=AuthStore(auth), models_path=tmp_path / "models.json")
    workers = _cloudflare(
        wire, "cloudflare-workers-ai", "openai-completions", "/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1"
    )
    wire.enqueue(canned(chat_answer("hello")))
    message = await registry.stream(workers, LlmContext(messages=[UserMessage(content="hi")])).result()
    assert message.text() == "hello", message.error_message
    assert wire.requests[-1].path == "/client/v4/accounts/stored/ai/v1/chat/completions"
    assert wire.requests[-1].headers["authorization"] == "Bearer cf-key"


def test_catalogue_cloudflare_models_carry_the_placeholders() -> None:
    registry = ModelRegistry(auth=AuthStore(Path("/nonexistent/auth.json")))
    workers = registry.get("cloudflare-workers-ai", "@cf/moonshotai/kimi-k2.7-code")
    gateway = registry.get("cloudflare-ai-gateway", "workers-ai/@cf/moonshotai/kimi-k2.7-code")
    assert workers is not None and "{CLOUDFLARE_ACCOUNT_ID}" in (workers.base_url or "")
    assert gateway is not None and "{CLOUDFLARE_GATEWAY_ID}" in (gateway.base_url or "")
    filled = _common.fill_base_url(gateway.base_url or "", {"CLOUDFLARE_ACCOUNT_ID": "a", "CLOUDFLARE_GATEWAY_ID": "g"})
    assert filled.startswith("https://gateway.ai.cloudflare.com/v1/a/g/")


# --------------------------------------------------------------------------- Gemini 3 strict tools

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["path"],
}
STRICT = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    "required": ["path", "limit"],
    "additionalProperties": False,
}


def _tool(strict: str | None = "prefer", parameters: dict[str, Any] | None = None) -> ToolDeclaration:
    fields: dict[str, Any] = {"name": "read", "description": "Read a file", "parameters": parameters or SCHEMA}
    if strict is not None:
        fields["constrainedSampling"] = {"type": "json_schema", "strict": strict}
    return ToolDeclaration.model_validate(fields)


async def _gemini_request(wire: WireServer, model_id: str, tool: ToolDeclaration, **extra: object) -> dict[str, object]:
    wire.enqueue(gemini_text("ok"))
    gemini = model(wire, "google", "google-generative-ai", base_url=f"{wire.url}/v1beta", id=model_id)
    context = LlmContext(messages=[UserMessage(content="hi")], tools=[tool])
    options = OPTIONS.model_copy(update={"extra": dict(extra)})
    message = await stream(gemini, context, options).result()
    assert message.stop_reason == "stop", message.error_message
    body = wire.requests[-1].body
    assert isinstance(body, dict)
    return body


async def test_gemini_3_sends_strict_schemas_in_validated_mode(wire: WireServer) -> None:
    body = await _gemini_request(wire, "gemini-3-pro-preview", _tool())
    declaration = body["tools"][0]["functionDeclarations"][0]  # type: ignore[index]
    assert declaration["parametersJsonSchema"] == STRICT
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "VALIDATED"}}

    # an explicit "none" / "any" choice keeps its mode
    body = await _gemini_request(wire, "gemini-3-pro-preview", _tool(), tool_choice="any")
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


async def test_older_geminis_and_plain_tools_are_unchanged(wire: WireServer) -> None:
    body = await _gemini_request(wire, "gemini-2.5-flash", _tool())
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] == SCHEMA  # type: ignore[index]
    assert "toolConfig" not in body
    body = await _gemini_request(wire, "gemini-3-pro-preview", _tool(strict=None))
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] == SCHEMA  # type: ignore[index]
    assert "toolConfig" not in body
    # a schema outside the strict subset falls back to the plain one when only preferred
    loose: dict[str, Any] = {
        "type": "object",
        "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
    }
    body = await _gemini_request(wire, "gemini-3-pro-preview", _tool(parameters=loose))
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] == loose  # type: ignore[index]
    assert "toolConfig" not in body


async def test_required_strict_tool_fails_where_it_cannot_be_strict(wire: WireServer) -> None:
    gemini = model(wire, "google", "google-generative-ai", base_url=f"{wire.url}/v1beta", id="gemini-2.5-flash")
    context = LlmContext(messages=[UserMessage(content="hi")], tools=[_tool(strict="require")])
    message = await stream(gemini, context, OPTIONS).result()
    assert message.stop_reason == "error"
    assert 'Tool "read" requires JSON-schema constrained sampling' in (message.error_message or "")
    assert wire.requests == []


def test_make_strict_schema() -> None:
    assert google_shared.make_strict_schema(SCHEMA) == STRICT
    assert SCHEMA["required"] == ["path"]  # the input is not changed
    nested = {
        "type": "object",
        "properties": {
            "edits": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}
        },
    }
    strict = google_shared.make_strict_schema(nested)
    items = strict["properties"]["edits"]["anyOf"][0]["items"]
    assert items == {
        "type": "object",
        "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    for bad in (
        {"type": "string"},
        {"type": "object", "properties": {"x": {"$ref": "#/a"}}},
        {"type": "object", "additionalProperties": True},
    ):
        with pytest.raises(google_shared.UnsupportedStrictSchemaError):
            google_shared.make_strict_schema(bad)
