"""The ids of sessions ``pi acp`` handed out that pi has not written yet.

pi writes a new session's file once the model's first answer arrives (as pi 1.6.0
does), so a session created by ``session/new`` and never prompted has no file. A
client may still ``session/load`` it, in the same process (the session is open there)
or in a later one: for that, ``session/new`` leaves a marker,
``<agent dir>/acp-sessions/<id>.json`` (``{"id", "cwd", "created"}``, mode 0600 in a
folder of mode 0700), and a later ``session/load`` of that id opens an empty session
with it. The marker goes once pi has written the session's file; markers of sessions
never prompted are removed after :data:`KEEP_DAYS` days. (The ACP adapter of pi 1.6.0
keeps a map of the sessions it created, in a folder of its own, for the same reason.)

While a process has such a session open it holds an exclusive lock (``flock``) on the
marker, so a second process cannot open the same unwritten session and write a second
file with its id, as pi's own lock on a written session file keeps a second writer out.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from pi_hookspecs import toolkit

try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: no lock, as pi's own session files
    _fcntl = None  # type: ignore[assignment]

FOLDER = "acp-sessions"
KEEP_DAYS = 30
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class SessionInUseError(Exception):
    """Another process has this unwritten session open."""


def folder() -> Path:
    """``<agent dir>/acp-sessions`` (the agent folder as pi finds it: :mod:`pi_hookspecs.toolkit`)."""
    return toolkit.agent_dir() / FOLDER


def _lock(fd: int) -> None:
    """An exclusive lock on ``fd`` at once; raises ``OSError`` when another holds it."""
    if _fcntl is not None:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)


def _marker(session_id: str) -> Path | None:
    return folder() / f"{session_id}.json" if _SAFE_ID.match(session_id) and ".." not in session_id else None


class Remembered:
    """This process's claim on a remembered session id: the open, locked marker."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd: int | None = fd

    @classmethod
    def create(cls, session_id: str, cwd: str) -> Remembered | None:
        """Remember a new session (best effort: a failure is reported on stderr and
        only means a later process cannot load the session before its first prompt)."""
        path = _marker(session_id)
        if path is None:
            return None
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _prune(path.parent)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            print(f"pi acp: cannot remember session {session_id}: {exc}", file=sys.stderr)
            return None
        try:
            _lock(fd)
            created = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            os.write(fd, json.dumps({"id": session_id, "cwd": cwd, "created": created}).encode() + b"\n")
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            print(f"pi acp: cannot remember session {session_id}: {exc}", file=sys.stderr)
            return None
        return cls(path, fd)

    @classmethod
    def claim(cls, session_id: str) -> Remembered | None:
        """The claim on a remembered id, or ``None`` when it is not remembered. Raises
        :class:`SessionInUseError` when another process holds it."""
        path = _marker(session_id)
        if path is None:
            return None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            raise SessionInUseError(f"session {session_id} is open in another pi acp process") from None
        try:  # the marker may have been removed (the session written) before the lock was had
            current = os.stat(path)
        except OSError:
            current = None
        if current is None or current.st_ino != os.fstat(fd).st_ino:
            os.close(fd)
            return None
        return cls(path, fd)

    def forget(self) -> None:
        """The session's file exists now: the marker is no longer needed."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        self.release()

    def release(self) -> None:
        """Unlock the marker (the session is closed in this process); it stays."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _prune(directory: Path) -> None:
    """Remove markers older than :data:`KEEP_DAYS` that no process holds."""
    limit = time.time() - KEEP_DAYS * 86400
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue
        try:
            if entry.stat().st_mtime >= limit:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            _lock(fd)
            os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)
