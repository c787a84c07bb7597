"""User shell commands: ``!cmd`` (kept in the context) and ``!!cmd`` (left out of it).

The ``user_bash`` hook may run the command elsewhere (``operations``) or answer it
(``result``); a failing handler blocks the command (no fallback to local execution).
A command run locally passes the ``bash_spawn`` hook first, like the ``bash`` tool's.
The result becomes a ``bashExecution`` message, stored after the current run when one
is active so it never lands between a tool call and its result.
"""

from __future__ import annotations

import codecs
import inspect
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pi_hookspecs
from pi_hookspecs import AgentMessage, BashExecutionMessage

from ..extensions import Blocked, EventRunner
from ..tools.output import OutputAccumulator
from ..tools.shell import PreparedSpawn, ShellNotFoundError, run_command, shell_command

if TYPE_CHECKING:  # occasional (pi_hookspecs.events.OCCASIONAL): made only for a bash_spawn handler
    from pi_hookspecs import BashSpawnEvent


async def prepare_bash_spawn(
    runner: EventRunner, make_event: Callable[[], BashSpawnEvent], ctx: Any = None
) -> PreparedSpawn | None:
    """Ask the ``bash_spawn`` handlers how a command starts (``None`` when there are
    none: start it as it is). A failing handler blocks it (fail closed)."""
    if not runner.has_handlers("bash_spawn"):
        return None
    event = make_event()
    outcome = await runner.emit("bash_spawn", event, ctx)
    return PreparedSpawn(
        event,
        outcome.reason if isinstance(outcome, Blocked) else None,
        lambda plugin, message: runner.report(plugin, "bash_spawn", message),
    )


class LocalBashOperations:
    """Runs a command with the configured shell in the session's working directory
    (through the ``bash_spawn`` handlers of ``runner``, when given)."""

    def __init__(self, settings: dict[str, Any], runner: EventRunner | None = None) -> None:
        self.settings = settings
        self.runner = runner

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[str], Any] | None = None,
        signal: Any = None,
        timeout: float | None = None,
    ) -> pi_hookspecs.BashResult:
        try:
            argv = shell_command(self.settings, command)
        except ShellNotFoundError as exc:
            return pi_hookspecs.BashResult(output=str(exc), exit_code=127)
        spawn = None
        if self.runner is not None:
            spawn = await prepare_bash_spawn(
                self.runner,
                lambda: pi_hookspecs.BashSpawnEvent(
                    command=command, argv=argv, cwd=cwd, env=dict(os.environ), source="user"
                ),
            )
        if spawn is not None and spawn.blocked is not None:
            await spawn.finish()
            return pi_hookspecs.BashResult(output=f"Blocked: {spawn.blocked}", exit_code=None, cancelled=True)
        output = OutputAccumulator(temp_prefix="pi-user-bash")
        # What the user, the session and the model see is plain text (as pi 1.6.0):
        # escape sequences, control characters and carriage returns removed.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        from ..tools.ansi import AnsiStream  # a user's ! command: its output is cleaned of escapes

        plain = AnsiStream()

        def deliver(text: str) -> None:
            if text:
                output.append(text.encode("utf-8"))
                if on_data is not None:
                    on_data(text)

        def data(chunk: bytes) -> None:
            deliver(plain.feed(decoder.decode(chunk)))

        try:
            outcome = await run_command(
                argv, spawn=spawn, cwd=cwd, env=None, on_data=data, signal=signal, timeout=timeout
            )
        finally:
            deliver(plain.feed(decoder.decode(b"", final=True)) + plain.flush())
            output.finish()
            if spawn is not None:
                await spawn.finish()
        snapshot = output.snapshot()
        output.close()
        cancelled = outcome.stopped in ("aborted", "cancelled", "timeout")
        return pi_hookspecs.BashResult(
            output=snapshot.content,
            # absent (not null) when the command was stopped or has no exit code, as pi 1.6.0
            exit_code=None if cancelled else outcome.exit_code,
            cancelled=cancelled,
            truncated=snapshot.truncation.truncated,
            full_output_path=snapshot.full_output_path,
        )


class UserBash:
    """Runs the user's ``!`` commands.

    * ``cwd`` - where they run;
    * ``shell_settings()`` - the merged settings (``shellPath``, ``shellCommandPrefix``);
    * ``record(message)`` - store the ``bashExecution`` message (now, or after the run).
    """

    def __init__(
        self,
        runner: EventRunner,
        *,
        cwd: str,
        shell_settings: Callable[[], dict[str, Any]],
        record: Callable[[AgentMessage], None],
    ) -> None:
        self.runner = runner
        self.cwd = cwd
        self._shell_settings = shell_settings
        self._record = record

    async def run(
        self,
        command: str,
        *,
        exclude_from_context: bool = False,
        on_data: Callable[[str], Any] | None = None,
        signal: Any = None,
    ) -> BashExecutionMessage:
        runner = self.runner
        operations: Any = LocalBashOperations(self._shell_settings(), runner)
        result: pi_hookspecs.BashResult | None = None
        if runner.has_handlers("user_bash"):
            outcome = await runner.emit(
                "user_bash",
                pi_hookspecs.UserBashEvent(command=command, exclude_from_context=exclude_from_context, cwd=self.cwd),
            )
            if isinstance(outcome, Blocked):
                result = pi_hookspecs.BashResult(output=f"Blocked: {outcome.reason}", exit_code=None, cancelled=True)
            elif outcome is not None and outcome.result is not None:
                result = outcome.result
            elif outcome is not None:
                operations = outcome.operations
        if result is None:
            ran = operations.exec(command, self.cwd, on_data=on_data, signal=signal)
            result = await ran if inspect.isawaitable(ran) else ran
            if isinstance(result, dict):
                result = pi_hookspecs.BashResult.model_validate(result)
        message = BashExecutionMessage(
            command=command,
            output=result.output,
            exit_code=result.exit_code,
            cancelled=result.cancelled,
            truncated=result.truncated,
            full_output_path=result.full_output_path,
            exclude_from_context=exclude_from_context or None,
        )
        self._record(message)
        return message


__all__ = ["LocalBashOperations", "UserBash", "prepare_bash_spawn"]
