"""Files that several programs share: atomic replacement and pi 1.6.0's lock directories.

* :func:`atomic_write` — the one way pi replaces a file's content (a temp file beside
  it, flushed to disk, then ``os.replace``): a reader or a crash sees the old content
  or the new, never half a file.
* :class:`DirectoryLock` — the cross-process lock the TypeScript pi takes on
  ``auth.json`` and ``trust.json`` (its lock library's protocol: the directory
  ``<file>.lock``, created atomically, touched while held, taken over when stale).
  pi keeps that protocol rather than an OS file lock so that the two programs exclude
  each other on the same files; ``mkdir`` is atomic on every platform.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Self

# --------------------------------------------------------------------------- atomic writes


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    mode: int | None = None,
    like_in_place: bool = False,
) -> None:
    """Replace the content of ``path`` with ``data`` (``str`` is written as UTF-8).

    The data goes to a temp file beside the target, is flushed to the disk and then
    replaces the target: readers see the old or the new content, never a mix, and a
    crash leaves the old file. A symbolic link is written through (its target changes,
    the link stays). The new file gets ``mode`` when given; otherwise an existing
    file keeps its mode (and owner, where allowed) and a new one gets ``0o666`` less
    the umask.

    ``like_in_place=True`` keeps what writing the file in place would do (the edit and
    write tools): a file the user may not write raises :class:`PermissionError`, and a
    file with several hard links, or in a directory where no temp file can be made,
    is written in place so that it stays the same file.
    """
    target = os.path.realpath(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    if like_in_place and existing is not None:
        if not os.access(target, os.W_OK):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        if existing.st_nlink > 1:
            _write_in_place(target, payload)
            return
    directory = os.path.dirname(target) or "."
    if not like_in_place:  # pi's own files (settings, auth, trust): the folder is small
        _remove_stale_temps(directory, os.path.basename(target))
    import tempfile  # here: tempfile imports shutil and its compression modules (a run may write nothing)

    try:
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".pi-tmp", dir=directory)
    except PermissionError:
        if not like_in_place:
            raise
        _write_in_place(target, payload)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        elif existing is not None:
            os.chmod(temp, stat.S_IMODE(existing.st_mode))
            with contextlib.suppress(OSError):
                os.chown(temp, existing.st_uid, existing.st_gid)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


STALE_TEMP_SECONDS = 3600.0
"""Age after which a temporary file of an interrupted :func:`atomic_write` is removed."""


def _remove_stale_temps(directory: str, name: str) -> None:
    """Remove ``.<name>.*.pi-tmp`` files older than :data:`STALE_TEMP_SECONDS` (a write
    that was killed half-way; one in progress is younger)."""
    prefix, now = f".{name}.", time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.name.startswith(prefix) and entry.name.endswith(".pi-tmp"):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                        os.unlink(entry.path)


def _write_in_place(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


# --------------------------------------------------------------------------- lock directories


class DirectoryLockTimeout(Exception):
    """Another process held the lock for longer than the wait allowed."""


class DirectoryLock:
    """The lock of ``file``: the directory ``<file>.lock`` beside it, as pi 1.6.0 takes it.

    ``mkdir`` either creates the directory (the lock is ours) or fails because it
    exists. A directory whose modification time is older than ``stale`` seconds
    belongs to a dead process and is taken over; while it holds the lock, a holder
    with ``refresh=True`` touches the directory every ``stale / 3`` seconds so that a
    long hold never looks stale. A waiter retries with a growing, jittered delay for
    up to ``timeout`` seconds, then raises :meth:`timeout_error`.

    A missing parent directory is created with ``dir_mode`` (less the umask).
    Use ``with lock:`` in synchronous code and ``async with lock:`` in a coroutine
    (waiting without blocking the event loop). Not re-entrant.
    """

    def __init__(
        self, file: Path, *, stale: float, timeout: float, refresh: bool = True, dir_mode: int = 0o777
    ) -> None:
        self.path = file
        self.lock_path = file.with_name(file.name + ".lock")
        self.stale = stale
        self.timeout = timeout
        self.refresh = refresh
        self.dir_mode = dir_mode
        self._stop = threading.Event()

    def timeout_error(self) -> Exception:
        """What a waiter raises when ``timeout`` has passed."""
        return DirectoryLockTimeout(
            f"{self.path}: another process holds its lock ({self.lock_path}); remove that directory if no pi is running"
        )

    def _try(self) -> bool:
        try:
            os.mkdir(self.lock_path)
        except FileExistsError:
            try:
                age = time.time() - self.lock_path.stat().st_mtime
            except OSError:
                return False  # released meanwhile: try again
            if age > self.stale:
                with contextlib.suppress(OSError):
                    os.rmdir(self.lock_path)
            return False
        if self.refresh:
            self._start_keeper()
        return True

    def _start_keeper(self) -> None:
        self._stop = stop = threading.Event()
        lock_path, period = self.lock_path, self.stale / 3

        def keep() -> None:
            while not stop.wait(period):
                try:
                    os.utime(lock_path)
                except OSError:
                    return

        threading.Thread(target=keep, name=f"pi-lock-{self.path.name}", daemon=True).start()

    def _delays(self, timeout: float) -> Iterator[float]:
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.timeout_error()
            attempt += 1
            yield min(remaining, min(0.5, 0.005 * 2**attempt) * (1 + random.random()))

    def acquire(self, timeout: float | None = None) -> None:
        """Wait for the lock (``OSError`` when its directory cannot be created at all)."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True, mode=self.dir_mode)
        if self._try():
            return
        for delay in self._delays(self.timeout if timeout is None else timeout):
            time.sleep(delay)
            if self._try():
                return

    async def acquire_async(self, timeout: float | None = None) -> None:
        """:meth:`acquire` without blocking the event loop."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True, mode=self.dir_mode)
        if self._try():
            return
        for delay in self._delays(self.timeout if timeout is None else timeout):
            await asyncio.sleep(delay)
            if self._try():
                return

    def release(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            os.rmdir(self.lock_path)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    async def __aenter__(self) -> Self:
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
