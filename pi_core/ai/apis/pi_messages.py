"""The ``pi-messages`` API: pi's own message protocol, spoken by the Radius gateway
(and by any backend that implements it; a ``models.json`` provider with
``"api": "pi-messages"`` reaches one).

The request is one POST of ``{"model", "context", "options"}`` to ``<baseUrl>/messages``:

* ``context`` is the conversation as pi keeps it, in the TypeScript pi's JSON spelling
  (camelCase): the messages a provider understands (system, user, assistant,
  toolResult; the coding-agent roles turned into user messages as for every API), not
  transformed for any model: the backend does that for the model it routes to.
  ``systemPrompt`` and ``tools`` go along only when no system message carries them;
* ``options`` holds ``temperature``, ``maxTokens``, ``reasoning`` (the thinking level,
  clamped to the model; absent when off), ``cacheRetention`` (the request's, else
  ``long`` when ``PI_CACHE_RETENTION=long``), ``sessionId`` and ``toolChoice``, each
  only when set;
* ``Authorization: Bearer <key>`` (an API key or the login's access token).

The answer is an event stream whose ``data`` lines are pi's own stream events without
their ``partial`` message (``start``, ``text_start``/``_delta``/``_end``, the same for
``thinking`` and ``toolcall``), ended by ``done`` (stop reason, usage with its cost,
response id) or ``error`` (stop reason, error message). A content index must name the
next block (a start) or one already started; anything else fails the request.
"""

from __future__ import annotations

import os
import time
from typing import Any

from pydantic import ValidationError

from pi_hookspecs import LlmContext, Model, StreamOptions, ToolCall, Usage

from .._memo import MISSING, MessageMemo
from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..models import clamp_thinking_level
from ..transform import to_llm_messages
from . import _common

_MEMO = MessageMemo()
_ROLES_WITH_PROMPT = frozenset({"system"})


class _Finished(Exception):
    """The terminal event arrived: stop reading (what follows it is not pi's)."""


class PiMessagesProtocolError(ProviderError):
    """The backend sent an event that does not fit the message being built."""


def request_url(model: Model, options: StreamOptions) -> str:
    """``<baseUrl>/messages`` (``?debug=1`` when ``options.extra["debug"]`` is true)."""
    base = _common.endpoint_base_url(model, "")
    if not base:
        raise ProviderError(f"Model {model.provider}/{model.id} has no baseUrl: the pi-messages API needs one")
    url = base.rstrip("/") + "/messages"
    return url + "?debug=1" if options.extra.get("debug") else url


def _message_json(message: Any) -> dict[str, Any]:
    """A message as the TypeScript pi writes it, converted once per message object."""
    found = _MEMO.get(message, "pi-messages")
    if found is not MISSING:
        return found  # type: ignore[no-any-return]
    data = message.to_json() if hasattr(message, "to_json") else dict(message)
    return _MEMO.put(message, "pi-messages", data)  # type: ignore[no-any-return]


def context_json(context: LlmContext) -> dict[str, Any]:
    """The ``context`` of the request body."""
    messages = to_llm_messages(context.messages)
    data: dict[str, Any] = {}
    has_system = any(getattr(m, "role", None) in _ROLES_WITH_PROMPT for m in messages)
    if context.system_prompt and not has_system:
        data["systemPrompt"] = context.system_prompt
    data["messages"] = [_message_json(m) for m in messages]
    if context.tools and not has_system:
        data["tools"] = [tool.to_json() for tool in context.tools]
    return data


def cache_retention(options: StreamOptions) -> str | None:
    """The request's cache retention; unset, ``long`` only when ``PI_CACHE_RETENTION``
    asks for it (the backend's default applies otherwise)."""
    value = options.extra.get("cache_retention")
    if isinstance(value, str) and value:
        return value
    return "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else None


def request_options(model: Model, options: StreamOptions) -> dict[str, Any]:
    level = clamp_thinking_level(model, options.thinking_level) if options.thinking_level else "off"
    values = {
        "temperature": options.temperature,
        "maxTokens": options.max_tokens,
        "reasoning": None if level == "off" else level,
        "cacheRetention": cache_retention(options),
        "sessionId": options.session_id,
        "toolChoice": options.extra.get("tool_choice"),
    }
    return {key: value for key, value in values.items() if value is not None}


def build_payload(model: Model, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
    return {"model": model.id, "context": context_json(context), "options": request_options(model, options)}


class PiMessagesDecoder:
    """Applies the wire events to the message being built (:class:`MessageBuilder`)."""

    def __init__(self, out: MessageBuilder) -> None:
        self.out = out
        self.terminal = False

    def _index(self, event: dict[str, Any], kind: str) -> int:
        index = event.get("contentIndex")
        content = self.out.message.content
        limit = len(content) if kind.endswith("_start") else len(content) - 1
        valid = type(index) is int and 0 <= index <= limit
        if valid and kind.endswith("_start"):
            valid = index == len(content)  # a start adds the next block
        if not valid:
            raise PiMessagesProtocolError(f"Invalid contentIndex {index!r} in pi-messages {kind} event")
        return index  # type: ignore[return-value]

    def _expect(self, index: int, cls: type, kind: str) -> None:
        if not isinstance(self.out.message.content[index], cls):
            raise PiMessagesProtocolError(f"pi-messages {kind} event for content {index}, which is not of that type")

    async def __call__(self, name: str, event: Any) -> None:
        if not isinstance(event, dict) or self.terminal:
            return
        out = self.out
        kind = event.get("type")
        if kind in ("done", "error"):
            self._finish(event, kind)
            raise _Finished
        if kind == "start":
            out.start()
        elif kind == "text_start":
            self._index(event, kind)
            out.text_start()
        elif kind == "text_delta":
            index = self._index(event, kind)
            out.text_delta(index, _text(event.get("delta")))
        elif kind == "text_end":
            index = self._index(event, kind)
            out.text_end(
                index,
                text=_optional_text(event.get("content")),
                signature=_optional_text(event.get("contentSignature")),
            )
        elif kind == "thinking_start":
            self._index(event, kind)
            out.thinking_start()
        elif kind == "thinking_delta":
            index = self._index(event, kind)
            out.thinking_delta(index, _text(event.get("delta")))
        elif kind == "thinking_end":
            index = self._index(event, kind)
            out.thinking_end(
                index,
                thinking=_optional_text(event.get("content")),
                signature=_optional_text(event.get("contentSignature")),
            )
            if event.get("redacted") is True:
                out.message.content[index].redacted = True  # type: ignore[union-attr]
        elif kind == "toolcall_start":
            self._index(event, kind)
            out.tool_start(str(event.get("id") or ""), str(event.get("toolName") or ""))
        elif kind == "toolcall_delta":
            index = self._index(event, kind)
            self._expect(index, ToolCall, kind)
            out.tool_delta(index, _text(event.get("delta")))
        elif kind == "toolcall_end":
            index = self._index(event, kind)
            self._expect(index, ToolCall, kind)
            self._end_tool(index, event.get("toolCall"))

    def _end_tool(self, index: int, final: Any) -> None:
        """End the call with the complete call the backend sends (its arguments win)."""
        call = self.out.tool_call(index)
        if isinstance(final, dict):
            try:
                merged = ToolCall.model_validate({**call.to_json(), **final, "type": "toolCall"})
            except ValidationError as error:
                raise PiMessagesProtocolError(
                    f"Invalid toolCall in pi-messages toolcall_end event: {_first(error)}"
                ) from None
            self.out.message.content[index] = merged
            call = merged
        arguments = call.arguments
        self.out.tool_end(index)
        call.arguments = arguments

    def _finish(self, event: dict[str, Any], kind: str) -> None:
        self.terminal = True
        message = self.out.message
        default = "stop" if kind == "done" else "error"
        reason = event.get("reason")
        message.stop_reason = reason if isinstance(reason, str) and reason else default  # type: ignore[assignment]
        usage = event.get("usage")
        if isinstance(usage, dict):
            try:
                message.usage = Usage.model_validate(usage)
            except ValidationError as error:
                raise PiMessagesProtocolError(f"Invalid usage in pi-messages {kind} event: {_first(error)}") from None
        for key, attribute in (
            ("responseId", "response_id"),
            ("responseModel", "response_model"),
            ("providerThinkingLevel", "provider_thinking_level"),
        ):
            value = event.get(key)
            if isinstance(value, str):
                setattr(message, attribute, value)
        if kind == "error":
            text = event.get("errorMessage")
            message.error_message = text if isinstance(text, str) and text else "The provider reported an error"
            if message.stop_reason not in ("error", "aborted"):
                message.stop_reason = "error"
        rewrite = event.get("rewrite")
        if isinstance(rewrite, dict):
            entry = {"type": "pi_messages_rewrite", "timestamp": int(time.time() * 1000), "details": dict(rewrite)}
            message.diagnostics = [*(message.diagnostics or []), entry]


def _first(error: ValidationError) -> str:
    """The first problem pydantic found, on one line."""
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem.get("loc", ()))
    return f"{where}: {problem.get('msg', 'invalid')}" if where else str(problem.get("msg", "invalid"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


async def stream_pi_messages(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    url = request_url(model, options)
    headers = _common.base_headers(model, options)
    _common.set_bearer_auth(model, options, headers)
    payload = build_payload(model, context, options)
    decoder = PiMessagesDecoder(out)
    try:
        await _common.post_sse(url, payload=payload, headers=headers, options=options, out=out, on_event=decoder)
    except _Finished:
        return
    if not decoder.terminal:
        raise ProviderError(f"{model.provider} stream ended without a terminal event")
