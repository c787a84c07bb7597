"""Errors and diagnostics of the session store."""

from __future__ import annotations

from pi_hookspecs.record import dataclass


class SessionError(Exception):
    """Base class of every session-store error."""


class InvalidSessionError(SessionError, ValueError):
    """A file that is not a pi session (its first line is not a session header)."""


class SessionLockedError(SessionError):
    """Another process holds the session file's lock (it is appending to it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"Session file {path} is in use by another pi process. Close that pi, or open or fork a different session."
        )


class SessionClosedError(SessionError):
    """An append to a session manager after :meth:`SessionManager.close`."""


class SessionReadOnlyError(SessionError):
    """An append to a session opened with ``read_only=True``."""


class EntryNotFoundError(SessionError, LookupError):
    """An entry id that is not in the session."""

    def __init__(self, entry_id: str, detail: str = "not found") -> None:
        self.entry_id = entry_id
        super().__init__(f"Entry {entry_id} {detail}")


class SessionNotFoundError(SessionError, LookupError):
    """No session matches the given id or id prefix."""


class AmbiguousSessionError(SessionError, LookupError):
    """An id prefix that matches more than one session."""

    def __init__(self, prefix: str, paths: list[str]) -> None:
        self.prefix = prefix
        self.paths = paths
        listing = "\n  ".join(paths)
        super().__init__(f"Session id prefix {prefix!r} matches {len(paths)} sessions:\n  {listing}")


@dataclass(frozen=True, slots=True)
class SessionDiagnostic:
    """A problem found while reading a session file (the line was skipped or repaired)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"
