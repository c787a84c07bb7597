"""ChatGPT Plus/Pro sign-in (provider ``openai-codex``), as the Codex CLI and pi 1.6.0
do it.

* browser: OAuth 2 authorization code with PKCE; the redirect goes to
  ``http://localhost:1455/auth/callback`` (the port OpenAI registered for the Codex
  client; when it is taken, the user pastes the redirect URL);
* device code (headless): the user enters a code at ``auth.openai.com/codex/device``;
  the device endpoint then hands over an authorization code and its PKCE verifier.

The credentials keep ``accountId`` (the ChatGPT account of the access token), which
the Codex API sends as ``chatgpt-account-id``. Endpoints: ``PI_OAUTH_OPENAI_CODEX_*``
(``AUTH_URL`` replaces ``https://auth.openai.com``; ``CALLBACK_PORT``).
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import urlencode

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import (
    Poll,
    browser_login_code,
    decode_jwt_payload,
    endpoint,
    now_ms,
    pkce_pair,
    poll_device_code,
    request_json,
    start_callback_server,
)

PROVIDER = "openai-codex"
NAME = "OpenAI (ChatGPT Plus/Pro)"
CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
"""The Codex CLI's public OAuth client."""
AUTH_URL = "https://auth.openai.com"
CALLBACK_PORT = 1455
CALLBACK_PATH = "/auth/callback"
SCOPE = "openid profile email offline_access"
JWT_CLAIM = "https://api.openai.com/auth"
DEVICE_CODE_TIMEOUT = 15 * 60.0
ORIGINATOR = "pi"


def _base() -> str:
    return endpoint(PROVIDER, "AUTH_URL", AUTH_URL).rstrip("/")


def _port() -> int:
    return int(endpoint(PROVIDER, "CALLBACK_PORT", str(CALLBACK_PORT)))


def account_id(access_token: str) -> str | None:
    """The ChatGPT account id the access token (a JWT) was issued for."""
    claims = decode_jwt_payload(access_token) or {}
    auth = claims.get(JWT_CLAIM)
    value = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    return value if isinstance(value, str) and value else None


def _credentials(data: Any, what: str) -> OAuthCredentials:
    if (
        not isinstance(data, dict)
        or not data.get("access_token")
        or not data.get("refresh_token")
        or not isinstance(data.get("expires_in"), int | float)
    ):
        raise LoginError(f"{what} answer lacks tokens: {str(data)[:200]}")
    account = account_id(data["access_token"])
    if not account:
        raise LoginError(f"{what}: the access token names no ChatGPT account")
    return OAuthCredentials(
        access=data["access_token"],
        refresh=data["refresh_token"],
        expires=now_ms() + int(data["expires_in"] * 1000),
        accountId=account,
    )


async def _exchange(code: str, verifier: str, redirect_uri: str) -> OAuthCredentials:
    _, body = await request_json(
        "POST",
        f"{_base()}/oauth/token",
        form={
            "grant_type": "authorization_code",
            "client_id": CLIENT_ID,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
        },
        what="OpenAI Codex token exchange",
    )
    return _credentials(body, "OpenAI Codex token exchange")


async def _browser(callbacks: LoginCallbacks) -> OAuthCredentials:
    verifier, challenge = pkce_pair()
    state = secrets.token_hex(16)
    port = _port()
    server = await start_callback_server("OpenAI", CALLBACK_PATH, state, (port,))
    redirect_uri = server.redirect_uri() if server else f"http://localhost:{port}{CALLBACK_PATH}"
    query = urlencode(
        {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "redirect_uri": redirect_uri,
            "scope": SCOPE,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "id_token_add_organizations": "true",
            "codex_cli_simplified_flow": "true",
            "originator": ORIGINATOR,
        }
    )
    code = await browser_login_code(
        callbacks,
        server,
        url=f"{_base()}/oauth/authorize?{query}",
        instructions="A browser window should open. Complete login to finish.",
        state=state,
        redirect_uri=redirect_uri,
    )
    return await _exchange(code, verifier, redirect_uri)


async def _device(callbacks: LoginCallbacks) -> OAuthCredentials:
    status, body = await request_json(
        "POST",
        f"{_base()}/api/accounts/deviceauth/usercode",
        json_body={"client_id": CLIENT_ID},
        what="OpenAI Codex device code request",
        accept_status=(404,),
    )
    if status == 404:
        raise LoginError("device code login is not enabled for this server: use the browser login")
    interval = body.get("interval") if isinstance(body, dict) else None
    try:
        interval = float(interval) if interval is not None else None
    except (TypeError, ValueError):
        interval = None
    if not isinstance(body, dict) or not body.get("device_auth_id") or not body.get("user_code") or interval is None:
        raise LoginError(f"unexpected device code answer: {str(body)[:200]}")
    device_id, user_code = body["device_auth_id"], body["user_code"]
    callbacks.device_code(user_code, f"{_base()}/codex/device", expires_in=DEVICE_CODE_TIMEOUT)

    async def poll() -> Poll:
        status, answer = await request_json(
            "POST",
            f"{_base()}/api/accounts/deviceauth/token",
            json_body={"device_auth_id": device_id, "user_code": user_code},
            what="OpenAI Codex device authorization",
            accept_status=(400, 403, 404, 428),
        )
        if 200 <= status < 300:
            if isinstance(answer, dict) and answer.get("authorization_code") and answer.get("code_verifier"):
                return Poll("complete", (answer["authorization_code"], answer["code_verifier"]))
            return Poll("failed", message=f"unexpected device authorization answer: {str(answer)[:200]}")
        if status in (403, 404):
            return Poll("pending")
        error = answer.get("error") if isinstance(answer, dict) else None
        code = error.get("code") if isinstance(error, dict) else error
        if code in ("deviceauth_authorization_pending", "authorization_pending"):
            return Poll("pending")
        if code == "slow_down":
            return Poll("slow_down")
        return Poll("failed", message=f"device authorization failed (HTTP {status}: {str(answer)[:200]})")

    started = time.monotonic()
    authorization_code, verifier = await poll_device_code(
        callbacks, poll, interval=interval, expires_in=DEVICE_CODE_TIMEOUT - (time.monotonic() - started)
    )
    callbacks.progress("Exchanging authorization code for tokens...")
    return await _exchange(authorization_code, verifier, f"{_base()}/deviceauth/callback")


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    method = await callbacks.select(
        "Select OpenAI Codex login method:",
        [("browser", "Browser login (default)"), ("device_code", "Device code login (headless)")],
    )
    if method == "device_code":
        return await _device(callbacks)
    if method != "browser":
        raise LoginError(f"unknown OpenAI Codex login method {method!r}")
    return await _browser(callbacks)


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    _, body = await request_json(
        "POST",
        f"{_base()}/oauth/token",
        form={"grant_type": "refresh_token", "refresh_token": credentials.refresh, "client_id": CLIENT_ID},
        what="OpenAI Codex token refresh",
    )
    return _credentials(body, "OpenAI Codex token refresh")


def headers(credentials: OAuthCredentials, model: Any) -> dict[str, str]:
    """The account header the Codex backend expects."""
    account = credentials.extra("accountId") or account_id(credentials.access)
    return {"chatgpt-account-id": account} if account else {}
