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

import contextlib
import errno
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic_core import from_json

from pi_hookspecs import SESSION_VERSION, SessionEntry
from pi_hookspecs.record import dataclass

from .errors import InvalidSessionError, SessionClosedError, SessionDiagnostic, SessionError, SessionReadOnlyError
from .migration import migrate
from .records import Record, line_validator
from .storage import FILE_MODE, SessionFile, dump_line, make_private_dirs, parse_lines


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


class SessionWriteError(SessionError, OSError):
    """The session file could not be written (a full disk, a read-only file system,
    a folder that cannot be created). Its message names the file and the cause
    (``errno``, ``strerror`` and ``filename`` are the cause's and the file's); the entry
    being written is neither on disk nor in memory."""

    def __init__(self, path: str, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        OSError.__init__(self, cause.errno, reason, path)
        self.path = path
        self.cause = cause
        self.message = f"cannot write session {path}: {reason}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class SessionFileEvent:
    """Something happened to the session file that the user must hear of.

    * ``write_failed`` - an entry could not be written (:class:`SessionWriteError`,
      also raised): it is neither in the file nor in memory;
    * ``deleted`` - the file was deleted while pi ran: the whole session was written
      to its path again (``recovered_path`` is the path);
    * ``replaced`` - another file was put at its path (renamed over it): the whole
      session was written to ``recovered_path`` beside it, and continues there.
    """

    kind: Literal["write_failed", "deleted", "replaced"]
    path: str
    message: str
    """One line for the user (without a ``pi:`` prefix)."""
    recovered_path: str | None = None

    @property
    def fatal(self) -> bool:
        return self.kind == "write_failed"


FileListener = Callable[[SessionFileEvent], None]


def recovered_name(path: str, when: float | None = None) -> str:
    """``<name>.recovered-<UTC timestamp>.jsonl`` beside ``path``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))
    base = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    candidate = f"{base}.recovered-{stamp}.jsonl"
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{base}.recovered-{stamp}-{number}.jsonl"
    return candidate


class SessionWriter:
    """Where appended entries go: nowhere (``persist=False``, an in-memory session), or
    the file at ``path`` — created with the first assistant message, appended to after.

    Before each append one ``stat`` checks that the path still names the open file; a
    file deleted or replaced meanwhile is written anew (see :class:`SessionFileEvent`),
    so later entries never go to a file nobody can see. A write that fails is rolled
    back and raises :class:`SessionWriteError`: the entry is neither in the file nor in
    memory (a later write is tried again: the session stays whole). ``listeners`` hear
    of both (a file event with no listener is printed to stderr)."""

    def __init__(self, *, persist: bool, read_only: bool = False) -> None:
        self.persist = persist
        self.read_only = read_only
        self.path: str | None = None
        self.file: SessionFile | None = None
        self.closed = False
        self.failure: SessionWriteError | None = None
        self.listeners: list[FileListener] = []

    def check_writable(self, session_id: str) -> None:
        if self.closed:
            raise SessionClosedError(f"Session {self.path or session_id} is closed")
        if self.read_only:
            raise SessionReadOnlyError(f"Session {self.path} was opened read-only")

    def probe(self) -> None:
        """Check, before anything is asked of a model, that the file of a session not
        written yet can be: create its folder, and write and remove a one-byte file
        there. Raises :class:`SessionWriteError` (a read-only or full file system, a
        folder that cannot be created)."""
        if not self.persist or self.file is not None or self.path is None:
            return
        directory = os.path.dirname(self.path) or "."
        probe = os.path.join(directory, f".{os.path.basename(self.path)}.{os.getpid()}.probe")
        try:
            make_private_dirs(directory)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            try:
                os.write(fd, b"\n")
            finally:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(probe)
        except OSError as exc:
            raise SessionWriteError(self.path, exc) from exc

    def write(
        self, raw: dict[str, Any], *, start_file: bool, header: dict[str, Any], earlier: Iterable[Record]
    ) -> None:
        """Persist one new entry (before it is committed to memory: a failed write leaves
        both unchanged). Without a file yet, ``start_file`` creates it with ``header``,
        the ``earlier`` entries and this one."""
        if not self.persist:
            return
        line = dump_line(raw)
        try:
            if self.file is not None:
                moved = self.file.moved()
                if moved is None:
                    self.file.append(line)
                else:
                    self._recover(moved, line)
                return
            if start_file:
                self.create(header, earlier, extra=line)
        except SessionWriteError:
            raise  # reported where it was raised
        except OSError as exc:
            raise self._failed(exc) from exc

    def create(self, header: dict[str, Any], records: Iterable[Record], extra: bytes = b"") -> None:
        """Write the file: ``header``, ``records`` and ``extra`` (it must not exist)."""
        assert self.path is not None
        lines = [dump_line(header)]
        lines.extend(dump_line(record.to_json()) for record in records)
        if extra:
            lines.append(extra)
        try:
            self.file = SessionFile.create(self.path, lines)
        except OSError as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: OSError) -> SessionWriteError:
        assert self.path is not None
        error = SessionWriteError(self.path, exc)
        self.failure = error
        self._tell(SessionFileEvent("write_failed", self.path, str(error)))
        return error

    def _recover(self, moved: Literal["deleted", "replaced"], extra: bytes = b"") -> None:
        """The open file is no longer at its path: write everything it holds (and
        ``extra``) to a new file — the path itself when it is free, else
        ``<name>.recovered-<time>.jsonl`` beside it — and go on there."""
        old = self.file
        assert old is not None and self.path is not None
        data = old.contents()
        original = self.path
        target = original if moved == "deleted" else recovered_name(original)
        try:
            new = SessionFile.create(target, [data, extra])
        except SessionError:  # created at that path meanwhile by someone else
            target = recovered_name(original)
            try:
                new = SessionFile.create(target, [data, extra])
            except SessionError as exc:  # again: reported as a failed write
                raise OSError(errno.EEXIST, str(exc)) from exc
        old.close()
        self.file = new
        self.path = target
        count = (data + extra).count(b"\n")
        if moved == "deleted":
            message = (
                f"warning: session file {original} was deleted while pi ran; "
                f"the whole session ({count} lines) was written to it again"
            )
        else:
            message = (
                f"warning: session file {original} was replaced by another file while pi ran; "
                f"the whole session ({count} lines) was written to {target} and continues there"
            )
        self._tell(SessionFileEvent(moved, original, message, recovered_path=target))

    def _tell(self, event: SessionFileEvent) -> None:
        if not self.listeners:
            if not event.fatal:  # a failure raises: its exception is the report
                print(f"pi: {event.message}", file=sys.stderr)
            return
        for listener in list(self.listeners):
            listener(event)

    def sync(self) -> None:
        """Force what was written to the disk."""
        if self.file is not None:
            try:
                self.file.sync()
            except OSError as exc:
                raise self._failed(exc) from exc

    def close(self) -> None:
        """fsync and close the file, releasing its lock; later writes raise. A file
        deleted or replaced since the last append is written anew first."""
        self.closed = True
        if self.file is None:
            return
        try:
            moved = self.file.moved()
            if moved is not None:
                self._recover(moved)
        except OSError as exc:
            self._failed(exc)
        self.file.close()


__all__ = ["SessionFileEvent", "SessionWriteError", "SessionWriter", "StoredSession", "read_session"]
