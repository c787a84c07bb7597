"""Streamable HTTP servers on 127.0.0.1: calls, headers, transient errors, OAuth."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_testkit import TOOL_COUNT, HttpServer, http_server  # noqa: F401

import pi_mcp.http as mcp_http
from pi_mcp.config import ServerEntry, parse_server
from pi_mcp.connection import McpConnection
from pi_mcp.errors import McpUnavailableError
from pi_mcp.oauth import AUTH_FILE_NAME, CredentialStore, OAuthFactory, sign_in, sign_out


def entry(name: str, **fields: Any) -> ServerEntry:
    fields.setdefault("timeout", 10)
    return ServerEntry(name, parse_server(name, fields), "test")


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_http, "RETRY_DELAYS", (0.0, 0.0))


async def test_http_server_calls_with_expanded_headers(
    http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_TEST_TOKEN", "abc")
    connection = McpConnection(entry("web", url=http_server.url, headers={"X-Token": "t-${PI_TEST_TOKEN}"}), ".")
    try:
        await connection.session()
        assert connection.state == "connected" and len(connection.tools) == TOOL_COUNT
        assert (await connection.call_tool("header", {"name": "X-Token"})).content[0].text == "t-abc"
        assert (await connection.call_tool("add", {"a": 1, "b": 2})).structured_content == {"total": 3}
    finally:
        await connection.close()


async def test_listing_is_retried_twice_after_transient_statuses() -> None:
    with HttpServer("--fail-list", "2") as server:
        connection = McpConnection(entry("web", url=server.url), ".")
        try:
            await connection.session()
            assert connection.state == "connected" and len(connection.tools) == TOOL_COUNT
        finally:
            await connection.close()
    with HttpServer("--fail-list", "3") as server:
        connection = McpConnection(entry("web", url=server.url), ".")
        with pytest.raises(McpUnavailableError, match=r"failed to connect: .*\(HTTP 503 on tools/list\)"):
            await connection.session()
        await connection.close()


async def test_tool_calls_are_not_retried() -> None:
    calls: list[str] = []

    class Flaky(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            calls.append(json.loads(request.content)["method"])
            return httpx2.Response(503, text="busy")

    transport = mcp_http.RetryingTransport(Flaky(), delays=(0, 0))
    async with httpx2.AsyncClient(transport=transport) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
        assert (await client.post("http://test/mcp", json=body)).status_code == 503
        body["method"] = "tools/list"
        assert (await client.post("http://test/mcp", json=body)).status_code == 503
    assert calls == ["tools/call", "tools/list", "tools/list", "tools/list"]
    assert transport.last_error == (503, "tools/list")


async def test_an_unreachable_server_is_a_clear_failure() -> None:
    connection = McpConnection(entry("down", url="http://127.0.0.1:9/mcp"), ".")
    with pytest.raises(McpUnavailableError, match=r'"down" failed to connect: cannot reach http://127.0.0.1:9/mcp'):
        await connection.session()
    assert connection.state == "failed"
    await connection.close()


async def test_a_restarted_http_server_is_reconnected_on_the_next_call() -> None:
    first = HttpServer().__enter__()
    port = first.port
    connection = McpConnection(entry("web", url=first.url), ".")
    try:
        await connection.session()
        first.__exit__()
        # the server is gone: the call fails and the server shows as dropped
        with pytest.raises(McpUnavailableError, match='MCP server "web"'):
            await connection.call_tool("echo", {"text": "x"})
        assert connection.state in ("disconnected", "failed")
        with HttpServer("--port", str(port)):
            # back on the same port: the next call connects again
            assert (await connection.call_tool("echo", {"text": "again"})).content[0].text == "again"
            assert connection.state == "connected"
        with HttpServer("--port", str(port)):
            # restarted between two calls: the old HTTP session is unknown there, so pi
            # connects again and resends the call once
            assert (await connection.call_tool("echo", {"text": "resent"})).content[0].text == "resent"
    finally:
        first.__exit__()
        await connection.close()


# --------------------------------------------------------------------------- OAuth


async def browser(url: str) -> None:
    """Stands in for the user's browser: the test authorization server approves at once
    and redirects to pi's loopback callback."""
    async with httpx2.AsyncClient(follow_redirects=True) as client:
        response = await client.get(url)
    assert response.status_code == 200 and "Signed in" in response.text


def stored(agent_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((agent_dir / AUTH_FILE_NAME).read_text())
    return data


async def connect(server_entry: ServerEntry, agent_dir: Path) -> McpConnection:
    connection = McpConnection(server_entry, ".", auth=OAuthFactory(agent_dir))
    try:
        await connection.session()
    finally:
        await connection.close()
    return connection


async def test_oauth_sign_in_storage_refresh_and_sign_out(pi_agent_dir: Path) -> None:
    with HttpServer("--oauth") as server:
        sec = entry("sec", url=server.url)
        # without credentials the server needs a sign-in (no browser is ever opened by a connection)
        connection = McpConnection(sec, ".", auth=OAuthFactory(pi_agent_dir))
        with pytest.raises(McpUnavailableError, match='"sec" requires sign-in: run /mcp login sec or pi mcp login sec'):
            await connection.session()
        assert connection.state == "needs-auth"
        await connection.close()

        assert await sign_in(sec, pi_agent_dir, ".", on_url=browser, timeout=30) == TOOL_COUNT
        path = pi_agent_dir / AUTH_FILE_NAME
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        key = CredentialStore.key("sec", server.url)
        state = stored(pi_agent_dir)[key]
        assert state["tokens"]["access_token"].startswith("at-") and state["tokens"]["refresh_token"].startswith("rt-")
        assert state["tokensExpireAt"] > 0 and state["clientInformation"]["client_id"]

        assert (await connect(sec, pi_agent_dir)).connects == 1  # the stored token is used

        # an expired token is refreshed before it is sent; the rotated tokens are saved
        data = stored(pi_agent_dir)
        data[key]["tokensExpireAt"] = 0
        path.write_text(json.dumps(data))
        await connect(sec, pi_agent_dir)
        assert stored(pi_agent_dir)[key]["tokens"]["access_token"] != state["tokens"]["access_token"]

        # a token the server rejects is refreshed once
        async with httpx2.AsyncClient() as client:
            await client.post(f"{server.base}/test/expire-access")
            await connect(sec, pi_agent_dir)
            assert (await client.get(f"{server.base}/test/stats")).json()["refreshes"] == 2

        # the same URL under another name signs in separately
        other = McpConnection(entry("sec2", url=server.url), ".", auth=OAuthFactory(pi_agent_dir))
        with pytest.raises(McpUnavailableError, match="requires sign-in"):
            await other.session()
        await other.close()

        assert sign_out(sec, pi_agent_dir) is True
        assert key not in stored(pi_agent_dir) and sign_out(sec, pi_agent_dir) is False
        with pytest.raises(McpUnavailableError, match="requires sign-in"):
            await connect(sec, pi_agent_dir)


async def test_sign_in_refuses_servers_that_do_not_use_oauth(pi_agent_dir: Path) -> None:
    with pytest.raises(ValueError, match="does not use OAuth: it sets an Authorization header"):
        await sign_in(
            entry("h", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer x"}),
            pi_agent_dir,
            ".",
            on_url=browser,
        )
    with pytest.raises(ValueError, match="stdio server"):
        await sign_in(entry("s", command="x"), pi_agent_dir, ".", on_url=browser)


async def test_a_fixed_callback_port_is_used_as_the_redirect(pi_agent_dir: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seen: list[str] = []

    async def look(url: str) -> None:
        seen.append(url)
        await browser(url)

    with HttpServer("--oauth") as server:
        fixed = entry("fixed", url=server.url, oauth={"callbackPort": port, "clientName": "pi-test"})
        await sign_in(fixed, pi_agent_dir, ".", on_url=look, timeout=30)
    assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in seen[0]
    info = stored(pi_agent_dir)[CredentialStore.key("fixed", server.url)]["clientInformation"]
    assert info["client_name"] == "pi-test"


def test_the_issuer_of_a_configured_metadata_document() -> None:
    from pi_mcp.oauth import issuer_of

    assert issuer_of("https://example.okta.com/.well-known/openid-configuration") == "https://example.okta.com"
    assert (
        issuer_of("https://as.example/.well-known/oauth-authorization-server/tenant1") == "https://as.example/tenant1"
    )
    assert issuer_of("http://127.0.0.1:9/realms/x/.well-known/openid-configuration") == "http://127.0.0.1:9/realms/x"
