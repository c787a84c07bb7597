"""The ``bash`` tool: run a shell command in the working directory."""

from __future__ import annotations

import asyncio
import math
import os
import signal as signals
from typing import Any

from pydantic import Field

import pi_hookspecs
from pi_hookspecs import ToolDefinition, ToolResult

from ._common import (
    STRICT_PREFERRED,
    ToolArgs,
    ToolError,
    ctx_bash_spawn,
    ctx_cwd,
    ctx_optional,
    ctx_settings,
    ctx_signal,
    ctx_update,
    define_tool,
    destructive_annotations,
    raise_if_aborted,
    text_result,
)
from .output import OutputAccumulator, OutputSnapshot
from .shell import ProcessOutcome, ShellNotFoundError, run_command, shell_command
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size

UPDATE_INTERVAL = 0.1
"""Seconds between two progress updates while output streams in."""
MAX_TIMEOUT = 2_147_483.647
SESSION_ENV = ("PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL")


class BashArgs(ToolArgs):
    command: str = Field(description="The shell command to run")
    timeout: float | None = Field(default=None, description="Timeout in seconds (optional; no timeout by default)")


DESCRIPTION = (
    "Run a bash command in the current working directory and return its combined stdout and stderr. "
    f"Only the last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB of output are returned "
    "(whichever limit is reached first); the complete output is then saved to a temp file whose path "
    "is given. Optionally pass a timeout in seconds."
)


def _session_env(ctx: Any) -> dict[str, str]:
    """``PI_*`` variables describing the session, when the context knows it."""
    env: dict[str, str] = {}
    manager = ctx_optional(ctx, "session_manager")
    if manager is not None:
        try:
            env["PI_SESSION_ID"] = str(manager.get_session_id())
            session_file = manager.get_session_file()
            if session_file:
                env["PI_SESSION_FILE"] = str(session_file)
        except Exception:  # a partial session view: leave the variables out
            env.clear()
    model = ctx_optional(ctx, "model")
    if model is not None and getattr(model, "id", None):
        env["PI_PROVIDER"] = str(getattr(model, "provider", "") or "")
        env["PI_MODEL"] = str(model.id)
    level = ctx_optional(ctx, "thinking_level")
    if isinstance(level, str) and level:
        env["PI_REASONING_LEVEL"] = level
    return env


def build_env(ctx: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ENV}
    env.update(_session_env(ctx))
    return env


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("Invalid timeout: must be a finite number of seconds greater than 0")
    if timeout > MAX_TIMEOUT:
        raise ToolError(f"Invalid timeout: maximum is {MAX_TIMEOUT:g} seconds")
    return timeout


def _details(snapshot: OutputSnapshot, exit_code: int | None) -> dict[str, Any]:
    # exitCode only when there is one (absent, not null, when the command was stopped)
    details: dict[str, Any] = {"exitCode": exit_code} if exit_code is not None else {}
    if snapshot.truncation.truncated:
        details["truncation"] = snapshot.truncation.to_json()
        details["fullOutputPath"] = snapshot.full_output_path
    return details


def _format(snapshot: OutputSnapshot, output: OutputAccumulator) -> str:
    text = snapshot.content
    truncation = snapshot.truncation
    if not truncation.truncated:
        return text
    end = truncation.total_lines
    start = end - truncation.output_lines + 1
    path = snapshot.full_output_path
    if truncation.last_line_partial:
        notice = (
            f"[Showing last {format_size(truncation.output_bytes)} of line {end} "
            f"(line is {format_size(output.last_line_bytes)}). Full output: {path}]"
        )
    elif truncation.truncated_by == "lines":
        notice = f"[Showing lines {start}-{end} of {end}. Full output: {path}]"
    else:
        notice = f"[Showing lines {start}-{end} of {end} ({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {path}]"
    return f"{text}\n\n{notice}"


def _with_status(text: str, status: str) -> str:
    """The output, a blank line, the status (as pi 1.6.0: the output's own final newline
    stays, so a newline-terminated output is followed by two more)."""
    return f"{text}\n\n{status}" if text else status


class _Progress:
    """Throttled ``ctx.update`` calls: at most one per :data:`UPDATE_INTERVAL`, the
    latest output always delivered."""

    def __init__(self, ctx: Any, output: OutputAccumulator) -> None:
        self.ctx = ctx
        self.output = output
        self.loop = asyncio.get_running_loop()
        self.last = -math.inf
        self.dirty = False
        self.handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        ctx_update(self.ctx, ToolResult.model_construct(content=[], details=None))

    def data(self) -> None:
        self.dirty = True
        delay = UPDATE_INTERVAL - (self.loop.time() - self.last)
        if delay <= 0:
            self.cancel()
            self.emit()
        elif self.handle is None:
            self.handle = self.loop.call_later(delay, self.emit)

    def emit(self) -> None:
        self.handle = None
        if not self.dirty:
            return
        self.dirty = False
        self.last = self.loop.time()
        snapshot = self.output.snapshot()
        details: dict[str, Any] = {}  # as pi 1.6.0: an object, with the truncation when cut
        if snapshot.truncation.truncated:
            details = {"truncation": snapshot.truncation.to_json(), "fullOutputPath": snapshot.full_output_path}
        ctx_update(self.ctx, text_result(snapshot.content, details))

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


async def run_bash(args: BashArgs, ctx: Any) -> ToolResult:
    signal = ctx_signal(ctx)
    raise_if_aborted(signal)
    timeout = _check_timeout(args.timeout)
    settings = ctx_settings(ctx)
    try:
        argv = shell_command(settings, args.command)
    except ShellNotFoundError as exc:
        raise ToolError(str(exc)) from None
    cwd = ctx_cwd(ctx)
    if not os.path.isdir(cwd):
        raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
    env = build_env(ctx)
    spawn = await ctx_bash_spawn(
        ctx,
        lambda: pi_hookspecs.BashSpawnEvent(  # occasional: made only when a plugin implements bash_spawn
            command=args.command,
            argv=argv,
            cwd=cwd,
            env=env,
            source="tool",
            tool_call_id=ctx_optional(ctx, "tool_call_id"),
        ),
    )
    if spawn is not None and spawn.blocked is not None:
        await spawn.finish()
        raise ToolError(f"Blocked: {spawn.blocked}")

    output = OutputAccumulator(temp_prefix="pi-bash")
    progress = _Progress(ctx, output)
    progress.start()

    def on_data(chunk: bytes) -> None:
        output.append(chunk)
        progress.data()

    try:
        outcome = await run_command(
            argv, spawn=spawn, cwd=cwd, env=env, on_data=on_data, signal=signal, timeout=timeout
        )
    except OSError as exc:
        started = spawn.event.argv if spawn is not None else argv
        raise ToolError(f"Could not start {started[0]}: {exc.strerror or exc}") from None
    finally:
        if spawn is not None:
            await spawn.finish()
        progress.cancel()
        output.finish()
        if progress.dirty:
            progress.emit()
        output.close()
    return _result(outcome, output, timeout)


def _result(outcome: ProcessOutcome, output: OutputAccumulator, timeout: float | None) -> ToolResult:
    snapshot = output.snapshot()
    text = _format(snapshot, output)
    details = _details(snapshot, None if outcome.stopped else outcome.exit_code)
    if outcome.stopped == "aborted" or outcome.stopped == "cancelled":
        return text_result(_with_status(text, "Command aborted"), details, is_error=True)
    if outcome.stopped == "timeout":
        return text_result(_with_status(text, f"Command timed out after {timeout:g} seconds"), details, is_error=True)
    if outcome.signal is not None:
        name = signals.Signals(outcome.signal).name if outcome.signal in signals.valid_signals() else outcome.signal
        details["signal"] = str(name)
        return text_result(_with_status(text, f"Command was killed by signal {name}"), details, is_error=True)
    if outcome.exit_code != 0:
        return text_result(_with_status(text, f"Command exited with code {outcome.exit_code}"), details, is_error=True)
    return text_result(text or "(no output)", details)


def create_bash_tool() -> ToolDefinition:
    return define_tool(
        name="bash",
        constrained_sampling=STRICT_PREFERRED,
        description=DESCRIPTION,
        args_model=BashArgs,
        run=run_bash,
        prompt_snippet="Run shell commands (ls, rg, git, tests, builds)",
        prompt_guidelines=[
            "Use bash to run programs, tests, builds and git commands.",
            "Commands run by bash can read PI_SESSION_ID, PI_MODEL and other PI_* environment variables "
            "for the current session and model.",
        ],
        annotations=destructive_annotations("Run shell command", idempotent=False, open_world=True),
    )
