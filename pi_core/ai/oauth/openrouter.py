"""OpenRouter sign-in (provider ``openrouter``), as pi 1.6.0 does it: OAuth PKCE whose
code is exchanged for a permanent, user-controlled API key, not an expiring token pair.

The browser is sent to ``openrouter.ai/auth`` with a ``callback_url`` on a one-shot
loopback server (any free port, a random path: OpenRouter sends no ``state``); the user
may paste the redirect URL or the code instead. The key is stored as a login that never
expires (``refresh`` is empty and a refresh returns it unchanged) and is sent as the API
key. Endpoints: ``PI_OAUTH_OPENROUTER_AUTHORIZE_URL``, ``…_TOKEN_URL``.
"""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

from pi_hookspecs import LoginCallbacks, LoginError, OAuthCredentials

from ._common import (
    CallbackResult,
    callback_host,
    endpoint,
    oauth_error,
    pkce_pair,
    post,
    start_callback_server,
    until_aborted,
    wait_for_redirect,
)

PROVIDER = "openrouter"
NAME = "OpenRouter OAuth"
LABEL = "Sign in with OpenRouter"
AUTHORIZE_URL = "https://openrouter.ai/auth"
TOKEN_URL = "https://openrouter.ai/api/v1/auth/keys"
LOGIN_TIMEOUT = 5 * 60.0
NEVER_EXPIRES = 9_007_199_254_740_991
"""``Number.MAX_SAFE_INTEGER``, the expiry pi 1.6.0 stores for the key."""


def _url(name: str) -> str:
    return endpoint(PROVIDER, name, str(globals()[name]))


def parse_code(text: str) -> str | None:
    """The code of a pasted redirect URL, query string or bare code."""
    value = text.strip()
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        codes = parse_qs(parts.query).get("code")
        return codes[0] if codes else None
    if "code=" in value:
        codes = parse_qs(value.lstrip("?")).get("code")
        return codes[0] if codes else None
    return value


async def _exchange(code: str, verifier: str) -> OAuthCredentials:
    status, body = await post(
        _url("TOKEN_URL"),
        json_body={"code": code, "code_verifier": verifier, "code_challenge_method": "S256"},
        what="OpenRouter OAuth key exchange",
    )
    if not 200 <= status < 300:
        raise LoginError(f"OpenRouter OAuth key exchange failed (HTTP {status}){oauth_error(body)}")
    key = body.get("key")
    if not isinstance(key, str) or not key:
        raise LoginError('OpenRouter OAuth response carries no "key"')
    return OAuthCredentials(access=key, refresh="", expires=NEVER_EXPIRES)


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    verifier, challenge = pkce_pair()
    path = f"/oauth/callback/{uuid.uuid4()}"
    host = callback_host()
    server = await start_callback_server("OpenRouter", path, None, (0,))
    if server is None:
        raise LoginError(f"cannot listen for the OpenRouter callback on {host}")
    redirect_uri = server.redirect_uri(host)
    query = urlencode({"callback_url": redirect_uri, "code_challenge": challenge, "code_challenge_method": "S256"})
    try:
        callbacks.progress(f"Listening for OpenRouter OAuth callback on {redirect_uri}")
        callbacks.open_url(
            f"{_url('AUTHORIZE_URL')}?{query}",
            "Complete sign-in in your browser. If the browser is on another machine, "
            "paste the final redirect URL here.",
        )
        try:
            answer = await asyncio.wait_for(
                until_aborted(
                    callbacks,
                    wait_for_redirect(
                        callbacks,
                        server,
                        message="Complete sign-in in your browser, or paste the authorization code / redirect URL here",
                        placeholder=redirect_uri,
                    ),
                ),
                LOGIN_TIMEOUT,
            )
        except TimeoutError:
            raise LoginError("OpenRouter sign-in timed out") from None
    finally:
        server.close()
    if isinstance(answer, CallbackResult):
        if answer.error:
            raise LoginError(f"OpenRouter authorization failed: {answer.error}")
        code = answer.code
    else:
        code = parse_code(answer)
    if not code:
        raise LoginError("Missing authorization code")
    callbacks.progress("Exchanging authorization code for an API key...")
    return await _exchange(code, verifier)


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    return credentials  # a permanent key
