"""What a plugin needs from pi's surroundings without importing pi itself.

Plugins import only :mod:`pi_hookspecs`, so whatever pi knows about where its files are
and how its settings are read is offered here, once, instead of copied into each plugin:

* :func:`agent_dir` — pi's agent folder: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``;
* :func:`user_settings_file`, :data:`MANAGED_SETTINGS` — the user's ``settings.json``
  and the file an administrator may install (``/etc/pi/settings.json``);
* :func:`read_settings` — a settings file's JSON object, read the way pi reads it (a
  byte-order mark allowed, an empty file is ``{}``, at most :data:`MAX_SETTINGS_BYTES`);
* :func:`settings_section` — one plugin's key of such a file.

**One diagnostic per file.** pi reads the user's ``settings.json`` on every start and
reports what is wrong with the file itself (unreadable, not JSON, too large) once. A
plugin that finds the same fault gets a :class:`SettingsFileError` whose message is the
same line: it decides what the fault means for it (a policy plugin refuses to act, a
telemetry plugin stays off) and says *that*, not the fault again. A fault of the
plugin's own key (wrong type, invalid value) is the plugin's to report.

Reads are cached per file while its size, modification time and inode stay the same,
so several plugins reading the same file in one run parse it once.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "AGENT_DIR_ENV",
    "MANAGED_SETTINGS",
    "MAX_SETTINGS_BYTES",
    "SettingsFileError",
    "agent_dir",
    "project_dir",
    "read_settings",
    "settings_section",
    "user_settings_file",
]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
"""The environment variable that moves the agent folder."""

CONFIG_DIR_NAME = ".pi"

MANAGED_SETTINGS = (
    Path("/Library/Application Support/pi/settings.json") if sys.platform == "darwin" else Path("/etc/pi/settings.json")
)
"""The settings an administrator installs for every user of the machine. Plugins that
enforce something (a sandbox, a policy) let its key win over the user's."""

MAX_SETTINGS_BYTES = 4 * 1024 * 1024
"""A settings file larger than this is refused unread (a settings file is a few KiB; a
huge or sparse one would cost its size in memory before anything could be checked)."""


class SettingsFileError(ValueError):
    """A settings file that cannot be used. ``str(error)`` is one line naming the file
    (and the line and column for invalid JSON); ``key`` is set when the fault is in one
    key of an otherwise good file (see :func:`settings_section`)."""

    def __init__(
        self, path: Path, message: str, line: int | None = None, column: int | None = None, *, key: str | None = None
    ) -> None:
        self.path = path
        self.message = message
        self.line = line
        self.column = column
        self.key = key
        where = f"{path}:{line}:{column}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


def agent_dir() -> Path:
    """pi's agent folder (``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``), read from
    the environment on every call."""
    override = os.environ.get(AGENT_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / CONFIG_DIR_NAME / "agent"


def project_dir(cwd: str | os.PathLike[str]) -> Path:
    """A project's own pi folder: ``<cwd>/.pi``."""
    return Path(cwd) / CONFIG_DIR_NAME


def user_settings_file(agent: Path | None = None) -> Path:
    """The user's ``settings.json`` in ``agent`` (default :func:`agent_dir`)."""
    return (agent if agent is not None else agent_dir()) / "settings.json"


_cache: dict[Path, tuple[tuple[int, int, int, int], dict[str, Any] | SettingsFileError]] = {}
_cache_lock = threading.Lock()


def read_settings(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``: ``{}`` when the file does not exist or is empty;
    raises :class:`SettingsFileError` naming the file when it cannot be read, is larger
    than :data:`MAX_SETTINGS_BYTES`, is not UTF-8 JSON or not an object. The result is
    shared with other readers of the same file: copy it before changing it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsFileError(path, f"cannot read: {exc.strerror or exc}") from None
    signature = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
    with _cache_lock:
        cached = _cache.get(path)
    if cached is not None and cached[0] == signature:
        if isinstance(cached[1], SettingsFileError):
            raise cached[1]
        return cached[1]
    try:
        outcome: dict[str, Any] | SettingsFileError = _parse(path, st.st_size)
    except SettingsFileError as exc:
        outcome = exc
    with _cache_lock:
        _cache[path] = (signature, outcome)
    if isinstance(outcome, SettingsFileError):
        raise outcome
    return outcome


def _size(size: int) -> str:
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GiB"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MiB"
    return f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"


def _too_large(path: Path, size: int) -> SettingsFileError:
    return SettingsFileError(
        path,
        f"cannot read: the settings file is {_size(size)}, larger than the {_size(MAX_SETTINGS_BYTES)} limit; "
        "it was not read",
    )


def _parse(path: Path, size: int) -> dict[str, Any]:
    if size > MAX_SETTINGS_BYTES:
        raise _too_large(path, size)
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsFileError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_SETTINGS_BYTES:  # grew after the stat
        raise _too_large(path, len(raw))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SettingsFileError(path, f"not UTF-8 text (byte {exc.start}); expected a JSON object") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsFileError(path, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    if not isinstance(data, dict):
        raise SettingsFileError(path, f"expected a JSON object at the top level, found {type(data).__name__}")
    return data


def settings_section(key: str, path: Path | None = None) -> dict[str, Any] | None:
    """The object under ``key`` in the settings file ``path`` (default: the user's,
    :func:`user_settings_file`); ``None`` when the file or the key is absent. Raises
    :class:`SettingsFileError` for a fault of the file (see :func:`read_settings`: pi
    reports those of the user's file itself) or when ``key`` holds something other than
    an object (``error.key`` is set: that one is the plugin's to report)."""
    path = path if path is not None else user_settings_file()
    value = read_settings(path).get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SettingsFileError(path, f"{key} must be an object, found {type(value).__name__}", key=key)
    return dict(value)
