"""The ``pi`` process around a run: the garbage collector during start-up, and a quick
exit once print or json mode is done.

Both apply only when :func:`pi_core.cli.main` runs as the process's entry point (the
``pi`` console script or ``python -m pi_core``); code that calls the CLI functions inside
another process (tests, embedding) keeps Python's normal collector and exit.

* **Start-up.** Imports, plugins and the loaded session build hundreds of thousands of
  objects that live until the process ends; collections during start-up, and every full
  collection later, rescan all of them (over a second in a 20,000-entry resume, most of
  it while the first request is built). The collector is off from
  the start of ``main`` until the runtime is open (:func:`startup_done`); then everything
  built so far is moved to the permanent generation (``gc.freeze``), which later
  collections never scan, and the collector is switched back on with a larger young
  generation (:data:`THRESHOLDS`). Garbage cycles made during start-up (about 2,000
  objects) are frozen too; a full collection to find them would cost 0.3 s.
* **Exit.** Tearing the interpreter down frees every object one by one: 50 ms after a
  small run, 0.4-0.9 s after a 20,000-entry resume, all after the answer is printed.
  Once print or json mode has disposed of its runtime (``session_shutdown`` handlers
  ran, child processes and MCP servers were stopped, the session file was fsynced and
  closed) it calls :func:`allow_fast_exit`; :func:`exit_process` then runs the
  ``atexit`` handlers, flushes stdout and stderr and leaves with ``os._exit``. Before
  that it waits for non-daemon threads as a normal exit does (thread pools stopped
  first); a failing flush falls back to the normal shutdown. (A teardown is also what
  aborted a run now and then: a native thread calling back into Python while the
  interpreter is torn down is ended with ``pthread_exit``, which aborts the process.)
* **The event loop** of print, json, rpc and interactive mode runs in :func:`run_main`:
  like ``asyncio.run``, except that tasks still running when the mode returns (a
  plugin's coroutine that swallows cancellation, say) get :data:`STRAGGLER_GRACE`
  seconds to end after being cancelled, instead of keeping pi alive for ever.
* **Signals.** :func:`install_stop_signals` makes SIGTERM and SIGHUP (and SIGINT where
  the mode wants it) an orderly stop: the mode aborts the run (bash commands' process
  groups get SIGTERM, then SIGKILL), disposes of the runtime (``session_shutdown``, MCP
  servers stopped, the session file flushed and closed) and exits with ``128 + signal
  number``. From the signal on, every plugin handler (running or still to run) ends
  within :data:`~pi_core.extensions.guard.STOP_DEADLINE` seconds. A second signal ends the
  process at once: every bash command's process group still running is killed first
  (:func:`pi_core.tools.shell.kill_all_groups`). A signal that arrives while a plugin's
  coroutine handler blocks the event loop is seen by the loop watchdog
  (:mod:`pi_core.extensions.watchdog`), which interrupts the handler so that the stop
  can run, and ends the process the same way when that does not free the loop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

STRAGGLER_GRACE = 1.0
"""Seconds tasks still running after a mode returned get to end once cancelled."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that stop pi in an orderly way in every mode."""

_state = {"entry": False, "paused": False, "fast_exit": False}


def enter(*, gc_paused: bool = False) -> None:
    """``main`` runs as the process's entry point: switch the collector off until
    :func:`startup_done` (``gc_paused``: ``main`` already did), and let
    :func:`allow_fast_exit` take effect."""
    _state["entry"] = True
    if gc_paused:
        _state["paused"] = True
    elif gc.isenabled():
        gc.disable()
        _state["paused"] = True


#: Collector thresholds after start-up. A young generation of 50,000 objects instead of
#: 700 makes collections during a request (converting a long history for the provider)
#: rare: a 20,000-entry resume's first request made three (4 ms) at 10,000, and 90 ms
#: of them at 700.
THRESHOLDS = (50_000, 20, 20)


def startup_done() -> None:
    """The runtime is open and the session loaded: freeze what start-up built and switch
    the collector back on. Does nothing unless :func:`enter` switched it off."""
    if _state["paused"]:
        _state["paused"] = False
        gc.freeze()
        gc.set_threshold(*THRESHOLDS)
        gc.enable()


def allow_fast_exit() -> None:
    """Print or json mode finished its work and disposed of its runtime (no effect
    unless :func:`enter` was called)."""
    if _state["entry"]:
        _state["fast_exit"] = True


def exit_process(status: int) -> NoReturn:
    """End the process with ``status``: at once after :func:`allow_fast_exit`, else
    through the normal interpreter shutdown (``sys.exit``)."""
    if not _state["fast_exit"]:
        sys.exit(status)
    # What the interpreter's own shutdown does first: stop thread pools and wait for the
    # non-daemon threads. Then the atexit handlers, and no teardown: during a teardown,
    # a native thread that calls back into Python (a Rust runtime scheduling a result on
    # the loop) is ended with pthread_exit, which aborts the whole process.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:
        sys.exit(status)
    shutdown()
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None and not stream.closed:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)  # the normal shutdown reports it (and sets the status) as before
    os._exit(status)


def run_main(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on a new event loop and close it, as ``asyncio.run`` does, but never
    wait more than :data:`STRAGGLER_GRACE` seconds for tasks left running (cancelled
    first). SIGINT is left to the mode (:func:`install_stop_signals`): without a handler
    it raises ``KeyboardInterrupt``."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        try:
            from ..extensions.guard import abandoned

            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
                if task in abandoned:  # a plugin's handler pi already went on without
                    task._log_destroy_pending = False  # type: ignore[attr-defined]
            pending = [task for task in pending if task not in abandoned]
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=STRAGGLER_GRACE))
                for task in pending:
                    if not task.done():  # it refuses to end: leave it without a warning
                        task._log_destroy_pending = False  # type: ignore[attr-defined]
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def install_stop_signals(
    loop: asyncio.AbstractEventLoop,
    on_signal: Callable[[int], Any],
    signums: Sequence[int] = STOP_SIGNALS,
) -> Callable[[], None]:
    """Call ``on_signal(signum)`` on the loop when one of ``signums`` arrives; a second
    one ends the process at once (:func:`hard_exit`). Returns a function that removes
    the handlers (where signal handlers cannot be installed, nothing is done)."""
    from ..extensions import watchdog

    received: list[int] = []

    def handle(signum: int) -> None:
        watchdog.signal_handled()
        received.append(signum)
        if len(received) > 1:
            hard_exit(signum)
        from ..extensions.guard import cap_deadlines

        cap_deadlines()  # stopping: no plugin handler may hold the exit up for long
        on_signal(signum)

    installed: list[int] = []
    for signum in signums:
        try:
            loop.add_signal_handler(signum, handle, signum)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal here
            continue
        # The loop runs ``handle`` once it reads the signal from its wake-up pipe; this
        # Python-level handler (asyncio's is a no-op) runs at once, even while a plugin's
        # coroutine blocks the loop, and tells the loop watchdog.
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            signal.signal(signum, _noted)
    if installed:
        watchdog.signal_handled()  # nothing waits from an earlier run
        watchdog.on_stuck = _stuck

    def remove() -> None:
        for signum in installed:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)
        if installed and watchdog.on_stuck is _stuck:
            watchdog.on_stuck = None
        installed.clear()

    return remove


def _noted(signum: int, _frame: Any) -> None:
    from ..extensions import watchdog

    watchdog.note_signal(signum)


def _stuck(signum: int, message: str) -> None:
    """The loop watchdog: a stop signal cannot be handled, a plugin's coroutine blocks
    the loop (called from the watchdog's thread)."""
    hard_exit(signum, message)


def hard_exit(signum: int, reason: str | None = None) -> NoReturn:
    """A second stop signal (or one the event loop cannot handle, ``reason`` saying
    why): kill the process groups of running bash commands and leave at once with
    ``128 + signum``. Entries already appended to the session file are on disk (each is
    written and flushed as it is appended)."""
    from ..tools.shell import kill_all_groups

    kill_all_groups(signal.SIGKILL)
    with contextlib.suppress(Exception):
        sys.stderr.write(f"pi: {reason or signal.Signals(signum).name + ' again: exiting at once'}\n")
        sys.stderr.flush()
    os._exit(128 + signum)


def signal_status(signum: int | None, status: int) -> int:
    """The exit status of a mode that a signal stopped: ``128 + signum``."""
    return 128 + signum if signum is not None else status
