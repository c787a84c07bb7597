"""Meta sign-in with a Muse subscription (provider ``meta``), as pi 1.6.0 does it.

OAuth 2 device authorization (RFC 8628) at ``auth.meta.com`` gives an identity token,
which the Model API does not accept: it is exchanged for a Model API key at the Muse
Code key-mint endpoint (keys live about a day). The identity token is stored as
``refresh`` and the minted key as ``access``, so a refresh mints a new key. The
identity token itself cannot be renewed: a 401/403 from the mint means signing in
again. Endpoints: ``PI_OAUTH_META_AUTH_URL`` (replaces ``https://auth.meta.com``),
``PI_OAUTH_META_MINT_URL`` (replaces ``https://api.meta.ai/muse-code/key``).
"""

from __future__ import annotations

import json
from typing import Any

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import (
    Poll,
    device_wait,
    endpoint,
    now_ms,
    oauth_error,
    poll_device_code,
    positive,
    post,
    trusted_http_url,
)

PROVIDER = "meta"
NAME = "Meta (Muse subscription)"
LABEL = "Sign in with Meta"
CLIENT_ID = "1031625952748946"
"""The Muse Code CLI's client."""
AUTH_URL = "https://auth.meta.com"
MINT_URL = "https://api.meta.ai/muse-code/key"
API_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def _base() -> str:
    return endpoint(PROVIDER, "AUTH_URL", AUTH_URL).rstrip("/")


def _detail(body: dict[str, Any]) -> str:
    return oauth_error(body, "error_description", "detail", "message", "error")


async def mint_api_key(identity_token: str) -> OAuthCredentials:
    """A Model API key for the identity token (the stored credentials)."""
    status, body = await post(
        endpoint(PROVIDER, "MINT_URL", MINT_URL),
        json_body={},
        headers={"Authorization": f"Bearer {identity_token}", "x-api-version": "1.0.0"},
        what="Meta API key mint",
    )
    if status in (401, 403):
        raise LoginError(
            f"Meta session expired (status {status}). Run `pi auth login meta` to sign in again.{_detail(body)}"
        )
    if not 200 <= status < 300:
        raise LoginError(f"Meta API key mint failed with status {status}{_detail(body)}")
    key = body.get("api_key")
    if not isinstance(key, str) or not key:
        action = trusted_http_url(body.get("action_url"))
        raise LoginError("Meta did not issue an API key." + (f" Complete setup at {action}" if action else ""))
    return OAuthCredentials(access=key, refresh=identity_token, expires=now_ms() + API_KEY_LIFETIME_MS)


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    base = _base()
    status, body = await post(
        f"{base}/oidc/device/authorization/", form={"client_id": CLIENT_ID}, what="Meta device authorization"
    )
    if not 200 <= status < 300:
        raise LoginError(f"Meta device authorization failed with status {status}{_detail(body)}")
    device_code, user_code = body.get("device_code"), body.get("user_code")
    verification = trusted_http_url(body.get("verification_uri_complete")) or trusted_http_url(
        body.get("verification_uri")
    )
    if not isinstance(device_code, str) or not device_code or not isinstance(user_code, str) or not user_code:
        verification = None
    if verification is None:
        raise LoginError(f"Invalid Meta device authorization response: {json.dumps(body)[:300]}")
    expires_in = positive(body.get("expires_in"))
    callbacks.device_code(str(user_code), verification, expires_in=expires_in)

    async def poll() -> Poll:
        status, answer = await post(
            f"{base}/oidc/device/token/",
            form={"grant_type": DEVICE_GRANT, "device_code": str(device_code), "client_id": CLIENT_ID},
            what="Meta device token request",
        )
        token = answer.get("access_token")
        if 200 <= status < 300 and isinstance(token, str) and token:
            return Poll("complete", token)
        waiting = device_wait(
            answer,
            denied="Meta login was denied.",
            expired="Meta device authorization expired. Please restart login.",
        )
        return waiting or Poll(
            "failed", message=f"Meta device token request failed with status {status}{_detail(answer)}"
        )

    identity: str = await poll_device_code(
        callbacks, poll, interval=positive(body.get("interval")), expires_in=expires_in, wait_first=True
    )
    callbacks.progress("Enabling Meta Model API access...")
    return await mint_api_key(identity)


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    return await mint_api_key(credentials.refresh)
