"""The provider-neutral stream: :class:`AssistantMessageStream` and :class:`MessageBuilder`.

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
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    Model,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
)
from pi_hookspecs.signals import AbortError

from ._json import parse_streaming_json
from .models import calculate_cost, clamp_thinking_level

ABORTED_MESSAGE = "Request was aborted"

RunFunction = Callable[["MessageBuilder"], Awaitable[None]]


async def maybe_await(value: Any) -> Any:
    """``await value`` when it is awaitable, else ``value``."""
    if inspect.isawaitable(value):
        return await value
    return value


class MessageBuilder:
    """Builds the :class:`AssistantMessage` of one request and emits its events.

    The message is one object, mutated in place and shared by every event as
    ``partial``. Content indexes are positions in ``message.content``.
    """

    def __init__(self, model: Model, emit: Callable[[Any], None], *, thinking_level: str | None = None) -> None:
        self.model = model
        self._emit = emit
        self.message = AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="pending",
            thinking_level=thinking_level,
        )
        self.started = False
        self.finished = False
        self._open: dict[int, str] = {}  # content index -> block kind, for blocks not yet ended
        self._json: dict[int, str] = {}  # content index -> tool-call arguments received so far

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Emit ``start`` (once): the request was accepted and the body is streaming."""
        if not self.started:
            self.started = True
            self._emit(StartEvent(partial=self.message))

    @property
    def open_blocks(self) -> list[int]:
        return list(self._open)

    def end_open_blocks(self) -> None:
        """End every block still open, in content order."""
        for index in sorted(self._open):
            kind = self._open[index]
            if kind == "text":
                self.text_end(index)
            elif kind == "thinking":
                self.thinking_end(index)
            else:
                self.tool_end(index)

    # ------------------------------------------------------------------ text

    def text_start(self, text: str = "") -> int:
        self.start()
        self.message.content.append(TextContent(text=""))
        index = len(self.message.content) - 1
        self._open[index] = "text"
        self._emit(TextStartEvent(content_index=index, partial=self.message))
        if text:
            self.text_delta(index, text)
        return index

    def text_delta(self, index: int, delta: str) -> None:
        if not delta:
            return
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        block.text += delta
        self._emit(TextDeltaEvent(content_index=index, delta=delta, partial=self.message))

    def text_end(self, index: int, *, text: str | None = None, signature: str | None = None) -> None:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        if text is not None:
            block.text = text
        if signature is not None:
            block.text_signature = signature
        if self._open.pop(index, None) is not None:
            self._emit(TextEndEvent(content_index=index, content=block.text, partial=self.message))

    # ------------------------------------------------------------------ thinking

    def thinking_start(self, thinking: str = "", *, signature: str | None = None, redacted: bool = False) -> int:
        self.start()
        block = ThinkingContent(thinking="", thinking_signature=signature, redacted=True if redacted else None)
        self.message.content.append(block)
        index = len(self.message.content) - 1
        self._open[index] = "thinking"
        self._emit(ThinkingStartEvent(content_index=index, partial=self.message))
        if thinking:
            self.thinking_delta(index, thinking)
        return index

    def thinking_delta(self, index: int, delta: str) -> None:
        if not delta:
            return
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking += delta
        self._emit(ThinkingDeltaEvent(content_index=index, delta=delta, partial=self.message))

    def thinking_signature(self, index: int, signature: str, *, append: bool = False) -> None:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking_signature = (block.thinking_signature or "") + signature if append else signature

    def thinking_end(self, index: int, *, thinking: str | None = None, signature: str | None = None) -> None:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        if thinking is not None:
            block.thinking = thinking
        if signature is not None:
            block.thinking_signature = signature
        if self._open.pop(index, None) is not None:
            self._emit(ThinkingEndEvent(content_index=index, content=block.thinking, partial=self.message))

    # ------------------------------------------------------------------ tool calls

    def tool_start(self, call_id: str, name: str, *, namespace: str | None = None) -> int:
        self.start()
        block = ToolCall(id=call_id, name=name, namespace=namespace)
        self.message.content.append(block)
        index = len(self.message.content) - 1
        self._open[index] = "toolCall"
        self._json[index] = ""
        self._emit(ToolCallStartEvent(content_index=index, id=call_id, tool_name=name, partial=self.message))
        return index

    def tool_call(self, index: int) -> ToolCall:
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        return block

    def tool_delta(self, index: int, delta: str) -> None:
        """Append a piece of the arguments' JSON; the arguments are re-parsed so the
        partial message always holds the arguments received so far."""
        if not delta:
            return
        text = self._json.get(index, "") + delta
        self._json[index] = text
        self.tool_call(index).arguments = parse_streaming_json(text)
        self._emit(ToolCallDeltaEvent(content_index=index, delta=delta, partial=self.message))

    def tool_arguments_text(self, index: int) -> str:
        return self._json.get(index, "")

    def tool_end(self, index: int, *, arguments_json: str | None = None) -> None:
        """End a tool call; ``arguments_json`` (the complete arguments, when the provider
        repeats them) wins over the deltas; the missing tail is emitted as a delta."""
        received = self._json.get(index, "")
        if arguments_json is not None and arguments_json != received:
            if arguments_json.startswith(received) and index in self._open:
                self.tool_delta(index, arguments_json[len(received) :])
            received = arguments_json
        call = self.tool_call(index)
        call.arguments = parse_streaming_json(received)
        self._json.pop(index, None)
        if self._open.pop(index, None) is not None:
            self._emit(ToolCallEndEvent(content_index=index, tool_call=call, partial=self.message))

    # ------------------------------------------------------------------ usage and stop

    def set_usage(
        self,
        *,
        input: int | None = None,
        output: int | None = None,
        cache_read: int | None = None,
        cache_write: int | None = None,
        cache_write_1h: int | None = None,
        reasoning: int | None = None,
        total_tokens: int | None = None,
    ) -> Usage:
        """Update the fields given (others keep their value) and recompute the total
        (unless given) and the cost."""
        usage = self.message.usage
        if input is not None:
            usage.input = max(0, int(input))
        if output is not None:
            usage.output = max(0, int(output))
        if cache_read is not None:
            usage.cache_read = max(0, int(cache_read))
        if cache_write is not None:
            usage.cache_write = max(0, int(cache_write))
        if cache_write_1h is not None:
            usage.cache_write_1h = max(0, int(cache_write_1h))
        if reasoning is not None:
            usage.reasoning = max(0, int(reasoning))
        computed = usage.input + usage.output + usage.cache_read + usage.cache_write
        usage.total_tokens = int(total_tokens) if total_tokens else computed
        calculate_cost(self.model, usage)
        return usage

    def stop(self, reason: str, *, raw: str | None = None, error_message: str | None = None) -> None:
        """Record the stop reason (``stop``, ``length``, ``toolUse``, ``error``)."""
        self.message.stop_reason = reason  # type: ignore[assignment]
        if raw is not None:
            self.message.raw_stop_reason = raw
        if error_message is not None:
            self.message.error_message = error_message

    # ------------------------------------------------------------------ terminal events

    def forward(self, event: Any) -> None:
        """Pass on an event built elsewhere (a plugin's stream function). A ``done`` or
        ``error`` event ends the stream; its message becomes the result."""
        if event.type == "start":
            if self.started:
                return
            self.started = True
        if event.type in ("done", "error"):
            final = event.message if event.type == "done" else event.error
            self.message = final
            self.finished = True
        self._emit(event)

    def done(self) -> None:
        if self.finished:
            return
        self.end_open_blocks()
        message = self.message
        if message.stop_reason in ("error", "aborted"):
            message.error_message = message.error_message or "The provider reported an error"
            self.finished = True
            self._emit(ErrorEvent(reason=message.stop_reason, error=message, partial=message))
            return
        if message.stop_reason == "pending":
            self.fail("The stream ended without a stop reason")
            return
        if message.stop_reason == "stop" and any(isinstance(b, ToolCall) for b in message.content):
            message.stop_reason = "toolUse"
        self.finished = True
        self._emit(DoneEvent(reason=message.stop_reason, message=message, partial=message))

    def fail(self, error_message: str, *, aborted: bool = False) -> None:
        """End with an ``error`` event. Blocks still open keep what arrived (tool-call
        arguments parsed as far as they go) but get no end event."""
        if self.finished:
            return
        self.finished = True
        for index in list(self._open):
            if self._open[index] == "toolCall":
                self.tool_call(index).arguments = parse_streaming_json(self._json.get(index, ""))
        self._open.clear()
        self._json.clear()
        message = self.message
        message.stop_reason = "aborted" if aborted else "error"
        message.error_message = error_message or ("Request was aborted" if aborted else "Unknown error")
        self._emit(ErrorEvent(reason=message.stop_reason, error=message, partial=message))


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
        self._builder = MessageBuilder(model, self._queue.put_nowait, thinking_level=thinking)
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._aborting = False
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def message(self) -> AssistantMessage:
        """The message as built so far (the ``partial`` of every event)."""
        return self._builder.message

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
            self._builder.fail(ABORTED_MESSAGE if self._aborting else "The request was cancelled", aborted=self._aborting)

    async def aclose(self) -> None:
        """Cancel the request if it is still running (the message ends ``aborted``)."""
        task = self._task
        if task is not None and not task.done():
            self._aborting = True
            task.cancel()
            await asyncio.wait({task})
            self._settle()

