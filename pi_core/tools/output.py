"""Streaming command output with bounded memory.

:class:`OutputAccumulator` decodes chunks as they arrive (UTF-8, invalid bytes
replaced), keeps only a rolling tail in memory for display, counts lines and bytes, and
as soon as the output outgrows the display limits writes the complete raw output to a
private temp file (mode 0600) whose path the tool result names.

Those files are removed when the process exits; files of a pi that could not clean up
(killed) are removed by the next pi that writes one, once they are older than
:data:`STALE_SECONDS`.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import os
import time
from typing import BinaryIO

from pi_hookspecs.record import dataclass

from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncationResult, byte_len, truncate_tail

STALE_SECONDS = 24 * 3600
"""Age after which another pi's overflow file is considered left behind."""

_created: set[str] = set()
_swept: set[str] = set()


def _remove_created() -> None:
    for path in list(_created):
        with contextlib.suppress(OSError):
            os.unlink(path)
    _created.clear()


def _remember(path: str) -> None:
    if not _created:
        atexit.register(_remove_created)
    _created.add(path)


def remove_stale_files(prefix: str, suffix: str = ".log", *, max_age: float = STALE_SECONDS) -> None:
    """Remove this user's ``<prefix>-*<suffix>`` files in the temp folder older than
    ``max_age`` seconds (left by a pi that was killed). Once per prefix and process."""
    if prefix in _swept:
        return
    _swept.add(prefix)
    import tempfile  # a command's output spills to a file rarely; tempfile imports shutil

    folder = tempfile.gettempdir()
    now = time.time()
    uid = os.getuid() if hasattr(os, "getuid") else None
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if not (name.startswith(f"{prefix}-") and name.endswith(suffix)):
                continue
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                info = os.stat(path, follow_symlinks=False)
                if (uid is None or info.st_uid == uid) and now - info.st_mtime > max_age and path not in _created:
                    os.unlink(path)


@dataclass
class OutputSnapshot:
    """A command's output so far: the text kept, how it was cut, and the file holding all of it."""

    content: str
    truncation: TruncationResult
    full_output_path: str | None


class OutputAccumulator:
    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        temp_prefix: str = "pi-output",
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._window = max(2 * max_bytes, 1)
        self._prefix = temp_prefix
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[bytes] = []
        self._tail = ""
        self._tail_at_line_start = True
        self.raw_bytes = 0
        self.total_bytes = 0
        self._completed_lines = 0
        self._open_line = False
        self._open_bytes = 0
        self._last_complete_bytes = 0
        self._file: BinaryIO | None = None
        self.full_output_path: str | None = None
        self._finished = False

    @property
    def last_line_bytes(self) -> int:
        """Size of the last line of the output (the open one, or the last complete one)."""
        return self._open_bytes if self._open_line else self._last_complete_bytes

    @property
    def total_lines(self) -> int:
        return self._completed_lines + (1 if self._open_line else 0)

    def _over_limits(self) -> bool:
        return self.raw_bytes > self.max_bytes or self.total_bytes > self.max_bytes or self.total_lines > self.max_lines

    def append(self, data: bytes) -> None:
        if self._finished:
            raise RuntimeError("cannot append to a finished output accumulator")
        self.raw_bytes += len(data)
        self._add_text(self._decoder.decode(data))
        if self._file is not None or self._over_limits():
            self._ensure_file()
            assert self._file is not None
            self._file.write(data)
        elif data:
            self._pending.append(data)

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._add_text(self._decoder.decode(b"", final=True))
        if self._over_limits():
            self._ensure_file()

    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = byte_len(text)
        self.total_bytes += size
        self._tail += text
        if len(self._tail) > 2 * self._window:
            self._trim()
        newlines = text.count("\n")
        if newlines == 0:
            self._open_bytes += size
            self._open_line = True
            return
        self._completed_lines += newlines
        last_break = text.rfind("\n")
        previous_break = text.rfind("\n", 0, last_break)
        completed = byte_len(text[previous_break + 1 : last_break])
        self._last_complete_bytes = completed + (self._open_bytes if previous_break == -1 else 0)
        rest = text[last_break + 1 :]
        self._open_bytes = byte_len(rest)
        self._open_line = bool(rest)

    def _trim(self) -> None:
        cut = len(self._tail) - self._window
        self._tail_at_line_start = self._tail[cut - 1] == "\n"
        self._tail = self._tail[cut:]

    def _display_text(self) -> str:
        if self._tail_at_line_start:
            return self._tail
        newline = self._tail.find("\n")
        if newline == -1 or newline == len(self._tail) - 1:
            return self._tail  # all of it is the end of one long line
        return self._tail[newline + 1 :]

    def snapshot(self, *, persist_if_truncated: bool = True) -> OutputSnapshot:
        tail = truncate_tail(self._display_text(), max_lines=self.max_lines, max_bytes=self.max_bytes)
        truncated = self.total_lines > self.max_lines or self.total_bytes > self.max_bytes
        by = tail.truncated_by
        if truncated and by is None:
            by = "bytes" if self.total_bytes > self.max_bytes else "lines"
        if truncated and not tail.truncated and tail.content.endswith("\n"):
            tail.content = tail.content[:-1]
            tail.output_bytes -= 1
        tail.truncated = truncated
        tail.truncated_by = by if truncated else None
        tail.total_lines = self.total_lines
        tail.total_bytes = self.total_bytes
        if persist_if_truncated and truncated:
            self._ensure_file()
        return OutputSnapshot(tail.content, tail, self.full_output_path)

    def _ensure_file(self) -> None:
        if self._file is not None or self.full_output_path is not None:
            return
        remove_stale_files(self._prefix)
        import tempfile

        fd, path = tempfile.mkstemp(prefix=f"{self._prefix}-", suffix=".log")
        _remember(path)
        self._file = os.fdopen(fd, "wb")
        self.full_output_path = path
        for chunk in self._pending:
            self._file.write(chunk)
        self._pending = []

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
