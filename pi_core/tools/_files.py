"""Writing files so that a crash never leaves half a file behind."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


def write_file_atomically(path: str, data: bytes) -> None:
    """Replace the content of ``path`` with ``data``.

    The data goes to a temp file beside the target, which then replaces it: readers see
    the old or the new content, never a mix. A symbolic link is written through (its
    target changes, the link stays); the mode of an existing file is kept. A file with
    several hard links, or in a directory where no temp file can be made, is written in
    place instead so that it stays the same file.
    """
    target = os.path.realpath(path)
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not os.access(target, os.W_OK):
        raise PermissionError(13, "Permission denied", path)
    if st is not None and st.st_nlink > 1:
        _write_in_place(target, data)
        return
    directory = os.path.dirname(target) or "."
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".pi-tmp", dir=directory)
    except PermissionError:
        _write_in_place(target, data)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if st is not None:
            os.chmod(temp, stat.S_IMODE(st.st_mode))
            with contextlib.suppress(OSError):
                os.chown(temp, st.st_uid, st.st_gid)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _write_in_place(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
