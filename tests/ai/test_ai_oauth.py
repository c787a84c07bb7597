"""pi's subscription logins against a local authorization server (tests/ai/oauth_server.py):
PKCE, the loopback callback, the pasted redirect, device-code polling, the Copilot
token exchange, refresh with expiry (also racing another process), and the requests
a login's provider expects."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pi_core.ai import ModelRegistry
from pi_core.ai.auth import AuthStore, LoginRequiredError
from pi_core.ai.oauth import _common, anthropic, github_copilot, login_methods, openai_codex
from pi_hookspecs import AbortController, LlmContext, LoginCallbacks, LoginError, OAuthCredentials, UserMessage

sys.path.insert(0, str(Path(__file__).parent))
from oauth_server import OAuthServer
from wire_server import WireServer, anthropic_message, anthropic_stream, collect, use_server


@pytest.fixture
def oauth() -> Iterator[OAuthServer]:
    server = OAuthServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
def endpoints(oauth: OAuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flow talks to the local server; polling does not wait."""
    monkeypatch.setenv("PI_OAUTH_ANTHROPIC_AUTHORIZE_URL", f"{oauth.url}/oauth/authorize")
    monkeypatch.setenv("PI_OAUTH_ANTHROPIC_TOKEN_URL", f"{oauth.url}/v1/oauth/token")
    monkeypatch.setenv("PI_OAUTH_ANTHROPIC_CALLBACK_PORT", "0")
    monkeypatch.setenv("PI_OAUTH_OPENAI_CODEX_AUTH_URL", oauth.url)
    monkeypatch.setenv("PI_OAUTH_OPENAI_CODEX_CALLBACK_PORT", "0")
    monkeypatch.setenv("PI_OAUTH_GITHUB_COPILOT_GITHUB_URL", oauth.url)
    monkeypatch.setenv("PI_OAUTH_GITHUB_COPILOT_API_URL", oauth.url)
    monkeypatch.setenv("PI_OAUTH_GITHUB_COPILOT_BASE_URL", oauth.url)
    monkeypatch.setattr(_common, "MIN_POLL_INTERVAL", 0.0)


class Callbacks:
    """A scripted user: picks ``method``, answers prompts from ``answers`` (values or
    coroutine functions; none left: never answers), and a browser that follows the
    authorization redirect to pi's callback server (``browser="here"``), or is on
    another machine (``"elsewhere"``: nothing reaches the callback server)."""

    def __init__(
        self, method: str = "browser", answers: list[Any] | None = None, *, browser: str = "here", on_device: Any = None
    ) -> None:
        self.signal = AbortController().signal
        self.method = method
        self.answers = list(answers or [])
        self.browser = browser
        self.on_device = on_device
        self.opened: list[str] = []
        self.prompts: list[str] = []
        self.cancelled_prompts = 0
        self.progress_messages: list[str] = []
        self.devices: list[tuple[str, str]] = []
        self.selects: list[list[tuple[str, str]]] = []
        self.pages: list[str] = []
        self._tasks: list[asyncio.Task[Any]] = []

    def open_url(self, url: str, instructions: str | None = None) -> None:
        self.opened.append(url)
        if self.browser == "here":
            self._tasks.append(asyncio.ensure_future(self._visit(url)))

    async def _visit(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=True) as client:
            self.pages.append((await client.get(url)).text)

    async def redirect_location(self) -> str:
        """What the user sees in the address bar after signing in on another machine."""
        async with httpx2.AsyncClient(follow_redirects=False) as client:
            return (await client.get(self.opened[-1])).headers["location"]

    async def prompt(self, message: str, *, placeholder: str | None = None, secret: bool = False) -> str:
        self.prompts.append(message)
        if self.answers:
            answer = self.answers.pop(0)
            return await answer() if callable(answer) else answer
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled_prompts += 1
            raise
        raise AssertionError("unreachable")

    async def select(self, message: str, options: Any) -> str:
        self.selects.append(list(options))
        return self.method

    def progress(self, message: str) -> None:
        self.progress_messages.append(message)

    def device_code(self, user_code: str, verification_uri: str, *, expires_in: float | None = None) -> None:
        self.devices.append((user_code, verification_uri))
        if self.on_device:
            self.on_device()


def test_callbacks_satisfy_the_protocol() -> None:
    assert isinstance(Callbacks(), LoginCallbacks)


def test_pkce_pair_is_s256() -> None:
    verifier, challenge = _common.pkce_pair()
    assert 43 <= len(verifier) <= 128
    from oauth_server import s256

    assert challenge == s256(verifier)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://localhost:1/callback?code=abc&state=xyz", ("abc", "xyz")),
        ("abc#xyz", ("abc", "xyz")),
        ("code=abc&state=xyz", ("abc", "xyz")),
        ("  abc  ", ("abc", None)),
        ("", (None, None)),
    ],
)
def test_pasted_authorization_input(text: str, expected: tuple[str | None, str | None]) -> None:
    assert _common.parse_authorization_input(text) == expected


# --------------------------------------------------------------------------- Anthropic


async def test_anthropic_browser_login_with_pkce_and_callback(oauth: OAuthServer) -> None:
    callbacks = Callbacks("browser")
    credentials = await anthropic.login(callbacks)
    assert [o[0] for o in callbacks.selects[0]] == ["browser", "copy_code"]
    request = oauth.authorize_requests[0]
    assert request["client_id"] == anthropic.CLIENT_ID and request["code"] == "true"
    assert request["code_challenge_method"] == "S256" and request["scope"] == anthropic.SCOPES
    assert request["redirect_uri"].startswith("http://localhost:") and request["redirect_uri"].endswith("/callback")
    assert "Signed in to Anthropic" in callbacks.pages[0]
    assert callbacks.cancelled_prompts == 1  # the pasted-code prompt lost the race
    exchange = oauth.token_requests[0]
    assert exchange["grant_type"] == "authorization_code" and exchange["state"] == request["state"]
    assert credentials.access.startswith("sk-ant-oat01-") and credentials.refresh.startswith("rt-")
    # stored five minutes before the real expiry, as pi 1.6.0 does
    expected = int(time.time() * 1000) + 3600_000 - 300_000
    assert abs(credentials.expires - expected) < 10_000
    assert set(credentials.to_json()) == {"type", "access", "refresh", "expires"}


async def test_anthropic_pasted_redirect_from_another_machine(oauth: OAuthServer) -> None:
    callbacks = Callbacks("browser", browser="elsewhere")
    callbacks.answers.append(callbacks.redirect_location)
    credentials = await anthropic.login(callbacks)
    assert credentials.access.startswith("sk-ant-oat01-")
    assert oauth.token_requests[0]["redirect_uri"] == oauth.authorize_requests[0]["redirect_uri"]


async def test_anthropic_copy_code_login(oauth: OAuthServer) -> None:
    callbacks = Callbacks("copy_code", browser="elsewhere")

    async def code_and_state() -> str:
        location = await callbacks.redirect_location()
        assert location.startswith(anthropic.COPY_CODE_REDIRECT_URI)
        code, state = _common.parse_authorization_input(location)
        return f"{code}#{state}"

    callbacks.answers.append(code_and_state)
    credentials = await anthropic.login(callbacks)
    assert credentials.access.startswith("sk-ant-oat01-")
    assert oauth.token_requests[0]["redirect_uri"] == anthropic.COPY_CODE_REDIRECT_URI


async def test_anthropic_paste_of_another_sign_in_is_refused(oauth: OAuthServer) -> None:
    callbacks = Callbacks("copy_code", ["somecode#not-the-state"], browser="elsewhere")
    with pytest.raises(LoginError, match="state mismatch"):
        await anthropic.login(callbacks)
    assert oauth.token_requests == []


async def test_wrong_pkce_verifier_fails_the_exchange(oauth: OAuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _common.pkce_pair
    monkeypatch.setattr(anthropic, "pkce_pair", lambda: (real()[0], real()[1]))  # challenge of another verifier
    with pytest.raises(LoginError, match="PKCE verification failed"):
        await anthropic.login(Callbacks("browser"))


async def test_login_aborted_by_the_user(oauth: OAuthServer) -> None:
    controller = AbortController()
    callbacks = Callbacks("browser", browser="elsewhere")
    callbacks.signal = controller.signal
    task = asyncio.ensure_future(anthropic.login(callbacks))
    while not callbacks.prompts:
        await asyncio.sleep(0)
    controller.abort("user pressed Ctrl+C")
    with pytest.raises(Exception, match="Login cancelled"):
        await task
    assert callbacks.cancelled_prompts == 1


# --------------------------------------------------------------------------- OpenAI Codex


async def test_codex_browser_login_keeps_the_account(oauth: OAuthServer) -> None:
    oauth.access_prefix = "jwt"
    callbacks = Callbacks("browser")
    credentials = await openai_codex.login(callbacks)
    request = oauth.authorize_requests[0]
    assert request["client_id"] == openai_codex.CLIENT_ID and request["originator"] == "pi"
    assert request["codex_cli_simplified_flow"] == "true" and request["redirect_uri"].endswith("/auth/callback")
    assert credentials.extra("accountId") == "acct-123"
    assert credentials.to_json()["accountId"] == "acct-123"
    assert openai_codex.headers(credentials, None) == {"chatgpt-account-id": "acct-123"}


def test_codex_callback_port_is_the_one_pi_uses() -> None:
    assert openai_codex.CALLBACK_PORT == 1455 and openai_codex.CALLBACK_PATH == "/auth/callback"


async def test_codex_device_code_polls_until_approved(oauth: OAuthServer) -> None:
    oauth.access_prefix = "jwt"
    polls_seen: list[int] = []
    helpers: list[asyncio.Future[None]] = []

    def approve_after_first_poll() -> None:
        async def later() -> None:
            while oauth.device_polls < 1:
                await asyncio.sleep(0.01)
            polls_seen.append(oauth.device_polls)
            oauth.approve_device()

        helpers.append(asyncio.ensure_future(later()))

    callbacks = Callbacks("device_code", on_device=approve_after_first_poll)
    credentials = await openai_codex.login(callbacks)
    assert callbacks.devices == [("ABCD-1234", f"{oauth.url}/codex/device")]
    assert oauth.device_polls >= 2  # authorization_pending first, then the code
    assert oauth.token_requests[-1]["redirect_uri"] == f"{oauth.url}/deviceauth/callback"
    assert credentials.extra("accountId") == "acct-123"


async def test_codex_token_without_account_is_refused(oauth: OAuthServer) -> None:
    oauth.access_prefix = "not-a-jwt-"
    with pytest.raises(LoginError, match="names no ChatGPT account"):
        await openai_codex.login(Callbacks("browser"))


# --------------------------------------------------------------------------- GitHub Copilot


async def test_copilot_device_flow_and_token_exchange(oauth: OAuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_OAUTH_GITHUB_COPILOT_BASE_URL")
    oauth.copilot_proxy = "proxy.business.githubcopilot.com"
    callbacks = Callbacks(answers=[""], on_device=oauth.approve_device)
    # the model list lives at the token's endpoint: point that host at the local server
    monkeypatch.setattr(github_copilot, "_account_models", _local_models(oauth))
    credentials = await github_copilot.login(callbacks)
    assert callbacks.devices == [("WXYZ-9876", "https://github.com/login/device")]
    assert credentials.refresh == "gho-github-token"
    assert "proxy-ep=proxy.business.githubcopilot.com" in credentials.access
    assert github_copilot.base_url(credentials, None) == "https://api.business.githubcopilot.com"  # type: ignore[arg-type]
    assert github_copilot.headers(credentials, None)["Copilot-Integration-Id"] == "vscode-chat"  # type: ignore[arg-type]
    assert credentials.extra("availableModelIds") == ["gpt-4.1", "claude-sonnet-4"]
    assert "enterpriseUrl" not in credentials.to_json()


def _local_models(oauth: OAuthServer) -> Any:
    real = github_copilot._account_models

    async def models(token: str, enterprise: str | None) -> Any:
        os.environ["PI_OAUTH_GITHUB_COPILOT_BASE_URL"] = oauth.url
        try:
            return await real(token, enterprise)
        finally:
            del os.environ["PI_OAUTH_GITHUB_COPILOT_BASE_URL"]

    return models


async def test_copilot_enterprise_domain_is_kept(oauth: OAuthServer) -> None:
    callbacks = Callbacks(answers=["https://company.ghe.com/"], on_device=oauth.approve_device)
    credentials = await github_copilot.login(callbacks)
    assert credentials.extra("enterpriseUrl") == "company.ghe.com"
    refreshed = await github_copilot.refresh(credentials)
    assert refreshed.extra("enterpriseUrl") == "company.ghe.com" and refreshed.access != credentials.access


async def test_copilot_invalid_enterprise_domain() -> None:
    with pytest.raises(LoginError, match="invalid GitHub Enterprise"):
        await github_copilot.login(Callbacks(answers=["https://"]))


def test_copilot_base_url_from_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_OAUTH_GITHUB_COPILOT_BASE_URL")
    assert github_copilot.base_url_for("tid=1;proxy-ep=proxy.enterprise.githubcopilot.com;x=1") == (
        "https://api.enterprise.githubcopilot.com"
    )
    assert github_copilot.base_url_for("opaque", "company.ghe.com") == "https://copilot-api.company.ghe.com"
    assert github_copilot.base_url_for("opaque") == "https://api.individual.githubcopilot.com"


def test_login_without_its_method_leaves_the_other_sources(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A login entry of a provider without an account login (a plugin's, uninstalled)
    does not hide a key."""
    _store_login(agent_dir, "groq", "groq-oauth", "r", _now() + 3600_000)
    monkeypatch.setenv("GROQ_API_KEY", "groq-key")
    registry = ModelRegistry()
    assert registry.has_auth("groq") and registry.api_key("groq") == "groq-key"
    monkeypatch.delenv("GROQ_API_KEY")
    assert not registry.has_auth("groq")


def test_builtin_login_methods() -> None:
    methods = {m.provider: m for m in login_methods()}
    assert set(methods) == {
        "anthropic",
        "openai-codex",
        "openai",
        "github-copilot",
        "xai",
        "openrouter",
        "kimi-coding",
        "meta",
        "radius",
        "typesafe",
    }
    assert [p for p, m in methods.items() if m.kind == "api_key"] == ["typesafe"]
    assert methods["anthropic"].name == "Anthropic (Claude Pro/Max)" and methods["anthropic"].subscription
    assert methods["github-copilot"].base_url is not None and methods["github-copilot"].models is not None
    assert ModelRegistry().login_method("anthropic") is not None


# --------------------------------------------------------------------------- refresh


def _store_login(agent_dir: Path, provider: str, access: str, refresh: str, expires: int, **extra: Any) -> Path:
    path = agent_dir / "auth.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[provider] = {"type": "oauth", "access": access, "refresh": refresh, "expires": expires, **extra}
    path.write_text(json.dumps(data, indent=2))
    return path


def _now() -> int:
    return int(time.time() * 1000)


async def test_expired_login_is_refreshed_and_stored(oauth: OAuthServer, agent_dir: Path) -> None:
    oauth.refresh_tokens.add("rt-old")
    path = _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    registry = ModelRegistry()
    credentials = await registry.oauth_credentials("anthropic")
    assert oauth.refreshes == 1 and credentials.access != "sk-ant-oat01-old"
    stored = json.loads(path.read_text())["anthropic"]
    assert stored["access"] == credentials.access and stored["refresh"] != "rt-old"
    assert stored["expires"] > _now() + 50 * 60_000
    assert (path.stat().st_mode & 0o777) == 0o600
    # still valid: no second refresh
    assert (await registry.oauth_credentials("anthropic")).access == credentials.access
    assert oauth.refreshes == 1


async def test_login_expiring_within_five_minutes_is_refreshed(oauth: OAuthServer, agent_dir: Path) -> None:
    oauth.refresh_tokens.add("rt-old")
    _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() + 60_000)
    assert (await ModelRegistry().oauth_credentials("anthropic")).access != "sk-ant-oat01-old"
    _store_login(agent_dir, "anthropic", "sk-ant-oat01-fresh", "rt-x", _now() + 3600_000)
    assert (await ModelRegistry().oauth_credentials("anthropic")).access == "sk-ant-oat01-fresh"


async def test_expired_login_that_cannot_be_refreshed(oauth: OAuthServer, agent_dir: Path) -> None:
    oauth.refuse_refresh = True
    path = _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    before = path.read_bytes()
    with pytest.raises(LoginRequiredError) as caught:
        await ModelRegistry().oauth_credentials("anthropic")
    message = str(caught.value)
    assert "\n" not in message and "anthropic" in message and "`pi auth login anthropic`" in message
    assert "refresh token revoked" in message
    assert path.read_bytes() == before
    assert not (agent_dir / "auth.json.lock").exists()


async def test_request_with_a_login_sends_claude_code_identity(
    oauth: OAuthServer, wire: WireServer, agent_dir: Path
) -> None:
    oauth.refresh_tokens.add("rt-old")
    _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "anthropic": {
                        "baseUrl": wire.url,
                        "models": [{"id": "claude-test", "contextWindow": 200000, "maxTokens": 8192}],
                    }
                }
            }
        )
    )
    wire.enqueue(
        anthropic_stream(
            anthropic_message(
                [{"type": "tool_use", "id": "t1", "name": "Read", "json": ['{"path": "a"}']}], stop_reason="tool_use"
            )
        )
    )
    registry = ModelRegistry()
    model = registry.get("anthropic", "claude-test")
    assert model is not None and registry.has_auth("anthropic")
    from pi_hookspecs import ToolDeclaration

    context = LlmContext(
        system_prompt="You are pi.",
        messages=[UserMessage(content="hi")],
        tools=[
            ToolDeclaration(name="read", description="Read a file", parameters={"type": "object", "properties": {}})
        ],
    )
    events = await collect(registry.stream(model, context))
    final = events[-1]
    assert final.type == "done", final
    assert final.message.content[0].name == "read"  # Claude Code's "Read" mapped back
    request = wire.requests[0]
    stored = json.loads((agent_dir / "auth.json").read_text())["anthropic"]
    assert request.headers["authorization"] == f"Bearer {stored['access']}"
    assert "x-api-key" not in request.headers
    assert request.headers["anthropic-beta"].split(",")[:2] == ["claude-code-20250219", "oauth-2025-04-20"]
    assert request.headers["user-agent"].startswith("claude-cli/") and request.headers["x-app"] == "cli"
    assert request.body["system"][0]["text"] == "You are Claude Code, Anthropic's official CLI for Claude."
    assert request.body["system"][1]["text"] == "You are pi."
    assert request.body["tools"][0]["name"] == "Read"


async def test_expired_login_fails_the_request_with_one_line(
    oauth: OAuthServer, wire: WireServer, agent_dir: Path
) -> None:
    oauth.refuse_refresh = True
    _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    (agent_dir / "models.json").write_text(
        json.dumps({"providers": {"anthropic": {"baseUrl": wire.url, "models": [{"id": "claude-test"}]}}})
    )
    registry = ModelRegistry()
    model = registry.get("anthropic", "claude-test")
    assert model is not None
    events = await collect(registry.stream(model, LlmContext(messages=[UserMessage(content="hi")])))
    assert events[-1].type == "error"
    assert "`pi auth login anthropic`" in (events[-1].error.error_message or "")
    assert wire.requests == []


async def test_copilot_login_sets_endpoint_headers_and_models(
    oauth: OAuthServer, wire: WireServer, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_OAUTH_GITHUB_COPILOT_BASE_URL", wire.url)
    _store_login(
        agent_dir,
        "github-copilot",
        "tid=1;proxy-ep=proxy.x.githubcopilot.com",
        "gho-github-token",
        _now() + 3600_000,
        availableModelIds=["gpt-4.1"],
    )
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "github-copilot": {
                        "baseUrl": "https://api.individual.githubcopilot.com",
                        "api": "openai-completions",
                        "models": [{"id": "gpt-4.1"}, {"id": "not-in-plan"}],
                    }
                }
            }
        )
    )
    registry = ModelRegistry()
    available = {m.id for m in registry.available() if m.provider == "github-copilot"}
    assert available == {"gpt-4.1"}
    from wire_server import chat_chunks

    wire.enqueue(chat_chunks([{"content": "hello"}]))
    model = registry.get("github-copilot", "gpt-4.1")
    assert model is not None
    events = await collect(registry.stream(model, LlmContext(messages=[UserMessage(content="hi")])))
    assert events[-1].type == "done", events[-1]
    request = wire.requests[0]
    assert request.headers["authorization"] == "Bearer tid=1;proxy-ep=proxy.x.githubcopilot.com"
    assert request.headers["editor-version"].startswith("vscode/")


async def test_plugin_login_method_replaces_and_refreshes(agent_dir: Path) -> None:
    from pi_hookspecs import LoginMethod

    calls: list[str] = []

    def refresh(credentials: OAuthCredentials) -> dict[str, Any]:  # a sync refresh returning a dict
        calls.append(credentials.refresh)
        return {"access": "new-access", "refresh": "new-refresh", "expires": _now() + 3600_000, "tenant": "t1"}

    _store_login(agent_dir, "acme", "old", "old-refresh", _now() - 1, tenant="t1")
    registry = ModelRegistry()
    assert not registry.has_auth("acme")
    with pytest.raises(LoginRequiredError, match="no login method"):
        await registry.oauth_credentials("acme")
    registry.add_login_method(
        LoginMethod(
            provider="acme",
            name="ACME SSO",
            login=lambda cb: None,
            refresh=refresh,
            api_key=lambda c: f"key:{c.access}",
        )
    )
    assert registry.has_auth("acme")
    credentials = await registry.oauth_credentials("acme")
    assert calls == ["old-refresh"] and credentials.access == "new-access"
    assert json.loads((agent_dir / "auth.json").read_text())["acme"]["tenant"] == "t1"
    registry.remove_providers("plugin")
    assert registry.login_method("acme") is None


# --------------------------------------------------------------------------- races between processes

_REFRESHER = textwrap.dedent(
    """
    import asyncio, sys
    from pi_core.ai import ModelRegistry
    print("ready", flush=True)
    credentials = asyncio.run(ModelRegistry().oauth_credentials("anthropic"))
    print(credentials.access, flush=True)
    """
)

_KEY_WRITER = textwrap.dedent(
    """
    from pi_core.ai.auth import AuthStore
    print("ready", flush=True)
    AuthStore().set_api_key("openai", "sk-written-meanwhile")
    print("written", flush=True)
    """
)


def _start(script: str, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline().strip()
    if line != "ready":
        process.kill()
        raise AssertionError(f"the helper process did not start: {process.stderr.read()}")
    return process


def _finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out.strip()


def test_refresh_racing_another_process_refreshes_once(oauth: OAuthServer, agent_dir: Path) -> None:
    """Two processes find the login expired at the same time: the first refreshes under
    the lock (held at the server until the second is waiting); the second then sees the
    new tokens instead of spending the rotated refresh token again."""
    import threading

    oauth.refresh_tokens.add("rt-old")
    oauth.hold_refresh = threading.Event()
    path = _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    env = {**os.environ}
    first = _start(_REFRESHER, env)
    assert oauth.refresh_started.wait(30)
    assert (agent_dir / "auth.json.lock").is_dir()  # held by the first process while it refreshes
    second = _start(_REFRESHER, env)
    oauth.hold_refresh.set()
    one, two = _finish(first), _finish(second)
    assert oauth.refreshes == 1
    assert one == two != "sk-ant-oat01-old"
    stored = json.loads(path.read_text())["anthropic"]
    assert stored["access"] == one and stored["refresh"] in oauth.refresh_tokens
    assert not (agent_dir / "auth.json.lock").exists()


def test_refresh_racing_another_write_keeps_both(oauth: OAuthServer, agent_dir: Path) -> None:
    """A process stores an API key while another refreshes a login: neither result is lost."""
    import threading

    oauth.refresh_tokens.add("rt-old")
    oauth.hold_refresh = threading.Event()
    path = _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    env = {**os.environ}
    refresher = _start(_REFRESHER, env)
    assert oauth.refresh_started.wait(30)
    writer = _start(_KEY_WRITER, env)
    oauth.hold_refresh.set()
    access = _finish(refresher)
    assert _finish(writer) == "written"
    data = json.loads(path.read_text())
    assert data["anthropic"]["access"] == access != "sk-ant-oat01-old"
    assert data["openai"] == {"type": "api_key", "key": "sk-written-meanwhile"}


def test_auth_store_sees_refreshed_tokens_of_another_process(oauth: OAuthServer, agent_dir: Path) -> None:
    oauth.refresh_tokens.add("rt-old")
    _store_login(agent_dir, "anthropic", "sk-ant-oat01-old", "rt-old", _now() - 1000)
    store = AuthStore()
    assert store.oauth("anthropic").access == "sk-ant-oat01-old"  # type: ignore[union-attr]
    access = _finish(_start(_REFRESHER, {**os.environ}))
    assert store.oauth("anthropic").access == access  # type: ignore[union-attr]
