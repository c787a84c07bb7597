"""The plugin hooks on the agent loop's path to the model and through its tool calls.

* :class:`ContextHooks` - ``context`` / ``context_with_system`` before each request, a
  system prompt forced by ``before_agent_start``, and the conversion of the session's
  messages into provider roles (``images.blockImages``);
* :class:`ProviderHooks` - the request's :class:`~pi_hookspecs.StreamOptions`:
  ``before_provider_headers``, ``before_provider_request``, ``after_provider_response``,
  ``provider_stream_event`` and the transport settings;
* :class:`ToolHooks` - the ``tool_call`` gate and the ``tool_result`` transform of the
  model's tool calls (:func:`tool_result_hook` is shared with nested calls).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from pydantic import BaseModel

import pi_hookspecs  # the events only plugins' handlers see are made on first use
from pi_hookspecs import (
    AfterProviderResponseEvent,
    AgentMessage,
    AssistantMessage,
    ImageContent,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ToolCallEvent,
    ToolResult,
    Usage,
)

from ..agent import AfterToolCall, BeforeToolCall, ToolOutcome
from ..extensions import EventRunner
from ..resources.settings import Settings
from ..session import convert_to_llm, current_system_message

# ---------------------------------------------------------------------------- context


class ContextHooks:
    """``transform_context`` and ``convert_to_llm`` of the agent.

    * ``current_head(messages)`` - the transcript's prompt and tools as one system message;
    * ``forced_prompt()`` - the prompt a ``before_agent_start`` handler forced (or ``None``);
    * ``block_images()`` - the ``images.blockImages`` setting;
    * ``fit_images()`` - the ``images.autoResize`` setting (``None``: off).
    """

    def __init__(
        self,
        runner: EventRunner,
        *,
        current_head: Callable[[Sequence[AgentMessage]], SystemMessage | None],
        forced_prompt: Callable[[], str | None],
        block_images: Callable[[], bool],
        fit_images: Callable[[], bool] | None = None,
    ) -> None:
        self.runner = runner
        self._current_head = current_head
        self._forced_prompt = forced_prompt
        self._block_images = block_images
        self._fit_images = fit_images
        self._llm_cache: tuple[int, AgentMessage, tuple[bool, bool], list[AgentMessage]] | None = None

    async def transform_context(self, messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        runner = self.runner
        if runner.has_handlers("context"):
            conversation = [clone(m) for m in messages if not isinstance(m, SystemMessage)]
            event = pi_hookspecs.ContextEvent.model_construct(type="context", messages=conversation)
            passed = event.messages
            result = await runner.emit("context", event)
            if result is not passed:
                head = self._current_head(messages)
                messages = [head, *result] if head is not None else list(result)
        if runner.has_handlers("context_with_system"):
            event2 = pi_hookspecs.ContextWithSystemEvent.model_construct(
                type="context_with_system", messages=[clone(m) for m in messages]
            )
            messages = await runner.emit("context_with_system", event2)
            if not messages or not isinstance(messages[0], SystemMessage):
                runner.report(
                    "context_with_system", "context_with_system", "a handler dropped the leading system message"
                )
        forced_prompt = self._forced_prompt()
        if forced_prompt is not None:
            head = current_system_message(messages)
            tools = head.tools_added if head is not None else None
            forced = SystemMessage(content=forced_prompt, tools_added=tools)
            messages = [forced, *(m for m in messages if not isinstance(m, SystemMessage))]
        return messages

    def convert_to_llm(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """The session's messages in provider roles (images replaced when
        ``images.blockImages``, shrunk to the models' limits when ``images.autoResize``).
        The transcript grows by appending, so only the messages added since the previous
        request are converted."""
        block = bool(self._block_images())
        mode = (block, not block and self._fit_images is not None and bool(self._fit_images()))
        cached = self._llm_cache
        if cached is not None:
            count, last, was_mode, converted = cached
            if was_mode == mode and count and len(messages) >= count and messages[count - 1] is last:
                tail = cast(list[AgentMessage], convert_to_llm(messages[count:]))
                out = converted + self._images(tail, mode)
                self._llm_cache = (len(messages), messages[-1], mode, out)
                return list(out)
        out = self._images(cast(list[AgentMessage], convert_to_llm(messages)), mode)
        self._llm_cache = (len(messages), messages[-1], mode, out) if messages else None
        return list(out)

    @staticmethod
    def _images(messages: list[AgentMessage], mode: tuple[bool, bool]) -> list[AgentMessage]:
        block, fit = mode
        if not block and not fit:
            return messages
        # the usual messages need no call: an assistant message holds no images, and a
        # text-only user message neither
        if block:
            change = block_images
        elif not any(type(m) is not AssistantMessage and _has_image(m) for m in messages):
            return list(messages)  # no image to fit (each call would return its message): no import
        else:
            from ..ai.images import fit_message_images as change  # Pillow only once images are about
        return [
            m if type(m) is AssistantMessage or type(getattr(m, "content", None)) is str else change(m)
            for m in messages
        ]


def clone(obj: Any) -> Any:
    """A deep copy of a message for plugins that may change it (``context`` hooks):
    models, lists and dicts are copied, immutable leaves shared. About twice as fast as
    ``copy.deepcopy`` on pydantic models."""
    if isinstance(obj, BaseModel):
        new = object.__new__(type(obj))
        object.__setattr__(new, "__dict__", {k: clone(v) for k, v in obj.__dict__.items()})
        object.__setattr__(new, "__pydantic_fields_set__", set(obj.__pydantic_fields_set__))
        extra = obj.__pydantic_extra__
        object.__setattr__(
            new, "__pydantic_extra__", None if extra is None else {k: clone(v) for k, v in extra.items()}
        )
        object.__setattr__(new, "__pydantic_private__", obj.__pydantic_private__)
        return new
    kind = type(obj)
    if kind is list:
        return [clone(item) for item in obj]
    if kind is dict:
        return {key: clone(value) for key, value in obj.items()}
    return obj


def _has_image(message: AgentMessage) -> bool:
    """Whether ``message`` holds an image block (the exact classes first, as pydantic's
    ``isinstance`` is slow)."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        return False
    return any(
        type(block) is ImageContent or (type(block) is not TextContent and isinstance(block, ImageContent))
        for block in content
    )


def block_images(message: AgentMessage) -> AgentMessage:
    """``message`` with its image blocks replaced by a note (``images.blockImages``)."""
    content = getattr(message, "content", None)
    if not isinstance(content, list) or not any(isinstance(b, ImageContent) for b in content):
        return message
    copy_ = message.model_copy()
    copy_.content = [  # type: ignore[union-attr]
        TextContent(text="Image reading is disabled.") if isinstance(b, ImageContent) else b for b in content
    ]
    return copy_


# ---------------------------------------------------------------------------- provider


class ProviderHooks:
    """``stream_options`` of the agent.

    * ``settings()`` - the current settings (``retry.provider.*``, ``httpIdleTimeoutMs``);
    * ``session_id()`` - sent to providers that cache by session;
    * ``api_key()`` - ``--api-key`` (``None``: the registry's credentials).
    """

    def __init__(
        self,
        runner: EventRunner,
        *,
        settings: Callable[[], Settings],
        session_id: Callable[[], str],
        api_key: Callable[[], str | None],
    ) -> None:
        self.runner = runner
        self._settings = settings
        self._session_id = session_id
        self._api_key = api_key

    def transport_options(self) -> dict[str, Any]:
        """``retry.provider.*``, ``httpIdleTimeoutMs``, ``httpResponseDeadlineMs``,
        ``transport`` and ``websocketConnectTimeoutMs`` as the wire APIs read them from
        ``StreamOptions.extra``: the idle timeout, the response deadline and the WebSocket
        connect timeout in seconds (``None``: none), the provider-level retries, the
        longest server-requested delay accepted, and the preferred transport."""
        settings = self._settings()
        provider = settings.retry_settings().provider
        timeout_ms = provider.timeout_ms if provider.timeout_ms is not None else settings.http_idle_timeout_ms
        deadline_ms = settings.http_response_deadline_ms
        connect_ms = settings.websocket_connect_timeout_ms
        return {
            "timeout": timeout_ms / 1000 if timeout_ms else None,
            "response_deadline": deadline_ms / 1000 if deadline_ms else None,
            "transport": settings.transport,
            "websocket_connect_timeout": connect_ms / 1000 if connect_ms else None,
            "max_retries": provider.max_retries,
            "max_retry_delay": provider.max_retry_delay_ms / 1000 if provider.max_retry_delay_ms else None,
        }

    def _headers_hook(self, model: Model) -> Callable[[dict[str, Any]], Awaitable[None]] | None:
        """``before_provider_headers`` for a request to ``model`` (``None`` without handlers)."""
        runner = self.runner
        if not runner.has_handlers("before_provider_headers"):
            return None
        provider, api, model_id = model.provider, model.api, model.id

        async def on_headers(headers: dict[str, Any]) -> None:
            event = pi_hookspecs.BeforeProviderHeadersEvent.model_construct(
                headers=headers, provider=provider, api=api, model=model_id
            )
            await runner.emit("before_provider_headers", event)
            if event.headers is not headers:
                headers.clear()
                headers.update(event.headers)

        return on_headers

    def summary_options(self, model: Model, options: StreamOptions) -> StreamOptions:
        """A summary request's ``options`` with what pi 1.6.0's summary requests share with
        the agent's: the transport settings and ``before_provider_headers`` (the payload,
        response and stream-event hooks belong to the agent's own requests)."""
        update: dict[str, Any] = {"extra": {**self.transport_options(), **options.extra}}
        if options.on_headers is None:
            update["on_headers"] = self._headers_hook(model)
        return options.model_copy(update=update)

    async def stream_options(self, model: Model) -> StreamOptions:
        runner = self.runner
        # The events and options below hold pi's own values (the session id, the API key
        # override, the response's status and headers): constructed, not validated.
        options = StreamOptions.model_construct(
            session_id=self._session_id(), api_key=self._api_key(), extra=self.transport_options()
        )
        budgets = self._settings().thinking_budgets
        if budgets:  # thinkingBudgets: the wire APIs' budget-based thinking reads them
            options.extra["thinking_budgets"] = budgets
        provider, api, model_id = model.provider, model.api, model.id
        options.on_headers = self._headers_hook(model)
        if runner.has_handlers("before_provider_request"):

            async def on_payload(payload: Any) -> Any:
                event = pi_hookspecs.BeforeProviderRequestEvent.model_construct(
                    payload=payload, provider=provider, api=api, model=model_id
                )
                return await runner.emit("before_provider_request", event)

            options.on_payload = on_payload
        if runner.has_handlers("after_provider_response"):

            async def on_response(status: int, headers: dict[str, str]) -> None:
                event = AfterProviderResponseEvent.model_construct(
                    status=status, headers=dict(headers), provider=provider, api=api, model=model_id
                )
                await runner.emit("after_provider_response", event)

            options.on_response = on_response
        if runner.has_handlers("provider_stream_event"):

            async def on_raw(data: Any) -> None:
                event = pi_hookspecs.ProviderStreamEvent.model_construct(
                    data=data, provider=provider, api=api, model=model_id
                )
                await runner.emit("provider_stream_event", event)

            options.on_raw_event = on_raw
        return options


# ---------------------------------------------------------------------------- tools


async def tool_result_hook(
    runner: EventRunner,
    *,
    tool_name: str,
    tool_call_id: str,
    args: dict[str, Any],
    result: ToolResult,
    is_error: bool,
    parent_tool_call_id: str | None = None,
) -> ToolResult:
    """``result`` through the ``tool_result`` transform (``terminate`` is kept)."""
    out = await runner.emit(
        "tool_result",
        pi_hookspecs.ToolResultEvent.model_construct(
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            input=args,
            parent_tool_call_id=parent_tool_call_id,
            content=list(result.content),
            details=result.details,
            structured_content=result.structured_content,
            is_error=is_error,
            usage=result.usage,
        ),
    )
    return ToolResult(
        content=out.content,
        details=out.details,
        structured_content=out.structured_content,
        is_error=out.is_error,
        usage=out.usage,
        terminate=result.terminate,
    )


class ToolHooks:
    """``before_tool_call`` / ``after_tool_call`` of the agent.

    ``nested_usage(call_id, usage)`` adds the usage of the nested calls a tool made to
    its own (see :class:`~pi_core.runtime.nested.NestedLedger`).
    """

    def __init__(self, runner: EventRunner, *, nested_usage: Callable[[str, Usage | None], Usage | None]) -> None:
        self.runner = runner
        self._nested_usage = nested_usage

    async def before_tool_call(self, call: BeforeToolCall) -> Any:
        if not self.runner.has_handlers("tool_call"):
            return None
        event = ToolCallEvent.model_construct(
            tool_name=call.tool_call.name, tool_call_id=call.tool_call.id, input=call.args
        )
        result = await self.runner.emit("tool_call", event)
        if event.input is not call.args:
            call.args.clear()
            call.args.update(event.input)
        return result

    async def after_tool_call(self, after: AfterToolCall) -> ToolOutcome | None:
        outcome = after.outcome
        usage = self._nested_usage(after.tool_call.id, outcome.result.usage)
        changed = usage is not outcome.result.usage  # the usage of nested calls counts for the caller
        if changed:
            outcome = ToolOutcome(
                outcome.result.model_copy(update={"usage": usage}), outcome.is_error, outcome.duration_ms
            )
        if not self.runner.has_handlers("tool_result"):
            return outcome if changed else None
        patched = await tool_result_hook(
            self.runner,
            tool_name=after.tool_call.name,
            tool_call_id=after.tool_call.id,
            args=after.args,
            result=outcome.result,
            is_error=outcome.is_error,
        )
        return ToolOutcome(patched, patched.is_error, outcome.duration_ms)


__all__ = [
    "ContextHooks",
    "ProviderHooks",
    "ToolHooks",
    "block_images",
    "clone",
    "tool_result_hook",
]
