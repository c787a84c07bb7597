"""bedrock-converse-stream against a loopback server speaking Bedrock's wire format:
SigV4-signed JSON requests, answers in the AWS event-stream framing."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bedrock_kit import ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, converse_frames, verify_sigv4
from wire_server import WireServer, aws_event, aws_event_stream, aws_exception, collect, json_error, use_server

import pi_bedrock
from pi_bedrock import api
from pi_core.ai import classify_error, is_retryable_error
from pi_core.ai.message_stream import AssistantMessageStream
from pi_core.ai.transform import apply_transcript_rules
from pi_hookspecs import (
    AbortController,
    ApiDefinition,
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
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fixed keys in the environment, no AWS files, no metadata service."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_BEDROCK_SKIP_AUTH",
        "AWS_ENDPOINT_URL",
        "AWS_BEDROCK_FORCE_CACHE",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "PI_CACHE_RETENTION",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    api._sessions.clear()


def bedrock_model(server: WireServer | None, model_id: str = CLAUDE, **fields: object) -> Model:
    values: dict[str, object] = {
        "id": model_id,
        "name": "Claude Sonnet 4.5",
        "provider": "amazon-bedrock",
        "api": "bedrock-converse-stream",
        "base_url": server.url if server else "https://bedrock-runtime.us-east-1.amazonaws.com",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
        "context_window": 200_000,
        "max_tokens": 64_000,
    }
    values.update(fields)
    return Model(**values)  # type: ignore[arg-type]


def ctx(*messages: object, tools: list[ToolDeclaration] | None = None) -> LlmContext:
    return LlmContext(
        system_prompt="You are pi.", messages=list(messages or [UserMessage(content="hi")]), tools=tools or []
    )


def bedrock_stream(model: Model, context: LlmContext, options: StreamOptions | None = None) -> AssistantMessageStream:
    """What pi does with a plugin API: apply the transcript rules the API registered
    with, then run it with a MessageBuilder inside the stream that turns every failure
    into the final error event."""
    final = options or StreamOptions(session_id="session-1")
    registered: list[Any] = []
    pi_bedrock.register_providers(registered.append)
    (definition,) = [d for d in registered if isinstance(d, ApiDefinition)]
    rules = definition.transcript
    assert rules is not None

    async def run(out: Any) -> None:
        await api.stream(model, apply_transcript_rules(model, context, rules), final, out)

    return AssistantMessageStream(model, run, final)


async def test_thinking_text_parallel_tools_usage_and_a_signed_request(wire: WireServer) -> None:
    usage = {
        "inputTokens": 120,
        "outputTokens": 80,
        "totalTokens": 1400,
        "cacheReadInputTokens": 1000,
        "cacheWriteInputTokens": 200,
        "cacheDetails": [{"ttl": "1h", "inputTokens": 50}],
    }
    wire.enqueue(
        aws_event_stream(
            converse_frames(
                [
                    {"type": "reasoning", "text": "Two things to check.", "signature": "SIG=="},
                    {"type": "text", "text": "Running both."},
                    {"type": "tool", "id": "tooluse_a1", "name": "bash", "json": ['{"comm', 'and": "ls"}']},
                    {"type": "tool", "id": "tooluse_b2", "name": "bash", "json": ['{"command": "pwd"}']},
                ],
                stop_reason="tool_use",
                usage=usage,
            )
        )
    )
    options = StreamOptions(session_id="s", thinking_level="medium", max_tokens=4096, temperature=0.2)
    s = bedrock_stream(bedrock_model(wire), ctx(tools=[BASH]), options)
    events = await collect(s)
    message = await s.result()

    thinking, text, first, second = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "Two things to check." and thinking.thinking_signature == "SIG=="
    assert isinstance(text, TextContent) and text.text == "Running both."
    assert isinstance(first, ToolCall) and (first.id, first.name, first.arguments) == (
        "tooluse_a1",
        "bash",
        {"command": "ls"},
    )
    assert isinstance(second, ToolCall) and second.arguments == {"command": "pwd"}
    assert message.stop_reason == "toolUse" and message.raw_stop_reason == "tool_use"
    assert (message.usage.input, message.usage.output, message.usage.cache_read, message.usage.cache_write) == (
        120,
        80,
        1000,
        200,
    )
    assert message.usage.cache_write_1h == 50 and message.usage.total_tokens == 1400
    assert message.usage.cost.total > 0
    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert kinds.count("toolcall_end") == 2 and kinds.count("thinking_end") == 1 and kinds.count("text_end") == 1

    request = wire.requests[0]
    assert request.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request.headers["content-type"] == "application/json"
    assert verify_sigv4(request)["region"] == "us-east-1"
    body = request.body
    assert "modelId" not in body
    assert body["system"] == [{"text": "You are pi."}, {"cachePoint": {"type": "default"}}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}]
    # budget-based thinking: the budget is added to the requested output limit
    assert body["inferenceConfig"] == {"maxTokens": 4096 + 8192, "temperature": 0.2}
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 8192, "display": "summarized"},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"],
    }
    assert body["toolConfig"] == {
        "tools": [
            {"toolSpec": {"name": "bash", "description": "Run a command", "inputSchema": {"json": BASH.parameters}}}
        ]
    }


async def test_replay_of_the_same_model_and_of_another(wire: WireServer) -> None:
    wire.enqueue(
        aws_event_stream(
            converse_frames(
                [
                    {"type": "reasoning", "text": "Plan.", "signature": "SIG"},
                    {"type": "tool", "id": "tooluse_1", "name": "bash", "json": ['{"command": "ls"}']},
                ],
                stop_reason="tool_use",
            )
        )
    )
    model = bedrock_model(wire)
    first = await bedrock_stream(model, ctx(tools=[BASH])).result()
    foreign = AssistantMessage(
        api="openai-responses",
        provider="openai",
        model="gpt-x",
        stop_reason="toolUse",
        content=[
            ThinkingContent(thinking="their thoughts", thinking_signature="{}"),
            ToolCall(id="call_9|fc_9", name="bash", arguments={"command": "pwd", "": 1}),
        ],
    )
    failed = AssistantMessage(
        api="bedrock-converse-stream",
        provider="amazon-bedrock",
        model=CLAUDE,
        stop_reason="error",
        content=[TextContent(text="broken")],
    )
    history = [
        SystemMessage(content="Leading prompt.", tools_added=[BASH]),
        UserMessage(content="hi"),
        first,
        ToolResultMessage(tool_call_id="tooluse_1", tool_name="bash", content=[TextContent(text="a.txt")]),
        SystemMessage(sections={"late": "A later section."}),
        foreign,  # its tool call never got a result
        failed,
        UserMessage(content=[TextContent(text="look"), ImageContent(data="iVBORw0=", mime_type="image/png")]),
    ]
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    await bedrock_stream(model, LlmContext(messages=history)).result()
    body = wire.requests[1].body
    assert body["system"][0] == {"text": "Leading prompt.\n\nA later section."}
    assert [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]] == ["bash"]
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user", "user"]
    assert messages[1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Plan.", "signature": "SIG"}}},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "bash", "input": {"command": "ls"}}},
    ]
    assert messages[2]["content"] == [
        {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "a.txt"}], "status": "success"}}
    ]
    # another model's thinking becomes text, its tool-call id Bedrock-safe, empty keys dropped
    assert messages[3]["content"] == [
        {"text": "their thoughts"},
        {"toolUse": {"toolUseId": "call_9_fc_9", "name": "bash", "input": {"command": "pwd"}}},
    ]
    assert messages[4]["content"][0]["toolResult"] == {
        "toolUseId": "call_9_fc_9",
        "status": "error",
        "content": [{"text": "No result provided"}],
    }
    assert messages[5]["content"] == [
        {"text": "look"},
        {"image": {"format": "png", "source": {"bytes": "iVBORw0="}}},
        {"cachePoint": {"type": "default"}},
    ]


async def test_redacted_reasoning_is_kept_and_replayed(wire: WireServer) -> None:
    chunks = [base64.b64encode(b"opaque-").decode(), base64.b64encode(b"payload").decode()]
    wire.enqueue(
        aws_event_stream(converse_frames([{"type": "redacted", "chunks": chunks}, {"type": "text", "text": "Answer."}]))
    )
    model = bedrock_model(wire, "openai.gpt-test-v1:0", name="GPT test")
    options = StreamOptions(thinking_level="high")
    message = await bedrock_stream(model, ctx(), options).result()
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent) and thinking.redacted is True
    assert thinking.thinking == "[Reasoning redacted]"
    assert base64.b64decode(thinking.thinking_signature or "") == b"opaque-payload"
    assert wire.requests[0].body["additionalModelRequestFields"] == {"reasoning": {"effort": "high"}}
    assert "cachePoint" not in json.dumps(wire.requests[0].body)

    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    await bedrock_stream(model, ctx(UserMessage(content="hi"), message, UserMessage(content="more"))).result()
    replayed = wire.requests[1].body["messages"][1]["content"]
    assert replayed[0] == {"reasoningContent": {"redactedContent": base64.b64encode(b"opaque-payload").decode()}}


async def test_adaptive_thinking_and_long_cache_retention(wire: WireServer) -> None:
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    model = bedrock_model(
        wire,
        "global.anthropic.claude-opus-4-7-v1",
        name="Claude Opus 4.7",
        thinking_level_map={"xhigh": "xhigh", "max": "max"},
    )
    options = StreamOptions(thinking_level="xhigh", extra={"cache_retention": "long"})
    await bedrock_stream(model, ctx(), options).result()
    body = wire.requests[0].body
    assert body["additionalModelRequestFields"] == {
        "thinking": {
            "type": "adaptive",
            "display": "summarized",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        },
        "output_config": {"effort": "xhigh"},
        "anthropic_beta": ["thinking-binding-controls-2026-08-01"],
    }
    assert body["inferenceConfig"] == {"maxTokens": 64_000}
    assert body["system"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}


@pytest.mark.parametrize(
    ("reason", "stop", "error"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "length", None),
        ("model_context_window_exceeded", "length", None),
        ("guardrail_intervened", "error", "Provider stopped with: guardrail_intervened"),
    ],
)
async def test_stop_reasons(wire: WireServer, reason: str, stop: str, error: str | None) -> None:
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "words"}], stop_reason=reason)))
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.stop_reason == stop and message.raw_stop_reason == reason
    assert message.error_message == error


async def test_throttling_http_error_retry_after_and_classification(wire: WireServer) -> None:
    throttled = json_error(
        429,
        {"message": "Too many requests, please wait before trying again."},
        headers={"x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/", "retry-after": "0"},
    )
    wire.enqueue(throttled)
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.stop_reason == "error"
    assert message.error_message == "Throttling error: Too many requests, please wait before trying again."
    assert is_retryable_error(message) and classify_error(message) == "retryable"

    wire.reset()
    seen: list[int] = []
    wire.enqueue(throttled, aws_event_stream(converse_frames([{"type": "text", "text": "second try"}])))
    options = StreamOptions(extra={"max_retries": 2}, on_response=lambda status, headers: seen.append(status))
    message = await bedrock_stream(bedrock_model(wire), ctx(), options).result()
    assert message.text() == "second try" and seen == [429, 200]
    verify_sigv4(wire.requests[0])
    verify_sigv4(wire.requests[1])  # signed afresh for the retry


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (
            400,
            {"__type": "com.amazon.bedrock#ValidationException", "message": "Input is too long for requested model."},
            "context_overflow",
        ),
        (403, {"message": "The security token included in the request is invalid."}, "auth"),
        (503, {"message": "Bedrock is unable to process your request."}, "retryable"),
    ],
)
async def test_http_errors(wire: WireServer, status: int, body: dict[str, str], kind: str) -> None:
    headers = {"x-amzn-errortype": "ServiceUnavailableException"} if status == 503 else {}
    if status == 403:
        headers = {"x-amzn-errortype": "UnrecognizedClientException"}
    wire.enqueue(json_error(status, body, headers=headers))
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.stop_reason == "error"
    assert classify_error(message) == kind, message.error_message
    assert body["message"] in (message.error_message or "")


async def test_exception_frame_mid_stream(wire: WireServer) -> None:
    frames = converse_frames([{"type": "text", "text": "partial answer"}])[:3]
    wire.enqueue(aws_event_stream([*frames, aws_exception("modelStreamErrorException", "The model stopped.")]))
    s = bedrock_stream(bedrock_model(wire), ctx())
    events = await collect(s)
    message = await s.result()
    assert message.stop_reason == "error" and message.error_message == "Model stream error: The model stopped."
    assert message.text() == "partial answ"
    assert events[-1].type == "error"

    wire.enqueue(aws_event_stream([*frames, aws_exception("throttlingException", "Too many tokens, slow down.")]))
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.error_message == "Throttling error: Too many tokens, slow down."
    assert classify_error(message) != "context_overflow"  # "too many tokens" here is throttling, as in pi 1.6.0


async def test_broken_frame_and_missing_stop(wire: WireServer) -> None:
    frame = bytearray(aws_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}))
    frame[-1] ^= 0xFF
    wire.enqueue(aws_event_stream([aws_event("messageStart", {"role": "assistant"}), bytes(frame)]))
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.stop_reason == "error" and "Malformed AWS event stream" in (message.error_message or "")

    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "cut"}])[:3]))
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.error_message == "Bedrock stream ended without a stop reason"
    assert is_retryable_error(message)


async def test_abort_mid_stream(wire: WireServer) -> None:
    frames = converse_frames([{"type": "text", "text": "a slow answer"}])[:3]
    wire.enqueue(aws_event_stream(frames, hold=True))
    controller = AbortController()
    s = bedrock_stream(bedrock_model(wire), ctx(), StreamOptions(signal=controller.signal))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    message = await s.result()
    assert message.stop_reason == "aborted" and message.text().startswith("a slow")


async def test_session_token_region_and_endpoint_from_the_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", wire.url)
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    # the catalogue's standard endpoint gives way to the configured region and the override
    message = await bedrock_stream(bedrock_model(None), ctx()).result()
    assert message.text() == "ok", message.error_message
    assert verify_sigv4(wire.requests[0], token=SESSION_TOKEN)["region"] == "eu-central-1"


async def test_inference_profile_arn_gives_the_region(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    arn = "arn:aws:bedrock:ap-southeast-2:123456789012:application-inference-profile/abc123"
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    message = await bedrock_stream(bedrock_model(wire, arn, name="my profile"), ctx()).result()
    assert message.text() == "ok", message.error_message
    request = wire.requests[0]
    assert request.path == (
        "/model/arn%3Aaws%3Abedrock%3Aap-southeast-2%3A123456789012%3Aapplication-inference-"
        "profile%2Fabc123/converse-stream"
    )
    assert verify_sigv4(request)["region"] == "ap-southeast-2"


async def test_profile_from_the_shared_files(wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "aws-credentials").write_text(
        "[work]\naws_access_key_id = AKIDWORKPROFILE\naws_secret_access_key = work-secret\n"
    )
    (tmp_path / "aws-config").write_text("[profile work]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_ENDPOINT_URL", wire.url)
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    # an explicitly chosen profile wins over the keys in the environment
    options = StreamOptions(extra={"profile": "work"})
    message = await bedrock_stream(bedrock_model(None), ctx(), options).result()
    assert message.text() == "ok", message.error_message
    assert verify_sigv4(wire.requests[0], key="AKIDWORKPROFILE", secret="work-secret")["region"] == "eu-west-3"

    # AWS_PROFILE alone (no keys in the environment) goes through the credential chain
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_PROFILE", "work")
    api._sessions.clear()
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    message = await bedrock_stream(bedrock_model(None), ctx()).result()
    assert message.text() == "ok", message.error_message
    assert verify_sigv4(wire.requests[1], key="AKIDWORKPROFILE", secret="work-secret")["region"] == "eu-west-3"


async def test_no_credentials_is_one_clear_line(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("No AWS credentials for Amazon Bedrock")
    assert "\n" not in (message.error_message or "") and wire.requests == []

    monkeypatch.setenv("AWS_PROFILE", "missing")
    api._sessions.clear()
    message = await bedrock_stream(bedrock_model(wire), ctx()).result()
    assert "could not be loaded" in (message.error_message or "") and "missing" in (message.error_message or "")


async def test_bearer_token_and_skip_auth(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key")
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    await bedrock_stream(bedrock_model(wire), ctx()).result()
    request = wire.requests[0]
    assert request.headers["authorization"] == "Bearer bedrock-api-key" and "x-amz-date" not in request.headers

    monkeypatch.setenv("AWS_BEDROCK_SKIP_AUTH", "1")
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    await bedrock_stream(bedrock_model(wire), ctx()).result()
    verify_sigv4(wire.requests[1], key="dummy-access-key", secret="dummy-secret-key")


async def test_hooks_and_headers(wire: WireServer) -> None:
    wire.enqueue(aws_event_stream(converse_frames([{"type": "text", "text": "ok"}])))
    raw: list[dict[str, Any]] = []

    def on_headers(headers: dict[str, str | None]) -> None:
        headers["X-Tenant"] = "t-1"
        headers["Authorization"] = "stolen"  # the signature's headers cannot be set from outside

    async def on_payload(payload: dict[str, Any]) -> dict[str, Any]:
        return {
            **payload,
            "modelId": "us.anthropic.claude-haiku-4-5-v1:0",
            "performanceConfig": {"latency": "optimized"},
        }

    options = StreamOptions(
        headers={"X-From-Options": "1"}, on_headers=on_headers, on_payload=on_payload, on_raw_event=raw.append
    )
    await bedrock_stream(bedrock_model(wire), ctx(), options).result()
    request = wire.requests[0]
    assert request.path == "/model/us.anthropic.claude-haiku-4-5-v1%3A0/converse-stream"
    assert request.headers["x-tenant"] == "t-1" and request.headers["x-from-options"] == "1"
    assert "x-tenant" in verify_sigv4(request)["signed"].split(";")
    assert request.body["performanceConfig"] == {"latency": "optimized"}
    assert list(raw[0]) == ["messageStart"] and list(raw[-1]) == ["metadata"]


def test_region_and_endpoint_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    model = bedrock_model(None)
    target = api.resolve_target(model, StreamOptions())
    assert (target.endpoint, target.region) == ("https://bedrock-runtime.us-east-1.amazonaws.com", "us-east-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "cn-north-1")
    target = api.resolve_target(model, StreamOptions())
    assert (target.endpoint, target.region) == ("https://bedrock-runtime.cn-north-1.amazonaws.com.cn", "cn-north-1")
    proxy = bedrock_model(None, base_url="https://bedrock.vpce.example/")
    target = api.resolve_target(proxy, StreamOptions(extra={"region": "eu-west-1"}))
    assert (target.endpoint, target.region) == ("https://bedrock.vpce.example", "eu-west-1")
    assert api.resolve_target(model, StreamOptions(api_key="k")).bearer_token == "k"
