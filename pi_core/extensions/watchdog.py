"""The loop watchdog: a coroutine handler that blocks the event loop is found and
interrupted.

A coroutine handler runs on the event loop's thread. When it blocks instead of awaiting
(``time.sleep`` in an ``async def``, a CPU-bound loop, a blocking socket read) nothing
else runs: not the handler's deadline, not Esc, not the signal handlers that stop pi.
Python cannot preempt a running coroutine, so :mod:`.guard` cannot end the wait the way
it ends a worker thread's. This module watches from outside the loop:

* **The marker.** While a coroutine handler runs, its :class:`Watch` (plugin, hook,
  ``hookTimeout`` and the frame of the guard's wrapper around it) is in :data:`active`; the
  guard adds and removes it (a set operation per coroutine handler call, nothing per
  synchronous handler or per event without coroutine handlers).
* **One daemon thread**, started with the first coroutine handler call, wakes every
  :data:`TICK` seconds while a coroutine handler runs (every :data:`IDLE_TICK` seconds
  otherwise, doing nothing). It posts a no-op callback to the loop; one not run for
  :data:`STALL` seconds means the loop is blocked. The culprit is the handler whose
  wrapper frame is on the loop thread's stack (``sys._current_frames``): a blocked loop
  is blamed on a handler only when that handler's code is what the loop is running.
* **Interrupting it.** Once the handler has held the loop for longer than its deadline
  (``hookTimeout``; ``0``, no deadline, never), once pi's stop deadline has passed
  (:func:`cap`), or once a stop signal (SIGINT, SIGTERM, SIGHUP) has waited
  :data:`SIGNAL_GRACE` seconds for the blocked loop, the watchdog interrupts the handler
  the way Ctrl+C interrupts Python code: it sends :data:`INTERRUPT_SIGNAL` to the main
  thread, whose handler raises :class:`LoopBlocked` inside the plugin's code (only when
  that handler is still on the stack at that moment). A ``time.sleep``, a pure-Python
  loop or an interruptible system call ends there; the guard reports the handler (one
  line naming the plugin and the hook, through the plugin-error path), gates fail
  closed, and the run goes on, or stops in order when a signal is waiting.
* **When the interrupt does not help** (the handler catches ``BaseException`` and goes
  on, or blocks in C code that never checks for signals) and a stop signal is waiting,
  the loop can never run the orderly stop: after another :data:`SIGNAL_GRACE` seconds
  the watchdog calls :data:`on_stuck` (the ``pi`` command ends the process at once with
  ``128 + signal``, after killing running bash commands' process groups and writing one
  line naming the plugin and the hook). Without a signal such a handler keeps the loop
  until it returns; pi then reports it and goes on without its result.

The interrupt needs the loop to run on the main thread (signal handlers run there) and
:data:`INTERRUPT_SIGNAL` to have no other handler; otherwise a blocking handler is only
reported (when it returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

TICK = 0.25
"""Seconds between the watchdog's looks at the loop while a coroutine handler runs."""
IDLE_TICK = 0.5
"""Seconds between its looks while none runs."""
STALL = 0.4
"""A loop that has not run a posted callback for this long is blocked."""
SIGNAL_GRACE = 0.5
"""Seconds a stop signal waits for a blocked loop before the handler is interrupted, and
again before the process is ended when the interrupt did not free the loop."""
INTERRUPT_SIGNAL = getattr(signal, "SIGURG", None)
"""Sent to the main thread to interrupt a handler blocking the loop (ignored by default,
used by nothing else in practice)."""


class LoopBlocked(BaseException):
    """Raised inside a coroutine handler that blocked the event loop past its deadline
    or while a stop signal waited (a ``BaseException``, like ``KeyboardInterrupt``, so
    that ``except Exception`` in the handler does not swallow it)."""


class Watch:
    """One running coroutine handler, as the watchdog sees it."""

    __slots__ = (
        "blocked",
        "delivered",
        "frame",
        "hook",
        "interrupted",
        "loop",
        "plugin",
        "reason",
        "thread",
        "timeout",
    )

    def __init__(self, plugin: str, hook: str, timeout: float | None, loop: asyncio.AbstractEventLoop) -> None:
        self.plugin = plugin
        self.hook = hook
        self.timeout = timeout
        """The handler's deadline (``hookTimeout``): how long it may hold the loop."""
        self.loop = loop
        self.thread = threading.get_ident()
        self.frame: FrameType | None = None
        self.blocked = 0.0
        """Seconds it had blocked the loop when the watchdog acted (0: it did not act)."""
        self.interrupted: float | None = None
        """When the watchdog acted: sent the interrupt (or, where it cannot, marked the
        handler as overdue, so that its result is not used)."""
        self.delivered = False
        """Whether :class:`LoopBlocked` was raised in it."""
        self.reason = ""
        """Why: ``"deadline"``, ``"stopping"`` (pi's stop deadline passed) or the name
        of the signal waiting for the loop."""

    def describe(self) -> str:
        return f"plugin {self.plugin!r}, hook {self.hook}"


active: set[Watch] = set()
"""The coroutine handlers running now (see the module docstring)."""
on_stuck: Callable[[int, str], Any] | None = None
"""``on_stuck(signum, message)``: a stop signal cannot be handled because a handler
blocks the loop and the interrupt did not free it (set by the ``pi`` command)."""

_signal: tuple[int, float] | None = None
"""The last stop signal and when it arrived."""
_handled = True
"""Whether the loop has run its handler (:func:`signal_handled`)."""
_stop_at: float | None = None
"""pi is stopping on a signal: when every handler call must have ended (:func:`cap`)."""
started: threading.Thread | None = None
"""The watchdog thread, once started."""
_interruptible = False


def start() -> None:
    """Start the watchdog thread (once); from the main thread, also install the
    interrupt's signal handler. Cheap to call again."""
    global started, _interruptible
    if started is not None:
        return
    if INTERRUPT_SIGNAL is not None and threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            if signal.getsignal(INTERRUPT_SIGNAL) in (signal.SIG_DFL, signal.SIG_IGN, None):
                signal.signal(INTERRUPT_SIGNAL, _interrupt)
                _interruptible = True
    started = threading.Thread(target=_Watcher().run, name="pi-loop-watchdog", daemon=True)
    started.start()


def note_signal(signum: int) -> None:
    """A stop signal arrived (called from its Python-level handler, which runs even
    while a handler blocks the loop in ``time.sleep`` or Python code). A second one
    before the loop handled the first ends the process at once (:data:`on_stuck`), as a
    second signal always does."""
    global _signal, _handled
    if _signal is not None and not _handled and on_stuck is not None:
        on_stuck(signum, f"{signal.Signals(signum).name} again: exiting at once")
    _signal, _handled = (signum, time.monotonic()), False


def signal_handled() -> None:
    """The loop ran the stop signal's handler: it is not blocked."""
    global _handled
    _handled = True


def cap(at: float) -> None:
    """pi is stopping: a handler blocking the loop at ``at`` (monotonic) is interrupted."""
    global _stop_at
    _stop_at = at if _stop_at is None else min(_stop_at, at)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """The interrupt's signal handler (main thread): raise :class:`LoopBlocked` in the
    handler the watchdog asked to interrupt, if the handler's code (not the guard's
    wrapper itself, which must see the exception) is running right here; once."""
    wanted = {
        watch.frame: watch
        for watch in list(active)
        if watch.interrupted is not None and not watch.delivered and watch.frame is not None
    }
    inner = frame
    while frame is not None and wanted:
        watch = wanted.get(frame)
        if watch is not None:
            if frame is inner:
                return  # the wrapper's own code runs: the handler is done
            watch.delivered = True
            raise LoopBlocked(watch.reason)
        frame = frame.f_back


def _on_stack(thread: int, watches: list[Watch]) -> Watch | None:
    """The innermost of ``watches`` whose wrapper frame is on ``thread``'s stack."""
    frames = {watch.frame: watch for watch in watches if watch.frame is not None}
    frame = sys._current_frames().get(thread)
    while frame is not None:
        found = frames.get(frame)
        if found is not None:
            return found
        frame = frame.f_back
    return None


class _Probe:
    """Posts no-op callbacks to one loop and notes when they ran."""

    __slots__ = ("answered", "sent")

    def __init__(self) -> None:
        self.sent = 0.0
        self.answered = time.monotonic()

    def post(self, loop: asyncio.AbstractEventLoop) -> None:
        self.sent = time.monotonic()
        try:
            loop.call_soon_threadsafe(self._answer)
        except RuntimeError:  # the loop is closed
            self.answered = self.sent

    def _answer(self) -> None:
        self.answered = time.monotonic()

    def stalled(self) -> float:
        """Seconds the loop has left the last posted callback waiting (0: it ran it)."""
        return 0.0 if self.answered >= self.sent else time.monotonic() - self.sent


class _Watcher:
    def __init__(self) -> None:
        self.probes: dict[asyncio.AbstractEventLoop, _Probe] = {}

    def run(self) -> None:
        while True:
            time.sleep(TICK if active else IDLE_TICK)
            try:
                self.look()
            except Exception:  # never let the watchdog die of a race with the loop
                pass

    def look(self) -> None:
        watches = list(active)
        if not watches:
            self.probes.clear()
            return
        by_loop: dict[asyncio.AbstractEventLoop, list[Watch]] = {}
        for watch in watches:
            by_loop.setdefault(watch.loop, []).append(watch)
        for loop in list(self.probes):
            if loop not in by_loop:
                del self.probes[loop]
        for loop, running in by_loop.items():
            probe = self.probes.get(loop)
            if probe is None:
                probe = self.probes[loop] = _Probe()
            stalled = probe.stalled()
            if stalled == 0.0:
                probe.post(loop)
            elif stalled >= STALL:
                self.stalled(probe, stalled, running)

    def stalled(self, probe: _Probe, stalled: float, running: list[Watch]) -> None:
        culprit = _on_stack(running[0].thread, running)
        if culprit is None:
            return  # blocked by something else than a handler's own code
        now = time.monotonic()
        waiting = _signal if _signal is not None and not _handled else None
        signal_waits = waiting is not None and now - waiting[1] >= SIGNAL_GRACE
        if culprit.interrupted is None:
            past_deadline = culprit.timeout is not None and stalled >= culprit.timeout
            stopping = _stop_at is not None and now >= _stop_at
            if signal_waits and waiting is not None:
                culprit.reason = signal.Signals(waiting[0]).name
            elif stopping:
                culprit.reason = "stopping"
            elif past_deadline:
                culprit.reason = "deadline"
            else:
                return
            culprit.blocked = stalled
            culprit.interrupted = now
            if _interruptible and culprit.thread == threading.main_thread().ident:
                with contextlib.suppress(OSError, ValueError):
                    signal.pthread_kill(culprit.thread, INTERRUPT_SIGNAL)  # type: ignore[arg-type]
            return
        if waiting is not None and signal_waits and now - culprit.interrupted >= SIGNAL_GRACE and on_stuck is not None:
            on_stuck(
                waiting[0],
                f"{culprit.describe()}: the coroutine handler has blocked the event loop for {stalled:.0f} s "
                "and could not be interrupted; exiting at once",
            )


__all__ = [
    "INTERRUPT_SIGNAL",
    "LoopBlocked",
    "Watch",
    "active",
    "cap",
    "note_signal",
    "on_stuck",
    "signal_handled",
    "start",
]
