"""``pi --mode rpc``: JSONL commands on stdin, responses and session events on stdout.

This module is the transport and the process's life cycle; the command handlers are
:mod:`.rpc_commands`, the JSONL writer and reader and the plugins' dialogs
:mod:`.rpc_ui`.

One command per LF-terminated line (CRLF accepted); stdin is read as bytes, so
U+2028/U+2029 inside JSON strings are never record boundaries. Every command runs in
its own task, so a long one (``bash``, ``compact``) never blocks ``abort`` or the
``extension_ui_response`` a plugin's dialog waits for; responses repeat the command's
``id``. Stdout carries nothing but protocol records: file descriptor 1 is pointed at
stderr (and 0 at ``/dev/null``) for the rest of the process.

Shutdown: stdin EOF lets the work in flight finish, then disposes the runtime;
SIGTERM/SIGHUP/SIGINT abort it first and the process exits with ``128 + signal number``;
a second signal exits at once (bash commands' process groups killed first);
``ctx.shutdown()`` shuts down once no command is being handled and the session is idle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from ..runtime import AgentSession, SessionRuntime
from .bootstrap import CliError, diagnostics_of, open_runtime, start_runtime
from .print_mode import SessionFileWatch, event_record, protocol_stdout
from .process import hard_exit, run_main, signal_status
from .rpc_commands import SENT, Command, Handler, RpcCommands, RpcError
from .rpc_ui import LineReader, RpcOutput, RpcUI

ABORT_GRACE_SECONDS = 10.0
"""After an abort at shutdown, how long work in flight may take before it is cancelled."""


def run_rpc(args: argparse.Namespace) -> int:
    """Serve the RPC protocol on stdin/stdout until shutdown; returns the exit status."""
    if args.messages:
        print("pi: RPC mode ignores prompt arguments; send them as prompt commands", file=sys.stderr)
    with protocol_stdout(take_stdin=True) as stdio:
        assert stdio.in_fd is not None
        return run_main(RpcServer(args, in_fd=stdio.in_fd, out_fd=stdio.out_fd).serve())


class RpcServer:
    """Reads commands from ``in_fd``, hands each to its handler (:class:`RpcCommands`)
    in a task of its own, and writes responses and session events to ``out_fd``."""

    def __init__(self, args: argparse.Namespace, *, in_fd: int, out_fd: int) -> None:
        self.args = args
        self.in_fd = in_fd
        self.output = RpcOutput(out_fd, on_closed=lambda: self.request_stop(abort=True))
        self.ui = RpcUI(self.output)
        self.runtime: SessionRuntime | None = None
        self.commands = RpcCommands(self)
        self.handlers: dict[str, Handler] = self.commands.handlers()
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._abort = asyncio.Event()
        self._stopping = False
        self._signals = 0
        self._signum: int | None = None
        self._status = 0
        self._watch: SessionFileWatch | None = None
        self._command_tasks: set[asyncio.Task[Any]] = set()
        self._runs: set[asyncio.Future[Any]] = set()
        self._compacting = 0

    @property
    def session(self) -> AgentSession:
        assert self.runtime is not None
        return self.runtime.session

    # ================================================================== for the handlers (RpcHost)

    @property
    def is_compacting(self) -> bool:
        return self._compacting > 0

    @property
    def session_write_failed(self) -> bool:
        return self._watch is not None and bool(self._watch.failure)

    def track_run(self, run: Coroutine[Any, Any, str]) -> asyncio.Future[str]:
        task = asyncio.ensure_future(run)
        self._runs.add(task)
        task.add_done_callback(self._run_done)
        return task

    def _run_done(self, task: asyncio.Future[Any]) -> None:
        self._runs.discard(task)
        self._check_plugin_shutdown()

    # ================================================================== life cycle

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            try:
                loop.add_signal_handler(signum, self._on_signal, signum)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
                pass
        LineReader(self.in_fd, loop, self._on_line).start()
        try:
            runtime = await open_runtime(self.args, mode="rpc", ui=self.ui, start=False)
        except CliError as exc:
            print(f"pi: {exc}", file=sys.stderr)
            return 1
        for line in diagnostics_of(runtime):
            print(f"pi: {line}", file=sys.stderr)
        self.runtime = runtime
        runtime.subscribe(self._on_event)
        self._watch = SessionFileWatch(runtime, write=self.output.write, on_fatal=self._on_write_failure)
        runtime.on_rebind.append(self._bind)
        self.ui.prompts.emit = self._emit_ui_event
        self._bind(runtime.session)
        await start_runtime(runtime, self.args)
        self._ready.set()
        self._check_plugin_shutdown()
        await self._stop.wait()
        await self._shutdown()
        return signal_status(self._signum, self._status)

    def request_stop(self, *, abort: bool) -> None:
        """Begin an orderly shutdown (abort the work in flight first when ``abort``)."""
        self._stopping = True
        if abort and not self._abort.is_set():
            self._abort.set()
            self._abort_work()
        self._stop.set()

    def _on_write_failure(self) -> None:
        """The session file cannot be written (reported by the watch): nothing more
        would be saved, so the run is aborted and pi exits with status 1."""
        self._status = 1
        self.request_stop(abort=True)

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        if self._signals > 1:
            hard_exit(signum)
        from ..extensions.guard import cap_deadlines

        cap_deadlines()  # stopping: no plugin handler may hold the exit up for long
        self._signum = signum
        self.ui.close()
        self.request_stop(abort=True)

    def _abort_work(self) -> None:
        self.commands.abort_bash()
        if self.runtime is not None:
            self.session.abort()

    async def _shutdown(self) -> None:
        self.ui.close()
        await self._drain()
        if self.runtime is not None:
            try:
                await self.runtime.dispose("quit")
            except Exception as exc:
                print(f"pi: shutdown: {type(exc).__name__}: {exc}", file=sys.stderr)
        if self._signum is not None:
            from ..tools.shell import kill_all_groups

            kill_all_groups()  # anything the abort did not reach

    async def _drain(self) -> None:
        """Wait for commands and runs in flight; once aborted, give them a grace period."""
        loop = asyncio.get_running_loop()
        aborted = asyncio.ensure_future(self._abort.wait())
        deadline: float | None = None
        try:
            while pending := {t for t in self._command_tasks | self._runs if not t.done()}:
                if self._abort.is_set() and deadline is None:
                    deadline = loop.time() + ABORT_GRACE_SECONDS
                timeout = None if deadline is None else deadline - loop.time()
                if timeout is not None and timeout <= 0:
                    print("pi: work still running after the abort; cancelling it", file=sys.stderr)
                    for task in pending:
                        task.cancel()
                    await asyncio.wait(pending, timeout=1)
                    return
                waiters: set[asyncio.Future[Any]] = {*pending, aborted} if deadline is None else set(pending)
                await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()

    def _emit_ui_event(self, name: str, event: Any) -> None:
        """``ui_prompt_start`` / ``ui_prompt_end`` to the plugins (not awaited)."""
        if self.runtime is None:
            return
        session = self.runtime.session
        if session.runner.has_handlers(name):
            session.spawn(session.runner.emit(name, event))

    def _bind(self, session: AgentSession) -> None:
        """Set up a session (the first one, and each that replaces it)."""
        session.on_shutdown = self._check_plugin_shutdown
        self.commands.apply_choices(session)
        self._compacting = 0

    def _check_plugin_shutdown(self) -> None:
        """``ctx.shutdown()``: stop once no command is being handled and the session is idle."""
        if self.runtime is None or self._stopping or not self._ready.is_set():
            return
        session = self.session
        if session.shutdown_requested and not self._command_tasks and not session.is_busy:
            self.request_stop(abort=False)

    # ================================================================== input

    def _on_line(self, line: bytes | None) -> None:
        if line is None:
            self.ui.close()  # nobody can answer a dialog any more
            self.request_stop(abort=False)
            return
        if not line.strip():
            return
        try:
            command = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self.output.error("parse", f"Failed to parse command: {exc}")
            return
        if not isinstance(command, dict):
            self.output.error("parse", f"Failed to parse command: expected a JSON object, got {type(command).__name__}")
            return
        if command.get("type") == "extension_ui_response":
            self.ui.resolve(command)
            return
        if self._stopping:
            self.output.error(str(command.get("type")), "pi is shutting down", id=command.get("id"))
            return
        task = asyncio.ensure_future(self._handle(command))
        self._command_tasks.add(task)
        task.add_done_callback(self._command_done)

    def _command_done(self, task: asyncio.Task[Any]) -> None:
        self._command_tasks.discard(task)
        self._check_plugin_shutdown()

    async def _handle(self, command: Command) -> None:
        await self._ready.wait()
        kind = command.get("type")
        command_id = command.get("id")
        name = kind if isinstance(kind, str) and kind else "unknown"
        if self._abort.is_set():
            self.output.error(name, "pi is shutting down", id=command_id)
            return
        handler = self.handlers.get(name) if isinstance(kind, str) else None
        if handler is None:
            message = "Command has no type" if not kind else f"Unknown command: {kind}"
            self.output.error(name, message, id=command_id)
            return
        try:
            data = await handler(command)
        except asyncio.CancelledError:
            self.output.error(name, "Cancelled: pi is shutting down", id=command_id)
            raise
        except RpcError as exc:
            self.output.error(name, str(exc), id=command_id)
        except Exception as exc:
            self.output.error(name, str(exc) or type(exc).__name__, id=command_id)
        else:
            if data is not SENT:
                self.output.response(name, id=command_id, data=data)

    # ================================================================== events

    def _on_event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "compaction_start":
            self._compacting += 1
        elif kind == "compaction_end":
            self._compacting = max(0, self._compacting - 1)
        try:
            record = event_record(event)
        except Exception as exc:
            print(f"pi: cannot serialise a {kind} event: {exc}", file=sys.stderr)
            return
        if record is not None:
            self.output.write(record)


__all__ = ["RpcError", "RpcServer", "run_rpc"]
