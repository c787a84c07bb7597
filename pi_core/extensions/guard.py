"""Running one hook handler so that it cannot take pi down.

The event runner (:mod:`.runner`) calls every handler through :class:`HandlerGuard`:

* **Synchronous handlers run in a worker thread** (one daemon thread per event loop,
  handlers one at a time, in call order), so the event loop stays free while they run:
  Esc, Ctrl+C, signals, the TUI and the RPC reader keep working even when a handler
  blocks (``time.sleep``, a socket read, a lock). Context variables the handler sets
  are copied back into the caller's context afterwards, and what a handler does
  through ``ctx`` (its actions and ``ctx.ui``) is carried out on the event loop's
  thread (:func:`on_loop`).
* **Coroutine handlers run as their own task**, so that one which swallows
  cancellation can be left behind instead of awaited for ever.
* **Every call has a deadline**: the ``hookTimeout`` setting (seconds, default
  :data:`DEFAULT_HOOK_TIMEOUT`; ``0`` means none). Time a handler spends waiting for
  the user in a ``ctx.ui`` dialog does not count. A handler still running at the
  deadline is abandoned (a coroutine is cancelled first) and reported; gates
  (``tool_call``, ``bash_spawn``, ``user_bash``, ``file_access``) then fail closed.
* **An abort ends the wait**: when the run's abort signal (``ctx.signal``) fires while
  a handler runs (Esc, Ctrl+C, SIGINT, ``ctx.abort()``, an RPC ``abort``), the handler
  gets :data:`ABORT_GRACE` seconds to finish (a coroutine is cancelled), then it is
  abandoned and reported.
* **``SystemExit`` and ``KeyboardInterrupt`` raised by a handler are plugin errors**
  (:class:`HandlerExit`), never an exit of pi.
* **A coroutine handler that blocks the event loop** (``time.sleep`` in an ``async
  def``) cannot be preempted, and while it blocks neither its deadline nor an abort can
  run: the loop watchdog (:mod:`.watchdog`) finds it and, once it has held the loop for
  longer than the deadline or a stop signal waits, interrupts it (:class:`~.watchdog.LoopBlocked` raised in its
  code); it is then reported like a handler that timed out.

An abandoned synchronous handler cannot be stopped (Python threads cannot be killed):
its thread is left to finish in the background and later calls get a new worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from queue import SimpleQueue
from typing import Any

from . import watchdog
from .watchdog import LoopBlocked, Watch

DEFAULT_HOOK_TIMEOUT = 120.0
"""Seconds a hook handler may run before pi goes on without it (``hookTimeout``)."""
ABORT_GRACE = 0.5
"""Seconds a handler may take to finish after the run was aborted."""


class HandlerTimeout(Exception):
    """A handler did not finish before its deadline."""


class HandlerAbandoned(Exception):
    """The run was aborted while a handler ran, and it did not finish in time."""


class HandlerExit(Exception):
    """A handler raised ``SystemExit`` or ``KeyboardInterrupt``."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(f"{type(original).__name__}({original})")
        self.original = original


STOP_DEADLINE = 5.0
"""Once pi is stopping because of a signal, no handler call may take longer than this
(``session_shutdown`` handlers included), whatever ``hookTimeout`` says."""

_thread = threading.local()
abandoned: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
"""Handler tasks pi went on without (cancelled, but still running): nothing waits for
them at exit (:func:`pi_core.cli.process.run_main`)."""
_stop_at: float | None = None
"""When pi is stopping on a signal: the monotonic time by which every handler call ends."""
_waiting: set[Callable[[], None]] = set()
"""The wake-up functions of the handler calls being waited for (on the loop's thread)."""
_user_waits = 0
"""How many ``ctx.ui`` dialogs are waiting for the user (deadlines pause meanwhile)."""


def hook_timeout_setting(settings: Any) -> float | None:
    """The ``hookTimeout`` of merged settings: seconds, ``None`` for no deadline. A
    value that is not a non-negative number is ignored (the settings reader reports
    wrong types)."""
    value = settings.get("hookTimeout") if isinstance(settings, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return DEFAULT_HOOK_TIMEOUT
    return float(value) if value > 0 else None


def cap_deadlines(seconds: float = STOP_DEADLINE) -> None:
    """pi is stopping on a signal: every handler call of this process, running or still
    to come, ends within ``seconds`` from now. Call it on the event loop's thread."""
    global _stop_at
    at = time.monotonic() + seconds
    _stop_at = at if _stop_at is None else min(_stop_at, at)
    watchdog.cap(at)  # a coroutine handler blocking the loop then is interrupted too
    for wake_up in list(_waiting):
        wake_up()  # running waits look at their deadline again


def in_worker() -> bool:
    """Whether the calling thread is a hook worker thread."""
    return getattr(_thread, "loop", None) is not None


def on_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; from a hook worker thread, called on the event loop's
    thread (which is free: it awaits the handler) and waited for."""
    loop: asyncio.AbstractEventLoop | None = getattr(_thread, "loop", None)
    if loop is None:
        return fn(*args, **kwargs)
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            done.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return done.result()


async def waiting_for_user(awaitable: Awaitable[Any]) -> Any:
    """Await a ``ctx.ui`` dialog; handler deadlines pause while it is open."""
    global _user_waits
    _user_waits += 1
    try:
        return await awaitable
    finally:
        _user_waits -= 1


class _Worker:
    """A daemon thread that runs synchronous handlers, one at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.abandoned = False
        self.queue: SimpleQueue[tuple[asyncio.Future[Any], Callable[[], Any], contextvars.Context] | None] = (
            SimpleQueue()
        )
        thread = threading.Thread(target=self._run, name="pi-hook-worker", daemon=True)
        thread.start()

    def submit(self, fn: Callable[[], Any], context: contextvars.Context) -> asyncio.Future[Any]:
        future = self.loop.create_future()
        self.queue.put((future, fn, context))
        return future

    def stop(self) -> None:
        self.queue.put(None)

    def _run(self) -> None:
        _thread.loop = self.loop
        while not self.abandoned:
            item = self.queue.get()
            if item is None:
                return
            future, fn, context = item
            try:
                outcome: tuple[bool, Any] = (True, context.run(fn))
            except (SystemExit, KeyboardInterrupt) as exc:
                outcome = (False, HandlerExit(exc).with_traceback(exc.__traceback__))
            except BaseException as exc:
                outcome = (False, exc)
            try:
                self.loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the loop is closed: nobody waits any more
                return


class _Batch:
    """Synchronous handlers of one notification run one after the other in a single
    job of the worker (one thread hop for all of them). ``claimed`` is the index of the
    handler running, ``started`` when it started; ``stop`` ends the batch before the
    next handler (set under ``lock`` when pi goes on without the batch)."""

    def __init__(self, fns: list[Callable[[], Any]]) -> None:
        self.fns = fns
        self.outcomes: list[tuple[bool, Any]] = []
        self.claimed = -1
        self.started = time.monotonic()
        self.stop = False
        self.lock = threading.Lock()

    def __call__(self) -> None:
        for index, fn in enumerate(self.fns):
            with self.lock:
                if self.stop:
                    return
                self.claimed = index
                self.started = time.monotonic()
            try:
                outcome: tuple[bool, Any] = (True, fn())
            except (SystemExit, KeyboardInterrupt) as exc:
                outcome = (False, HandlerExit(exc).with_traceback(exc.__traceback__))
            except BaseException as exc:
                outcome = (False, exc)
            with self.lock:
                self.outcomes.append(outcome)
            if outcome[0] and outcome[1] is not None and inspect.isawaitable(outcome[1]):
                return  # the loop awaits it before the next handler runs


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


async def _contained(awaitable: Awaitable[Any], watch: Watch | None = None) -> Any:
    if watch is None:
        try:
            return await awaitable
        except (SystemExit, KeyboardInterrupt) as exc:
            raise HandlerExit(exc).with_traceback(exc.__traceback__) from None
    # a plugin's coroutine handler: the loop watchdog looks for this frame on the stack
    watch.frame = sys._getframe()
    watchdog.active.add(watch)
    try:
        result = await awaitable
    except (SystemExit, KeyboardInterrupt) as exc:
        raise HandlerExit(exc).with_traceback(exc.__traceback__) from None
    except LoopBlocked:
        if watch.reason not in ("deadline", "stopping"):
            # interrupted for a stop signal the loop has not read yet: let it handle the
            # signal (abort the run) before anything goes on after this handler
            with contextlib.suppress(asyncio.CancelledError):  # the abort it lets in
                await asyncio.sleep(0.01)
        raise HandlerTimeout(_blocked_message(watch, "it was interrupted and pi went on without it")) from None
    finally:
        watchdog.active.discard(watch)
        watch.frame = None
    if watch.interrupted is not None:  # it returned, but only after the watchdog gave up on it
        raise HandlerTimeout(_blocked_message(watch, "pi went on without its result"))
    return result


def _blocked_message(watch: Watch, outcome: str) -> str:
    if watch.reason in ("", "deadline") and watch.timeout is not None:
        why = f"for longer than {watch.timeout:g} s (setting hookTimeout)"
    elif watch.reason == "stopping":
        why = "past pi's stop deadline (pi is stopping on a signal)"
    else:
        why = f"when pi was stopping ({watch.reason})"
    return f"the coroutine handler blocked the event loop {why}; {outcome}"


def _adopt(context: contextvars.Context) -> None:
    """Set in the current context what a handler set in its copy."""
    for var, value in context.items():
        if var.get(_UNSET) is not value:
            var.set(value)


_UNSET: Any = object()


class HandlerGuard:
    """Calls handlers with the containment described in the module docstring."""

    def __init__(self, timeout: float | None = DEFAULT_HOOK_TIMEOUT) -> None:
        self.timeout = timeout
        self._worker: _Worker | None = None

    def _worker_for(self, loop: asyncio.AbstractEventLoop) -> _Worker:
        worker = self._worker
        if worker is None or worker.loop is not loop or worker.abandoned:
            if worker is not None and not worker.abandoned:
                worker.stop()
            worker = self._worker = _Worker(loop)
        return worker

    def _abandon(self, worker: _Worker) -> None:
        worker.abandoned = True
        if self._worker is worker:
            self._worker = None

    async def call(
        self, fn: Callable[[], Any], is_async: bool, signal: Any, owner: tuple[str, str] | None = None
    ) -> Any:
        """Run ``fn()`` (a handler bound to its arguments); ``is_async`` when it is a
        coroutine function. ``signal``: the run's abort signal, or ``None``. ``owner``:
        ``(plugin, hook)``, for the loop watchdog (:mod:`.watchdog`) to name a
        coroutine handler that blocks the loop."""
        loop = asyncio.get_running_loop()
        if is_async:
            try:
                awaitable = fn()
            except (SystemExit, KeyboardInterrupt) as exc:
                raise HandlerExit(exc).with_traceback(exc.__traceback__) from None
            return await self._await(loop, awaitable, signal, owner)
        worker = self._worker_for(loop)
        context = contextvars.copy_context()
        future = worker.submit(fn, context)
        try:
            result = await self._wait(loop, future, signal)
        finally:
            if not future.done():
                self._abandon(worker)
        _adopt(context)
        if result is not None and inspect.isawaitable(result):
            result = await self._await(loop, result, signal, owner)
        return result

    async def call_batch(self, fns: list[Callable[[], Any]], signal: Any) -> list[tuple[bool, Any]]:
        """Run synchronous handlers (bound to their arguments) one after the other in
        one worker job; each keeps its own deadline. Returns ``(ok, result or
        exception)`` per handler, in order. A handler pi goes on without (deadline,
        abort) gets its :class:`HandlerTimeout` / :class:`HandlerAbandoned`, and the
        handlers after it run in a new worker."""
        loop = asyncio.get_running_loop()
        results: list[tuple[bool, Any]] = []
        while len(results) < len(fns):
            batch = _Batch(fns[len(results) :])
            worker = self._worker_for(loop)
            context = contextvars.copy_context()
            future = worker.submit(batch, context)
            try:
                await self._wait(loop, future, signal, batch)
            except (HandlerTimeout, HandlerAbandoned) as exc:
                with batch.lock:
                    batch.stop = True
                    finished = list(batch.outcomes)
                    running = batch.claimed
                self._abandon(worker)
                results.extend(finished)
                if running >= len(finished):  # that handler is still running: pi goes on without it
                    results.append((False, exc))
                _adopt(context)
                signal = None if getattr(signal, "aborted", False) else signal
                continue
            finally:
                if not future.done():
                    self._abandon(worker)
            results.extend(batch.outcomes)
            _adopt(context)
            ok, last = results[-1] if results else (False, None)
            if ok and last is not None and inspect.isawaitable(last):  # a plain def returned a coroutine
                try:
                    results[-1] = (True, await self._await(loop, last, signal))
                except Exception as exc:
                    results[-1] = (False, exc)
        return results

    async def _await(
        self,
        loop: asyncio.AbstractEventLoop,
        awaitable: Awaitable[Any],
        signal: Any,
        owner: tuple[str, str] | None = None,
    ) -> Any:
        context = contextvars.copy_context()
        watch = None
        if owner is not None:
            if watchdog.started is None:
                watchdog.start()
            watch = Watch(owner[0], owner[1], self.timeout, loop)
        task = loop.create_task(_contained(awaitable, watch), context=context)
        try:
            result = await self._wait(loop, task, signal)
        finally:
            if not task.done():
                task.cancel()
                abandoned.add(task)
        _adopt(context)
        return result

    async def _wait(
        self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], signal: Any, progress: _Batch | None = None
    ) -> Any:
        """The result of ``future``, unless its deadline passes or ``signal`` fires.
        (One waiter future woken by whichever comes first: cheaper than
        ``asyncio.wait``, which matters for events fired per streamed token.) With
        ``progress`` (a batch of handlers) the deadline is each handler's. Time in a
        ``ctx.ui`` dialog does not count; once pi is stopping on a signal
        (:func:`cap_deadlines`) every wait ends by then."""
        aborted = False
        wake: asyncio.Future[None] = loop.create_future()

        def wake_up(_: Any = None) -> None:
            if not wake.done():
                wake.set_result(None)

        def on_abort(_reason: Any) -> None:
            nonlocal aborted
            aborted = True
            try:
                loop.call_soon_threadsafe(wake_up)
            except RuntimeError:  # the loop is closed
                pass

        timeout = self.timeout
        base = time.monotonic()

        def ends_at() -> float | None:
            start = base if progress is None else max(base, progress.started)
            ends = [start + timeout] if timeout is not None else []
            if _stop_at is not None:
                ends.append(_stop_at)
            return min(ends) if ends else None

        def arm() -> asyncio.TimerHandle | None:
            end = ends_at()
            return loop.call_later(max(0.0, end - time.monotonic()), wake_up) if end is not None else None

        remove = signal.add_callback(on_abort) if signal is not None and not getattr(signal, "aborted", True) else None
        future.add_done_callback(wake_up)
        _waiting.add(wake_up)
        timer = arm()
        try:
            while True:
                await wake
                if future.done():
                    if future.cancelled():
                        raise HandlerAbandoned("the handler was cancelled")
                    return future.result()
                if aborted:
                    if isinstance(future, asyncio.Task):
                        future.cancel()
                    await asyncio.wait({future}, timeout=ABORT_GRACE)
                    if future.done() and not future.cancelled():
                        return future.result()
                    raise HandlerAbandoned(
                        "the run was aborted while the handler was running"
                        + ("" if future.done() else "; pi went on without it")
                    )
                now = time.monotonic()
                end = ends_at()
                stopping = _stop_at is not None and now >= _stop_at
                if not stopping and _user_waits > 0 and timeout is not None and end is not None and now >= end:
                    base = now  # the user is answering a dialog: a new deadline
                    end = ends_at()
                if end is None or now < end:  # woken early (pi began stopping, a batch moved on)
                    if timer is not None:
                        timer.cancel()
                    wake = loop.create_future()
                    timer = arm()
                    continue
                if isinstance(future, asyncio.Task):
                    future.cancel()
                    await asyncio.wait({future}, timeout=0.1)
                if stopping:
                    raise HandlerTimeout(
                        "handler did not finish before pi stopped (on a signal); pi went on without it"
                    )
                raise HandlerTimeout(
                    f"handler did not finish within {timeout:g} s (setting hookTimeout); pi went on without it"
                )
        finally:
            _waiting.discard(wake_up)
            future.remove_done_callback(wake_up)
            if timer is not None:
                timer.cancel()
            if remove is not None:
                remove()
