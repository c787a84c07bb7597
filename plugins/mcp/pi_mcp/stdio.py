"""The stdio transport: a server subprocess speaking newline-delimited JSON-RPC.

The server starts in a new session, so it leads its own process group. Stopping it
closes its stdin, waits briefly for it to exit, then sends SIGTERM to the whole group
and SIGKILL to whatever is left. The group is signalled even when the server itself
exited on its own: helpers it started (``npx`` and ``uvx`` wrappers start the real
server as a child) are stopped too, so nothing is orphaned.

It follows the ``mcp`` SDK's ``stdio_client`` but exposes the process id, which the
group signals and the tests need.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import IO, Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.text import TextReceiveStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

STDIN_GRACE_SECONDS = 1.0
"""How long a server may take to exit after its stdin closed, before SIGTERM."""
TERM_GRACE_SECONDS = 2.0
"""How long the group may take to exit after SIGTERM, before SIGKILL."""
_POLL_SECONDS = 0.01


def _live_members_from_proc(pgid: int) -> bool | None:
    """Whether a process of group ``pgid`` is still running (zombies waiting for their
    reaper do not count); ``None`` without ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    live = _live_members_from_proc(pgid)
    return True if live is None else live


async def _wait_exit(process: anyio.abc.Process, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(_POLL_SECONDS)
        return True
    return False


async def _wait_group(process: anyio.abc.Process, pgid: int, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while True:
            _ = process.returncode  # reaps the leader, whose zombie would keep the group alive
            if not group_alive(pgid):
                return True
            await anyio.sleep(_POLL_SECONDS)
    return False


def _signal_group(pgid: int, sig: int) -> bool:
    """Whether anything was left to signal."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def stop_process(process: anyio.abc.Process) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group."""
    pgid = process.pid
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    await _wait_exit(process, STDIN_GRACE_SECONDS)
    if sys.platform == "win32":  # pragma: no cover - no process groups
        if process.returncode is None:
            process.kill()
        return
    if _signal_group(pgid, signal.SIGTERM) and not await _wait_group(process, pgid, TERM_GRACE_SECONDS):
        _signal_group(pgid, signal.SIGKILL)
        await _wait_group(process, pgid, TERM_GRACE_SECONDS)
    if process.returncode is None:
        with suppress(ProcessLookupError):
            process.kill()
        await _wait_exit(process, TERM_GRACE_SECONDS)


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: str,
    errlog: IO[str],
    on_spawn: Callable[[int], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the (read, write) streams ``ClientSession`` takes."""
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | env,
        cwd=cwd,
        stderr=errlog,
        start_new_session=sys.platform != "win32",
    )
    if on_spawn is not None:
        on_spawn(process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def stdout_reader() -> None:
        assert process.stdout is not None
        delivering = True
        buffer = ""
        try:
            async with read_writer:
                async for chunk in TextReceiveStream(process.stdout, encoding="utf-8", errors="replace"):
                    lines = (buffer + chunk).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        if not delivering or not line.strip():
                            continue
                        try:
                            item: SessionMessage | Exception = SessionMessage(
                                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            )
                        except ValueError as exc:
                            item = exc
                        try:
                            await read_writer.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            delivering = False  # nobody listens any more: drain so the server can exit
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            pass

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the server stopped reading: end the session

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                await stop_process(process)
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
                with anyio.move_on_after(TERM_GRACE_SECONDS), suppress(Exception):
                    await process.aclose()
            group.cancel_scope.cancel()
