"""xAI sign-in with a SuperGrok or X Premium subscription (provider ``xai``), as pi
1.6.0 does it: OAuth 2 device authorization (RFC 8628) at ``auth.x.ai``.

The user opens the verification URL (``https`` only: pi opens it in a browser) and
enters the code; pi polls the token endpoint, waiting one interval before the first
poll. The access token is sent to ``api.x.ai`` as the API key; a refresh that returns
no new refresh token keeps the old one. Endpoints: ``PI_OAUTH_XAI_AUTH_URL`` (replaces
``https://auth.x.ai``).
"""

from __future__ import annotations

from typing import Any

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import Poll, device_wait, endpoint, now_ms, poll_device_code, positive, post, trusted_http_url

PROVIDER = "xai"
NAME = "xAI (Grok/X subscription)"
LABEL = "Sign in with SuperGrok or X Premium"
CLIENT_ID = "b1a00492-073a-47ea-816f-4c329264a828"
SCOPE = "openid profile email offline_access grok-cli:access api:access"
AUTH_URL = "https://auth.x.ai"
REFRESH_SKEW_MS = 5 * 60 * 1000
DEFAULT_TOKEN_LIFETIME = 3600
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def _base() -> str:
    return endpoint(PROVIDER, "AUTH_URL", AUTH_URL).rstrip("/")


def _failure(action: str, status: int, body: dict[str, Any]) -> str:
    detail = ": ".join(str(body[k]) for k in ("error", "error_description") if isinstance(body.get(k), str))
    return f"xAI OAuth {action} failed (HTTP {status})" + (f": {detail}" if detail else "")


def _string(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise LoginError(f"Invalid xAI OAuth response field: {field}")
    return value


def _verification_uri(value: Any) -> str:
    """An ``https`` URL (or one on the configured authorization server, a test's)."""
    url = trusted_http_url(value, https_only=True) or (
        trusted_http_url(value) if isinstance(value, str) and value.startswith(_base()) else None
    )
    if url is None:
        raise LoginError("Untrusted verification URI in xAI OAuth response")
    return url


def _credentials(body: dict[str, Any], previous_refresh: str | None = None) -> OAuthCredentials:
    access = _string(body, "access_token")
    refresh_token = (
        previous_refresh if body.get("refresh_token") is None and previous_refresh else _string(body, "refresh_token")
    )
    lifetime = DEFAULT_TOKEN_LIFETIME if body.get("expires_in") is None else positive(body.get("expires_in"))
    if lifetime is None:
        raise LoginError("Invalid xAI OAuth response field: expires_in")
    return OAuthCredentials(
        access=access, refresh=refresh_token, expires=now_ms() + int(lifetime * 1000) - REFRESH_SKEW_MS
    )


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    status, body = await post(
        f"{_base()}/oauth2/device/code",
        form={"client_id": CLIENT_ID, "scope": SCOPE, "referrer": "pi"},
        what="xAI OAuth device authorization",
    )
    if not 200 <= status < 300:
        raise LoginError(_failure("device authorization", status, body))
    device_code, user_code = _string(body, "device_code"), _string(body, "user_code")
    verification = _verification_uri(_string(body, "verification_uri"))
    if isinstance(body.get("verification_uri_complete"), str) and body["verification_uri_complete"]:
        verification = _verification_uri(body["verification_uri_complete"])
    expires_in = positive(body.get("expires_in"))
    if expires_in is None:
        raise LoginError("Invalid xAI OAuth response field: expires_in")
    interval = positive(body.get("interval"))
    callbacks.device_code(user_code, verification, expires_in=expires_in)

    async def poll() -> Poll:
        status, answer = await post(
            f"{_base()}/oauth2/token",
            form={"grant_type": DEVICE_GRANT, "client_id": CLIENT_ID, "device_code": device_code},
            what="xAI OAuth device token polling",
        )
        if 200 <= status < 300:
            try:
                return Poll("complete", _credentials(answer))
            except LoginError as failure:
                return Poll("failed", message=str(failure))
        waiting = device_wait(
            answer,
            denied="xAI device authorization was denied",
            expired="xAI device code expired",
            denied_codes=("access_denied", "authorization_denied"),
        )
        return waiting or Poll("failed", message=_failure("device token polling", status, answer))

    credentials: OAuthCredentials = await poll_device_code(
        callbacks, poll, interval=interval, expires_in=expires_in, wait_first=True
    )
    return credentials


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    status, body = await post(
        f"{_base()}/oauth2/token",
        form={"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": credentials.refresh},
        what="xAI OAuth token refresh",
    )
    if not 200 <= status < 300:
        raise LoginError(_failure("token refresh", status, body))
    return _credentials(body, credentials.refresh)
