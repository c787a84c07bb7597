"""Kimi Code sign-in with a subscription (provider ``kimi-coding``), as pi 1.6.0 does
it: OAuth 2 device authorization (RFC 8628) at ``auth.kimi.com`` with JSON answers.

The user opens the complete verification URL (it carries the code); pi polls the token
endpoint, waiting one interval first. The access token authenticates requests to
``api.kimi.com/coding`` as ``Authorization: Bearer`` (the key of its OpenAI-compatible
API). A refresh is retried (1, 2, 4 s)
when the server is busy (429, 5xx) or unreachable; 401/403/``invalid_grant`` ends the
login. The authorization server is ``$KIMI_CODE_OAUTH_HOST`` or ``$KIMI_OAUTH_HOST``
(pi 1.6.0's variables), else ``https://auth.kimi.com``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import Poll, device_wait, now_ms, poll_device_code, positive, post, trusted_http_url

PROVIDER = "kimi-coding"
NAME = "Kimi Code (subscription)"
LABEL = "Sign in with Kimi Code"
CLIENT_ID = "17e5f671-d194-4dfb-9706-5516cb48c098"
DEFAULT_OAUTH_HOST = "https://auth.kimi.com"
DEVICE_CODE_TIMEOUT = 15 * 60.0
DEFAULT_POLL_INTERVAL = 5.0
REFRESH_MAX_RETRIES = 3
REFRESH_BACKOFF = 1.0
"""Seconds before the first retry of a refresh (doubling after each)."""
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def oauth_host() -> str:
    override = os.environ.get("KIMI_CODE_OAUTH_HOST") or os.environ.get("KIMI_OAUTH_HOST")
    return (override or DEFAULT_OAUTH_HOST).rstrip("/")


def _tokens(body: dict[str, Any], operation: str) -> OAuthCredentials:
    access, refresh_token = body.get("access_token"), body.get("refresh_token")
    expires_in = positive(body.get("expires_in"))
    if not isinstance(access, str) or not access or not isinstance(refresh_token, str) or not refresh_token:
        expires_in = None
    if expires_in is None:
        raise LoginError(f"Kimi Code token {operation} response missing fields: {json.dumps(body)[:300]}")
    return OAuthCredentials(access=access, refresh=refresh_token, expires=now_ms() + int(expires_in * 1000))


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    host = oauth_host()
    status, body = await post(
        f"{host}/api/oauth/device_authorization", form={"client_id": CLIENT_ID}, what="Kimi Code device authorization"
    )
    if not 200 <= status < 300:
        raise LoginError(f"Kimi Code device authorization failed with status {status}")
    device_code, user_code = body.get("device_code"), body.get("user_code")
    verification = trusted_http_url(body.get("verification_uri"))
    complete = trusted_http_url(body.get("verification_uri_complete"))
    if not isinstance(device_code, str) or not isinstance(user_code, str) or not verification or not complete:
        raise LoginError(f"Invalid Kimi Code device authorization response: {json.dumps(body)[:300]}")
    interval = positive(body.get("interval")) or DEFAULT_POLL_INTERVAL
    expires_in = positive(body.get("expires_in")) or DEVICE_CODE_TIMEOUT
    callbacks.device_code(user_code, complete, expires_in=expires_in)

    async def poll() -> Poll:
        status, answer = await post(
            f"{host}/api/oauth/token",
            form={"client_id": CLIENT_ID, "device_code": device_code, "grant_type": DEVICE_GRANT},
            what="Kimi Code device token request",
        )
        if status >= 500:
            return Poll("failed", message=f"Kimi Code device token request failed with status {status}")
        if 200 <= status < 300 and isinstance(answer.get("access_token"), str):
            try:
                return Poll("complete", _tokens(answer, "poll"))
            except LoginError as failure:
                return Poll("failed", message=str(failure))
        waiting = device_wait(
            answer,
            denied="Kimi Code login was denied.",
            expired="Kimi Code device authorization expired. Please restart login.",
        )
        if waiting is not None:
            return waiting
        error = answer.get("error")
        description = f": {answer['error_description']}" if isinstance(answer.get("error_description"), str) else ""
        detail = f": {error}{description}" if isinstance(error, str) else ""
        return Poll("failed", message=f"Kimi Code device token request failed (status {status}){detail}")

    credentials: OAuthCredentials = await poll_device_code(
        callbacks, poll, interval=interval, expires_in=expires_in, wait_first=True
    )
    return credentials


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    host = oauth_host()
    last = "Kimi Code token refresh failed"
    for attempt in range(REFRESH_MAX_RETRIES + 1):
        if attempt:
            await asyncio.sleep(REFRESH_BACKOFF * 2 ** (attempt - 1))
        try:
            status, body = await post(
                f"{host}/api/oauth/token",
                form={"client_id": CLIENT_ID, "grant_type": "refresh_token", "refresh_token": credentials.refresh},
                what="Kimi Code token refresh",
            )
        except LoginError as error:
            last = str(error)
            continue
        if 200 <= status < 300:
            return _tokens(body, "refresh")
        if status in (401, 403) or body.get("error") == "invalid_grant":
            description = f": {body['error_description']}" if isinstance(body.get("error_description"), str) else ""
            raise LoginError(f"Kimi Code token refresh unauthorized (status {status}){description}")
        if (status == 429 or status >= 500) and attempt < REFRESH_MAX_RETRIES:
            last = f"Kimi Code token refresh failed with status {status}"
            continue
        raise LoginError(f"Kimi Code token refresh failed with status {status}: {json.dumps(body)[:300]}")
    raise LoginError(last)
