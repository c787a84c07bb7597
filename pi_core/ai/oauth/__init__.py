"""pi's own logins, registered by its built-in provider plugin
(:mod:`pi_core.ai.builtin`) as :class:`~pi_hookspecs.LoginMethod` objects — the nine
account logins of pi 1.6.0:

* ``anthropic`` — Claude Pro/Max (:mod:`.anthropic`): browser + loopback callback with
  PKCE, or the pasted code;
* ``openai-codex`` — ChatGPT Plus/Pro for Codex (:mod:`.openai_codex`): browser +
  callback on port 1455 with PKCE, or a device code;
* ``openai`` — Sign in with ChatGPT for the OpenAI API (:mod:`.openai_chatgpt`): browser
  + callback on port 1455 with PKCE and a dynamically registered client;
* ``github-copilot`` — GitHub Copilot (:mod:`.github_copilot`): GitHub's device flow
  and the Copilot token exchange;
* ``xai`` — SuperGrok / X Premium (:mod:`.xai`): a device code;
* ``openrouter`` — OpenRouter (:mod:`.openrouter`): browser + callback with PKCE, for a
  permanent key;
* ``kimi-coding`` — Kimi Code (:mod:`.kimi_coding`): a device code;
* ``meta`` — Meta Muse (:mod:`.meta`): a device code, then a minted Model API key;
* ``radius`` — the Radius gateway (:mod:`.radius`): browser + callback with PKCE, or a
  device code;

and the API-key login of ``typesafe`` (a provider with no models to chat with, only
classifiers, so it has no plain API-key login of the registry's). Every other provider
that takes a key has the plain API-key login of :mod:`pi_core.ai.credentials`.

Each flow module is imported when its login, refresh or request runs, so a pi run
that uses an API key never loads them.
"""

from __future__ import annotations

import importlib
from typing import Any

from pi_hookspecs import LoginMethod

from .api_key import plain_api_key_login

_FLOWS: dict[str, tuple[str, str, tuple[str, ...], str | None, bool]] = {
    # provider: (module, name, request extras, /login label, subscription)
    "anthropic": ("anthropic", "Anthropic (Claude Pro/Max)", (), None, True),
    "openai-codex": ("openai_codex", "OpenAI (ChatGPT Plus/Pro)", ("headers",), None, True),
    "openai": ("openai_chatgpt", "OpenAI (ChatGPT subscription)", (), "Sign in with ChatGPT", True),
    "github-copilot": ("github_copilot", "GitHub Copilot", ("headers", "base_url", "models"), None, True),
    "xai": ("xai", "xAI (Grok/X subscription)", (), "Sign in with SuperGrok or X Premium", True),
    "openrouter": ("openrouter", "OpenRouter OAuth", (), "Sign in with OpenRouter", False),
    "kimi-coding": ("kimi_coding", "Kimi Code (subscription)", (), "Sign in with Kimi Code", True),
    "meta": ("meta", "Meta (Muse subscription)", (), "Sign in with Meta", True),
    "radius": ("radius", "Radius", (), None, False),
}

API_KEY_LOGINS = {"typesafe": "TypeSafe API key"}
"""API-key logins registered for providers the registry has no models of."""


def _lazy(module: str, function: str) -> Any:
    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)(*args)

    call.__name__ = call.__qualname__ = function
    call.__doc__ = f"{__name__}.{module}.{function} (imported on first use)"
    return call


def login_methods() -> list[LoginMethod]:
    """pi's own login methods: one account login per provider, and the API-key logins
    of :data:`API_KEY_LOGINS`."""
    methods = []
    for provider, (module, name, extras, label, subscription) in _FLOWS.items():
        optional = {extra: _lazy(module, extra) for extra in extras}
        methods.append(
            LoginMethod.model_construct(
                provider=provider,
                name=name,
                login=_lazy(module, "login"),
                refresh=_lazy(module, "refresh"),
                subscription=subscription,
                label=label,
                **optional,
            )
        )
    methods.extend(plain_api_key_login(provider, name) for provider, name in API_KEY_LOGINS.items())
    return methods


__all__ = ["API_KEY_LOGINS", "login_methods"]
