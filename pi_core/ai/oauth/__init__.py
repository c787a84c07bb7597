"""pi's own subscription logins, registered by its built-in provider plugin
(:mod:`pi_core.ai.builtin`) as :class:`~pi_hookspecs.LoginMethod` objects:

* ``anthropic`` — Claude Pro/Max (:mod:`.anthropic`): browser + loopback callback with
  PKCE, or the pasted code;
* ``openai-codex`` — ChatGPT Plus/Pro (:mod:`.openai_codex`): browser + callback on
  port 1455 with PKCE, or a device code;
* ``github-copilot`` — GitHub Copilot (:mod:`.github_copilot`): GitHub's device flow
  and the Copilot token exchange.

Each flow module is imported when its login, refresh or request runs, so a pi run
that uses an API key never loads them.
"""

from __future__ import annotations

import importlib
from typing import Any

from pi_hookspecs import LoginMethod

_FLOWS = {
    "anthropic": ("anthropic", "Anthropic (Claude Pro/Max)", ()),
    "openai-codex": ("openai_codex", "OpenAI (ChatGPT Plus/Pro)", ("headers",)),
    "github-copilot": ("github_copilot", "GitHub Copilot", ("headers", "base_url", "models")),
}


def _lazy(module: str, function: str) -> Any:
    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)(*args)

    call.__name__ = call.__qualname__ = function
    call.__doc__ = f"{__name__}.{module}.{function} (imported on first use)"
    return call


def login_methods() -> list[LoginMethod]:
    """pi's own login methods, one per provider."""
    methods = []
    for provider, (module, name, extras) in _FLOWS.items():
        optional = {extra: _lazy(module, extra) for extra in extras}
        methods.append(
            LoginMethod.model_construct(
                provider=provider,
                name=name,
                login=_lazy(module, "login"),
                refresh=_lazy(module, "refresh"),
                subscription=True,
                **optional,
            )
        )
    return methods


__all__ = ["login_methods"]
