"""The work interactive mode does besides reading the input line.

One background *job* at a time (a run, a user shell command, a plugin command,
``/compact``) that Ctrl+C or Esc aborts; built-in commands run *in line* (Ctrl+C cancels
them); key actions and plugin shortcuts are fire-and-forget tasks. An exception from any
of them is printed in the transcript instead of ending pi.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ...runtime import AgentSession, NoModelError, SessionBusyError
from ..bootstrap import CliError
from .base import JobKind
from .output import Transcript
from .render import EventRenderer, LiveView


@dataclass
class Job:
    task: asyncio.Task[Any]
    abort: Callable[[], None]
    kind: JobKind
    """``prompt``: input given to the session (a run, or a plugin command); ``bash``: a
    user shell command; ``command``: a built-in command working in the background."""


class Jobs:
    """The current job, the in-line command, and the tasks started by keys."""

    def __init__(
        self,
        out: Transcript,
        live: LiveView,
        renderer: EventRenderer,
        session: Callable[[], AgentSession | None],
        invalidate: Callable[[], None],
    ) -> None:
        self.out = out
        self.live = live
        self.renderer = renderer
        self._session = session
        """The open session (``None`` before the runtime opens)."""
        self.invalidate = invalidate
        self.current: Job | None = None
        self.inline: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()

    def start(
        self,
        coroutine: Coroutine[Any, Any, Any],
        *,
        kind: JobKind,
        status: str | None = None,
        abort: Callable[[], None] | None = None,
    ) -> None:
        """Run ``coroutine`` in the background (one job at a time); ``abort`` stops it
        (default: abort the session's run, else cancel the task)."""
        task = asyncio.ensure_future(self.guard(coroutine))
        self.current = Job(task, abort or self._abort_run, kind)
        if status:
            self.live.set_status(status)
        task.add_done_callback(self._done)
        self.invalidate()

    def _abort_run(self) -> None:
        session = self._session()
        if session is not None and (session.is_busy or session.command_running):
            session.abort()  # a plugin command's ctx.signal fires; it is cancelled if it ignores it
        elif self.current is not None:
            self.current.task.cancel()

    def abort(self) -> None:
        if self.current is not None:
            self.live.flash("Aborting…", 1.0)
            self.current.abort()
            self.invalidate()

    def _done(self, task: asyncio.Task[Any]) -> None:
        if self.current is not None and self.current.task is task:
            self.current = None
        self.renderer.echoed.clear()
        session = self._session()
        if session is not None:
            self.renderer.scan_entries()  # entries a plugin command appended
        if session is not None and not session.is_busy:
            self.live.set_status(None)
            self.live.tools.clear()
            self.live.text = self.live.thinking = ""
        self.invalidate()

    async def run_inline(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run a built-in command in line: the caller waits, Ctrl+C cancels it."""
        task = asyncio.ensure_future(self.guard(coroutine))
        self.inline = task
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        finally:
            self.inline = None

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        """Run ``coroutine`` on its own (a key action, a plugin shortcut)."""
        task = asyncio.ensure_future(self.guard(coroutine))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def on_sigint(self) -> None:
        """Ctrl+C while no prompt_toolkit application reads the keys (in-line commands)."""
        if self.inline is not None:
            self.inline.cancel()
        elif self.current is not None:
            self.abort()

    async def guard(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        try:
            await coroutine
        except asyncio.CancelledError:
            self.out.line("Cancelled", "yellow")
        except Exception as exc:
            self.report(exc)

    def report(self, exc: BaseException) -> None:
        if isinstance(exc, (NoModelError, SessionBusyError, CliError)):
            self.out.line(f"✖ {exc}", "red")
        else:
            self.out.line(f"✖ {type(exc).__name__}: {exc}", "red")
