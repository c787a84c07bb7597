"""Credentials: environment variables, ``<agent dir>/auth.json`` and config values.

``auth.json`` has the TypeScript pi's format (see :class:`AuthStore`)::

    {"anthropic": {"type": "oauth", "access": "sk-ant-oat...", "refresh": "...", "expires": 1767225600000},
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
import threading
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from pi_core._fs import DirectoryLock, atomic_write
from pi_core._paths import agent_dir
from pi_hookspecs import REFRESH_MARGIN_MS, OAuthCredentials

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
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
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
    if "$" not in value:
        return value
    extra: Mapping[str, str] = env or {}

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$$":
            return "$"
        if token == "$!":
            return "!"
        name = match.group(1) or match.group(2)
        found = extra.get(name)
        return found if found is not None else os.environ.get(name, "")

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


class AuthFileError(Exception):
    """``auth.json`` cannot be read or is not valid: the message names the file. A file
    in that state is never written (fix or delete it)."""


class LoginRequiredError(RuntimeError):
    """A provider's stored login cannot be used (missing, expired and not refreshable,
    logged out): one line naming the provider and the command that fixes it."""

    def __init__(self, provider: str, problem: str) -> None:
        self.provider = provider
        self.problem = problem
        super().__init__(f"Provider {provider!r} {problem}: run `pi auth login {provider}`")


def refresh_margin(min_validity_ms: int | None = None) -> int:
    """How close to its expiry a login is refreshed (milliseconds)."""
    return max(REFRESH_MARGIN_MS, min_validity_ms or 0)


class AuthLockError(AuthFileError):
    """The lock of ``auth.json`` was not obtained in time."""


LOCK_STALE_SECONDS = 30.0
"""A lock whose directory was not touched for this long belongs to a dead process
(the value pi 1.6.0's lock library uses)."""

LOCK_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another process's lock."""


class AuthFileLock(DirectoryLock):
    """The cross-process lock of ``auth.json``: the directory ``<auth.json>.lock`` next
    to the (resolved) file, which pi 1.6.0 takes too, so the two programs exclude each
    other (the protocol of :class:`~pi_core._fs.DirectoryLock`; deliberately not an OS
    file lock). The holder touches the directory while it holds the lock, and a
    directory older than :data:`LOCK_STALE_SECONDS` is taken over.

    Use ``with lock:`` in synchronous code and ``async with lock:`` in a coroutine
    (waiting without blocking the event loop). Not re-entrant.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(
            Path(os.path.realpath(path)), stale=LOCK_STALE_SECONDS, timeout=LOCK_TIMEOUT_SECONDS, dir_mode=0o700
        )

    def timeout_error(self) -> Exception:
        return AuthLockError(str(super().timeout_error()))


def _entry(data: dict[str, Any], provider: str) -> dict[str, Any] | None:
    current = data.get(provider)
    return current if isinstance(current, dict) else None


def _parse_auth(path: Path, text: str) -> dict[str, Any]:
    """The providers of an ``auth.json`` text; raises :class:`AuthFileError`."""
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        line = getattr(error, "lineno", None)
        where = f" at line {line}" if line else ""
        raise AuthFileError(f"{path}: invalid JSON{where}: {getattr(error, 'msg', error)}") from None
    if not isinstance(data, dict):
        raise AuthFileError(f"{path}: expected an object of providers, got {type(data).__name__}")
    return data


class AuthStore:
    """``auth.json``: one credential per provider, in pi 1.6.0's format::

        {"anthropic": {"type": "oauth", "access": "...", "refresh": "...", "expires": 1767225600000},
         "openai": {"type": "api_key", "key": "sk-..."}}

    Reads are cached until the file changes. Every write is a read-modify-write under
    the cross-process :class:`AuthFileLock` and replaces the file atomically with mode
    0600, keeping the other providers' entries (and fields pi does not know) as they
    are. A malformed file is reported in :attr:`error` and read as empty; writing to
    it raises :class:`AuthFileError` and leaves it untouched.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._data: dict[str, Any] = {}
        self._commands: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self.error: str | None = None
        self.warning: str | None = None
        """Set when the file is readable or writable by other users (pi writes it 0600)."""

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
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if stamp == self._stamp:
            return self._data
        self._stamp = stamp
        self.warning = (
            f"{path} is readable by other users (mode {stat.st_mode & 0o777:04o}); it holds credentials: "
            f"chmod 600 {path}"
            if os.name == "posix" and stat.st_mode & 0o077
            else None
        )
        try:
            self._data = _parse_auth(path, path.read_text(encoding="utf-8"))
            self.error = None
        except AuthFileError as error:
            self._data, self.error = {}, str(error)
        except UnicodeDecodeError as error:
            self._data, self.error = {}, f"{path}: not UTF-8 text (byte {error.start}); expected a JSON object"
        except OSError as error:
            self._data, self.error = {}, f"{path}: cannot be read: {error.strerror or error}"
        return self._data

    def reload(self) -> None:
        """Forget the cached contents (the next read re-reads the file)."""
        self._stamp = None

    def check(self) -> str | None:
        """Read the file (if it changed); its problem, or ``None`` when it is fine."""
        self._load()
        return self.error

    # ------------------------------------------------------------------ reading

    def credentials(self) -> dict[str, dict[str, Any]]:
        """Every stored credential by provider (a malformed file reads as empty)."""
        return {k: v for k, v in self._load().items() if isinstance(v, dict)}

    def credential(self, provider: str) -> dict[str, Any] | None:
        entry = self._load().get(provider)
        return entry if isinstance(entry, dict) else None

    def has(self, provider: str) -> bool:
        """Whether an API key is stored for ``provider``."""
        entry = self.credential(provider)
        return entry is not None and entry.get("type") == "api_key" and bool(entry.get("key"))

    def has_oauth(self, provider: str) -> bool:
        """Whether an OAuth login is stored for ``provider``."""
        entry = self.credential(provider)
        return entry is not None and entry.get("type") == "oauth" and isinstance(entry.get("access"), str)

    def oauth(self, provider: str) -> OAuthCredentials | None:
        """The stored OAuth login of ``provider`` (``None`` when there is none or the
        entry is not a valid one)."""
        entry = self.credential(provider)
        if entry is None or entry.get("type") != "oauth":
            return None
        try:
            return OAuthCredentials.model_validate(entry)
        except ValueError:
            return None

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

    # ------------------------------------------------------------------ writing

    def lock(self) -> AuthFileLock:
        """The cross-process lock of the file (see :class:`AuthFileLock`)."""
        return AuthFileLock(self.path)

    def _read_for_update(self) -> dict[str, Any]:
        path = self.path
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except UnicodeDecodeError as error:
            raise AuthFileError(f"{path}: not UTF-8 text (byte {error.start}); expected a JSON object") from None
        except OSError as error:
            raise AuthFileError(f"{path}: cannot be read: {error.strerror or error}") from None
        return _parse_auth(path, text)

    def modify(
        self, provider: str, update: Callable[[dict[str, Any] | None], dict[str, Any] | None]
    ) -> dict[str, Any] | None:
        """Replace ``provider``'s entry by ``update(current entry)`` under the lock
        (``None``: leave the file unchanged). Returns the entry stored afterwards.
        Raises :class:`AuthFileError` when the file is malformed or locked too long."""
        with self._lock, self.lock():
            data = self._read_for_update()
            current = _entry(data, provider)
            return self._store(data, provider, current, update(current))

    async def modify_async(
        self, provider: str, update: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any] | None]]
    ) -> dict[str, Any] | None:
        """:meth:`modify` for a coroutine ``update`` (an OAuth refresh): the lock is
        awaited without blocking the event loop and held while ``update`` runs, so a
        refresh racing another process's sees that process's result."""
        async with self.lock():
            data = self._read_for_update()
            current = _entry(data, provider)
            return self._store(data, provider, current, await update(current))

    def _store(
        self, data: dict[str, Any], provider: str, current: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """Write ``new`` as ``provider``'s entry (``None``: leave the file unchanged);
        the entry stored afterwards."""
        if new is None:
            self._remember(data)
            return current
        data[provider] = new
        self._write(data)
        return new

    def set_credential(self, provider: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` (``{"type": "api_key", ...}`` or ``{"type": "oauth", ...}``)."""
        self.modify(provider, lambda _current: entry)

    def set_api_key(self, provider: str, key: str) -> None:
        """Store ``key`` for ``provider`` (the file is written with mode 0600)."""
        self.set_credential(provider, {"type": "api_key", "key": key})

    def set_oauth(self, provider: str, credentials: OAuthCredentials) -> None:
        """Store an OAuth login for ``provider``."""
        self.set_credential(provider, credentials.to_json())

    def remove(self, provider: str) -> bool:
        """Remove ``provider``'s credential; ``False`` when none was stored."""
        with self._lock, self.lock():
            data = self._read_for_update()
            if data.pop(provider, None) is None:
                self._remember(data)
                return False
            self._write(data)
            return True

    def _remember(self, data: dict[str, Any]) -> None:
        self._stamp, self._data, self.error = None, data, None

    def _write(self, data: dict[str, Any]) -> None:
        """Replace the file atomically (mode 0600), as pi 1.6.0 formats it."""
        path = Path(os.path.realpath(self.path))
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False), mode=0o600)
        self._remember(data)
