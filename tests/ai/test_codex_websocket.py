"""openai-codex-responses over its WebSocket transport, as pi 1.6.0 sends it: pi's wire
client against a local server speaking the Codex responses socket (wsproto on both
ends), the fallback to HTTP + SSE, the real ``pi -p``, and pi 1.6.0 beside it when
``PI_TS`` is set."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_server import WireServer, responses_events, responses_stream, use_server
from ws_server import Reply, SocketServer

from pi_core.ai import stream
from pi_core.ai.apis import openai_codex_websocket as ws
from pi_hookspecs import (
    AbortController,
    LlmContext,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

PI = [sys.executable, "-m", "pi_core"]
PI_TS = os.environ.get("PI_TS", "")
BASH = ToolDeclaration(name="bash", description="Run a command", parameters={"type": "object", "properties": {}})


def jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.signature"


TOKEN = jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-1234"}, "exp": 4_102_444_800})
OPTIONS = StreamOptions(api_key=TOKEN, session_id="session-ws")
CALL = [
    {"type": "reasoning", "summary": ["Look first."], "encrypted_content": "ENC"},
    {"type": "message", "text": "Listing."},
    {"type": "function_call", "call_id": "call_1", "name": "bash", "json": ['{"command"', ': "ls"}']},
]


@pytest.fixture
def server() -> Iterator[SocketServer]:
    socket_server = SocketServer()
    yield socket_server
    socket_server.close()


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
async def fresh_sessions(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """No proxy, no session left on SSE by an earlier test; the sockets a test kept
    open are closed in its own event loop."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    ws.reset_sessions()
    yield
    ws.reset_sessions()
    await asyncio.sleep(0)  # let the closed transports finish closing


def model(url: str, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "gpt-codex-test",
        "provider": "openai-codex",
        "api": "openai-codex-responses",
        "base_url": f"{url}/backend-api",
        "reasoning": True,
        "cost": ModelCost(input=2, output=8, cache_read=0.5),
        "max_tokens": 64_000,
    }
    values.update(fields)
    return Model(**values)


def codex(items: list[dict[str, Any]], **options: Any) -> list[dict[str, Any]]:
    events = responses_events(items, **options)
    events[-1] = {**events[-1], "type": "response.done"}
    return events


def ctx(*messages: Any) -> LlmContext:
    return LlmContext(system_prompt="You are pi.", messages=list(messages or [UserMessage(content="hi")]), tools=[BASH])


async def test_request_goes_over_the_websocket(server: SocketServer) -> None:
    server.enqueue(Reply(codex([{"type": "message", "text": "hello over ws"}])))
    options = OPTIONS.model_copy(update={"headers": {"X-Extra": "1"}, "thinking_level": "low"})
    message = await stream(model(server.url), ctx(), options).result()
    assert message.stop_reason == "stop" and message.text() == "hello over ws"
    assert message.response_id == "resp_1" and message.diagnostics is None

    [upgrade] = server.upgrades
    assert upgrade.path == "/backend-api/codex/responses"
    headers = upgrade.headers
    assert headers["authorization"] == f"Bearer {TOKEN}" and headers["chatgpt-account-id"] == "acct-1234"
    assert headers["originator"] == "pi" and headers["openai-beta"] == "responses_websockets=2026-02-06"
    assert headers["session-id"] == "session-ws" and headers["x-client-request-id"] == "session-ws"
    assert headers["x-extra"] == "1" and "accept" not in headers and "content-type" not in headers
    [frame] = server.frames
    assert frame["type"] == "response.create" and frame["model"] == "gpt-codex-test"
    assert frame["store"] is False and frame["stream"] is True and frame["prompt_cache_key"] == "session-ws"
    assert frame["input"][0] == {"role": "developer", "content": "You are pi."}
    assert frame["reasoning"] == {"effort": "low", "summary": "auto"} and "previous_response_id" not in frame


async def test_the_next_request_continues_on_the_same_socket(server: SocketServer) -> None:
    server.enqueue(Reply(codex(CALL, response_id="resp_1")), Reply(codex([{"type": "message", "text": "done"}])))
    m = model(server.url)
    first = await stream(m, ctx(), OPTIONS).result()
    assert first.stop_reason == "toolUse"
    result = ToolResultMessage(tool_call_id=first.content[2].id, tool_name="bash", content=[TextContent(text="a b")])
    second = await stream(m, ctx(UserMessage(content="hi"), first, result), OPTIONS).result()
    assert second.text() == "done"
    assert server.connections == 1 and len(server.upgrades) == 1
    again = server.frames[1]
    assert again["previous_response_id"] == "resp_1"
    assert again["input"] == [{"type": "function_call_output", "call_id": "call_1", "output": "a b"}]
    assert {k: v for k, v in again.items() if k not in ("input", "previous_response_id", "connection")} == {
        k: v for k, v in server.frames[0].items() if k not in ("input", "connection")
    }


async def test_websocket_transport_sends_the_whole_context(server: SocketServer) -> None:
    server.enqueue(Reply(codex(CALL)), Reply(codex([{"type": "message", "text": "done"}])))
    m = model(server.url)
    options = OPTIONS.model_copy(update={"extra": {"transport": "websocket"}})
    first = await stream(m, ctx(), options).result()
    result = ToolResultMessage(tool_call_id=first.content[2].id, tool_name="bash", content=[TextContent(text="a")])
    await stream(m, ctx(UserMessage(content="hi"), first, result), options).result()
    assert server.connections == 1
    assert "previous_response_id" not in server.frames[1] and len(server.frames[1]["input"]) == 6


async def test_a_changed_request_sends_the_whole_context(server: SocketServer) -> None:
    server.enqueue(Reply(codex(CALL)), Reply(codex([{"type": "message", "text": "done"}])))
    m = model(server.url)
    first = await stream(m, ctx(), OPTIONS).result()
    result = ToolResultMessage(tool_call_id=first.content[2].id, tool_name="bash", content=[TextContent(text="a")])
    changed = OPTIONS.model_copy(update={"thinking_level": "high"})
    await stream(m, ctx(UserMessage(content="hi"), first, result), changed).result()
    assert "previous_response_id" not in server.frames[1] and server.frames[1]["reasoning"]["effort"] == "high"


async def test_previous_response_not_found_resends_the_whole_request(server: SocketServer) -> None:
    missing = {"type": "error", "error": {"code": "previous_response_not_found", "message": "Previous response gone"}}
    server.enqueue(
        Reply(codex(CALL)),
        Reply([missing], close=1000),
        Reply(codex([{"type": "message", "text": "recovered"}])),
    )
    m = model(server.url)
    first = await stream(m, ctx(), OPTIONS).result()
    result = ToolResultMessage(tool_call_id=first.content[2].id, tool_name="bash", content=[TextContent(text="a")])
    second = await stream(m, ctx(UserMessage(content="hi"), first, result), OPTIONS).result()
    assert second.text() == "recovered" and second.diagnostics is None
    assert [("previous_response_id" in f, f["connection"]) for f in server.frames] == [
        (False, 1),
        (True, 1),
        (False, 2),
    ]


async def test_connection_limit_gets_one_new_connection(server: SocketServer) -> None:
    limit = {"type": "error", "code": "websocket_connection_limit_reached", "message": "Too many sockets"}
    server.enqueue(Reply([limit], close=1000), Reply(codex([{"type": "message", "text": "second socket"}])))
    message = await stream(model(server.url), ctx(), OPTIONS).result()
    assert message.text() == "second socket" and server.connections == 2


async def test_backend_error_fails_without_falling_back(server: SocketServer) -> None:
    server.enqueue(Reply([{"type": "error", "error": {"code": "server_error", "message": "stream broke"}}]))
    message = await stream(model(server.url), ctx(), OPTIONS).result()
    assert message.stop_reason == "error" and message.error_message == "Codex error: stream broke"
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "context_length_exceeded", "message": "Too long."}},
    }
    server.enqueue(Reply([failed]))
    message = await stream(model(server.url), ctx(), OPTIONS).result()
    assert message.error_message == "Too long." and len(server.upgrades) == 2


async def test_closed_after_events_fails_the_request_and_the_session_goes_to_sse(
    server: SocketServer, wire: WireServer
) -> None:
    server.enqueue(Reply(codex([{"type": "message", "text": "partial answer"}])[:4], close=1011))
    message = await stream(model(server.url), ctx(), OPTIONS).result()
    assert message.stop_reason == "error" and message.error_message == "WebSocket closed 1011 scripted"
    assert message.text() == "partial an"
    assert message.diagnostics and message.diagnostics[0]["details"]["eventsEmitted"] is True
    # the session stays on SSE: the next request never opens a socket
    wire.enqueue(responses_stream(codex([{"type": "message", "text": "over sse"}])))
    message = await stream(model(wire.url), ctx(), OPTIONS).result()
    assert message.text() == "over sse" and message.diagnostics is None and len(server.upgrades) == 1


async def test_a_refused_upgrade_falls_back_to_sse(wire: WireServer) -> None:
    # the local HTTP server answers the upgrade with 501: pi sends the request over SSE
    wire.enqueue(responses_stream(codex([{"type": "message", "text": "over sse"}])))
    message = await stream(model(wire.url), ctx(), OPTIONS).result()
    assert message.text() == "over sse"
    [diagnostic] = message.diagnostics or []
    assert diagnostic["type"] == "provider_transport_failure" and diagnostic["error"]["name"] == "WebSocketRejected"
    assert diagnostic["details"]["fallbackTransport"] == "sse" and diagnostic["details"]["eventsEmitted"] is False
    assert wire.requests[0].headers["openai-beta"] == "responses=experimental"


async def test_payload_hook_runs_once_across_the_fallback(wire: WireServer) -> None:
    seen: list[dict[str, Any]] = []

    def hook(payload: dict[str, Any]) -> dict[str, Any]:
        seen.append(payload)
        return {**payload, "metadata": {"hooked": len(seen)}}

    wire.enqueue(responses_stream(codex([{"type": "message", "text": "ok"}])))
    options = OPTIONS.model_copy(update={"on_payload": hook, "session_id": None})
    message = await stream(model(wire.url), ctx(), options).result()
    assert message.text() == "ok" and len(seen) == 1
    assert wire.requests[0].body["metadata"] == {"hooked": 1}


async def test_sse_transport_opens_no_socket(server: SocketServer, wire: WireServer) -> None:
    wire.enqueue(responses_stream(codex([{"type": "message", "text": "plain"}])))
    options = OPTIONS.model_copy(update={"extra": {"transport": "sse"}})
    message = await stream(model(wire.url), ctx(), options).result()
    assert message.text() == "plain" and message.diagnostics is None


async def test_fragmented_frames_and_an_unreachable_socket(server: SocketServer) -> None:
    server.enqueue(Reply(codex([{"type": "message", "text": "in pieces"}]), split=True))
    message = await stream(model(server.url), ctx(), OPTIONS.model_copy(update={"session_id": None})).result()
    assert message.text() == "in pieces"
    # no session: one socket per request, closed after it
    server.enqueue(Reply(codex([{"type": "message", "text": "again"}])))
    message = await stream(model(server.url), ctx(), OPTIONS.model_copy(update={"session_id": None})).result()
    assert message.text() == "again" and server.connections == 2
    assert server.upgrades[1].headers["session-id"] != server.upgrades[0].headers["session-id"]


async def test_idle_timeout_after_events_is_one_line(server: SocketServer) -> None:
    server.enqueue(Reply(codex([{"type": "message", "text": "stalled answer"}])[:4]))
    options = OPTIONS.model_copy(update={"extra": {"timeout": 0.3}})
    message = await stream(model(server.url), ctx(), options).result()
    assert message.stop_reason == "error" and message.error_message == "WebSocket idle timeout after 0.3 s"


async def test_connect_timeout_then_sse() -> None:
    """A server that accepts connections and never answers: the WebSocket gives up after
    ``websocketConnectTimeoutMs``, then the SSE request after its idle timeout."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    quiet = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = quiet.sockets[0].getsockname()[1]
    try:
        options = OPTIONS.model_copy(update={"extra": {"websocket_connect_timeout": 0.2, "timeout": 0.3}})
        message = await stream(model(f"http://127.0.0.1:{port}"), ctx(), options).result()
    finally:
        quiet.close()
    assert message.stop_reason == "error" and "ReadTimeout" in (message.error_message or "")
    [diagnostic] = message.diagnostics or []
    assert diagnostic["error"]["message"] == "WebSocket connect timeout after 0.2 s"


async def test_abort_closes_the_socket(server: SocketServer) -> None:
    server.enqueue(
        Reply(codex([{"type": "message", "text": "slow stream"}])[:4]),
        Reply(codex([{"type": "message", "text": "fresh"}])),
    )
    controller = AbortController()
    s = stream(model(server.url), ctx(), OPTIONS.model_copy(update={"signal": controller.signal}))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    assert (await s.result()).stop_reason == "aborted"
    message = await stream(model(server.url), ctx(), OPTIONS).result()
    assert message.text() == "fresh" and server.connections == 2


def test_wsproto_is_imported_only_when_a_socket_opens() -> None:
    code = (
        "import sys, pi_core.ai.apis.openai_codex_responses, pi_core.ai.apis.openai_codex_websocket;"
        "print('wsproto' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- the real pi command


def agent_dir(root: Path, url: str, settings: dict[str, Any] | None = None) -> Path:
    agent = root / "agent"
    agent.mkdir(parents=True)
    provider: dict[str, Any] = {"baseUrl": f"{url}/backend-api"}
    (agent / "models.json").write_text(json.dumps({"providers": {"openai-codex": provider}}))
    credential = {
        "type": "oauth",
        "access": TOKEN,
        "refresh": "refresh-token",
        "expires": int(time.time() * 1000) + 3_600_000,
        "accountId": "acct-1234",
    }
    (agent / "auth.json").write_text(json.dumps({"openai-codex": credential}))
    (agent / "auth.json").chmod(0o600)
    (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}, **(settings or {})}))
    return agent


def run_pi(command: list[str], agent: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and "PROXY" not in k.upper()}
    env.update(PI_CODING_AGENT_DIR=str(agent), PI_EXTENSIONS="", PI_OFFLINE="1", NO_COLOR="1")
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def tool_then_text() -> list[Reply]:
    call = [{"type": "function_call", "call_id": "call_1", "name": "bash", "json": ['{"command": "echo hi"}']}]
    return [Reply(codex(call, response_id="resp_1")), Reply(codex([{"type": "message", "text": "All done."}]))]


def test_pi_print_mode_talks_to_codex_over_the_websocket(server: SocketServer, tmp_path: Path) -> None:
    server.enqueue(*tool_then_text())
    agent = agent_dir(tmp_path, server.url)
    result = run_pi(PI, agent, tmp_path, "-p", "--model", "openai-codex/gpt-6.2-sol", "run it")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.strip() == "All done."
    assert server.connections == 1 and len(server.frames) == 2
    first, second = server.frames
    assert second["previous_response_id"] == "resp_1"
    # the catalogue's Codex models take the thinking level in configuration_update items
    assert [item.get("type") for item in second["input"]] == ["function_call_output", "configuration_update"]
    assert second["input"][0]["output"] == "hi\n" and first["prompt_cache_key"] == second["prompt_cache_key"]


def test_pi_print_mode_with_transport_sse_setting(wire: WireServer, tmp_path: Path) -> None:
    wire.enqueue(responses_stream(codex([{"type": "message", "text": "sse only"}])))
    agent = agent_dir(tmp_path, wire.url, {"transport": "sse"})
    result = run_pi(PI, agent, tmp_path, "-p", "--model", "openai-codex/gpt-6.2-sol", "hi")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.strip() == "sse only"
    session = next((agent / "sessions").rglob("*.jsonl")).read_text()
    assert "provider_transport_failure" not in session


# --------------------------------------------------------------------------- beside pi 1.6.0


_HEADERS = ("authorization", "chatgpt-account-id", "originator", "openai-beta")


def _tool_shape(tool: dict[str, Any]) -> dict[str, Any]:
    """A declared tool without pi's own words: its name, ``strict`` and the schema's
    property names, required list and closedness."""
    parameters = tool.get("parameters") or {}
    return {
        "name": tool.get("name"),
        "strict": tool.get("strict"),
        "properties": sorted(parameters.get("properties") or {}),
        "required": sorted(parameters.get("required") or []),
        "additionalProperties": parameters.get("additionalProperties"),
    }


def _frame_shape(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame with pi's own words (the prompt, tool texts) and run-specific ids reduced."""
    shaped = {k: v for k, v in frame.items() if k not in ("connection", "prompt_cache_key", "tools", "input")}
    shaped["tools"] = [_tool_shape(tool) for tool in frame.get("tools") or []]
    shaped["input"] = [
        {
            k: (
                "<text>"
                if k == "content" and item.get("role") == "developer"
                else [_tool_shape(tool) for tool in v]
                if k == "tools"
                else v
            )
            for k, v in item.items()
        }
        for item in frame.get("input") or []
    ]
    return shaped


@pytest.mark.skipif(not (PI_TS and Path(PI_TS).exists()), reason="PI_TS does not name an installed pi 1.6.0")
def test_socket_requests_match_pi_1_6_0(tmp_path: Path) -> None:
    outcomes = []
    for which, command in (("py", PI), ("ts", [PI_TS])):
        socket_server = SocketServer()
        try:
            socket_server.enqueue(*tool_then_text())
            root = tmp_path / which
            agent = agent_dir(root, socket_server.url)  # the catalogue's own flags for the model
            result = run_pi(command, agent, root, "-p", "--model", "openai-codex/gpt-6.2-sol", "--tools", "bash", "go")
            assert result.returncode == 0, (which, result.stderr)
            assert result.stdout.strip() == "All done.", (which, result.stdout)
            upgrades = [(u.path, {name: u.headers.get(name) for name in _HEADERS}) for u in socket_server.upgrades]
            frames = [_frame_shape(frame) for frame in socket_server.frames]
            outcomes.append({"connections": socket_server.connections, "upgrades": upgrades, "frames": frames})
        finally:
            socket_server.close()
    assert outcomes[0] == outcomes[1]


def _two_runs(command: list[str], root: Path, transport: str) -> list[dict[str, Any]]:
    """Two ``pi -p`` runs of one session against a scripted Codex backend over
    ``transport`` (``sse`` or ``websocket``): a tool call and its answer at thinking
    level high, then ``--continue`` at level low. The three requests, shaped."""
    replies = [*tool_then_text(), Reply(codex([{"type": "message", "text": "Again."}]))]
    server: WireServer | SocketServer
    if transport == "sse":
        server = WireServer()
        server.enqueue(*(responses_stream(reply.events) for reply in replies))
    else:
        server = SocketServer()
        server.enqueue(*replies)
    try:
        agent = agent_dir(root, server.url, {"transport": transport})
        model_args = ("--model", "openai-codex/gpt-6.2-sol", "--tools", "bash")
        first = run_pi(command, agent, root, "-p", *model_args, "--thinking", "high", "go")
        assert first.returncode == 0 and first.stdout.strip() == "All done.", first.stderr
        second = run_pi(command, agent, root, "-p", "-c", *model_args, "--thinking", "low", "again")
        assert second.returncode == 0 and second.stdout.strip() == "Again.", second.stderr
        if isinstance(server, WireServer):
            return [_frame_shape(request.body) for request in server.requests]
        return [_frame_shape(frame) for frame in server.frames]
    finally:
        server.close()


def _input_kinds(body: dict[str, Any]) -> list[str]:
    return [str(item.get("type") or item.get("role")) for item in body["input"]]


def test_thinking_level_changes_travel_in_configuration_update_items(tmp_path: Path) -> None:
    """The catalogue's Codex models take their tools in an ``additional_tools`` item
    (pi's built-in tools with strict schemas) and the thinking level in
    ``configuration_update`` items: a later run at another level keeps the earlier
    answers' level in front of them and the body's effort unchanged, so the prompt cache
    keeps serving the conversation."""
    first, second, third = _two_runs(PI, tmp_path, "sse")
    assert "tools" not in first or first["tools"] == []
    head = first["input"][0]
    assert head["type"] == "additional_tools" and head["role"] == "developer"
    assert head["tools"] == [
        {
            "name": "bash",
            "strict": True,
            "properties": ["command", "timeout"],
            "required": ["command", "timeout"],
            "additionalProperties": False,
        }
    ]
    assert _input_kinds(first) == ["additional_tools", "developer", "user", "configuration_update"]
    assert first["input"][-1]["reasoning"] == {"effort": "high"}
    assert second["input"][: len(first["input"]) - 1] == first["input"][:-1]
    assert _input_kinds(second)[len(first["input"]) - 1 :] == [
        "configuration_update",
        "function_call",
        "function_call_output",
        "configuration_update",
    ]
    assert _input_kinds(third)[-4:] == ["configuration_update", "message", "user", "configuration_update"]
    assert third["input"][-4]["reasoning"] == {"effort": "high"} and third["input"][-1]["reasoning"] == {
        "effort": "low"
    }
    assert first["reasoning"] == second["reasoning"] == third["reasoning"] == {"effort": "medium", "summary": "auto"}
    # the session records the level each answer was given
    session = next((tmp_path / "agent" / "sessions").rglob("*.jsonl")).read_text()
    assert '"providerThinkingLevel":"high"' in session and '"providerThinkingLevel":"low"' in session


@pytest.mark.skipif(not (PI_TS and Path(PI_TS).exists()), reason="PI_TS does not name an installed pi 1.6.0")
def test_requests_with_a_level_change_match_pi_1_6_0(tmp_path: Path) -> None:
    # over the WebSocket (``websocket``: every request whole): pi 1.6.0 compresses its
    # HTTP bodies with zstd, which the standard library of Python 3.11 cannot read
    assert _two_runs(PI, tmp_path / "py", "websocket") == _two_runs([PI_TS], tmp_path / "ts", "websocket")


def test_a_disposed_session_closes_its_socket(server: SocketServer, tmp_path: Path) -> None:
    """``pi --mode rpc``: the socket a session kept open closes when ``new_session``
    replaces the session (as pi 1.6.0), not five idle minutes later."""
    server.enqueue(Reply(codex([{"type": "message", "text": "hello"}])))
    agent = agent_dir(tmp_path, server.url)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and "PROXY" not in k.upper()}
    env.update(PI_CODING_AGENT_DIR=str(agent), PI_EXTENSIONS="", PI_OFFLINE="1", NO_COLOR="1")
    command = [*PI, "--mode", "rpc", "--model", "openai-codex/gpt-6.2-sol", "--no-tools"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(command: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(command) + "\n")
        proc.stdin.flush()

    def read_until(done: Any) -> dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            record = json.loads(line)
            if done(record):
                return record  # type: ignore[no-any-return]
        raise AssertionError("pi ended before the expected record")

    try:
        send({"id": "1", "type": "prompt", "message": "hi"})
        read_until(lambda r: r.get("type") == "agent_settled")
        assert server.connections == 1 and server.closes == []  # kept for the session's next request
        send({"id": "2", "type": "new_session"})
        assert read_until(lambda r: r.get("id") == "2")["success"] is True
        deadline = time.monotonic() + 10
        while not server.closes and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [(number, code) for number, code, _ in server.closes] == [(1, 1000)]
        assert proc.poll() is None  # closed by the disposal, while pi goes on
    finally:
        proc.stdin.close()
        proc.wait(30)
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()
