"""How a session's entries reach its file, and how an existing file is read back.

* :func:`read_session` parses a session file, cuts a torn last line off (or adds a
  missing newline) and migrates an old format, on disk when the file is open for
  appending;
* :class:`SessionWriter` writes a new session's file once it has an assistant message
  (header and everything so far at once), then appends every entry as one line.

The low-level file (locking, whole-line appends, atomic rewrites) is
:class:`~pi_core.session.storage.SessionFile`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

from pi_hookspecs import SESSION_VERSION, SessionEntry

from .errors import InvalidSessionError, SessionClosedError, SessionDiagnostic, SessionReadOnlyError
from .migration import migrate
from .records import Record, line_validator
from .storage import SessionFile, dump_line, parse_lines


@dataclass
class StoredSession:
    """A session file as read: its header, its entries and their line numbers. An
    entry is its model when its line validated as one, else its raw JSON object
    (validated when first needed)."""

    header: dict[str, Any]
    entries: list[dict[str, Any] | SessionEntry]
    line_numbers: list[int]
    diagnostics: list[SessionDiagnostic]


def read_session(file_path: str, data: bytes, file: SessionFile | None) -> StoredSession:
    """Parse the (non-empty) content ``data`` of ``file_path``. With ``file`` (open for
    appending) a torn last line is cut off, a missing last newline added and an old
    format rewritten as the current one. Raises :class:`InvalidSessionError` when the
    first line is no session header."""
    # A file in the current format has its lines validated as they are read (nothing
    # to migrate); what a line holds beyond the session format still takes the raw way.
    parsed = parse_lines(data, file_path, line_validator() if _current_format(data) else None)
    records = parsed.records
    header = records[0] if records else None
    if header is None or header.get("type") != "session" or not isinstance(header.get("id"), str):
        raise InvalidSessionError(f"Not a pi session file (its first line is no session header): {file_path}")
    _check_version(file_path, header)
    diagnostics = list(parsed.diagnostics)
    if file is not None:
        if parsed.complete_size < len(data) and not parsed.missing_newline:
            file.truncate(parsed.complete_size)
        elif parsed.missing_newline:
            file.append(b"\n")
            diagnostics.append(
                SessionDiagnostic(file_path, parsed.line_numbers[-1], "the last line had no newline; one was added")
            )
    if migrate(records) and file is not None:
        file.replace(dump_line(record) for record in records)
    return StoredSession(header, records[1:], parsed.line_numbers[1:], diagnostics)


def _current_format(data: bytes) -> bool:
    """Whether the first line is a header of the current format version."""
    end = data.find(b"\n")
    try:
        header = from_json(data[:end] if end >= 0 else data)
    except ValueError:
        return False
    return type(header) is dict and header.get("version") == SESSION_VERSION


def _check_version(file_path: str, header: dict[str, Any]) -> None:
    """A header whose ``version`` is not a whole number, or is newer than this pi
    reads, is refused: opening it would rewrite it (new entry ids) in a format it does
    not have. No ``version`` is format 1 (pi's first files)."""
    if "version" not in header:
        return
    version = header["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidSessionError(
            f"{file_path}:1: the session header's version must be a whole number from 1 to {SESSION_VERSION}, "
            f"found {json.dumps(version)}; the file was not opened or changed"
        )
    if version > SESSION_VERSION:
        raise InvalidSessionError(
            f"{file_path}:1: session format version {version} is newer than this pi reads ({SESSION_VERSION}); "
            "the file was not opened or changed (update pi to open it)"
        )


class SessionWriter:
    """Where appended entries go: nowhere (``persist=False``, an in-memory session), or
    the file at ``path`` — created with the first assistant message, appended to after."""

    def __init__(self, *, persist: bool, read_only: bool = False) -> None:
        self.persist = persist
        self.read_only = read_only
        self.path: str | None = None
        self.file: SessionFile | None = None
        self.closed = False

    def check_writable(self, session_id: str) -> None:
        if self.closed:
            raise SessionClosedError(f"Session {self.path or session_id} is closed")
        if self.read_only:
            raise SessionReadOnlyError(f"Session {self.path} was opened read-only")

    def write(self, raw: dict[str, Any], *, start_file: bool, header: dict[str, Any], earlier: Iterable[Record]) -> None:
        """Persist one new entry (before it is committed to memory: a failed write leaves
        both unchanged). Without a file yet, ``start_file`` creates it with ``header``,
        the ``earlier`` entries and this one."""
        if not self.persist:
            return
        line = dump_line(raw)
        if self.file is not None:
            self.file.append(line)
            return
        if start_file:
            self.create(header, earlier, extra=line)

    def create(self, header: dict[str, Any], records: Iterable[Record], extra: bytes = b"") -> None:
        """Write the file: ``header``, ``records`` and ``extra`` (it must not exist)."""
        assert self.path is not None
        lines = [dump_line(header)]
        lines.extend(dump_line(record.to_json()) for record in records)
        if extra:
            lines.append(extra)
        self.file = SessionFile.create(self.path, lines)

    def sync(self) -> None:
        """Force what was written to the disk."""
        if self.file is not None:
            self.file.sync()

    def close(self) -> None:
        """fsync and close the file, releasing its lock; later writes raise."""
        self.closed = True
        if self.file is not None:
            self.file.close()


__all__ = ["SessionWriter", "StoredSession", "read_session"]
