"""Sign in with ChatGPT for the OpenAI API (provider ``openai``), as pi 1.6.0 does it.

A public-client OAuth 2 authorization code flow with PKCE that registers a new client
per login (``client_id=dynamic_agent_client``; OpenAI hands the issued client id back in
the redirect) and asks for ``chatgpt.tokens.use.direct``: the access token is then sent
to ``api.openai.com`` as the API key. The redirect goes to
``http://127.0.0.1:1455/auth/callback`` (the port the Codex CLI uses too: a busy port is
an error naming it); the user may paste the final redirect URL instead.

The installation is named by ``ext_agent_host_id=urn:uuid:<deviceId>``, the
``deviceId`` of the user settings (created on first use, as pi 1.6.0 does). The
credentials keep ``clientId`` (a refresh needs it) and ``scopes``. Endpoints:
``PI_OAUTH_OPENAI_AUTH_URL`` (replaces ``https://auth.openai.com``), ``…_CALLBACK_PORT``.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import (
    CallbackResult,
    endpoint,
    now_ms,
    pkce_pair,
    post,
    start_callback_server,
    wait_for_redirect,
)

PROVIDER = "openai"
NAME = "OpenAI (ChatGPT subscription)"
LABEL = "Sign in with ChatGPT"
DYNAMIC_CLIENT_ID = "dynamic_agent_client"
AGENT_NAME_HINT = "Pi"
AUTH_URL = "https://auth.openai.com"
RESOURCE = "https://api.openai.com/v1"
CALLBACK_PORT = 1455
CALLBACK_PATH = "/auth/callback"
DIRECT_TOKEN_SCOPE = "chatgpt.tokens.use.direct"
SCOPE = f"openid profile email offline_access resource.invoke {DIRECT_TOKEN_SCOPE}"
EXPIRY_MARGIN_MS = 3 * 60 * 1000
"""Stored expiry is three minutes before the real one (as pi 1.6.0 stores it)."""
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)


def _base() -> str:
    return endpoint(PROVIDER, "AUTH_URL", AUTH_URL).rstrip("/")


def _port() -> int:
    return int(endpoint(PROVIDER, "CALLBACK_PORT", str(CALLBACK_PORT)))


def device_id() -> str:
    """This installation's id: ``deviceId`` of the user settings (pi 1.6.0's key),
    written there on first use."""
    from pi_core._fs import atomic_write
    from pi_core._paths import agent_dir
    from pi_core.resources.settings import SettingsError, read_settings_file

    path = agent_dir() / "settings.json"
    try:
        data = read_settings_file(path) if path.exists() else {}
    except SettingsError as error:
        raise LoginError(f"Sign in with ChatGPT needs this installation's id, but {error}") from None
    current = data.get("deviceId")
    if isinstance(current, str) and _UUID.match(current):
        return current.lower()
    data["deviceId"] = str(uuid.uuid4())
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return str(data["deviceId"])


def _credentials(token: dict[str, Any], client_id: str) -> OAuthCredentials:
    for field in ("access_token", "refresh_token", "scope"):
        value = token.get(field)
        if not isinstance(value, str) or not value.strip():
            raise LoginError(f"OpenAI OAuth token response has invalid {field}")
    expires_in = token.get("expires_in")
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float) or expires_in <= 0:
        raise LoginError("OpenAI OAuth token response has invalid expires_in")
    scopes = token["scope"].split()
    if DIRECT_TOKEN_SCOPE not in scopes:
        raise LoginError(f"OpenAI OAuth grant did not include {DIRECT_TOKEN_SCOPE}")
    return OAuthCredentials(
        access=token["access_token"],
        refresh=token["refresh_token"],
        expires=now_ms() + int(expires_in * 1000) - EXPIRY_MARGIN_MS,
        clientId=client_id,
        scopes=scopes,
    )


async def _token(form: dict[str, str]) -> dict[str, Any]:
    status, body = await post(f"{_base()}/api/accounts/oauth/token", form=form, what="OpenAI OAuth token request")
    if not 200 <= status < 300:
        detail = json.dumps(body)[:300] if body else ""
        raise LoginError(f"OpenAI OAuth token request failed ({status}){': ' + detail if detail else ''}")
    return body


def _from_redirect(url: str, state: str, redirect_uri: str) -> tuple[str, str]:
    """``(code, issued client id)`` of the pasted final redirect URL."""
    parts = urlsplit(url.strip())
    expected = urlsplit(redirect_uri)
    if not parts.scheme or (parts.scheme, parts.netloc, parts.path) != (
        expected.scheme,
        expected.netloc,
        expected.path,
    ):
        raise LoginError(f"The pasted callback URL must start with {redirect_uri}")
    query = {key: values[0] for key, values in parse_qs(parts.query).items() if values}
    if query.get("error"):
        raise LoginError(f"ChatGPT authorization failed: {query['error']}")
    return _code_and_client(query, state)


def _code_and_client(query: dict[str, str], state: str) -> tuple[str, str]:
    if not query.get("code"):
        raise LoginError("Missing authorization code")
    if query.get("state") != state:
        raise LoginError("OAuth state mismatch")
    client_id = (query.get("client_id") or "").strip()
    if not client_id:
        raise LoginError("OpenAI OAuth registration callback did not contain an issued client ID")
    return query["code"], client_id


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    host_id = f"urn:uuid:{device_id()}"
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32)
    port = _port()
    server = await start_callback_server("ChatGPT", CALLBACK_PATH, state, (port,))
    if server is None:
        raise LoginError(
            f"Port {port} is in use, probably by an unfinished login in another pi session or by the Codex CLI. "
            "Cancel that login and try again."
        )
    redirect_uri = f"http://127.0.0.1:{server.port}{CALLBACK_PATH}"
    query = urlencode(
        {
            "client_id": DYNAMIC_CLIENT_ID,
            "agent_name_hint": AGENT_NAME_HINT,
            "ext_agent_host_id": host_id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "resource": RESOURCE,
            "scope": SCOPE,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "nonce": nonce,
        }
    )
    try:
        callbacks.open_url(
            f"{_base()}/api/accounts/authorize?{query}",
            "Complete sign-in in your browser. If the callback does not complete, paste the final redirect URL here.",
        )
        answer = await wait_for_redirect(
            callbacks,
            server,
            message="Complete login in your browser, or paste the final redirect URL here",
            placeholder=redirect_uri,
        )
    finally:
        server.close()
    if isinstance(answer, CallbackResult):
        if answer.error:
            raise LoginError(f"ChatGPT authorization failed: {answer.error}")
        code, client_id = _code_and_client(answer.params or {}, state)
    else:
        code, client_id = _from_redirect(answer, state, redirect_uri)
    callbacks.progress("Exchanging authorization code for tokens...")
    token = await _token(
        {
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
            "resource": RESOURCE,
        }
    )
    id_token = token.get("id_token")
    if not isinstance(id_token, str) or not id_token.strip():
        raise LoginError("OpenAI OAuth token response did not contain an ID token")
    return _credentials(token, client_id)


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    client_id = credentials.extra("clientId")
    if not isinstance(client_id, str) or not client_id.strip():
        raise LoginError("Stored OpenAI OAuth credential does not contain an issued client ID; reconnect ChatGPT")
    token = await _token(
        {
            "grant_type": "refresh_token",
            "client_id": client_id,
            "refresh_token": credentials.refresh,
            "resource": RESOURCE,
        }
    )
    return _credentials(token, client_id)
