"""The provider-neutral stream: :class:`AssistantMessageStream` around an API that reports
through a :class:`~pi_hookspecs.streaming.MessageBuilder`.

An API implementation is an ``async def run(builder)`` that sends the request and
reports what arrives through the builder; the stream runs it in a task, hands the
events to the consumer and turns every failure into a final ``error`` event:

* provider and network errors end the stream with ``stop_reason="error"``;
* an abort through ``options.signal`` cancels the request and ends it with
  ``stop_reason="aborted"``.

Neither iterating nor :meth:`AssistantMessageStream.result` ever raises for them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    AssistantMessageEvent,
    Model,
    StreamOptions,
)
from pi_hookspecs.signals import AbortError
from pi_hookspecs.streaming import MessageBuilder as MessageBuilder

from .models import clamp_thinking_level

ABORTED_MESSAGE = "Request was aborted"

RunFunction = Callable[["MessageBuilder"], Awaitable[None]]


def describe_error(error: BaseException, provider: str = "") -> str:
    """A one-line message for a failed request, keeping what classifiers look for:
    the HTTP status, the provider's own message and error code."""
    label = f"{provider} API error" if provider else "Provider API error"
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        detail, code = _body_detail(getattr(error, "body", None))
        text = detail or str(getattr(error, "message", "") or error).strip() or "(no body)"
        if code and code not in text:
            text = f"{text} [{code}]"
        if status < 400:  # an error event inside a successful response
            return f"{label}: {text}"
        return f"{label} ({status}): {text}"
    name = type(error).__name__
    text = str(error).strip()
    if name == "APIConnectionError":
        cause = error.__cause__ or error.__context__
        return f"Connection error: {cause}" if cause and str(cause) else "Connection error"
    if name == "APITimeoutError":
        return "Request timed out"
    if isinstance(error, AbortError):
        return ABORTED_MESSAGE
    if not text:
        return name
    if name in ("RemoteProtocolError", "ReadError", "ConnectError", "ReadTimeout", "ConnectTimeout", "WriteError"):
        return f"{name}: {text}"
    return text


def _body_detail(body: Any) -> tuple[str | None, str | None]:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message")
            code = inner.get("code") or inner.get("type")
            return (str(message) if message else None), (str(code) if code else None)
        if isinstance(inner, str):
            return inner, None
    if isinstance(body, str) and body.strip():
        return body.strip()[:4000], None
    return None, None


class AssistantMessageStream:
    """The events of one model request, and its final message.

    ``async for event in stream`` yields :data:`~pi_hookspecs.AssistantMessageEvent`
    values ending with ``done`` or ``error``; ``await stream.result()`` returns the
    final :class:`AssistantMessage` (also when nobody iterates). The request starts on
    the first of the two.
    """

    def __init__(
        self,
        model: Model,
        run: RunFunction,
        options: StreamOptions | None = None,
        *,
        label: str | None = None,
    ) -> None:
        self.model = model
        self.options = options or StreamOptions()
        thinking = clamp_thinking_level(model, self.options.thinking_level)
        self._run = run
        self._label = label or model.provider
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._started = time.perf_counter()
        self._started_ms = int(time.time() * 1000)
        self._builder = MessageBuilder(model, self._push, thinking_level=thinking)
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._aborting = False
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def message(self) -> AssistantMessage:
        """The message as built so far."""
        return self._builder.message

    def _push(self, event: Any) -> None:
        """Queue an event with the message as it is *now*: the request runs ahead of the
        consumer, so a ``partial`` read later would show text, usage and stop reason
        that arrived after the event. ``start`` carries a copy of the empty message;
        later events a shallow copy (scalar fields and usage as they are now; content
        blocks shared, they only grow). ``done``/``error`` carry the final message."""
        partial = event.partial
        if event.type in ("done", "error"):
            self._time(event.message if event.type == "done" else event.error)
        elif partial is not None:
            # The thinking level is the final message's (as pi 1.6.0 records it).
            if event.type == "start":
                event.partial = partial.model_copy(update={"content": list(partial.content), "thinking_level": None})
            else:
                event.partial = partial.model_copy(update={"thinking_level": None})
        self._queue.put_nowait(event)

    def _time(self, message: AssistantMessage) -> None:
        """``durationMs`` of the final message: from the stream's creation to its end,
        unless the message has one already or began before this stream (a response
        forwarded from elsewhere stays untimed)."""
        if message.duration_ms is not None or message.timestamp < self._started_ms:
            return
        message.duration_ms = max(0, round((time.perf_counter() - self._started) * 1000))

    def _ensure_started(self) -> asyncio.Task[None]:
        if self._task is None:
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(self._produce())
            signal = self.options.signal
            if signal is not None:

                def on_abort(_reason: Any) -> None:
                    self._aborting = True
                    task = self._task
                    if task is not None and not task.done():
                        loop.call_soon_threadsafe(task.cancel)

                self._unsubscribe = signal.add_callback(on_abort)
        return self._task

    async def _produce(self) -> None:
        builder = self._builder
        signal = self.options.signal
        try:
            if signal is not None and signal.aborted:
                raise AbortError(signal.reason)
            await self._run(builder)
            if signal is not None and signal.aborted:
                raise AbortError(signal.reason)
            builder.done()
        except asyncio.CancelledError:
            if not self._aborting:
                builder.fail("The request was cancelled")
                raise
            builder.fail(ABORTED_MESSAGE, aborted=True)
        except AbortError:
            builder.fail(ABORTED_MESSAGE, aborted=True)
        except Exception as error:
            aborted = signal is not None and signal.aborted
            builder.fail(ABORTED_MESSAGE if aborted else describe_error(error, self._label), aborted=aborted)
        finally:
            if self._unsubscribe is not None:
                self._unsubscribe()

    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        if self._finished:
            raise StopAsyncIteration
        task = self._ensure_started()
        if self._queue.empty() and task.done():
            self._settle()
        event = await self._queue.get()
        if event.type in ("done", "error"):
            self._finished = True
        return event  # type: ignore[no-any-return]

    async def result(self) -> AssistantMessage:
        """Wait for the request to end; the final message (``stop_reason`` is never
        ``pending``)."""
        task = self._ensure_started()
        await asyncio.wait({task})
        self._settle()
        return self._builder.message

    def _settle(self) -> None:
        # A task cancelled before its first step never ran its handlers: end it here.
        if not self._builder.finished:
            self._builder.fail(
                ABORTED_MESSAGE if self._aborting else "The request was cancelled", aborted=self._aborting
            )

    async def aclose(self) -> None:
        """Cancel the request if it is still running (the message ends ``aborted``)."""
        task = self._task
        if task is not None and not task.done():
            self._aborting = True
            task.cancel()
            await asyncio.wait({task})
            self._settle()
