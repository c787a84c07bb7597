"""The ``anthropic-messages`` API on the official ``anthropic`` SDK (imported lazily)."""

from __future__ import annotations

import os
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

from ..errors import ProviderError
from ..models import budget_with_max_tokens, clamp_thinking_level, provider_thinking_value
from ..stream import MessageBuilder
from ..transform import prepare_context, supports_mid_conversation_system, system_update_text
from . import _common

DEFAULT_BASE_URL = "https://api.anthropic.com"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
OAUTH_BETA = "oauth-2025-04-20"

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


def _compat(model: Model, name: str, default: Any) -> Any:
    value = (model.compat or {}).get(name)
    return default if value is None else value


def cache_control(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    """The ``cache_control`` marker of the stable prefix, per ``cache_retention``
    (``options.extra`` or ``$PI_CACHE_RETENTION``): ``none``, ``short`` (default) or
    ``long`` (one hour, when the model supports it)."""
    retention = options.extra.get("cache_retention") or os.environ.get("PI_CACHE_RETENTION") or "short"
    if retention == "none":
        return None
    if retention == "long" and _compat(model, "supportsLongCacheRetention", True):
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


# --------------------------------------------------------------------------- request


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            blocks.append(
                {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}
            )
    return blocks


def _tool_result_content(message: ToolResultMessage) -> str | list[dict[str, Any]]:
    texts = [b.text for b in message.content if isinstance(b, TextContent)]
    images = [b for b in message.content if isinstance(b, ImageContent)]
    if not images:
        return "\n".join(texts)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts if t]
    if not blocks:
        blocks.append({"type": "text", "text": "(see attached image)"})
    for image in images:
        blocks.append(
            {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}
        )
    return blocks


def _assistant_blocks(message: AssistantMessage, allow_empty_signature: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                if block.thinking_signature:
                    blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
                continue
            signature = (block.thinking_signature or "").strip()
            if not block.thinking.strip() and not signature:
                continue
            if signature:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature})
            elif allow_empty_signature:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": ""})
            else:
                blocks.append({"type": "text", "text": block.thinking})
        elif isinstance(block, ToolCall):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments or {}})
    return blocks


def convert_messages(messages: list[Any], model: Model, cache: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Transformed messages as Anthropic ``messages``: consecutive tool results share
    one user message; the last user message's last block carries ``cache``."""
    allow_empty = bool(_compat(model, "allowEmptySignature", False))
    params: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if text:
                params.append({"role": "system", "content": [{"type": "text", "text": text}]})
        elif isinstance(message, UserMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    params.append({"role": "user", "content": message.content})
            else:
                blocks = _user_blocks(message.content)
                if blocks:
                    params.append({"role": "user", "content": blocks})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message, allow_empty)
            if blocks:
                params.append({"role": "assistant", "content": blocks})
        elif isinstance(message, ToolResultMessage):
            results = [message]
            while index < len(messages) and isinstance(messages[index], ToolResultMessage):
                results.append(messages[index])
                index += 1
            params.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": result.tool_call_id,
                            "content": _tool_result_content(result),
                            "is_error": result.is_error,
                        }
                        for result in results
                    ],
                }
            )
    if cache and params and params[-1]["role"] in ("user", "system"):
        last = params[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache}]
        elif last["content"] and last["content"][-1].get("type") in ("text", "image", "tool_result"):
            last["content"][-1]["cache_control"] = cache
    return params


def convert_tools(tools: list[ToolDeclaration], model: Model, cache: dict[str, Any] | None) -> list[dict[str, Any]]:
    eager = bool(_compat(model, "supportsEagerToolInputStreaming", True))
    cache_tools = bool(_compat(model, "supportsCacheControlOnTools", True))
    converted = []
    for position, tool in enumerate(tools):
        schema = tool.parameters or {}
        entry: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "input_schema": {
                **{k: v for k, v in schema.items() if k not in ("type", "properties", "required")},
                "type": "object",
                "properties": schema.get("properties", {}),
                "required": schema.get("required", []),
            },
        }
        if eager:
            entry["eager_input_streaming"] = True
        if cache and cache_tools and position == len(tools) - 1:
            entry["cache_control"] = cache
        converted.append(entry)
    return converted


def build_request(model: Model, context: LlmContext, options: StreamOptions) -> tuple[dict[str, Any], list[str]]:
    """``(payload, beta features)`` of a Messages request."""
    cache = cache_control(model, options)
    prepared = prepare_context(model, context, mid_conversation_system=supports_mid_conversation_system(model))
    payload: dict[str, Any] = {
        "model": model.id,
        "max_tokens": options.max_tokens or model.max_tokens,
        "messages": convert_messages(prepared.messages, model, cache),
        "stream": True,
    }
    if prepared.system_prompt:
        block: dict[str, Any] = {"type": "text", "text": prepared.system_prompt}
        if cache:
            block["cache_control"] = cache
        payload["system"] = [block]
    if prepared.tools:
        payload["tools"] = convert_tools(prepared.tools, model, cache)
    betas: list[str] = []
    if prepared.tools and not _compat(model, "supportsEagerToolInputStreaming", True):
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)

    thinking_enabled = False
    if model.reasoning:
        level = clamp_thinking_level(model, options.thinking_level)
        if level != "off":
            thinking_enabled = True
            display = options.extra.get("thinking_display", "summarized")
            if _compat(model, "forceAdaptiveThinking", False):
                payload["thinking"] = {"type": "adaptive", "display": display}
                effort = provider_thinking_value(model, level)
                effort = {"minimal": "low"}.get(effort or "high", effort or "high")
                payload["output_config"] = {"effort": effort}
            else:
                max_tokens, budget = budget_with_max_tokens(
                    options.max_tokens, model.max_tokens, level, options.extra.get("thinking_budgets")
                )
                payload["max_tokens"] = max_tokens
                payload["thinking"] = {"type": "enabled", "budget_tokens": max(1024, budget), "display": display}
                betas.append(INTERLEAVED_THINKING_BETA)
        else:
            payload["thinking"] = {"type": "disabled"}
    if options.temperature is not None and not thinking_enabled and _compat(model, "supportsTemperature", True):
        payload["temperature"] = options.temperature
    tool_choice = options.extra.get("tool_choice")
    if tool_choice:
        payload["tool_choice"] = {"type": tool_choice} if isinstance(tool_choice, str) else tool_choice
    return payload, betas


# --------------------------------------------------------------------------- streaming


def _map_stop(reason: str, details: Any) -> tuple[str, str | None]:
    if reason in _STOP_REASONS:
        return _STOP_REASONS[reason], None
    if reason == "refusal":
        explanation = getattr(details, "explanation", None) if details is not None else None
        return "error", explanation or "The model refused to complete the request"
    return "error", f"Provider stopped with: {reason}"


async def stream_anthropic(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """Run one streaming Messages request, reporting it through ``out``."""
    payload, betas = build_request(model, context, options)
    headers = _common.base_headers(model, options)
    api_key = _common.require_api_key(model, options, headers, "authorization", "x-api-key")
    bearer = bool(options.extra.get("auth_header")) or "sk-ant-oat" in api_key
    if "sk-ant-oat" in api_key:
        betas.append(OAUTH_BETA)
    existing = next((k for k in headers if k.lower() == "anthropic-beta"), None)
    if betas and existing is None:
        headers["anthropic-beta"] = ",".join(dict.fromkeys(betas))
    headers = await _common.apply_headers_hook(options, headers)
    payload = await _common.apply_payload_hook(options, payload)
    if isinstance(payload, dict):
        payload["stream"] = True

    import anthropic
    from anthropic.types import Message, RawMessageStreamEvent

    base_url = model.base_url or DEFAULT_BASE_URL
    client = _common.cached_client(
        ("anthropic", base_url, api_key),
        lambda: anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0),
    )
    request_headers = _common.sdk_headers(headers, anthropic.omit)
    if not bearer and "api.anthropic.com" not in base_url and api_key != "unused":
        # The SDK sends the key as a bearer token; compatible servers often expect x-api-key.
        request_headers.setdefault("x-api-key", api_key)
    await _common.post_stream(
        client,
        "/v1/messages",
        payload=payload,
        headers=request_headers,
        options=options,
        out=out,
        cast_to=Message,
        stream_cls=anthropic.AsyncStream[RawMessageStreamEvent],
        status_error=anthropic.APIStatusError,
        consume=lambda events: _consume(events, model, options, out),
    )


async def _consume(events: Any, model: Model, options: StreamOptions, out: MessageBuilder) -> None:
    blocks: dict[int, int] = {}  # Anthropic block index -> content index
    saw_start = saw_stop = False
    async for event in events:
        await _common.report_raw_event(options, event)
        kind = event.type
        if kind == "message_start":
            saw_start = True
            message = event.message
            out.message.response_id = message.id
            if message.model and message.model != model.id:
                out.message.response_model = message.model
            _apply_usage(out, message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            btype = block.type
            if btype == "text":
                blocks[event.index] = out.text_start(getattr(block, "text", "") or "")
            elif btype == "thinking":
                blocks[event.index] = out.thinking_start(
                    getattr(block, "thinking", "") or "", signature=getattr(block, "signature", None) or None
                )
            elif btype == "redacted_thinking":
                blocks[event.index] = out.thinking_start(
                    "[Reasoning redacted]", signature=getattr(block, "data", ""), redacted=True
                )
            elif btype == "tool_use":
                started = out.tool_start(block.id, block.name)
                blocks[event.index] = started
                initial = getattr(block, "input", None)
                if initial:
                    out.tool_call(started).arguments = dict(initial)
        elif kind == "content_block_delta":
            found = blocks.get(event.index)
            if found is None:
                continue
            index = found
            delta = event.delta
            dtype = delta.type
            if dtype == "text_delta":
                out.text_delta(index, delta.text)
            elif dtype == "thinking_delta":
                out.thinking_delta(index, delta.thinking)
            elif dtype == "signature_delta":
                out.thinking_signature(index, delta.signature, append=True)
            elif dtype == "input_json_delta":
                out.tool_delta(index, delta.partial_json)
        elif kind == "content_block_stop":
            if event.index not in blocks:
                continue
            ended = blocks.pop(event.index)
            kind_of = out.message.content[ended].type
            if kind_of == "text":
                out.text_end(ended)
            elif kind_of == "thinking":
                out.thinking_end(ended)
            else:
                out.tool_end(ended)
        elif kind == "message_delta":
            reason = getattr(event.delta, "stop_reason", None)
            if reason:
                stop, error = _map_stop(reason, getattr(event.delta, "stop_details", None))
                out.stop(stop, raw=reason, error_message=error)
            if getattr(event, "usage", None) is not None:
                _apply_usage(out, event.usage)
        elif kind == "message_stop":
            saw_stop = True
    if saw_start and not saw_stop:
        raise ProviderError("Anthropic stream ended before message_stop")
    if out.message.stop_reason == "pending":
        raise ProviderError("Anthropic stream ended without a stop reason")


def _apply_usage(out: MessageBuilder, usage: Any) -> None:
    if usage is None:
        return
    details = getattr(usage, "output_tokens_details", None)
    creation = getattr(usage, "cache_creation", None)
    out.set_usage(
        input=getattr(usage, "input_tokens", None),
        output=getattr(usage, "output_tokens", None),
        cache_read=getattr(usage, "cache_read_input_tokens", None),
        cache_write=getattr(usage, "cache_creation_input_tokens", None),
        cache_write_1h=getattr(creation, "ephemeral_1h_input_tokens", None) if creation is not None else None,
        reasoning=getattr(details, "thinking_tokens", None) if details is not None else None,
    )
