"""Where session files live and how they are named (the TypeScript pi's layout).

    <agent dir>/sessions/--<encoded cwd>--/<timestamp>_<session id>.jsonl

``<encoded cwd>`` is the absolute working directory without its leading separator, with
``/``, ``\\`` and ``:`` replaced by ``-``; ``<timestamp>`` is the header's ISO time with
``:`` and ``.`` replaced by ``-``. ``$PI_CODING_AGENT_SESSION_DIR`` (or an explicit
``session_dir``) puts every session directly into one directory instead.
"""

from __future__ import annotations

import os
import re
import secrets
import time
import uuid
from collections.abc import Container
from datetime import UTC, datetime
from pathlib import Path

from pi_core._paths import agent_dir

SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"
SESSION_SUFFIX = ".jsonl"

_SESSION_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def resolve_cwd(cwd: str | os.PathLike[str]) -> str:
    """The absolute form of ``cwd`` (symlinks are not resolved, like the TypeScript pi)."""
    return os.path.abspath(os.path.expanduser(os.fspath(cwd)))


def sessions_root() -> Path:
    """``<agent dir>/sessions``, absolute and without ``..`` (as pi 1.6.0 resolves it: a
    relative ``$PI_CODING_AGENT_DIR`` is taken from the working directory)."""
    return Path(os.path.abspath(agent_dir() / "sessions"))


def encode_cwd(cwd: str | os.PathLike[str]) -> str:
    """``/home/u/proj`` -> ``--home-u-proj--``; ``C:\\src\\x`` -> ``--C--src-x--``."""
    resolved = resolve_cwd(cwd)
    if resolved[:1] in ("/", "\\"):
        resolved = resolved[1:]
    return "--" + re.sub(r"[/\\:]", "-", resolved) + "--"


def default_session_dir(cwd: str | os.PathLike[str]) -> Path:
    """The per-project directory under ``<agent dir>/sessions`` (not created)."""
    return sessions_root() / encode_cwd(cwd)


def custom_session_dir(session_dir: str | os.PathLike[str] | None) -> Path | None:
    """An explicit ``session_dir`` or ``$PI_CODING_AGENT_SESSION_DIR``, else ``None``."""
    chosen = os.fspath(session_dir) if session_dir is not None else os.environ.get(SESSION_DIR_ENV, "").strip()
    if not chosen:
        return None
    return Path(os.path.abspath(os.path.expanduser(chosen)))


def resolve_session_dir(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None) -> Path:
    """Explicit ``session_dir`` > ``$PI_CODING_AGENT_SESSION_DIR`` > the per-project default."""
    return custom_session_dir(session_dir) or default_session_dir(cwd)


def filters_by_cwd(cwd: str | os.PathLike[str], directory: Path) -> bool:
    """A shared (custom) directory holds sessions of many projects: listing it for one
    project must filter by the header's ``cwd``; the per-project default needs no filter."""
    return directory != default_session_dir(cwd)


def iso_now() -> str:
    """``2024-12-03T14:00:00.000Z``: the timestamp format of headers and entries."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_to_ms(value: object) -> int:
    """Unix milliseconds of an ISO timestamp (``0`` when it does not parse)."""
    if not isinstance(value, str) or not value:
        return 0
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def session_file_name(timestamp: str, session_id: str) -> str:
    return f"{re.sub(r'[:.]', '-', timestamp)}_{session_id}{SESSION_SUFFIX}"


def new_session_id() -> str:
    """A UUIDv7 (time-ordered), the TypeScript pi's default session id."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def check_session_id(session_id: str) -> None:
    """Raise ``ValueError`` for ids that cannot be part of a file name."""
    if not _SESSION_ID.match(session_id):
        raise ValueError(
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_' and '.', "
            f"and start and end with an alphanumeric character: {session_id!r}"
        )


def new_entry_id(taken: Container[str]) -> str:
    """8 hex characters, unique within ``taken`` (a full UUID after 100 collisions)."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())
