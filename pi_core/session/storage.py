"""The session file on disk: reading with repair, locked whole-line appends, atomic rewrites.

Durability policy
-----------------
* Every entry is one complete line written with a single ``os.write`` on an ``O_APPEND``
  descriptor, so a crash (even ``SIGKILL``) leaves at most one incomplete last line. On the
  next open that line is detected: it is dropped and the file is truncated back to the last
  complete line before anything new is appended.
* Data is handed to the operating system at once (it survives a crash of pi). It is forced
  to the disk (``fsync``) when the file is created, after a rewrite, after a compaction
  entry and on close, not after every line: an ``fsync`` per entry would cost milliseconds
  per message on ordinary disks and protects only against power loss or a kernel crash.
* A session file is locked (``flock``, exclusive, non-blocking) by the process that appends
  to it; a second pi process opening it gets :class:`SessionLockedError`. The lock is
  advisory and local: it does not exclude the TypeScript pi (which does not lock) and may
  not work on network file systems. Where ``fcntl`` is unavailable (Windows) no lock is
  taken.
* A new session with an id chosen by the caller (``--session-id``) is claimed first
  (:class:`SessionIdClaim`, a lock on ``.<id>.claim`` in the session folder, held until
  the process ends): two processes starting the same id cannot both create it.
* Before each append one ``stat`` of the path checks that it still names the open file
  (:meth:`SessionFile.moved`): a file deleted or renamed over while pi runs is noticed
  and written anew by :class:`~pi_core.session.persistence.SessionWriter`, never
  appended to unseen.
* Session files are created readable by their owner only (0600), as are the folders pi
  creates for them (0700). The temporary file of an interrupted rewrite
  (``<file>.<pid>.tmp``) is removed the next time the session is opened.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import weakref
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any, ClassVar, Literal

from pydantic_core import from_json

from pi_hookspecs.record import dataclass

from .errors import SessionDiagnostic, SessionError, SessionLockedError

try:  # pragma: no cover - platform dependent
    import fcntl as _fcntl
except ImportError:  # pragma: no cover
    _fcntl = None  # type: ignore[assignment]


def dump_line(obj: Any) -> bytes:
    """One JSONL line as the TypeScript pi writes it (compact, UTF-8, newline-terminated)."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: fall back to \u escapes
        return (json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii")


@dataclass
class ParsedFile:
    """The parsed lines of a session file."""

    records: list[Any] = field(default_factory=list)
    """The JSON object of each line; or, for a line the ``entry`` validator of
    :func:`parse_lines` accepted, what it returned."""
    #: The 1-based line number of each record.
    line_numbers: list[int] = field(default_factory=list)
    diagnostics: list[SessionDiagnostic] = field(default_factory=list)
    #: Byte length of the complete lines; anything after it is a torn tail.
    complete_size: int = 0
    #: The last line parsed but had no newline (a complete entry, only the newline is missing).
    missing_newline: bool = False


_raw_decode = json.JSONDecoder().raw_decode


def _loads(line: str | bytes) -> Any:
    """One line's JSON. pydantic-core's parser reads a line in about half the time of
    the standard library's (a 20,000-entry resume parses every line); what it refuses
    (lone surrogate escapes, say) gets a second chance with ``json``, which also words
    the error."""
    try:
        return from_json(line)
    except ValueError:
        pass
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            return json.loads(line)  # raises, naming the bytes that are not UTF-8
    obj, end = _raw_decode(line)
    if end != len(line) and line[end:].strip():
        raise ValueError(f"extra data at column {end + 1}")
    return obj


_RUN = 512
"""Lines :func:`parse_lines` hands to its ``entry`` validator in one go."""


def parse_lines(data: bytes, path: str, entry: Callable[[str | bytes], Any] | None = None) -> ParsedFile:
    """Parse JSONL bytes. Malformed lines are skipped with a diagnostic naming the line.

    ``entry`` (optional) is tried first on each complete line after the first: what it
    returns is the line's record; when it raises ``ValueError`` the line is parsed as
    JSON. (The session reader validates an entry straight from its line this way.)
    """
    result = ParsedFile()
    # bytes throughout: pydantic-core reads UTF-8 itself, and a 20,000-entry file is not
    # copied into a str first (a line that is not UTF-8 is reported on its own)
    lines = data.split(b"\n")
    tail = lines.pop()  # the bytes after the last newline (b"" for a well-formed file)
    records = result.records
    numbers = result.line_numbers

    def parse(number: int, line: bytes) -> None:
        try:
            obj = from_json(line)  # _loads, without the call for the usual line
        except ValueError:
            try:
                obj = _loads(line)
            except ValueError as exc:
                if line.strip():
                    result.diagnostics.append(SessionDiagnostic(path, number, f"malformed line skipped ({exc})"))
                return
        if type(obj) is dict:
            records.append(obj)
            numbers.append(number)
        else:
            result.diagnostics.append(SessionDiagnostic(path, number, "line is not a JSON object; skipped"))

    if entry is None or not lines:
        for number, line in enumerate(lines, start=1):
            parse(number, line)
    else:
        parse(1, lines[0])
        # a run of lines at a time through the validator in C loops; a run with a line
        # it refuses is gone through line by line (at most one run's work twice)
        for start in range(1, len(lines), _RUN):
            run = lines[start : start + _RUN]
            try:
                records.extend(map(entry, run))
            except ValueError:
                del records[len(numbers) :]  # what the run had added before the refused line
                for number, line in enumerate(run, start=start + 1):
                    try:
                        records.append(entry(line))
                    except ValueError:
                        parse(number, line)
                    else:
                        numbers.append(number)
            else:
                numbers.extend(range(start + 1, start + 1 + len(run)))
    tail_size = len(tail)
    result.complete_size = len(data) - tail_size
    if tail.strip():
        number = len(lines) + 1
        try:
            obj = _loads(tail)
        except ValueError:
            obj = None
        if type(obj) is dict:
            records.append(obj)
            numbers.append(number)
            result.missing_newline = True
        else:
            result.diagnostics.append(
                SessionDiagnostic(
                    path,
                    number,
                    f"incomplete last line ({tail_size} bytes) ignored: the writer stopped mid-line",
                )
            )
    return result


def read_first_line(path: str, limit: int = 1 << 20) -> dict[str, Any] | None:
    """The first non-blank line of a file as a JSON object, or ``None``."""
    try:
        with open(path, "rb") as handle:
            while True:
                line = handle.readline(limit)
                if not line:
                    return None
                if line.strip():
                    break
    except OSError:
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if type(obj) is dict else None


FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dirs(directory: str) -> None:
    """Create ``directory`` and any missing parents readable by the owner only (folders
    that exist keep their mode)."""
    missing: list[str] = []
    current = os.path.abspath(directory)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, DIR_MODE)


def _remove_stale_rewrites(path: str) -> None:
    """Remove ``<path>.<pid>.tmp`` files left by a rewrite that was interrupted (the
    caller holds the file's lock, so nobody is rewriting it now)."""
    directory = os.path.dirname(path) or "."
    prefix = os.path.basename(path) + "."
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if name.startswith(prefix) and name.endswith(".tmp") and name[len(prefix) : -4].isdigit():
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))


class SessionIdClaim:
    """An exclusive claim on a session id in a session folder: a ``flock`` on
    ``<folder>/.<id>.claim``, taken before looking for the session and held until the
    process ends (or :meth:`release`). A second process claiming the same id gets
    :class:`SessionIdTakenError` instead of creating a second file for it."""

    _held: ClassVar[dict[tuple[str, str], SessionIdClaim]] = {}

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def take(cls, directory: str, session_id: str) -> SessionIdClaim:
        key = (os.path.abspath(directory), session_id)
        held = cls._held.get(key)
        if held is not None and held._fd is not None:
            return held
        make_private_dirs(directory)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
        path = os.path.join(directory, f".{safe}.claim")
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            try:
                _lock(fd, path)
            except SessionLockedError:
                os.close(fd)
                raise SessionIdTakenError(session_id) from None
            # a claim released (and its file removed) between open and lock: try again
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        if not cls._held:
            atexit.register(cls.release_all)
        claim = cls._held[key] = cls(path, fd)
        return claim

    @classmethod
    def release_all(cls) -> None:
        """Release every claim of this process (at exit)."""
        for claim in list(cls._held.values()):
            claim.release()
        cls._held.clear()

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None


class SessionIdTakenError(SessionLockedError):
    """Another pi process is starting or using the session with this id."""

    def __init__(self, session_id: str) -> None:
        SessionError.__init__(
            self,
            f"Session {session_id} is in use by another pi process (started with the same --session-id). "
            "Close that pi, or choose another id.",
        )
        self.path = session_id


def _lock(fd: int, path: str) -> None:
    if _fcntl is None:  # pragma: no cover
        return
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionLockedError(path) from None


def _fsync_dir(directory: str) -> None:
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class SessionFile:
    """An open, exclusively locked session file that entries are appended to."""

    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path = path
        self._fd = fd
        self._size = size
        self._finalizer = weakref.finalize(self, os.close, fd)
        self._identity = _identity(os.fstat(fd))

    # ------------------------------------------------------------------ opening

    @classmethod
    def create(cls, path: str, lines: Iterable[bytes]) -> SessionFile:
        """Create a new file (it must not exist), lock it and write ``lines``."""
        directory = os.path.dirname(path) or "."
        make_private_dirs(directory)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, FILE_MODE)
        except FileExistsError:
            raise SessionError(f"Session file {path} was created by another process") from None
        try:
            _lock(fd, path)
            data = b"".join(lines)
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        _fsync_dir(directory)
        return cls(path, fd, len(data))

    @classmethod
    def open_locked(cls, path: str) -> tuple[SessionFile, bytes]:
        """Open an existing file for appending, lock it and return it with its content."""
        while True:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            try:
                _lock(fd, path)
                # The file may have been replaced (atomic rewrite) between open and lock:
                # then this lock guards a file nobody else will look at. Try again.
                if os.fstat(fd).st_ino != os.stat(path).st_ino:
                    os.close(fd)
                    continue
                _remove_stale_rewrites(path)
                # one read of the whole file (a large session is not copied chunk by chunk),
                # then whatever was appended meanwhile
                chunks = [os.pread(fd, os.fstat(fd).st_size, 0)]
                offset = len(chunks[0])
                while chunk := os.pread(fd, 1 << 22, offset):
                    chunks.append(chunk)
                    offset += len(chunk)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                raise
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            return cls(path, fd, len(data)), data

    # ------------------------------------------------------------------ writing

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @property
    def size(self) -> int:
        return self._size

    def moved(self) -> Literal["deleted", "replaced"] | None:
        """Whether the path still names the file this descriptor writes to: ``None`` if
        so, ``"deleted"`` when nothing is there any more, ``"replaced"`` when another
        file was put there (renamed over it). One ``stat`` of the path."""
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            return "deleted"
        except NotADirectoryError:  # a folder of the path was replaced by a file
            return "deleted"
        return None if _identity(current) == self._identity else "replaced"

    def contents(self) -> bytes:
        """Everything written to this file (read through the open descriptor, so also
        once the path no longer names it)."""
        chunks = []
        offset = 0
        while offset < self._size and (chunk := os.pread(self._fd, self._size - offset, offset)):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def append(self, data: bytes) -> None:
        """Append complete lines. A failed write is rolled back (the file is truncated to
        its previous size) so that no partial line stays in front of later appends."""
        try:
            _write_all(self._fd, data)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise
        self._size += len(data)

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (drops a torn last line)."""
        os.ftruncate(self._fd, size)
        self._size = size
        os.fsync(self._fd)

    def replace(self, lines: Iterable[bytes]) -> None:
        """Atomically replace the whole file (write a locked temporary file, fsync, rename)."""
        directory = os.path.dirname(self.path) or "."
        tmp = f"{self.path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, FILE_MODE)
        try:
            _lock(fd, tmp)
            data = b"".join(lines)
            _write_all(fd, data)
            os.fsync(fd)
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(directory)
        self._finalizer()  # close the old descriptor (and its lock on the old inode)
        self._fd = fd
        self._size = len(data)
        self._finalizer = weakref.finalize(self, os.close, fd)
        self._identity = _identity(os.fstat(fd))

    def sync(self) -> None:
        if not self.closed:
            os.fsync(self._fd)

    def close(self) -> None:
        """fsync, release the lock and close."""
        if self.closed:
            return
        with contextlib.suppress(OSError):
            os.fsync(self._fd)
        self._finalizer()
