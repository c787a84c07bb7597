"""pi 1.6.0's account logins that the first three did not cover — Sign in with ChatGPT
(``openai``), xAI, OpenRouter, Kimi for Coding, Meta, Radius — and the API-key logins,
against a local scripted authorization server (tests/ai/logins_server.py): the flow,
the tokens stored in ``auth.json``, refresh through the registry, ``pi auth status``
and ``pi auth logout``."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner

from pi_core.ai import ModelRegistry
from pi_core.ai.auth import LoginRequiredError
from pi_core.ai.oauth import _common, kimi_coding, meta, openai_chatgpt, openrouter, radius, xai
from pi_core.cli.auth_cmd import auth_app
from pi_hookspecs import AbortController, ApiKeyCredentials, LoginError, LoginMethod, OAuthCredentials

sys.path.insert(0, str(Path(__file__).parent))
from logins_server import LoginsServer


@pytest.fixture
def server() -> Iterator[LoginsServer]:
    running = LoginsServer()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(autouse=True)
def endpoints(server: LoginsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_OAUTH_OPENAI_AUTH_URL", f"{server.url}/openai")
    monkeypatch.setenv("PI_OAUTH_OPENAI_CALLBACK_PORT", "0")
    monkeypatch.setenv("PI_OAUTH_XAI_AUTH_URL", f"{server.url}/xai")
    monkeypatch.setenv("PI_OAUTH_OPENROUTER_AUTHORIZE_URL", f"{server.url}/openrouter/auth")
    monkeypatch.setenv("PI_OAUTH_OPENROUTER_TOKEN_URL", f"{server.url}/openrouter/api/v1/auth/keys")
    monkeypatch.setenv("KIMI_CODE_OAUTH_HOST", f"{server.url}/kimi")
    monkeypatch.setenv("PI_OAUTH_META_AUTH_URL", f"{server.url}/meta")
    monkeypatch.setenv("PI_OAUTH_META_MINT_URL", f"{server.url}/meta/muse-code/key")
    monkeypatch.setenv("PI_RADIUS_GATEWAY", f"{server.url}/radius")
    monkeypatch.setenv("PI_OAUTH_RADIUS_CALLBACK_PORT", "0")
    monkeypatch.setattr(_common, "MIN_POLL_INTERVAL", 0.0)
    monkeypatch.setattr(kimi_coding, "REFRESH_BACKOFF", 0.0)


class Callbacks:
    """A scripted user: answers selections with ``choice``, prompts from ``answers``
    (none left: never answers), and a browser that follows the authorization redirect
    to pi's callback server (``browser="here"``) or is elsewhere (nothing reaches it)."""

    def __init__(self, choice: str = "", answers: list[Any] | None = None, *, browser: str = "here") -> None:
        self.signal = AbortController().signal
        self.choice = choice
        self.answers = list(answers or [])
        self.browser = browser
        self.opened: list[str] = []
        self.prompts: list[tuple[str, bool]] = []
        self.selects: list[tuple[str, list[tuple[str, str]]]] = []
        self.devices: list[tuple[str, str]] = []
        self.progress_messages: list[str] = []
        self.pages: list[str] = []
        self._tasks: list[asyncio.Future[None]] = []

    def open_url(self, url: str, instructions: str | None = None) -> None:
        self.opened.append(url)
        if self.browser == "here":
            self._tasks.append(asyncio.ensure_future(self._visit(url)))

    async def _visit(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=True) as client:
            self.pages.append((await client.get(url)).text)

    async def redirect_location(self) -> str:
        async with httpx2.AsyncClient(follow_redirects=False) as client:
            return str((await client.get(self.opened[-1])).headers["location"])

    async def prompt(self, message: str, *, placeholder: str | None = None, secret: bool = False) -> str:
        self.prompts.append((message, secret))
        if self.answers:
            answer = self.answers.pop(0)
            return str(await answer() if callable(answer) else answer)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def select(self, message: str, options: Any) -> str:
        self.selects.append((message, list(options)))
        return self.choice

    def progress(self, message: str) -> None:
        self.progress_messages.append(message)

    def device_code(self, user_code: str, verification_uri: str, *, expires_in: float | None = None) -> None:
        self.devices.append((user_code, verification_uri))


def now() -> int:
    return int(time.time() * 1000)


def stored(agent_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((agent_dir / "auth.json").read_text())
    return data


def store(agent_dir: Path, provider: str, entry: dict[str, Any]) -> None:
    path = agent_dir / "auth.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[provider] = entry
    path.write_text(json.dumps(data))


async def cli(*args: str) -> Any:
    """``pi auth <args>`` in-process (in a thread: the command runs its own event loop)."""
    return await asyncio.to_thread(CliRunner().invoke, auth_app, list(args))


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("PI_EXTENSIONS", "")
    return project


async def check_refresh(agent_dir: Path, server: LoginsServer, provider: str) -> OAuthCredentials:
    """Expire the stored login: the registry refreshes it and stores the new tokens."""
    entry = stored(agent_dir)[provider]
    store(agent_dir, provider, {**entry, "expires": now() - 1000})
    refreshed = await ModelRegistry().oauth_credentials(provider)
    assert server.refreshes.get(provider) == 1
    assert stored(agent_dir)[provider]["access"] == refreshed.access
    assert stored(agent_dir)[provider]["expires"] > now() + 50 * 60_000
    return refreshed


async def check_status_and_logout(provider: str, shown: str) -> None:
    status = await cli("status", provider)
    assert status.exit_code == 0 and shown in status.output, status.output
    out = await cli("logout", provider)
    assert out.exit_code == 0 and "Logged out of" in out.output, out.output
    assert "No credentials" in (await cli("status", provider)).output


# --------------------------------------------------------------------------- Sign in with ChatGPT


async def test_chatgpt_login_refresh_status_logout(server: LoginsServer, agent_dir: Path, cwd: Path) -> None:
    callbacks = Callbacks()
    credentials = await ModelRegistry().login("openai", callbacks, "oauth")
    authorize = next(q for m, p, q, _ in server.requests if p == "/openai/api/accounts/authorize")
    assert authorize["client_id"] == "dynamic_agent_client" and authorize["agent_name_hint"] == "Pi"
    assert authorize["resource"] == "https://api.openai.com/v1" and "chatgpt.tokens.use.direct" in authorize["scope"]
    assert authorize["redirect_uri"].startswith("http://127.0.0.1:") and authorize["nonce"]
    device = json.loads((agent_dir / "settings.json").read_text())["deviceId"]
    assert authorize["ext_agent_host_id"] == f"urn:uuid:{device}"
    assert isinstance(credentials, OAuthCredentials)
    entry = stored(agent_dir)["openai"]
    assert entry["type"] == "oauth" and entry["clientId"] == "issued-7"
    assert "chatgpt.tokens.use.direct" in entry["scopes"]
    assert abs(entry["expires"] - (now() + 3600_000 - 180_000)) < 10_000  # three minutes early
    refreshed = await check_refresh(agent_dir, server, "openai")
    assert refreshed.extra("clientId") == "issued-7"
    await check_status_and_logout("openai", "OpenAI (ChatGPT subscription)")


async def test_chatgpt_pasted_redirect(server: LoginsServer, agent_dir: Path) -> None:
    callbacks = Callbacks(browser="elsewhere")
    callbacks.answers.append(callbacks.redirect_location)
    credentials = await openai_chatgpt.login(callbacks)
    assert credentials.extra("clientId") == "issued-7"


async def test_chatgpt_pasted_url_of_another_address_is_refused(server: LoginsServer, agent_dir: Path) -> None:
    callbacks = Callbacks(answers=["http://example.com/auth/callback?code=x&state=y&client_id=z"], browser="elsewhere")
    with pytest.raises(LoginError, match="must start with"):
        await openai_chatgpt.login(callbacks)


async def test_chatgpt_busy_port_is_named(
    server: LoginsServer, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = blocker.sockets[0].getsockname()[1]
    monkeypatch.setenv("PI_OAUTH_OPENAI_CALLBACK_PORT", str(port))
    try:
        with pytest.raises(LoginError, match=f"Port {port} is in use"):
            await openai_chatgpt.login(Callbacks())
    finally:
        blocker.close()


# --------------------------------------------------------------------------- device codes


async def test_xai_device_code(server: LoginsServer, agent_dir: Path, cwd: Path) -> None:
    callbacks = Callbacks()
    await ModelRegistry().login("xai", callbacks, "oauth")
    assert callbacks.devices == [("USER-CODE", "https://xai.example/device?code=USER-CODE")]
    assert server.polls["xai"] == 2  # authorization_pending, then the tokens
    asked = server.posted("/xai/oauth2/device/code")[0]
    assert asked == {"client_id": xai.CLIENT_ID, "scope": xai.SCOPE, "referrer": "pi"}
    entry = stored(agent_dir)["xai"]
    assert entry["access"].startswith("xai-access-") and abs(entry["expires"] - (now() + 3300_000)) < 10_000
    server.omit_refresh_token = True  # not rotated: the old refresh token is kept
    before = entry["refresh"]
    refreshed = await check_refresh(agent_dir, server, "xai")
    assert refreshed.refresh == before
    await check_status_and_logout("xai", "xAI (Grok/X subscription)")


async def test_xai_refuses_a_plain_http_verification_page(
    server: LoginsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = server._device
    monkeypatch.setattr(server, "_device", lambda p: {**real(p), "verification_uri_complete": "file:///etc/passwd"})
    with pytest.raises(LoginError, match="Untrusted verification URI"):
        await xai.login(Callbacks())


async def test_kimi_device_code_and_retried_refresh(
    server: LoginsServer, agent_dir: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    callbacks = Callbacks()
    await ModelRegistry().login("kimi-coding", callbacks, "oauth")
    assert callbacks.devices == [("USER-CODE", "https://kimi.example/device?code=USER-CODE")]
    assert stored(agent_dir)["kimi-coding"]["refresh"].startswith("kimi-refresh-")
    entry = stored(agent_dir)["kimi-coding"]
    store(agent_dir, "kimi-coding", {**entry, "expires": now() - 1})
    refreshed = await ModelRegistry().oauth_credentials("kimi-coding")
    assert server.refreshes["kimi"] == 1 and refreshed.access != entry["access"]
    # a revoked refresh token ends the login: one line naming the command
    server.refuse.add("kimi")
    store(agent_dir, "kimi-coding", {**stored(agent_dir)["kimi-coding"], "expires": now() - 1})
    with pytest.raises(LoginRequiredError, match=r"unauthorized .*pi auth login kimi-coding"):
        await ModelRegistry().oauth_credentials("kimi-coding")
    await check_status_and_logout("kimi-coding", "Kimi Code (subscription)")


async def test_meta_device_code_then_a_minted_key(server: LoginsServer, agent_dir: Path, cwd: Path) -> None:
    callbacks = Callbacks()
    await ModelRegistry().login("meta", callbacks, "oauth")
    assert callbacks.progress_messages == ["Enabling Meta Model API access..."]
    entry = stored(agent_dir)["meta"]
    assert entry["refresh"] == "meta-identity" and entry["access"].startswith("meta-key-")
    assert abs(entry["expires"] - (now() + 24 * 3600_000)) < 10_000
    store(agent_dir, "meta", {**entry, "expires": now() - 1})
    refreshed = await ModelRegistry().oauth_credentials("meta")  # a new key minted
    assert refreshed.access != entry["access"] and refreshed.refresh == "meta-identity"
    server.refuse.add("meta")
    with pytest.raises(LoginError, match="Meta session expired"):
        await meta.refresh(refreshed)
    await check_status_and_logout("meta", "Meta (Muse subscription)")


async def test_radius_device_code(server: LoginsServer, agent_dir: Path, cwd: Path) -> None:
    callbacks = Callbacks("device-code")
    await ModelRegistry().login("radius", callbacks, "oauth")
    assert [o for o, _ in callbacks.selects[0][1]] == ["browser", "device-code"]
    assert callbacks.devices == [("USER-CODE", "https://radius.example/device")]
    entry = stored(agent_dir)["radius"]
    assert entry["scope"] == "gateway offline_access" and abs(entry["expires"] - (now() + 3540_000)) < 10_000
    await check_refresh(agent_dir, server, "radius")
    await check_status_and_logout("radius", "Radius")


async def test_radius_browser_with_discovery(server: LoginsServer, agent_dir: Path) -> None:
    callbacks = Callbacks("browser")
    credentials = await radius.login(callbacks)
    authorize = next(q for m, p, q, _ in server.requests if p == "/radius/authorize")
    assert authorize["client_id"] == "pi-gateway" and authorize["handoff"] == "url"
    assert authorize["redirect_uri"].startswith("http://127.0.0.1:") and authorize["redirect_uri"].endswith(
        "/oauth/callback"
    )
    assert "Signed in to Radius" in callbacks.pages[0]
    assert credentials.access.startswith("radius-access-")


# --------------------------------------------------------------------------- OpenRouter


async def test_openrouter_key_through_pkce(server: LoginsServer, agent_dir: Path, cwd: Path) -> None:
    callbacks = Callbacks()
    await ModelRegistry().login("openrouter", callbacks, "oauth")
    authorize = next(q for m, p, q, _ in server.requests if p == "/openrouter/auth")
    assert authorize["code_challenge_method"] == "S256" and "/oauth/callback/" in authorize["callback_url"]
    assert "state" not in authorize
    entry = stored(agent_dir)["openrouter"]
    assert entry == {"type": "oauth", "access": entry["access"], "refresh": "", "expires": 9_007_199_254_740_991}
    assert entry["access"].startswith("sk-or-v1-")
    # a permanent key: never refreshed
    assert (await ModelRegistry().oauth_credentials("openrouter")).access == entry["access"]
    await check_status_and_logout("openrouter", "OpenRouter OAuth")


async def test_openrouter_pasted_redirect(server: LoginsServer, agent_dir: Path) -> None:
    callbacks = Callbacks(browser="elsewhere")
    callbacks.answers.append(callbacks.redirect_location)
    credentials = await openrouter.login(callbacks)
    assert credentials.access.startswith("sk-or-v1-")


async def test_openrouter_wrong_verifier(server: LoginsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _common.pkce_pair
    monkeypatch.setattr(openrouter, "pkce_pair", lambda: (real()[0], real()[1]))
    with pytest.raises(LoginError, match="Invalid code or verifier"):
        await openrouter.login(Callbacks())


# --------------------------------------------------------------------------- API-key logins


@pytest.mark.parametrize(
    ("provider", "prompt"),
    [
        ("anthropic", "Enter Anthropic API key"),
        ("github-copilot", "Enter GitHub Copilot token"),
        ("typesafe", "Enter TypeSafe API key"),
        ("openai", "Enter OpenAI API key"),
        ("groq", "Enter Groq API key"),
    ],
)
async def test_api_key_logins(provider: str, prompt: str, agent_dir: Path, cwd: Path) -> None:
    registry = ModelRegistry()
    callbacks = Callbacks(answers=[" key-typed "])
    credentials = await registry.login(provider, callbacks, "api_key")
    assert callbacks.prompts == [(prompt, True)]  # not echoed
    assert isinstance(credentials, ApiKeyCredentials)
    assert stored(agent_dir) == {provider: {"type": "api_key", "key": "key-typed"}}  # pi 1.6.0's entry
    status = await cli("status", provider)
    assert "API key from" in status.output, status.output
    assert (await cli("logout", provider)).exit_code == 0 and not stored(agent_dir)


async def test_no_api_key_login_for_a_subscription_only_provider(agent_dir: Path) -> None:
    with pytest.raises(LoginRequiredError, match="has no API key login"):
        await ModelRegistry().login("openai-codex", Callbacks(), "api_key")


async def test_empty_key_stores_nothing(agent_dir: Path) -> None:
    with pytest.raises(LoginError, match="nothing was saved"):
        await ModelRegistry().login("openai", Callbacks(answers=[""]), "api_key")
    assert not (agent_dir / "auth.json").exists()


async def test_login_asks_which_kind_when_a_provider_has_both(agent_dir: Path, server: LoginsServer) -> None:
    """``/login openai`` (no kind): pi 1.6.0's "Select authentication method" question."""
    callbacks = Callbacks("api_key", answers=["sk-chosen"])
    await ModelRegistry().login("openai", callbacks)
    message, options = callbacks.selects[0]
    assert message == "Select authentication method for OpenAI:"
    assert options == [("oauth", "Sign in with ChatGPT"), ("api_key", "Sign in with an API key")]
    assert stored(agent_dir)["openai"] == {"type": "api_key", "key": "sk-chosen"}


async def test_plugin_api_key_login_with_a_url(agent_dir: Path) -> None:
    """A registered API-key login stores ``env`` and gives requests their key and endpoint."""

    async def login(callbacks: Any) -> ApiKeyCredentials:
        url = await callbacks.prompt("Gateway URL")
        return ApiKeyCredentials(key=await callbacks.prompt("Key", secret=True), env={"ACME_URL": url})

    registry = ModelRegistry()
    registry.add_provider(
        {"name": "acme", "baseUrl": "http://unused/v1", "api": "openai-completions", "models": [{"id": "m"}]}
    )
    registry.add_login_method(
        LoginMethod(
            provider="acme",
            name="ACME gateway",
            kind="api_key",
            login=login,
            base_url=lambda credentials, model: credentials.env["ACME_URL"] + "/v1",
        )
    )
    assert registry.login_method("acme") is not None and registry.credentials.account_login("acme") is None
    await registry.login("acme", Callbacks(answers=["http://gw.example", "k-1"]))
    assert stored(agent_dir)["acme"] == {"type": "api_key", "key": "k-1", "env": {"ACME_URL": "http://gw.example"}}
    model = registry.get("acme", "m")
    assert model is not None
    from pi_hookspecs import StreamOptions

    prepared, options = await registry.credentials.prepare(model, StreamOptions(), None)
    assert options.api_key == "k-1" and prepared.base_url == "http://gw.example/v1"


def test_auth_json_written_by_pi_160_is_read(agent_dir: Path) -> None:
    """pi 1.6.0's entries for the new logins are read as they are."""
    store(agent_dir, "xai", {"type": "oauth", "access": "a", "refresh": "r", "expires": now() + 3600_000})
    store(agent_dir, "llama.cpp", {"type": "api_key", "env": {"LLAMA_BASE_URL": "http://127.0.0.1:9"}})
    registry = ModelRegistry()
    assert registry.has_auth("xai") and registry.credentials.logged_in("xai")
