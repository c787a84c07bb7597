"""Building a model's answer as it streams in: what every wire API needs.

:class:`MessageBuilder` turns what arrives from a provider (text, thinking, tool-call
argument pieces, usage, the stop reason) into the :class:`AssistantMessage` of the
request and the stream events of the contract. pi's built-in APIs use it, and so can
a plugin that adds an API (``register_providers`` with an :class:`ApiDefinition`).
:func:`parse_streaming_json` reads tool-call arguments that are still arriving;
:func:`calculate_cost` prices a usage with a model's rates.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import jiter

from .llm import (
    DoneEvent,
    ErrorEvent,
    Model,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .messages import AssistantMessage, Cost, TextContent, ThinkingContent, ToolCall, Usage

__all__ = [
    "RETRY_STATUSES",
    "MessageBuilder",
    "calculate_cost",
    "parse_streaming_json",
    "provider_retry_delay",
    "retry_after_seconds",
    "send_with_retries",
]


def parse_streaming_json(text: str | None) -> dict[str, Any]:
    """The object that ``text`` (a possibly incomplete JSON object) describes so far.

    Complete JSON parses as usual. Incomplete JSON is read as far as it goes, with
    ``jiter``'s partial mode: open strings keep what arrived (as pi 1.6.0 keeps them),
    an unfinished literal, key or member is left out, open arrays and objects are
    closed. Anything that is not an object gives ``{}``. Each call is one pass in Rust,
    so re-reading arguments that grow by a delta at a time stays cheap.
    """
    if not text or not text.strip():
        return {}
    try:
        value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


RETRY_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses a provider-level retry repeats, besides every 5xx."""


def retry_after_seconds(headers: dict[str, str]) -> float | None:
    """The delay a response asks for: ``retry-after-ms``, ``retry-after`` (seconds or an
    HTTP date) or ``x-ratelimit-reset-after``; ``None`` when it asks for none."""
    lowered = {k.lower(): v for k, v in headers.items()}
    value = lowered.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    for name in ("retry-after", "x-ratelimit-reset-after"):
        value = lowered.get(name)
        if not value:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            import email.utils  # an HTTP date: rare, and email.utils brings 8 modules

            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def provider_retry_delay(
    options: StreamOptions,
    attempt: int,
    *,
    status: int | None = None,
    retry_after: float | None = None,
    transport_error: bool = False,
) -> float | None:
    """pi's provider-level retry policy, for every wire API: the seconds to wait before
    retry ``attempt`` (0-based) of a request that failed with HTTP ``status`` (or, with
    ``transport_error``, without a response), else ``None``. Retried: 408, 409, 429 and
    5xx, and transport errors, while ``options.extra["max_retries"]`` allows, after the
    delay the server asked for (``retry_after``) — not at all when that is longer than
    ``options.extra["max_retry_delay"]`` — or an exponential back-off (0.5 s, doubling,
    at most 8 s)."""
    retries = options.extra.get("max_retries") or 0
    if not isinstance(retries, int) or attempt >= retries:
        return None
    if options.signal is not None and options.signal.aborted:
        return None
    if not transport_error:
        if status is None or (status not in RETRY_STATUSES and status < 500):
            return None
    if retry_after is not None:
        limit = options.extra.get("max_retry_delay")
        if isinstance(limit, int | float) and limit > 0 and retry_after > limit:
            return None
        return retry_after
    return float(min(0.5 * 2**attempt, 8.0))


_T = TypeVar("_T")


async def send_with_retries(
    send: Callable[[], Awaitable[_T]],
    options: StreamOptions,
    failure: Callable[[BaseException], tuple[int | None, float | None] | None],
) -> _T:
    """``await send()`` with pi's provider-level retries, for every wire API: an
    exception that ``failure`` describes — ``(status, retry_after)`` for an HTTP error
    response, ``(None, None)`` for a failure on the way (no response) — is retried while
    :func:`provider_retry_delay` allows, after its delay; any other exception, and the
    last failure, is raised."""
    attempt = 0
    while True:
        try:
            return await send()
        except Exception as error:
            described = failure(error)
            if described is None:
                raise
            status, retry_after = described
            delay = provider_retry_delay(
                options, attempt, status=status, retry_after=retry_after, transport_error=status is None
            )
            if delay is None:
                raise
            attempt += 1
            await asyncio.sleep(delay)


def calculate_cost(model: Model, usage: Usage) -> Usage:
    """Fill ``usage.cost`` (US dollars) from ``model.cost`` (dollars per million tokens).
    Cache writes with one-hour retention (``cache_write_1h``) cost twice the input price."""
    rates = model.cost
    long_writes = usage.cache_write_1h or 0
    short_writes = max(0, usage.cache_write - long_writes)
    cost = usage.cost
    # rate per token times tokens, in this order: the same floating-point result as pi 1.6.0
    cost.input = (rates.input / 1_000_000) * usage.input
    cost.output = (rates.output / 1_000_000) * usage.output
    cost.cache_read = (rates.cache_read / 1_000_000) * usage.cache_read
    cost.cache_write = (rates.cache_write * short_writes + rates.input * 2 * long_writes) / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    cost.total_from_provider = False
    return usage


class MessageBuilder:
    """Builds the :class:`AssistantMessage` of one request and emits its events.

    The message is one object, mutated in place and passed to every event as
    ``partial`` (pi's stream snapshots it per event, see ``AssistantMessageStream``);
    ``usage`` is replaced, not mutated, by :meth:`set_usage`, so a snapshot keeps the
    usage of its moment. Content indexes are positions in ``message.content``.

    The message, its text blocks and the events are constructed, not validated: their
    values are the model's validated fields, text that arrived (a delta is appended to
    its block's text first, which only a string survives) and this builder's own
    objects. What the provider chooses beyond text (tool-call ids and names, thinking
    signatures) still goes through the validation of :class:`ToolCall` and
    :class:`ThinkingContent`.
    """

    def __init__(self, model: Model, emit: Callable[[Any], None], *, thinking_level: str | None = None) -> None:
        self.model = model
        self._emit = emit
        self.message = AssistantMessage.model_construct(
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="pending",
            thinking_level=thinking_level,
            usage=Usage.model_construct(cost=Cost.model_construct()),
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
            self._emit(StartEvent.model_construct(partial=self.message))

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
        self.message.content.append(TextContent.model_construct(text=""))
        index = len(self.message.content) - 1
        self._open[index] = "text"
        self._emit(TextStartEvent.model_construct(content_index=index, partial=self.message))
        if text:
            self.text_delta(index, text)
        return index

    def text_delta(self, index: int, delta: str) -> None:
        if not delta:
            return
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        block.text += delta
        self._emit(TextDeltaEvent.model_construct(content_index=index, delta=delta, partial=self.message))

    def text_end(self, index: int, *, text: str | None = None, signature: str | None = None) -> None:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        if text is not None:
            block.text = text
        if signature is not None:
            block.text_signature = signature
        if self._open.pop(index, None) is not None:
            self._emit(TextEndEvent.model_construct(content_index=index, content=block.text, partial=self.message))

    # ------------------------------------------------------------------ thinking

    def thinking_start(self, thinking: str = "", *, signature: str | None = None, redacted: bool = False) -> int:
        self.start()
        block = ThinkingContent(thinking="", thinking_signature=signature, redacted=True if redacted else None)
        self.message.content.append(block)
        index = len(self.message.content) - 1
        self._open[index] = "thinking"
        self._emit(ThinkingStartEvent.model_construct(content_index=index, partial=self.message))
        if thinking:
            self.thinking_delta(index, thinking)
        return index

    def thinking_delta(self, index: int, delta: str) -> None:
        if not delta:
            return
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking += delta
        self._emit(ThinkingDeltaEvent.model_construct(content_index=index, delta=delta, partial=self.message))

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
            self._emit(
                ThinkingEndEvent.model_construct(content_index=index, content=block.thinking, partial=self.message)
            )

    # ------------------------------------------------------------------ tool calls

    def tool_start(self, call_id: str, name: str, *, namespace: str | None = None) -> int:
        self.start()
        if type(call_id) is str and type(name) is str and (namespace is None or type(namespace) is str):
            block = ToolCall.model_construct(id=call_id, name=name, namespace=namespace)
        else:  # the provider sent something else: validation reports it
            block = ToolCall(id=call_id, name=name, namespace=namespace)
        self.message.content.append(block)
        index = len(self.message.content) - 1
        self._open[index] = "toolCall"
        self._json[index] = ""
        self._emit(
            ToolCallStartEvent.model_construct(
                content_index=index, id=block.id, tool_name=block.name, partial=self.message
            )
        )
        return index

    def tool_call(self, index: int) -> ToolCall:
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        return block

    def tool_delta(self, index: int, delta: str, *, report_empty: bool = False) -> None:
        """Append a piece of the arguments' JSON; the arguments are re-parsed so the
        partial message always holds the arguments received so far. An empty piece is
        reported only with ``report_empty`` (pi 1.6.0 reports every chunk of an
        OpenAI-style tool call, with or without arguments)."""
        if not delta:
            if report_empty:
                self._emit(ToolCallDeltaEvent.model_construct(content_index=index, delta="", partial=self.message))
            return
        text = self._json.get(index, "") + delta
        self._json[index] = text
        self.tool_call(index).arguments = parse_streaming_json(text)
        self._emit(ToolCallDeltaEvent.model_construct(content_index=index, delta=delta, partial=self.message))

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
            self._emit(ToolCallEndEvent.model_construct(content_index=index, tool_call=call, partial=self.message))

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
        # A new object each time (copy on write): events already queued keep the usage
        # they were emitted with.
        usage = self.message.usage.model_copy(update={"cost": self.message.usage.cost.model_copy()})
        self.message.usage = usage
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
            self._emit(ErrorEvent.model_construct(reason=message.stop_reason, error=message, partial=message))
            return
        if message.stop_reason == "pending":
            self.fail("The stream ended without a stop reason")
            return
        if message.stop_reason == "stop" and any(isinstance(b, ToolCall) for b in message.content):
            message.stop_reason = "toolUse"
        self.finished = True
        self._emit(DoneEvent.model_construct(reason=message.stop_reason, message=message, partial=message))

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
        self._emit(ErrorEvent.model_construct(reason=message.stop_reason, error=message, partial=message))
