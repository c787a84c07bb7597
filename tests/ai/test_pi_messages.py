"""pi-messages: pi's own message protocol (the Radius gateway's), through pi's HTTP +
SSE client against a local server speaking it; the real ``pi -p`` on a Radius model;
and, with ``PI_TS`` set, pi 1.6.0's request to the same server beside this pi's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_server import Canned, WireServer, collect, json_error, sse, use_server

from pi_core.ai import classify_error, stream
from pi_core.ai.apis import get_api
from pi_core.ai.apis import pi_messages as pm
from pi_hookspecs import (
    AbortController,
    CustomMessage,
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

PI = [sys.executable, "-m", "pi_core"]
PI_TS = os.environ.get("PI_TS", "")
USAGE = {
    "input": 120,
    "output": 30,
    "cacheRead": 40,
    "cacheWrite": 0,
    "totalTokens": 190,
    "cost": {"input": 0.00036, "output": 0.00045, "cacheRead": 0.000012, "cacheWrite": 0, "total": 0.000822},
}
BASH = ToolDeclaration(name="bash", description="Run a command", parameters={"type": "object", "properties": {}})


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
def no_retention_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)


def model(server: WireServer, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "balanced",
        "provider": "radius",
        "api": "pi-messages",
        "base_url": f"{server.url}/v1",
        "reasoning": True,
        "cost": ModelCost(input=3, output=15, cache_read=0.3),
        "max_tokens": 64_000,
        "thinking_level_map": {"xhigh": None},
    }
    values.update(fields)
    return Model(**values)


OPTIONS = StreamOptions(api_key="rk-test", session_id="session-1")


def reply(*events: dict[str, Any]) -> Canned:
    return Canned(body=sse([(None, event) for event in events]))


def done(reason: str = "stop", **extra: Any) -> dict[str, Any]:
    return {"type": "done", "reason": reason, "usage": USAGE, "responseId": "resp_1", **extra}


TEXT = [
    {"type": "start"},
    {"type": "text_start", "contentIndex": 0},
    {"type": "text_delta", "contentIndex": 0, "delta": "Hel"},
    {"type": "text_delta", "contentIndex": 0, "delta": "lo"},
    {"type": "text_end", "contentIndex": 0, "content": "Hello", "contentSignature": "sig-t"},
]
THINKING_AND_TOOL = [
    {"type": "start"},
    {"type": "thinking_start", "contentIndex": 0},
    {"type": "thinking_delta", "contentIndex": 0, "delta": "Look "},
    {"type": "thinking_delta", "contentIndex": 0, "delta": "first."},
    {"type": "thinking_end", "contentIndex": 0, "content": "Look first.", "contentSignature": "enc-1"},
    {"type": "toolcall_start", "contentIndex": 1, "id": "call_1", "toolName": "bash"},
    {"type": "toolcall_delta", "contentIndex": 1, "delta": '{"command": '},
    {"type": "toolcall_delta", "contentIndex": 1, "delta": '"ls"}'},
    {
        "type": "toolcall_end",
        "contentIndex": 1,
        "toolCall": {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls -la"}},
    },
]


def ctx(*messages: Any, tools: list[ToolDeclaration] | None = None) -> LlmContext:
    return LlmContext(
        system_prompt="You are pi.", messages=list(messages or [UserMessage(content="hi")]), tools=tools or []
    )


def test_pi_messages_is_a_builtin_api() -> None:
    assert get_api("pi-messages") is pm.stream_pi_messages


async def test_request_url_headers_and_body(wire: WireServer) -> None:
    wire.enqueue(reply(*TEXT, done(responseModel="claude-x", providerThinkingLevel="high")))
    options = OPTIONS.model_copy(
        update={"thinking_level": "xhigh", "temperature": 0.2, "max_tokens": 500, "headers": {"X-Extra": "1"}}
    )
    s = stream(model(wire, headers={"X-Model": "m"}), ctx(tools=[BASH]), options)
    events = await collect(s)
    message = await s.result()
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert message.text() == "Hello" and message.stop_reason == "stop"
    assert isinstance(message.content[0], TextContent) and message.content[0].text_signature == "sig-t"
    assert message.api == "pi-messages" and message.provider == "radius" and message.model == "balanced"
    assert (message.response_id, message.response_model, message.provider_thinking_level) == (
        "resp_1",
        "claude-x",
        "high",
    )
    # the usage and its cost are the backend's, as sent
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (120, 30, 40)
    assert message.usage.total_tokens == 190 and message.usage.cost.total == pytest.approx(0.000822)

    request = wire.requests[0]
    assert request.path == "/v1/messages"
    headers = request.headers
    assert headers["authorization"] == "Bearer rk-test"
    assert headers["accept"] == "text/event-stream" and headers["content-type"] == "application/json"
    assert headers["x-extra"] == "1" and headers["x-model"] == "m"
    body = request.body
    assert list(body) == ["model", "context", "options"] and body["model"] == "balanced"
    assert body["context"]["systemPrompt"] == "You are pi."
    assert body["context"]["tools"] == [
        {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {}}}
    ]
    [user] = body["context"]["messages"]
    assert user["role"] == "user" and user["content"] == "hi" and isinstance(user["timestamp"], int)
    # xhigh is clamped to the model's levels (its map drops xhigh)
    assert body["options"] == {
        "temperature": 0.2,
        "maxTokens": 500,
        "reasoning": "high",
        "sessionId": "session-1",
    }


async def test_thinking_and_tool_call_and_the_replayed_conversation(wire: WireServer) -> None:
    wire.enqueue(reply(*THINKING_AND_TOOL, done("toolUse")))
    m = model(wire)
    s = stream(m, ctx(tools=[BASH]), OPTIONS)
    events = await collect(s)
    first = await s.result()
    thinking, call = first.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Look first."
    assert thinking.thinking_signature == "enc-1"
    # the complete call of toolcall_end wins over the streamed arguments
    assert isinstance(call, ToolCall) and call.id == "call_1" and call.arguments == {"command": "ls -la"}
    end = next(e for e in events if e.type == "toolcall_end")
    assert end.tool_call.arguments == {"command": "ls -la"}
    assert first.stop_reason == "toolUse"

    result = ToolResultMessage(tool_call_id="call_1", tool_name="bash", content=[TextContent(text="a b")])
    note = CustomMessage(custom_type="note", content="remember this", display=False)
    wire.enqueue(reply(*TEXT, done()))
    await stream(m, ctx(UserMessage(content="hi"), first, result, note, tools=[BASH]), OPTIONS).result()
    messages = wire.requests[1].body["context"]["messages"]
    assert [msg["role"] for msg in messages] == ["user", "assistant", "toolResult", "user"]
    assistant = messages[1]
    # pi's own spelling of its messages, untransformed: the backend converts them
    assert assistant["api"] == "pi-messages" and assistant["stopReason"] == "toolUse"
    assert assistant["responseId"] == "resp_1" and assistant["usage"]["cacheRead"] == 40
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Look first.", "thinkingSignature": "enc-1"}
    assert assistant["content"][1] == {
        "type": "toolCall",
        "id": "call_1",
        "name": "bash",
        "arguments": {"command": "ls -la"},
    }
    assert messages[2]["toolCallId"] == "call_1" and messages[2]["isError"] is False
    assert messages[3]["content"] == "remember this"


async def test_system_messages_carry_the_prompt_and_tools(wire: WireServer) -> None:
    system = SystemMessage(sections={"preamble": "You are pi."}, tools_added=[BASH])
    wire.enqueue(reply(*TEXT, done()))
    context = LlmContext(messages=[system, UserMessage(content="hi")])
    options = OPTIONS.model_copy(update={"extra": {"tool_choice": "auto", "cache_retention": "short"}})
    await stream(model(wire), context, options).result()
    body = wire.requests[0].body
    assert "systemPrompt" not in body["context"] and "tools" not in body["context"]
    sent = body["context"]["messages"][0]
    assert sent["role"] == "system" and sent["sections"] == {"preamble": "You are pi."}
    assert sent["toolsAdded"][0]["name"] == "bash"
    assert body["options"] == {"cacheRetention": "short", "sessionId": "session-1", "toolChoice": "auto"}


async def test_retention_from_the_environment_and_debug(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CACHE_RETENTION", "long")
    wire.enqueue(reply(*TEXT, done()))
    options = OPTIONS.model_copy(update={"thinking_level": "off", "extra": {"debug": True}})
    await stream(model(wire), ctx(), options).result()
    request = wire.requests[0]
    assert request.path == "/v1/messages?debug=1"
    assert request.body["options"] == {"cacheRetention": "long", "sessionId": "session-1"}


async def test_error_event_ends_the_message_with_its_reason(wire: WireServer) -> None:
    failure = {
        "type": "error",
        "reason": "error",
        "errorMessage": "upstream: overloaded_error",
        "usage": USAGE,
        "responseId": "resp_9",
        "rewrite": {"from": "claude-x", "to": "claude-y"},
    }
    wire.enqueue(reply(*TEXT[:3], failure, {"type": "text_delta", "contentIndex": 0, "delta": "ignored"}))
    s = stream(model(wire), ctx(), OPTIONS)
    events = await collect(s)
    message = await s.result()
    assert events[-1].type == "error" and message.stop_reason == "error"
    assert message.error_message == "upstream: overloaded_error" and message.text() == "Hel"
    assert message.response_id == "resp_9" and message.usage.input == 120
    assert message.diagnostics is not None and message.diagnostics[0]["type"] == "pi_messages_rewrite"
    assert message.diagnostics[0]["details"] == {"from": "claude-x", "to": "claude-y"}
    assert classify_error(message) == "retryable"


async def test_http_error_and_missing_key(wire: WireServer) -> None:
    wire.enqueue(json_error(403, {"error": {"message": "Model disabled by your organization", "code": "forbidden"}}))
    message = await stream(model(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert message.error_message == "radius API error (403): Model disabled by your organization [forbidden]"

    message = await stream(model(wire), ctx(), StreamOptions()).result()
    assert message.stop_reason == "error" and "radius" in (message.error_message or "")
    assert len(wire.requests) == 1


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([*TEXT[:3], {"type": "text_delta", "contentIndex": 3, "delta": "x"}], "Invalid contentIndex 3"),
        ([{"type": "text_start", "contentIndex": "__proto__"}], "Invalid contentIndex '__proto__'"),
        ([{"type": "text_start", "contentIndex": 10**12}], "Invalid contentIndex 1000000000000"),
        ([*TEXT[:2], {"type": "toolcall_delta", "contentIndex": 0, "delta": "{"}], "not of that type"),
        (TEXT, "radius stream ended without a terminal event"),
    ],
)
async def test_protocol_errors_fail_the_request_in_one_line(
    wire: WireServer, events: list[dict[str, Any]], expected: str
) -> None:
    wire.enqueue(reply(*events))
    message = await stream(model(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error" and expected in (message.error_message or "")
    assert "\n" not in (message.error_message or "")


async def test_invalid_usage_is_one_line(wire: WireServer) -> None:
    wire.enqueue(reply(*TEXT, {"type": "done", "reason": "stop", "usage": {"input": "many"}}))
    message = await stream(model(wire), ctx(), OPTIONS).result()
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("Invalid usage in pi-messages done event: input:")


async def test_no_base_url_is_one_line(wire: WireServer) -> None:
    message = await stream(model(wire, base_url=""), ctx(), OPTIONS).result()
    assert message.error_message == "Model radius/balanced has no baseUrl: the pi-messages API needs one"


async def test_abort_mid_stream(wire: WireServer) -> None:
    wire.enqueue(Canned(body=sse([(None, event) for event in TEXT[:3]]), hold=True))
    controller = AbortController()
    s = stream(model(wire), ctx(), OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    message = await s.result()
    assert message.stop_reason == "aborted" and message.text() == "Hel"


# --------------------------------------------------------------------------- the real pi command


def agent_dir(root: Path, url: str) -> Path:
    """An agent dir whose ``radius`` provider goes to the local server (``models.json``
    moves the catalogue provider's baseUrl); no retries, so a failure shows at once."""
    agent = root / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"radius": {"baseUrl": f"{url}/v1"}}}))
    (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
    return agent


def run_pi(command: list[str], agent: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PI_CODING_AGENT_DIR=str(agent), PI_EXTENSIONS="", PI_OFFLINE="1", NO_COLOR="1", RADIUS_API_KEY="rk-live")
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def tool_round() -> list[Canned]:
    call = [
        {"type": "start"},
        {"type": "toolcall_start", "contentIndex": 0, "id": "call_1", "toolName": "bash"},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"command": "echo pi-messages-ok"}'},
        {
            "type": "toolcall_end",
            "contentIndex": 0,
            "toolCall": {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}},
        },
        done("toolUse", responseModel="routed-model"),
    ]
    return [reply(*call), reply(*TEXT, done())]


def test_pi_print_mode_answers_through_a_radius_model(wire: WireServer, tmp_path: Path) -> None:
    wire.enqueue(*tool_round())
    agent = agent_dir(tmp_path, wire.url)
    project = tmp_path / "project"
    project.mkdir()
    result = run_pi(PI, agent, project, "-p", "--model", "radius/balanced", "run it")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello"
    first, second = (request.body for request in wire.requests)
    assert wire.requests[0].headers["authorization"] == "Bearer rk-live"
    assert first["model"] == "balanced" and first["context"]["messages"][0]["role"] == "system"
    assert first["options"]["sessionId"] == second["options"]["sessionId"]
    replayed = second["context"]["messages"]
    assert [m["role"] for m in replayed] == ["system", "user", "assistant", "toolResult"]
    assert replayed[2]["responseModel"] == "routed-model"
    assert replayed[3]["content"] == [{"type": "text", "text": "hi\n"}]
    session = next((agent / "sessions").rglob("*.jsonl")).read_text()
    assert '"api":"pi-messages"' in session.replace(" ", "")


def test_pi_print_mode_reports_a_backend_error_in_one_line(wire: WireServer, tmp_path: Path) -> None:
    wire.enqueue(json_error(401, {"error": {"message": "Invalid API key", "code": "unauthorized"}}))
    agent = agent_dir(tmp_path, wire.url)
    result = run_pi(PI, agent, tmp_path, "-p", "--model", "radius/cheap", "hi")
    assert result.returncode != 0
    assert "Invalid API key" in result.stderr and "Traceback" not in result.stderr


# --------------------------------------------------------------------------- beside pi 1.6.0

_VOLATILE = {"timestamp", "durationMs", "sessionId"}
_BY_DESIGN = {
    "details",  # this pi's tools return details that pi 1.6.0's do not (the LLM never sees them)
}


def _shape(value: Any, key: str | None = None) -> Any:
    """The request with run-specific values replaced and pi's own words (the system
    prompt's sections, tool descriptions and schemas) reduced to their names."""
    if key in _VOLATILE:
        return f"<{key}>"
    if key == "sections" and isinstance(value, dict):
        return sorted(value)
    if key == "toolsAdded" and isinstance(value, list):
        # each tool's name and the constrained sampling it asks for (pi's built-in tools: strict when possible)
        return [(tool["name"], tool.get("constrainedSampling")) for tool in value]
    if isinstance(value, dict):
        return {k: _shape(v, k) for k, v in sorted(value.items()) if k not in _BY_DESIGN}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return value


@pytest.mark.skipif(not (PI_TS and Path(PI_TS).exists()), reason="PI_TS does not name an installed pi 1.6.0")
def test_requests_match_pi_1_6_0(tmp_path: Path) -> None:
    outcomes = []
    for which, command in (("py", PI), ("ts", [PI_TS])):
        server = WireServer()
        try:
            server.enqueue(*tool_round())
            root = tmp_path / which
            agent = agent_dir(root, server.url)
            project = root / "project"
            project.mkdir()
            result = run_pi(command, agent, project, "-p", "--model", "radius/balanced", "--thinking", "high", "go")
            assert result.returncode == 0, (which, result.stderr)
            assert result.stdout.strip() == "Hello", which
            requests = [(r.path, r.headers.get("authorization"), _shape(r.body)) for r in server.requests]
            outcomes.append(json.loads(json.dumps(requests).replace(str(project), "<cwd>")))
        finally:
            server.close()
    assert outcomes[0] == outcomes[1]
