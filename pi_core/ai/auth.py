"""Credentials: environment variables, ``<agent dir>/auth.json`` and config values.

``auth.json`` has the TypeScript pi's format::

    {"anthropic": {"type": "api_key", "key": "sk-ant-..."},
     "work-proxy": {"type": "api_key", "key": "!pass show proxy", "env": {"REGION": "eu"}}}

A ``key`` starting with ``!`` is a command whose output is the key (run on first use,
cached for the process). Values in ``models.json`` (``apiKey``, header values) use
:func:`resolve_config_value`: a literal, ``$NAME`` / ``${NAME}`` from the environment,
or a leading ``!command`` (run at every request).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_core._paths import agent_dir

# BEGIN ENV_API_KEYS (generated from pi 1.6.0 by tools/update_catalog.py)
ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    "ant-ling": ("ANT_LING_API_KEY",),
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "azure": ("AZURE_OPENAI_API_KEY",),
    "baseten": ("BASETEN_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "cloudflare-ai-gateway": ("CLOUDFLARE_API_KEY",),
    "cloudflare-workers-ai": ("CLOUDFLARE_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "github-copilot": ("COPILOT_GITHUB_TOKEN",),
    "google": ("GEMINI_API_KEY",),
    "google-vertex": ("GOOGLE_CLOUD_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "huggingface": ("HF_TOKEN",),
    "kimi-coding": ("KIMI_API_KEY",),
    "meta": ("META_API_KEY",),
    "minimax": ("MINIMAX_API_KEY",),
    "minimax-cn": ("MINIMAX_CN_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
    "moonshotai-cn": ("MOONSHOT_API_KEY",),
    "nvidia": ("NVIDIA_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "opencode": ("OPENCODE_API_KEY",),
    "opencode-go": ("OPENCODE_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "qwen-token-plan": ("QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"),
    "qwen-token-plan-cn": ("QWEN_TOKEN_PLAN_TEAM_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY"),
    "qwen-token-plan-individual": ("QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"),
    "qwen-token-plan-individual-cn": ("QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY"),
    "radius": ("RADIUS_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "typesafe": ("TYPESAFE_API_KEY",),
    "vercel-ai-gateway": ("AI_GATEWAY_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "xiaomi": ("XIAOMI_API_KEY",),
    "xiaomi-token-plan-ams": ("XIAOMI_TOKEN_PLAN_AMS_API_KEY",),
    "xiaomi-token-plan-cn": ("XIAOMI_TOKEN_PLAN_CN_API_KEY",),
    "xiaomi-token-plan-sgp": ("XIAOMI_TOKEN_PLAN_SGP_API_KEY",),
    "zai": ("ZAI_API_KEY",),
    "zai-coding-cn": ("ZAI_CODING_CN_API_KEY",),
}
# END ENV_API_KEYS
"""The environment variables holding each provider's API key, in order of preference."""

BEARER_ENV: dict[str, str] = {"anthropic": "ANTHROPIC_AUTH_TOKEN"}
"""Variables whose token is sent as ``Authorization: Bearer``."""

COMMAND_TIMEOUT = 30.0

_INTERPOLATION = re.compile(r"\$\$|\$!|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def env_api_key(provider: str, env: Mapping[str, str] | None = None) -> str | None:
    """The provider's API key from its standard environment variable(s) (``env``, e.g.
    an ``auth.json`` entry's, before the process's)."""
    for name in ENV_API_KEYS.get(provider, ()):
        value = (env.get(name) if env else None) or os.environ.get(name)
        if value:
            return value
    return None


def env_bearer_token(provider: str) -> str | None:
    name = BEARER_ENV.get(provider)
    return os.environ.get(name) or None if name else None


class CommandError(Exception):
    """A ``!command`` credential failed."""


def run_command(command: str) -> str:
    """Run ``command`` in a shell; its stripped standard output."""
    try:
        done = subprocess.run(
            command, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise CommandError(f"command `{command}` timed out after {COMMAND_TIMEOUT:g}s") from error
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [""]
        raise CommandError(f"command `{command}` exited with status {done.returncode} {detail[0]}".rstrip())
    output = done.stdout.strip()
    if not output:
        raise CommandError(f"command `{command}` printed nothing")
    return output


def interpolate(value: str, env: Mapping[str, str] | None = None) -> str:
    """``$NAME`` and ``${NAME}`` replaced by environment values (missing: empty);
    ``$$`` and ``$!`` give a literal ``$`` and ``!``."""
    source: Mapping[str, str] = os.environ if env is None else {**os.environ, **env}

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$$":
            return "$"
        if token == "$!":
            return "!"
        return source.get(match.group(1) or match.group(2), "")

    return _INTERPOLATION.sub(replace, value)


def resolve_config_value(value: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """A ``models.json`` value: ``!command`` output, or the interpolated string.
    Empty results are ``None``. Raises :class:`CommandError` when a command fails."""
    if value is None:
        return None
    if value.startswith("!"):
        return run_command(value[1:].strip())
    resolved = interpolate(value, env)
    return resolved or None


class AuthStore:
    """``auth.json`` credentials (re-read when the file changes).

    A malformed file is reported once in :attr:`error` and treated as empty.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._stamp: tuple[float, int] | None = None
        self._data: dict[str, Any] = {}
        self._commands: dict[str, str | None] = {}
        self.error: str | None = None

    @property
    def path(self) -> Path:
        return self._path or agent_dir() / "auth.json"

    def _load(self) -> dict[str, Any]:
        path = self.path
        try:
            stat = path.stat()
        except OSError:
            self._stamp, self._data, self.error = None, {}, None
            return self._data
        stamp = (stat.st_mtime, stat.st_size)
        if stamp == self._stamp:
            return self._data
        self._stamp = stamp
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            line = getattr(error, "lineno", None)
            where = f" at line {line}" if line else ""
            self.error = f"{path}: invalid JSON{where}: {getattr(error, 'msg', error)}"
            self._data = {}
            return self._data
        except OSError as error:
            self.error = f"{path}: cannot be read: {error}"
            self._data = {}
            return self._data
        if not isinstance(data, dict):
            self.error = f"{path}: expected an object of providers, got {type(data).__name__}"
            self._data = {}
            return self._data
        self.error = None
        self._data = data
        return data

    def credential(self, provider: str) -> dict[str, Any] | None:
        entry = self._load().get(provider)
        return entry if isinstance(entry, dict) else None

    def has(self, provider: str) -> bool:
        entry = self.credential(provider)
        return entry is not None and entry.get("type") == "api_key" and bool(entry.get("key"))

    def env(self, provider: str) -> dict[str, str]:
        """The credential's ``env`` values (they take priority over the process's)."""
        entry = self.credential(provider) or {}
        values = entry.get("env")
        return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}

    def api_key(self, provider: str) -> str | None:
        """The stored API key; a ``!command`` runs once per process (a failure leaves
        the key unresolved until restart)."""
        entry = self.credential(provider)
        if entry is None or entry.get("type") != "api_key":
            return None
        key = entry.get("key")
        if not isinstance(key, str) or not key:
            return None
        if not key.startswith("!"):
            return key
        if key not in self._commands:
            try:
                self._commands[key] = run_command(key[1:].strip())
            except CommandError:
                self._commands[key] = None
        return self._commands[key]

    def set_api_key(self, provider: str, key: str) -> None:
        """Store ``key`` for ``provider`` (the file is written with mode 0600)."""
        data = dict(self._load())
        data[provider] = {"type": "api_key", "key": key}
        self._write(data)

    def remove(self, provider: str) -> bool:
        data = dict(self._load())
        if data.pop(provider, None) is None:
            return False
        self._write(data)
        return True

    def _write(self, data: dict[str, Any]) -> None:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
        self._stamp = None
