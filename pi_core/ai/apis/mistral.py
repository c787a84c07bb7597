"""The ``mistral-conversations`` API: Mistral's native chat completions endpoint
(``POST {baseUrl}/v1/chat/completions``, ``stream: true``) over HTTP and SSE.

It looks like OpenAI's Chat Completions but differs where pi 1.6.0 relies on it:
thinking travels as ``{"type": "thinking", "thinking": [text chunks]}`` content chunks
(sent back on later turns), images are ``image_url`` strings, assistant messages say
``prefix: false``, tool-call ids are nine alphanumeric characters, and reasoning is
asked for with ``reasoning_effort`` (models with a ``thinkingLevelMap``) or
``prompt_mode: "reasoning"``. With a session id, ``prompt_cache_key`` and the
``x-affinity`` header keep a conversation on the same cache.
"""

from __future__ import annotations

import json
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    ImageContent,
    LlmContext,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

from .._memo import MISSING, MessageMemo, PrefixReuse
from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..models import clamp_thinking_level
from ..token_budget import clamp_max_tokens
from ..tool_call_ids import mistral_tool_call_id
from ..transform import prepare_context, supports_mid_conversation_system, system_update_text
from . import _common

DEFAULT_BASE_URL = "https://api.mistral.ai"
TOOL_IMAGE_OMITTED = "[tool image omitted: model does not support images]"
IMAGE_OMITTED = "(image omitted: model does not support images)"


# --------------------------------------------------------------------------- request


def _image_url(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": f"data:{image.mime_type};base64,{image.data}"}


def _user_message(message: UserMessage, vision: bool) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    parts: list[dict[str, Any]] = []
    had_images = False
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            had_images = True
            if vision:
                parts.append(_image_url(block))
    if parts:
        return {"role": "user", "content": parts}
    return {"role": "user", "content": IMAGE_OMITTED} if had_images else None


def _assistant_message(message: AssistantMessage) -> dict[str, Any] | None:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.thinking.strip():
                parts.append({"type": "thinking", "thinking": [{"type": "text", "text": block.thinking}]})
        elif isinstance(block, ToolCall):
            arguments = json.dumps(block.arguments or {}, separators=(",", ":"), ensure_ascii=False)
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": arguments},
                    "index": 0,
                }
            )
    if not parts and not calls:
        return None
    entry: dict[str, Any] = {"role": "assistant", "prefix": False}
    if parts:
        entry["content"] = parts
    if calls:
        entry["tool_calls"] = calls
    return entry


def tool_result_text(text: str, has_images: bool, vision: bool, is_error: bool) -> str:
    """The text of a tool result as Mistral gets it (errors marked ``[tool error]``)."""
    trimmed = text.strip()
    prefix = "[tool error] " if is_error else ""
    if trimmed:
        return prefix + trimmed + (f"\n{TOOL_IMAGE_OMITTED}" if has_images and not vision else "")
    if has_images:
        return prefix + ("(see attached image)" if vision else IMAGE_OMITTED)
    return prefix + "(no tool output)"


def _tool_message(result: ToolResultMessage, vision: bool) -> dict[str, Any]:
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    images = [b for b in result.content if isinstance(b, ImageContent)]
    content: list[dict[str, Any]] = [
        {"type": "text", "text": tool_result_text(text, bool(images), vision, result.is_error)}
    ]
    if vision:
        content.extend(_image_url(image) for image in images)
    return {"role": "tool", "tool_call_id": result.tool_call_id, "name": result.tool_name, "content": content}


_CONVERTED = MessageMemo()
_CONVERTED_PREFIX = PrefixReuse()
"""Each message's Mistral form, converted once (see pi_core.ai._memo); never mutated."""


def convert_messages(model: Model, prompt: str, messages: list[Any]) -> list[dict[str, Any]]:
    vision = "image" in model.input
    memo = _CONVERTED
    index, params, _ = _CONVERTED_PREFIX.resume(vision, messages)
    mark: tuple[int, int, Any] | None = None
    while index < len(messages):
        message = messages[index]
        index += 1
        entry: Any
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if text:
                params.append({"role": "system", "content": text})
            continue
        if isinstance(message, UserMessage):
            entry = memo.get(message, vision)
            if entry is MISSING:
                entry = memo.put(message, vision, _user_message(message, vision))
        elif isinstance(message, AssistantMessage):
            entry = memo.get(message, vision)
            if entry is MISSING:
                entry = memo.put(message, vision, _assistant_message(message))
            if entry is not None:
                mark = (index - 1, len(params), None)  # what follows does not depend on what came before
        elif isinstance(message, ToolResultMessage):
            entry = memo.get(message, vision)
            if entry is MISSING:
                entry = memo.put(message, vision, _tool_message(message, vision))
        else:
            continue
        if entry is not None:
            params.append(entry)
    _CONVERTED_PREFIX.save(vision, messages, params, mark)
    return [_common.instruction_item("system", prompt), *params] if prompt else params


def convert_tools(tools: list[ToolDeclaration], strict: bool) -> list[dict[str, Any]]:
    """Function tools. With ``strict`` (the model's ``supportsStrictMode``), a tool that
    asks for JSON-schema constrained sampling goes with its strict schema and
    ``strict: true``; every other tool says ``strict: false``."""
    from .google_shared import make_strict_schema, strict_tool

    converted = []
    for tool in tools:
        parameters = tool.parameters or {"type": "object", "properties": {}}
        constrained = strict_tool(tool, strict)
        function = {
            "name": tool.name,
            "description": tool.description,
            "parameters": make_strict_schema(parameters) if constrained else parameters,
            "strict": constrained,
        }
        converted.append({"type": "function", "function": function})
    return converted


def _tool_choice(choice: Any) -> Any:
    if not choice:
        return None
    if choice in ("auto", "none", "any", "required"):
        return choice
    if isinstance(choice, dict):
        inner = choice.get("function")
        function = inner if isinstance(inner, dict) else choice
        name = function.get("name")
        if isinstance(name, str) and name:
            return {"type": "function", "function": {"name": name}}
    return None


def _reasoning(model: Model, options: StreamOptions) -> tuple[str | None, str | None]:
    """``(prompt_mode, reasoning_effort)``: models with a ``thinkingLevelMap`` take an
    effort (the map's value for the level, ``high`` when it has none; its ``off`` value
    when thinking is off); other reasoning models take ``prompt_mode: reasoning``."""
    if not model.reasoning:
        return None, None
    requested = options.thinking_level
    level = clamp_thinking_level(model, requested) if requested and requested != "off" else "off"
    mapping = model.thinking_level_map
    if mapping is not None:
        if level == "off":
            off = mapping.get("off")
            return None, off if isinstance(off, str) else None
        value = mapping.get(level)
        return None, value if isinstance(value, str) else "high"
    return ("reasoning" if level != "off" else None), None


def use_prompt_cache(options: StreamOptions) -> bool:
    return bool(options.session_id) and options.extra.get("cache_retention") != "none"


def build_payload(model: Model, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
    prepared = prepare_context(model, context, mid_conversation_system=supports_mid_conversation_system(model))
    payload: dict[str, Any] = {
        "model": model.id,
        "stream": True,
        "messages": convert_messages(model, prepared.system_prompt, prepared.messages),
    }
    if prepared.tools:
        payload["tools"] = convert_tools(prepared.tools, bool((model.compat or {}).get("supportsStrictMode")))
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    payload["max_tokens"] = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    choice = _tool_choice(options.extra.get("tool_choice"))
    if choice is not None:
        payload["tool_choice"] = choice
    prompt_mode, effort = _reasoning(model, options)
    if prompt_mode:
        payload["prompt_mode"] = prompt_mode
    if effort:
        payload["reasoning_effort"] = effort
    if use_prompt_cache(options):
        payload["prompt_cache_key"] = options.session_id
    return payload


# --------------------------------------------------------------------------- streaming


async def stream_mistral(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """Run one streaming Mistral request, reporting it through ``out``."""
    payload = build_payload(model, context, options)
    headers = _common.base_headers(model, options)
    _common.set_bearer_auth(model, options, headers)
    if use_prompt_cache(options) and options.session_id:
        _common.set_default_header(headers, "x-affinity", options.session_id)
    state = _ChunkState(out)
    await _common.post_sse(
        _common.join_url(model.base_url or DEFAULT_BASE_URL, "/v1/chat/completions"),
        payload=payload,
        headers=headers,
        options=options,
        out=out,
        on_event=state.handle,
        error_events=_error_event,
    )
    state.finish()


def _error_event(_name: str, data: Any) -> BaseException | None:
    """An event that is not a completion chunk ends the stream: with the provider's
    message when it is an error object, else as malformed."""
    if isinstance(data, dict) and isinstance(data.get("choices"), list):
        return None
    if isinstance(data, dict) and (data.get("object") == "error" or data.get("error") or data.get("message")):
        return _common.HttpStatusError(200, data)
    return ProviderError("Invalid Mistral streaming event")


_FINISH = {"stop": "stop", "length": "length", "model_length": "length", "tool_calls": "toolUse"}


class _ChunkState:
    """Turns Mistral completion chunks into builder calls."""

    def __init__(self, out: MessageBuilder) -> None:
        self.out = out
        self.open = _common.OpenBlock(out)
        self.calls: dict[Any, int] = {}  # Mistral tool-call index (or id) -> content index

    async def handle(self, _name: str, chunk: Any) -> None:
        out = self.out
        if not out.message.response_id and isinstance(chunk.get("id"), str):
            out.message.response_id = chunk["id"]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            _apply_usage(out, usage)
        choices = chunk["choices"]
        choice = choices[0] if choices and isinstance(choices[0], dict) else None
        if choice is None:
            return
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            stop = _FINISH.get(reason)
            if stop is not None:
                out.stop(stop, raw=reason)
            elif reason == "error":  # a transient server failure: "server error" makes it retryable
                out.stop("error", raw=reason, error_message="Provider stopped with: error (server error)")
            else:
                out.stop("error", raw=reason, error_message=f"Provider stopped with: {reason}")
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        content = delta.get("content")
        for item in [content] if isinstance(content, str) else content if isinstance(content, list) else ():
            if isinstance(item, str):
                # empty deltas (around thinking and tool calls) would split a block
                if item:
                    out.text_delta(self.open.switch("text"), item)
            elif isinstance(item, dict) and item.get("type") == "thinking":
                pieces = item.get("thinking")
                text = (
                    "".join(p.get("text") or "" for p in pieces if isinstance(p, dict))
                    if isinstance(pieces, list)
                    else ""
                )
                if text:
                    out.thinking_delta(self.open.switch("thinking"), text)
            elif isinstance(item, dict) and item.get("type") == "text":
                text = item.get("text") or ""
                if text:
                    out.text_delta(self.open.switch("text"), text)
        for call in delta.get("tool_calls") or ():
            if isinstance(call, dict):
                self._tool_call(call)

    def _tool_call(self, call: dict[str, Any]) -> None:
        out = self.out
        self.open.close()
        position = call.get("index")
        given = call.get("id")
        call_id = given if isinstance(given, str) and given and given != "null" else None
        if call_id is None:
            call_id = mistral_tool_call_id(f"toolcall:{position if isinstance(position, int) else 0}")
        key = position if isinstance(position, int) else call_id
        given_function = call.get("function")
        function: dict[str, Any] = given_function if isinstance(given_function, dict) else {}
        index = self.calls.get(key)
        if index is None:
            name = function.get("name")
            index = self.calls[key] = out.tool_start(call_id, name if isinstance(name, str) else "")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments or {})
        out.tool_delta(index, arguments)

    def finish(self) -> None:
        self.open.close()
        self.out.end_open_blocks()
        if self.out.message.stop_reason == "pending":
            raise ProviderError("Mistral stream ended without a finish reason")


def _apply_usage(out: MessageBuilder, usage: dict[str, Any]) -> None:
    def number(value: Any) -> int:
        return value if isinstance(value, int) else 0

    prompt = number(usage.get("prompt_tokens"))
    completion = number(usage.get("completion_tokens"))
    cached: Any = None
    for path in (
        ("promptTokensDetails", "cachedTokens"),
        ("prompt_tokens_details", "cached_tokens"),
        ("promptTokenDetails", "cachedTokens"),
        ("prompt_token_details", "cached_tokens"),
        ("numCachedTokens",),
        ("num_cached_tokens",),
    ):
        cached = _common.field(usage, *path)
        if cached is not None:
            break
    read = min(prompt, max(0, int(cached))) if isinstance(cached, int | float) else 0
    total = usage.get("total_tokens")
    out.set_usage(
        input=max(0, prompt - read),
        output=completion,
        cache_read=read,
        cache_write=0,
        total_tokens=total if isinstance(total, int) and total else None,
    )
