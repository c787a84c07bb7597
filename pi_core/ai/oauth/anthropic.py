"""Claude Pro/Max sign-in (provider ``anthropic``): OAuth 2 authorization code with
PKCE, as pi 1.6.0 and Claude Code do it.

* browser: a loopback callback server (port 53692, else any free port, else none) receives
  the redirect; the user may paste the redirect URL instead (a browser on another
  machine);
* copy code (headless): Anthropic's page shows ``code#state``, which the user pastes.

The access token (``sk-ant-oat…``) is sent as a bearer token with Claude Code's
identity (see :mod:`pi_core.ai.apis.anthropic`). Endpoints: ``PI_OAUTH_ANTHROPIC_*``.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlencode

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import (
    browser_login_code,
    endpoint,
    now_ms,
    pkce_pair,
    request_json,
    start_callback_server,
    wait_for_code,
)

PROVIDER = "anthropic"
NAME = "Anthropic (Claude Pro/Max)"
CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
"""Claude Code's public OAuth client (the one Anthropic's subscription sign-in accepts)."""
AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
TOKEN_URL = "https://platform.claude.com/v1/oauth/token"
CALLBACK_PORT = 53692
CALLBACK_PATH = "/callback"
COPY_CODE_REDIRECT_URI = "https://platform.claude.com/oauth/code/callback"
SCOPES = "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload"
EXPIRY_MARGIN_MS = 5 * 60 * 1000
"""Stored expiry is five minutes before the real one (as pi 1.6.0 stores it)."""


def _url(name: str) -> str:
    return endpoint(PROVIDER, name, str(globals()[name]))


def _credentials(data: Any, what: str) -> OAuthCredentials:
    if (
        not isinstance(data, dict)
        or not data.get("access_token")
        or not isinstance(data.get("expires_in"), int | float)
    ):
        raise LoginError(f"{what} returned an unexpected answer: {str(data)[:200]}")
    return OAuthCredentials(
        access=data["access_token"],
        refresh=data.get("refresh_token") or "",
        expires=now_ms() + int(data["expires_in"] * 1000) - EXPIRY_MARGIN_MS,
    )


async def _exchange(code: str, state: str, verifier: str, redirect_uri: str) -> OAuthCredentials:
    _, body = await request_json(
        "POST",
        _url("TOKEN_URL"),
        json_body={
            "grant_type": "authorization_code",
            "client_id": CLIENT_ID,
            "code": code,
            "state": state,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
        what="Anthropic token exchange",
    )
    return _credentials(body, "Anthropic token exchange")


def _authorize_url(redirect_uri: str, challenge: str, state: str) -> str:
    query = urlencode(
        {
            "code": "true",
            "client_id": CLIENT_ID,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": SCOPES,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
        }
    )
    return f"{_url('AUTHORIZE_URL')}?{query}"


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    method = await callbacks.select(
        "Select Anthropic login method:",
        [("browser", "Browser login (default)"), ("copy_code", "Copy code login (headless)")],
    )
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(24)
    if method == "copy_code":
        callbacks.open_url(
            _authorize_url(COPY_CODE_REDIRECT_URI, challenge, state),
            "Complete login in your browser, then copy the code Anthropic shows and paste it here.",
        )
        code = await wait_for_code(
            callbacks,
            None,
            state=state,
            message="Paste the code Anthropic shows after you sign in",
            placeholder="code#state",
        )
        callbacks.progress("Exchanging authorization code for tokens...")
        return await _exchange(code, state, verifier, COPY_CODE_REDIRECT_URI)
    if method != "browser":
        raise LoginError(f"unknown Anthropic login method {method!r}")
    port = int(_url("CALLBACK_PORT"))
    server = await start_callback_server("Anthropic", CALLBACK_PATH, state, (port, 0) if port else (0,))
    redirect_uri = server.redirect_uri() if server else f"http://localhost:{CALLBACK_PORT}{CALLBACK_PATH}"
    code = await browser_login_code(
        callbacks,
        server,
        url=_authorize_url(redirect_uri, challenge, state),
        instructions=(
            "Complete login in your browser. If the browser is on another machine, paste the final redirect URL here."
        ),
        state=state,
        redirect_uri=redirect_uri,
    )
    return await _exchange(code, state, verifier, redirect_uri)


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    if not credentials.refresh:
        raise LoginError("the login has no refresh token")
    _, body = await request_json(
        "POST",
        _url("TOKEN_URL"),
        json_body={"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": credentials.refresh},
        what="Anthropic token refresh",
    )
    refreshed = _credentials(body, "Anthropic token refresh")
    if not refreshed.refresh:
        refreshed.refresh = credentials.refresh
    return refreshed
