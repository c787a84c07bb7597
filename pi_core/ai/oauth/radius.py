"""Radius gateway sign-in (provider ``radius``), as pi 1.6.0 does it.

The gateway (``$PI_RADIUS_GATEWAY``, else ``https://radius.pi.dev``) serves the OAuth
client APIs: ``/v1/oauth`` names the browser's authorization endpoint, ``/v1/oauth/token``
exchanges codes and refresh tokens, ``/v1/oauth/device`` starts a device code.

* browser: authorization code with PKCE; the redirect goes to
  ``http://127.0.0.1:1456/oauth/callback`` (``PI_OAUTH_RADIUS_CALLBACK_PORT`` moves it:
  tests);
* device code: for signing in from another device.

The access token is sent as the API key; the credentials keep the granted ``scope``.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import Any
from urllib.parse import urlencode

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import (
    Poll,
    endpoint,
    now_ms,
    pkce_pair,
    poll_device_code,
    positive,
    post,
    start_callback_server,
    trusted_http_url,
    until_aborted,
)

PROVIDER = "radius"
NAME = "Radius"
DEFAULT_GATEWAY = "https://radius.pi.dev"
GATEWAY_ENV = "PI_RADIUS_GATEWAY"
CLIENT_ID = "pi-gateway"
SCOPE = "gateway offline_access"
CALLBACK_HOST = "127.0.0.1"
CALLBACK_PORT = 1456
CALLBACK_PATH = "/oauth/callback"
TOKEN_EXPIRY_SKEW_MS = 60_000
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def gateway() -> str:
    value = os.environ.get(GATEWAY_ENV) or DEFAULT_GATEWAY
    with_scheme = value if re.match(r"^https?://", value, re.IGNORECASE) else f"https://{value}"
    return with_scheme.rstrip("/")


class _OAuthAnswer(LoginError):
    def __init__(self, status: int, body: dict[str, Any], message: str) -> None:
        self.oauth_error = body.get("error") if isinstance(body.get("error"), str) else None
        description = body.get("error_description") if isinstance(body.get("error_description"), str) else None
        if self.oauth_error:
            detail = f"{self.oauth_error}: {description}" if description else self.oauth_error
        else:
            detail = description or str(status)
        super().__init__(f"{message}: {detail}")


async def _token(form: dict[str, str]) -> OAuthCredentials:
    status, body = await post(f"{gateway()}/v1/oauth/token", form=form, what="Radius OAuth token request")
    if not 200 <= status < 300:
        raise _OAuthAnswer(status, body, "Radius OAuth token request failed")
    access, refresh_token, expires_in = (
        body.get("access_token"),
        body.get("refresh_token"),
        positive(body.get("expires_in")),
    )
    if not isinstance(access, str) or not access or not isinstance(refresh_token, str) or expires_in is None:
        raise LoginError(f"Radius OAuth token answer lacks tokens: {str(body)[:200]}")
    extra = {"scope": body["scope"]} if isinstance(body.get("scope"), str) else {}
    return OAuthCredentials(
        access=access,
        refresh=refresh_token,
        expires=now_ms() + int(expires_in * 1000) - TOKEN_EXPIRY_SKEW_MS,
        **extra,
    )


async def _browser(callbacks: LoginCallbacks) -> OAuthCredentials:
    base = gateway()
    status, discovery = await post(f"{base}/v1/oauth", method="GET", what="Radius OAuth config")
    if not 200 <= status < 300:
        raise LoginError(f"Could not load Radius OAuth config from {base}: {status}")
    authorize = trusted_http_url(discovery.get("authorizationEndpoint"))
    if authorize is None:
        raise LoginError(f"Invalid Radius OAuth config from {base}")
    verifier, challenge = pkce_pair()
    state = str(uuid.uuid4())
    port = int(endpoint(PROVIDER, "CALLBACK_PORT", str(CALLBACK_PORT)))
    server = await start_callback_server("Radius", CALLBACK_PATH, state, (port,), host=CALLBACK_HOST)
    if server is None:
        raise LoginError(f"cannot listen for the Radius callback on {CALLBACK_HOST}:{port} (is another login running?)")
    redirect_uri = server.redirect_uri(CALLBACK_HOST)
    query = urlencode(
        {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "redirect_uri": redirect_uri,
            "scope": SCOPE,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "handoff": "url",
            "state": state,
        }
    )
    separator = "&" if "?" in authorize else "?"
    try:
        callbacks.progress(f"Listening for OAuth callback on {redirect_uri}")
        callbacks.open_url(f"{authorize}{separator}{query}", "Continue in your browser.")
        result = await until_aborted(callbacks, server.wait())
    finally:
        server.close()
    if result.error:
        raise LoginError(f"Radius authorization failed: {result.error}")
    if not result.code:
        raise LoginError("OAuth callback did not complete.")
    callbacks.progress("Exchanging authorization code for tokens...")
    return await _token(
        {
            "grant_type": "authorization_code",
            "client_id": CLIENT_ID,
            "redirect_uri": redirect_uri,
            "code": result.code,
            "code_verifier": verifier,
        }
    )


async def _device(callbacks: LoginCallbacks) -> OAuthCredentials:
    status, body = await post(
        f"{gateway()}/v1/oauth/device",
        form={"client_id": CLIENT_ID, "scope": SCOPE},
        what="Radius OAuth device authorization",
    )
    if not 200 <= status < 300:
        raise _OAuthAnswer(status, body, "Radius OAuth device authorization failed")
    device_code, user_code = body.get("device_code"), body.get("user_code")
    expires_in = positive(body.get("expires_in"))
    if not device_code or not user_code or not body.get("verification_uri") or not expires_in:
        raise LoginError("Radius OAuth device authorization response is missing required fields")
    verification = trusted_http_url(body.get("verification_uri"))
    if verification is None:
        raise LoginError("Untrusted verification_uri in Radius OAuth device authorization response")
    callbacks.device_code(str(user_code), verification, expires_in=expires_in)

    async def poll() -> Poll:
        try:
            credentials = await _token(
                {"grant_type": DEVICE_GRANT, "client_id": CLIENT_ID, "device_code": str(device_code)}
            )
        except _OAuthAnswer as error:
            if error.oauth_error == "authorization_pending":
                return Poll("pending")
            if error.oauth_error == "slow_down":
                return Poll("slow_down")
            if error.oauth_error == "expired_token":
                return Poll("failed", message="Device authorization expired.")
            if error.oauth_error == "access_denied":
                return Poll("failed", message="Device authorization was denied.")
            raise
        return Poll("complete", credentials)

    credentials: OAuthCredentials = await poll_device_code(
        callbacks, poll, interval=positive(body.get("interval")), expires_in=expires_in
    )
    return credentials


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    method = await callbacks.select(
        f"Sign in to {NAME}:",
        [
            ("browser", "Sign in with browser (recommended)"),
            ("device-code", "Sign in with device code (when signing in from another device)"),
        ],
    )
    if method == "device-code":
        return await _device(callbacks)
    if method == "browser":
        return await _browser(callbacks)
    raise LoginError(f"Unknown {NAME} sign-in method: {method}")


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    return await _token({"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": credentials.refresh})
