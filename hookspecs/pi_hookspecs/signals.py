"""Cancellation: an :class:`AbortController` owns an :class:`AbortSignal`.

The signal is handed to tools (``ctx.signal``), providers and plugin handlers so that
nested work (a subprocess, an HTTP request, a nested model call) can stop when the
user aborts. It works from plain callbacks, from coroutines (``await signal.wait()``)
and across threads (``abort()`` may be called from any thread).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class AbortError(Exception):
    """Raised by :meth:`AbortSignal.throw_if_aborted` and by aborted operations."""

    def __init__(self, reason: Any = None) -> None:
        self.reason = reason
        super().__init__(str(reason) if reason is not None else "Operation aborted")


class AbortSignal:
    """Read side of a cancellation: query it, wait for it, or subscribe to it."""

    __slots__ = ("_aborted", "_callbacks", "_lock", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._callbacks: list[Callable[[Any], None]] = []
        self._lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> Any:
        return self._reason

    def throw_if_aborted(self) -> None:
        if self._aborted:
            raise AbortError(self._reason)

    def add_callback(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``callback(reason)`` once when the signal aborts (at once if it already
        has). Returns a function that unsubscribes."""
        with self._lock:
            if not self._aborted:
                self._callbacks.append(callback)

                def remove() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return remove
        callback(self._reason)
        return lambda: None

    async def wait(self) -> Any:
        """Wait until the signal aborts; returns the reason."""
        if self._aborted:
            return self._reason
        import asyncio

        loop = asyncio.get_running_loop()
        future: Any = loop.create_future()

        def wake(reason: Any) -> None:
            def settle() -> None:
                if not future.done():
                    future.set_result(reason)

            try:
                if threading.get_ident() == getattr(loop, "_thread_id", None):
                    settle()
                else:
                    loop.call_soon_threadsafe(settle)
            except RuntimeError:  # loop closed
                pass

        remove = self.add_callback(wake)
        try:
            return await future
        finally:
            remove()

    def _fire(self, reason: Any) -> None:
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(reason)
            except Exception:  # a faulty listener must not stop the others
                pass

    @classmethod
    def any(cls, *signals: AbortSignal | None) -> AbortSignal:
        """A signal that aborts as soon as any of ``signals`` does."""
        combined = cls()
        for signal in signals:
            if signal is not None:
                signal.add_callback(combined._fire)
        return combined

    def __repr__(self) -> str:
        return f"<AbortSignal aborted={self._aborted}>"


class AbortController:
    """Owns a signal and aborts it."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        self.signal._fire(reason if reason is not None else "aborted")


async def abortable(call: Awaitable[T], signal: AbortSignal | None) -> T:
    """Await ``call``; cancel it and raise :class:`AbortError` (the signal's reason) when
    ``signal`` aborts first - at once, closing a coroutine not yet started, when it
    already has. The abort may come from any thread."""
    import asyncio

    if signal is None:
        return await call
    if signal.aborted:
        if asyncio.iscoroutine(call):
            call.close()
        raise AbortError(signal.reason)
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(call)

    def on_abort(_reason: Any) -> None:
        loop.call_soon_threadsafe(task.cancel)

    remove = signal.add_callback(on_abort)
    try:
        return await task
    except asyncio.CancelledError:
        if signal.aborted:
            raise AbortError(signal.reason) from None
        raise
    finally:
        remove()
