"""Where the router is and which key it takes: ``LLAMA_BASE_URL`` / ``LLAMA_API_KEY`` and
the ``llama.cpp`` login that ``/login llama.cpp`` stores.

As in pi 1.6.0, the provider counts as configured when a server URL is known: a stored
login's URL first, then ``LLAMA_BASE_URL``. The key is the stored one, then
``LLAMA_API_KEY``, then ``local`` (llama.cpp started without ``--api-key`` ignores it).

The plugin reads the stored login through pi's contract, never ``auth.json`` itself:
its ``env`` comes with every catalogue refresh (``CatalogueRefresh.env``) and with the
credential hooks, and ``/llama`` asks ``ctx.model_registry.get_provider_auth``. The login
stores pi 1.6.0's entry, an API-key login:
``{"type": "api_key", "key": KEY, "env": {"LLAMA_BASE_URL": URL}}`` (no ``key`` when
none was given). Only the entry earlier versions of this plugin stored,
``{"type": "oauth", "access": KEY, "refresh": "", "expires": …, "serverUrl": URL}``,
has its URL where the contract does not look: :func:`legacy_entry` reads that one file
entry when no other URL is known (``/login llama.cpp`` again replaces it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pi_hookspecs import ApiKeyCredentials, toolkit
from pi_hookspecs.record import dataclass

from .client import LlamaClient, normalize_server_url

PROVIDER = "llama.cpp"
"""The provider id (as in pi 1.6.0)."""

DEFAULT_SERVER_URL = "http://127.0.0.1:9931"
"""The URL ``/login llama.cpp`` proposes (pi 1.6.0's default)."""


@dataclass(frozen=True)
class Connection:
    """A configured router: its URL (without ``/v1``), its key and where they came from."""

    server_url: str
    api_key: str | None
    source: str

    def client(self, *, timeout: float | None = None) -> LlamaClient:
        if timeout is None:
            return LlamaClient(self.server_url, self.api_key)
        return LlamaClient(self.server_url, self.api_key, timeout=timeout)


def legacy_entry() -> dict[str, Any] | None:
    """The ``llama.cpp`` entry of ``<agent>/auth.json`` when it is the OAuth-shaped entry
    earlier versions of this plugin stored (read only; ``None`` otherwise)."""
    path = toolkit.agent_dir() / "auth.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    entry = data.get(PROVIDER) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) and entry.get("type") == "oauth" and entry.get("serverUrl") else None


def _literal(value: Any) -> str | None:
    """A stored key as sent: ``!command`` and ``$VAR`` values are pi's to resolve at request time."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.startswith("!"):
        return None
    if text.startswith("$"):
        return os.environ.get(text.lstrip("${").rstrip("}")) or None
    return text


def _valid_url(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return normalize_server_url(value)
    except ValueError:
        return None


def stored_url(entry: Mapping[str, Any] | None) -> str | None:
    if not entry:
        return None
    env = entry.get("env")
    from_env = env.get("LLAMA_BASE_URL") if isinstance(env, dict) else None
    return _valid_url(entry.get("serverUrl")) or _valid_url(from_env)


def env_api_key(env: Mapping[str, str] | None = None) -> str | None:
    value = (env or {}).get("LLAMA_API_KEY") or os.environ.get("LLAMA_API_KEY")
    return value.strip() or None if value else None


def server_url(env: Mapping[str, str] | None = None) -> str | None:
    """The configured router's URL (without ``/v1``): the one a login stored (``env``,
    the login's stored values as pi hands them over), else ``LLAMA_BASE_URL``, else an
    earlier version's entry; ``None``: not configured."""
    url = _valid_url((env or {}).get("LLAMA_BASE_URL"))
    if url is not None:
        return url
    url = _valid_url(os.environ.get("LLAMA_BASE_URL"))
    return url if url is not None else stored_url(legacy_entry())


def connection(env: Mapping[str, str] | None = None) -> Connection | None:
    """The configured router with the key of ``env`` / ``LLAMA_API_KEY`` (a stored key
    comes through pi: ``refresh.api_key``, ``get_provider_auth``); ``None`` when no URL
    is known."""
    url = server_url(env)
    if url is None:
        return None
    legacy = legacy_entry() if not (env or {}).get("LLAMA_BASE_URL") else None
    key = _literal(legacy.get("access")) if legacy is not None else None
    return Connection(url, key or env_api_key(env), "stored login" if env else "LLAMA_BASE_URL")


def login_credentials(server_url: str, api_key: str | None) -> ApiKeyCredentials:
    """What ``/login llama.cpp`` stores (pi 1.6.0's entry)."""
    return ApiKeyCredentials(key=api_key or None, env={"LLAMA_BASE_URL": server_url})


__all__ = [
    "DEFAULT_SERVER_URL",
    "PROVIDER",
    "Connection",
    "connection",
    "env_api_key",
    "legacy_entry",
    "login_credentials",
    "server_url",
    "stored_url",
]
