"""The API-key login every provider that takes a key has (pi 1.6.0's ``envApiKeyAuth``).

Kept apart from the credentials store so that listing pi's login methods (the built-in
provider plugin does it on every start) imports nothing else.
"""

from __future__ import annotations

from pi_hookspecs import ApiKeyCredentials, LoginCallbacks, LoginError, LoginMethod


def plain_api_key_login(provider: str, name: str) -> LoginMethod:
    """Ask for the key (not echoed) and store it."""

    async def login(callbacks: LoginCallbacks) -> ApiKeyCredentials:
        key = (await callbacks.prompt(f"Enter {name}", secret=True)).strip()
        if not key:
            raise LoginError(f"no {name} entered; nothing was saved")
        return ApiKeyCredentials(key=key)

    return LoginMethod.model_construct(provider=provider, name=name, kind="api_key", login=login)


__all__ = ["plain_api_key_login"]
