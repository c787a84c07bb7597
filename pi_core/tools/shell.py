"""Running a shell command in its own process group, and stopping all of it.

The command runs as ``<shell> -c <command>`` in a new session (so a new process group
whose id is the shell's pid), with stdin from ``/dev/null`` and stdout and stderr on one
pipe, so output arrives in the order it was written.

Stopping (abort, timeout, cancellation of the awaiting task) sends SIGTERM to the
whole group, waits briefly for the shell to exit and the pipe to close, then sends
SIGKILL to the group. When the shell exits by itself, reading goes on until the pipe
closes; if background processes still hold it open after a short quiet period, the
group is killed too (nothing is left writing into a closed pipe). Background processes
that fully detached their output (``cmd >log 2>&1 &``) are left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from pi_hookspecs import AbortSignal
from pi_hookspecs.record import dataclass

from .._async import maybe_await

EXIT_QUIET_PERIOD = 0.1
"""Seconds of silence on the pipe, after the shell exited, before background processes
holding the pipe are killed."""
TERM_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL when stopping a command."""

StopReason = Literal["aborted", "timeout", "cancelled"]


class ShellNotFoundError(Exception):
    pass


_watcher_chosen = False


def _pidfd_watcher() -> Any:
    """A child watcher for Python 3.11 that learns of a child's exit through a pidfd
    on the loop that started the child (what 3.12 does by default): no thread per
    child. It serves every loop, each in its own thread, like the threaded watcher it
    replaces. (Built on demand: ``AbstractChildWatcher`` is gone from newer Pythons.)"""

    class PidfdWatcher(asyncio.AbstractChildWatcher):
        def __enter__(self) -> PidfdWatcher:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def is_active(self) -> bool:
            return True

        def attach_loop(self, loop: Any) -> None:
            return None

        def close(self) -> None:
            return None

        def add_child_handler(self, pid: int, callback: Callable[..., Any], *args: Any) -> None:  # type: ignore[override]
            loop = asyncio.get_running_loop()
            pidfd = os.pidfd_open(pid)
            loop.add_reader(pidfd, self._reap, loop, pid, pidfd, callback, args)

        def remove_child_handler(self, pid: int) -> bool:
            return False  # the reader goes when the child exits

        @staticmethod
        def _reap(loop: Any, pid: int, pidfd: int, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
            loop.remove_reader(pidfd)
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                returncode = 255  # already reaped elsewhere, as asyncio reports it
            else:
                returncode = os.waitstatus_to_exitcode(status)
            os.close(pidfd)
            callback(pid, returncode, *args)

    return PidfdWatcher()


def use_pidfd_child_watcher() -> None:
    """On Python 3.11, let asyncio learn of child exits through a pidfd instead of one
    new thread per child (``ThreadedChildWatcher``, the default before 3.12): starting
    that thread costs about 1.5 ms of every command. 3.12 chooses pidfds itself."""
    global _watcher_chosen
    if _watcher_chosen:
        return
    _watcher_chosen = True
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # kernel or sandbox without pidfds
        return
    policy = asyncio.get_event_loop_policy()
    current = getattr(policy, "_watcher", None)
    if current is None or type(current) is asyncio.ThreadedChildWatcher:
        asyncio.set_child_watcher(_pidfd_watcher())


def resolve_shell(shell_path: str | None = None) -> list[str]:
    """The argv prefix to run a command: ``shellPath`` from the settings when given
    (``~`` expanded; it must exist), else ``/bin/bash``, bash on ``PATH``, or ``sh``."""
    if shell_path:
        path = os.path.expanduser(shell_path)
        if not os.path.exists(path):
            raise ShellNotFoundError(f"Custom shell path not found: {shell_path}")
        return [path, "-c"]
    if os.path.exists("/bin/bash"):
        return ["/bin/bash", "-c"]
    import shutil  # only without /bin/bash: shutil imports the compression modules

    found = shutil.which("bash")
    if found:
        return [found, "-c"]
    return [shutil.which("sh") or "/bin/sh", "-c"]


def shell_command(settings: Any, command: str) -> list[str]:
    """The argv that runs ``command`` with the shell of the settings (``shellPath``),
    after ``shellCommandPrefix`` when one is set; raises :class:`ShellNotFoundError`."""
    shell = resolve_shell(settings.get("shellPath") or None)
    prefix = settings.get("shellCommandPrefix")
    return [*shell, f"{prefix}\n{command}" if isinstance(prefix, str) and prefix else command]


@dataclass
class ProcessOutcome:
    """How a shell command ended."""

    exit_code: int | None
    """The shell's exit status; ``None`` when it was stopped (see ``stopped``)."""
    signal: int | None = None
    """The signal that ended the shell when it did not exit by itself."""
    stopped: StopReason | None = None


@dataclass
class PreparedSpawn:
    """A ``bash_spawn`` event as its handlers left it: start ``event.argv`` with
    ``event.env`` and ``event.pass_fds`` unless ``blocked`` (the reason), then await
    :meth:`finish` once the process is over (or never started)."""

    event: Any
    blocked: str | None = None
    report: Callable[[str, str], Any] | None = None

    async def finish(self) -> None:
        callbacks, self.event.on_exit = list(self.event.on_exit), []
        await call_exit_callbacks(callbacks, self.report)


async def call_exit_callbacks(callbacks: Sequence[Any], report: Callable[[str, str], Any] | None = None) -> None:
    """Call the ``on_exit`` callbacks a ``bash_spawn`` handler left on its event, each
    once (awaited when it returns an awaitable). A failing callback is reported as
    ``report(plugin, message)`` (the plugin guessed from its module), or on stderr."""
    for callback in callbacks:
        try:
            await maybe_await(callback())
        except Exception as exc:
            owner = (getattr(callback, "__module__", None) or "?").split(".")[0]
            message = f"an on_exit callback failed: {type(exc).__name__}: {exc}"
            if report is not None:
                report(owner, message)
            else:
                print(f"pi: plugin {owner!r}, hook bash_spawn: {message}", file=sys.stderr)


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_live_groups: set[int] = set()
"""Process groups of the commands running now (their shells' pids)."""


def kill_all_groups(sig: int = signals.SIGKILL) -> None:
    """Send ``sig`` to the process group of every command still running (pi is exiting
    at once: nothing is left behind)."""
    for pgid in list(_live_groups):
        kill_group(pgid, sig)


class _Protocol(asyncio.SubprocessProtocol):
    """Output chunks to ``on_data``; futures for the shell's exit and the pipe's end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_data: Callable[[bytes], Any]) -> None:
        self.loop = loop
        self.on_data = on_data
        self.exited: asyncio.Future[None] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()
        self.last_data = loop.time()
        self.error: BaseException | None = None

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.last_data = self.loop.time()
        if self.error is not None:
            return
        try:
            self.on_data(data if isinstance(data, bytes) else data.encode())
        except Exception as exc:  # reported once the command is over
            self.error = exc

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.eof.done():
            self.eof.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.exited, self.eof):
            if not future.done():
                future.set_result(None)


@contextlib.contextmanager
def _stop_requests(
    loop: asyncio.AbstractEventLoop, signal: AbortSignal | None, timeout: float | None
) -> Iterator[asyncio.Future[StopReason]]:
    """A future that gets the reason to stop a command: ``"aborted"`` when ``signal``
    fires (from any thread), ``"timeout"`` after ``timeout`` seconds. Both are
    withdrawn on leaving."""
    stop: asyncio.Future[StopReason] = loop.create_future()

    def request_stop(why: StopReason) -> None:
        if not stop.done():
            stop.set_result(why)

    def on_abort(_reason: Any) -> None:
        try:
            loop.call_soon_threadsafe(request_stop, "aborted")
        except RuntimeError:  # loop closed
            pass

    remove = signal.add_callback(on_abort) if signal is not None else None
    timer = loop.call_later(timeout, request_stop, "timeout") if timeout is not None else None
    try:
        yield stop
    finally:
        if timer is not None:
            timer.cancel()
        if remove is not None:
            remove()


async def run_in_process_group(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str] | None,
    on_data: Callable[[bytes], Any],
    signal: AbortSignal | None = None,
    timeout: float | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv``; every chunk of output goes to ``on_data`` as it arrives.
    ``pass_fds`` stay open in the child (a ``bash_spawn`` handler's)."""
    loop = asyncio.get_running_loop()
    use_pidfd_child_watcher()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(loop, on_data),
        *argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    pgid = transport.get_pid()
    _live_groups.add(pgid)
    with _stop_requests(loop, signal, timeout) as stop:
        try:
            first: list[asyncio.Future[Any]] = [protocol.exited, stop]
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if not stop.done():
                await _drain_after_exit(loop, protocol, stop)
            if stop.done():
                await _terminate(pgid, protocol)
            elif not protocol.eof.done():
                kill_group(pgid, signals.SIGKILL)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(protocol.eof), TERM_GRACE)
        except asyncio.CancelledError:
            if not stop.done():
                stop.set_result("cancelled")
            kill_group(pgid, signals.SIGKILL)
            raise
        finally:
            _live_groups.discard(pgid)
            transport.close()
    if protocol.error is not None:
        raise protocol.error
    code = transport.get_returncode()
    if stop.done():
        return ProcessOutcome(None, -code if code is not None and code < 0 else None, stop.result())
    if code is not None and code < 0:
        return ProcessOutcome(None, -code)
    return ProcessOutcome(code)


async def run_launched(
    launch: Callable[..., Any],
    event: Any,
    *,
    on_data: Callable[[bytes], Any],
    signal: AbortSignal | None = None,
    timeout: float | None = None,
) -> ProcessOutcome:
    """Run a command through a ``bash_spawn`` handler's ``event.launch`` instead of a
    local process: ``launch(event, on_data)`` returns the exit status (negative: the
    signal that ended it). An abort or the timeout cancels the call."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(maybe_await(launch(event, on_data)))
    with _stop_requests(loop, signal, timeout) as stop:
        try:
            waiters: list[asyncio.Future[Any]] = [task, stop]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
        return ProcessOutcome(None, None, stop.result())
    code = int(task.result())
    return ProcessOutcome(None, -code) if code < 0 else ProcessOutcome(code)


async def run_command(
    argv: list[str],
    *,
    spawn: PreparedSpawn | None,
    cwd: str,
    env: dict[str, str] | None,
    on_data: Callable[[bytes], Any],
    signal: AbortSignal | None = None,
    timeout: float | None = None,
) -> ProcessOutcome:
    """Run a command as its ``bash_spawn`` handlers left it (``spawn``, not blocked):
    through a handler's ``launch`` when one took it over, else ``spawn.event.argv`` /
    ``env`` / ``pass_fds`` (or ``argv`` and ``env`` without handlers) in a process group
    of its own."""
    if spawn is not None and spawn.event.launch is not None:
        return await run_launched(spawn.event.launch, spawn.event, on_data=on_data, signal=signal, timeout=timeout)
    pass_fds: Sequence[int] = ()
    if spawn is not None:
        argv, env, pass_fds = spawn.event.argv, spawn.event.env, spawn.event.pass_fds
    return await run_in_process_group(
        argv, cwd=cwd, env=env, on_data=on_data, signal=signal, timeout=timeout, pass_fds=pass_fds
    )


async def _drain_after_exit(loop: asyncio.AbstractEventLoop, protocol: _Protocol, stop: asyncio.Future[Any]) -> None:
    """The shell exited: keep reading until the pipe closes, or until it stayed quiet
    for :data:`EXIT_QUIET_PERIOD` (descendants holding it open)."""
    while not protocol.eof.done() and not stop.done():
        remaining = EXIT_QUIET_PERIOD - (loop.time() - protocol.last_data)
        if remaining <= 0:
            return
        pending: list[asyncio.Future[Any]] = [protocol.eof, stop]
        await asyncio.wait(pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)


async def _terminate(pgid: int, protocol: _Protocol) -> None:
    """SIGTERM to the group; SIGKILL once the shell exited and the pipe closed, or after
    :data:`TERM_GRACE` seconds, whichever comes first."""
    kill_group(pgid, signals.SIGTERM)
    both = asyncio.gather(asyncio.shield(protocol.exited), asyncio.shield(protocol.eof))
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(both, TERM_GRACE)
    kill_group(pgid, signals.SIGKILL)
