"""The stdio transport: a server subprocess speaking newline-delimited JSON-RPC.

The server starts in a new session, so it leads its own process group. Stopping it
closes its stdin, waits briefly for it to exit, then sends SIGTERM to the whole group
and SIGKILL to whatever is left. The group is signalled even when the server itself
exited on its own: helpers it started (``npx`` and ``uvx`` wrappers start the real
server as a child) are stopped too, so nothing is orphaned.

It follows the ``mcp`` SDK's ``stdio_client`` but exposes the process id, which the
group signals and the tests need, and starts the server before it needs the SDK: the
server process starts up while the SDK is still being imported (:mod:`pi_mcp.sdk`).

Protocol faults are caught here, at once, instead of leaving the request to its
timeout: a line that is not a JSON-RPC message, or a reply whose id matches no request
pi sent, fails every request waiting for an answer with an error naming the fault, and
is reported through ``on_fault`` (pluggable-pi-mcp writes it to ``mcp.log``). A late reply to a
request that already ended (it timed out) is only reported.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

STDIN_GRACE_SECONDS = 1.0
"""How long a server may take to exit after its stdin closed, before SIGTERM."""
TERM_GRACE_SECONDS = 2.0
"""How long the group may take to exit after SIGTERM, before SIGKILL."""
_POLL_SECONDS = 0.01

INHERITED_ENV = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)
"""The variables a server inherits from pi's environment (the SDK's
``DEFAULT_INHERITED_ENV_VARS``, without importing the SDK)."""


def default_environment() -> dict[str, str]:
    """The inherited part of a server's environment (as the SDK's
    ``get_default_environment``: shell functions are left out)."""
    env: dict[str, str] = {}
    for key in INHERITED_ENV:
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):
            env[key] = value
    return env


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


async def stop_process(process: anyio.abc.Process, stdin_grace: float | None = None) -> None:
    """Close stdin, wait (``stdin_grace``, by default :data:`STDIN_GRACE_SECONDS`),
    SIGTERM the group, wait, SIGKILL the group."""
    if stdin_grace is None:
        stdin_grace = STDIN_GRACE_SECONDS
    pgid = process.pid
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if stdin_grace > 0:
        await _wait_exit(process, stdin_grace)
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


async def spawn_process(
    command: str, args: list[str], *, env: dict[str, str], cwd: str, errlog: IO[str]
) -> anyio.abc.Process:
    """Start a server process (leading its own process group); no SDK needed."""
    return await anyio.open_process(
        [command, *args],
        env=default_environment() | env,
        cwd=cwd,
        stderr=errlog,
        start_new_session=sys.platform != "win32",
    )


async def discard_process(process: anyio.abc.Process) -> None:
    """Stop a server that was never sent a message (it may still be starting up, and
    would read the end of its input only once started): SIGTERM at once, then as
    :func:`stop_process`; shielded from cancellation."""
    with anyio.CancelScope(shield=True):
        await stop_process(process, stdin_grace=0)
        with anyio.move_on_after(TERM_GRACE_SECONDS), suppress(Exception):
            await process.aclose()


def _shown(line: str, limit: int = 120) -> str:
    line = line.strip()
    return repr(line if len(line) <= limit else line[:limit] + "…")


@asynccontextmanager
async def stdio_transport(
    process: anyio.abc.Process,
    *,
    before_streams: Callable[[], Awaitable[None]] | None = None,
    on_fault: Callable[[str], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Take over a started server process: await ``before_streams()`` (the SDK import)
    while it starts up, then yield the (read, write) streams ``ClientSession`` takes.
    The process is stopped when the context ends, however it ends. ``on_fault(text)``
    hears of protocol faults (see the module docstring)."""
    if before_streams is not None:
        try:
            await before_streams()
        except BaseException:
            await discard_process(process)
            raise
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    waiting: dict[Any, str] = {}
    """Requests sent and not answered yet: id -> method."""
    sent: set[Any] = set()

    def fault(text: str) -> list[SessionMessage]:
        """Report a fault; the error replies that end every waiting request."""
        if on_fault is not None:
            on_fault(text)
        errors = [
            SessionMessage(
                types.JSONRPCError(
                    jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INTERNAL_ERROR, message=text)
                )
            )
            for request_id in waiting
        ]
        waiting.clear()
        return errors

    def received(line: str) -> list[SessionMessage | Exception]:
        """What one line from the server delivers to the session."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return [*fault(f"the server sent a malformed message {_shown(line)} ({first})")]
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            request_id = message.id
            if request_id in waiting:
                del waiting[request_id]
            elif request_id in sent:
                if on_fault is not None:
                    on_fault(f"late reply to request {request_id!r} (it had ended); ignored")
                return []
            else:
                return [*fault(f"the server replied to request {request_id!r}, which pi never sent: {_shown(line)}")]
        return [SessionMessage(message)]

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
                        for item in received(line):
                            try:
                                await read_writer.send(item)
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                delivering = False  # nobody listens any more: drain so the server can exit
                                break
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            pass

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    if isinstance(message.message, types.JSONRPCRequest):
                        waiting[message.message.id] = message.message.method
                        sent.add(message.message.id)
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
