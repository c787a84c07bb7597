"""The ``openai-responses`` API (OpenAI Responses) over HTTP and SSE.

Requests are stateless (``store: false``): reasoning items come back with their
encrypted content and are replayed from the message history, kept in the thinking
block's ``thinking_signature`` (the item as JSON), for the same model only.
"""

from __future__ import annotations

import hashlib
import json
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

from .._memo import MISSING, MessageMemo, PrefixReuse
from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..models import clamp_thinking_level, provider_thinking_value
from ..token_budget import clamp_max_tokens
from ..transform import prepare_context, supports_mid_conversation_system, system_update_text
from . import _common

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MIN_OUTPUT_TOKENS = 16


def _compat(model: Model, name: str, default: Any) -> Any:
    value = (model.compat or {}).get(name)
    return default if value is None else value


def _is_same_model(message: AssistantMessage, model: Model) -> bool:
    return message.provider == model.provider and message.api == model.api and message.model == model.id


def encode_text_signature(item_id: str, phase: str | None = None) -> str:
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return json.dumps(payload, separators=(",", ":"))


def decode_text_signature(signature: str | None) -> tuple[str | None, str | None]:
    if not signature:
        return None, None
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


# --------------------------------------------------------------------------- request


def _image_input(image: ImageContent) -> dict[str, Any]:
    return {"type": "input_image", "detail": "auto", "image_url": f"data:{image.mime_type};base64,{image.data}"}


def _tool_output(model: Model, result: ToolResultMessage) -> str | list[dict[str, Any]]:
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    images = [b for b in result.content if isinstance(b, ImageContent)]
    if not images or "image" not in model.input:
        return text or ("(see attached image)" if images else "(no tool output)")
    output: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    output.extend(_image_input(image) for image in images)
    return output


def _assistant_items(message: AssistantMessage, model: Model, position: int) -> list[dict[str, Any]]:
    same = _is_same_model(message, model)
    items: list[dict[str, Any]] = []
    text_count = 0
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if same and block.thinking_signature:
                try:
                    item = json.loads(block.thinking_signature)
                except ValueError:
                    continue
                if isinstance(item, dict) and item.get("type") == "reasoning":
                    items.append(item)
        elif isinstance(block, TextContent):
            item_id, phase = decode_text_signature(block.text_signature)
            fallback = f"msg_pi_{position}" if text_count == 0 else f"msg_pi_{position}_{text_count}"
            text_count += 1
            if not item_id:
                item_id = fallback
            elif len(item_id) > 64:
                item_id = "msg_" + hashlib.sha256(item_id.encode()).hexdigest()[:32]
            entry: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                "status": "completed",
                "id": item_id,
            }
            if phase:
                entry["phase"] = phase
            items.append(entry)
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": call_id,
                "name": block.name,
                "arguments": json.dumps(block.arguments or {}),
            }
            if same and item_id.startswith("fc_"):
                call["id"] = item_id
            if same and block.namespace is not None:
                call["namespace"] = block.namespace
            items.append(call)
    return items


def convert_input(model: Model, prompt: str, messages: list[Any]) -> list[dict[str, Any]]:
    role = "developer" if model.reasoning and _compat(model, "supportsDeveloperRole", True) else "system"
    items: list[dict[str, Any]] = []
    if prompt:
        items.append(_common.instruction_item(role, prompt))
    # Each message's items are converted once (see pi_core.ai._memo) and never mutated.
    memo = _CONVERTED
    model_key = (model.provider, model.api, model.id, "image" in model.input)
    # for a conversation that grew at its end, the converted start is reused as a whole
    start, body, _ = _CONVERTED_PREFIX.resume((model_key, role), messages)
    before_last = 0
    for position in range(start, len(messages)):
        message = messages[position]
        before_last = len(body)
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if text:
                body.append({"role": role, "content": text})
            continue
        key = (model_key, position)
        converted = memo.get(message, key)
        if converted is MISSING:
            converted = memo.put(message, key, _message_items(message, model, position))
        body.extend(converted)
    mark = (len(messages) - 1, before_last, None) if messages else None
    _CONVERTED_PREFIX.save((model_key, role), messages, body, mark)
    return items + body


_CONVERTED = MessageMemo()
_CONVERTED_PREFIX = PrefixReuse()


def _message_items(message: Any, model: Model, position: int) -> list[dict[str, Any]]:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return [{"role": "user", "content": [{"type": "input_text", "text": message.content}]}]
        parts: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextContent):
                parts.append({"type": "input_text", "text": block.text})
            elif isinstance(block, ImageContent):
                parts.append(_image_input(block))
        return [{"role": "user", "content": parts}] if parts else []
    if isinstance(message, AssistantMessage):
        return _assistant_items(message, model, position)
    if isinstance(message, ToolResultMessage):
        return [
            {
                "type": "function_call_output",
                "call_id": message.tool_call_id.partition("|")[0],
                "output": _tool_output(model, message),
            }
        ]
    return []


def convert_tools(tools: list[ToolDeclaration], model: Model, *, strict: bool | None = False) -> list[dict[str, Any]]:
    """Function tools; each carries ``strict`` (``None`` is sent as JSON null, as the
    Codex backend expects) unless the model's ``supportsStrictMode`` is false."""
    supports_strict = (model.compat or {}).get("supportsStrictMode")
    converted = []
    for tool in tools:
        entry: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters or {"type": "object", "properties": {}},
        }
        if supports_strict is not False:
            entry["strict"] = strict
        converted.append(entry)
    return converted


def build_payload(model: Model, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
    prepared = prepare_context(model, context, mid_conversation_system=supports_mid_conversation_system(model, False))
    payload: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(model, prepared.system_prompt, prepared.messages),
        "stream": True,
        "store": False,
    }
    retention = options.extra.get("cache_retention") or os.environ.get("PI_CACHE_RETENTION") or "short"
    if options.session_id and retention != "none" and _compat(model, "promptCacheKeyMode", "auto") != "disabled":
        payload["prompt_cache_key"] = options.session_id[:64]
    if retention == "long" and _compat(model, "supportsLongCacheRetention", True):
        payload["prompt_cache_retention"] = "24h"
    if _compat(model, "supportsMaxOutputTokens", True):
        requested = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)  # as pi 1.6.0
        payload["max_output_tokens"] = max(requested, MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if prepared.tools:
        payload["tools"] = convert_tools(prepared.tools, model)
    tool_choice = options.extra.get("tool_choice")
    if tool_choice:
        payload["tool_choice"] = tool_choice
    if model.reasoning:
        level = clamp_thinking_level(model, options.thinking_level)
        if level != "off":
            payload["reasoning"] = {
                "effort": provider_thinking_value(model, level) or "medium",
                "summary": options.extra.get("reasoning_summary", "auto"),
            }
            payload["include"] = ["reasoning.encrypted_content"]
        else:
            off = (model.thinking_level_map or {}).get("off", "none")
            if off is not None:
                payload["reasoning"] = {"effort": off}
    payload.update(model.sampling_params or {})
    by_level = model.sampling_params_by_thinking_level or {}
    payload.update(by_level.get(clamp_thinking_level(model, options.thinking_level)) or {})
    payload.update(options.extra.get("sampling_params") or {})
    return payload


# --------------------------------------------------------------------------- streaming


async def stream_openai_responses(
    model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder
) -> None:
    payload = build_payload(model, context, options)
    extra: dict[str, str | None] = {}
    if options.session_id:
        if model.provider == "openrouter" or "openrouter.ai" in (model.base_url or ""):
            extra["x-session-id"] = options.session_id
        else:
            extra["session_id"] = options.session_id
            extra["x-client-request-id"] = options.session_id
    extra.update(_common.copilot_headers(model, context.messages))
    decoder = ResponsesDecoder(out)
    await _common.stream_openai(
        model,
        options,
        out,
        payload=payload,
        extra_headers=extra,
        base_url=_common.endpoint_base_url(model, DEFAULT_BASE_URL),
        path="/responses",
        on_event=decoder,
    )
    if not decoder.terminal:
        raise ProviderError("OpenAI Responses stream ended before a terminal response event")


class ResponsesDecoder:
    """The events of one Responses stream (OpenAI, Azure OpenAI, the Codex backend),
    reported through ``out``; an instance is the ``on_event`` of :func:`_common.post_sse`.
    :attr:`terminal` tells whether a terminal response event arrived."""

    __slots__ = ("out", "slots", "terminal")

    def __init__(self, out: MessageBuilder) -> None:
        self.out = out
        self.slots: dict[int, int] = {}  # output_index -> content index
        self.terminal = False

    async def __call__(self, _name: str, event: Any) -> None:
        if not isinstance(event, dict):
            return
        out, slots = self.out, self.slots
        kind = event.get("type")
        if kind == "response.created":
            out.message.response_id = _common.field(event, "response", "id")
        elif kind == "response.output_item.added":
            _open_item(event, slots, out)
        elif kind == "response.output_item.done":
            _finish_item(event, slots, out)
        elif kind in _DELTAS:
            _apply_delta(kind, event, slots, out)
        elif kind in ("response.completed", "response.incomplete"):
            self.terminal = True
            _finish_response(event.get("response") or {}, out)
        elif kind == "response.failed":
            _raise_failure(event.get("response") or {})
        elif kind == "error":
            raise ProviderError(f"Error Code {event.get('code')}: {event.get('message') or ''}")


_DELTAS = {
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
}


def _open_item(event: dict[str, Any], slots: dict[int, int], out: MessageBuilder) -> None:
    item = event.get("item") or {}
    kind = item.get("type")
    position = event.get("output_index", 0)
    if kind == "reasoning":
        slots[position] = out.thinking_start()
    elif kind == "message":
        slots[position] = out.text_start()
    elif kind == "function_call":
        index = out.tool_start(
            f"{item.get('call_id')}|{item.get('id')}", item.get("name") or "", namespace=item.get("namespace")
        )
        slots[position] = index
        if item.get("arguments"):
            out.tool_delta(index, item["arguments"])


def _apply_delta(kind: str, event: dict[str, Any], slots: dict[int, int], out: MessageBuilder) -> None:
    index = slots.get(event.get("output_index", 0))
    if index is None:
        return
    delta = event.get("delta") or ""
    if kind == "response.reasoning_summary_part.added":
        if event.get("summary_index"):
            out.thinking_delta(index, "\n\n")
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        out.thinking_delta(index, delta)
    elif kind in ("response.output_text.delta", "response.refusal.delta"):
        out.text_delta(index, delta)
    else:
        out.tool_delta(index, delta)


def _raise_failure(response: dict[str, Any]) -> None:
    error = response.get("error")
    if isinstance(error, dict):
        raise ProviderError(f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}")
    reason = _common.field(response, "incomplete_details", "reason")
    raise ProviderError(f"incomplete: {reason}" if reason else "Unknown error (no error details in response)")


def _finish_item(event: dict[str, Any], slots: dict[int, int], out: MessageBuilder) -> None:
    item = event.get("item") or {}
    kind = item.get("type")
    index = slots.pop(event.get("output_index", 0), None)
    if kind == "reasoning":
        if index is None:
            index = out.thinking_start()
        summary = "\n\n".join(part.get("text") or "" for part in (item.get("summary") or []))
        content = "\n\n".join(part.get("text") or "" for part in (item.get("content") or []))
        current = out.message.content[index]
        thinking = summary or content or (current.thinking if isinstance(current, ThinkingContent) else "")
        out.thinking_end(index, thinking=thinking, signature=json.dumps(item))
    elif kind == "message":
        if index is None:
            index = out.text_start()
        text = "".join(part.get("text") or part.get("refusal") or "" for part in (item.get("content") or []))
        out.text_end(index, text=text, signature=encode_text_signature(item.get("id") or "", item.get("phase")))
    elif kind == "function_call":
        if index is None:
            index = out.tool_start(f"{item.get('call_id')}|{item.get('id')}", item.get("name") or "")
        out.tool_end(index, arguments_json=item.get("arguments") or None)


def _finish_response(response: dict[str, Any], out: MessageBuilder) -> None:
    if response.get("id"):
        out.message.response_id = response["id"]
    usage = response.get("usage")
    if isinstance(usage, dict):
        cached = _common.field(usage, "input_tokens_details", "cached_tokens") or 0
        written = _common.field(usage, "input_tokens_details", "cache_write_tokens") or 0
        out.set_usage(
            input=max(0, (usage.get("input_tokens") or 0) - cached - written),
            output=usage.get("output_tokens") or 0,
            cache_read=cached,
            cache_write=written,
            reasoning=_common.field(usage, "output_tokens_details", "reasoning_tokens") or 0,
            total_tokens=usage.get("total_tokens"),
        )
    status = response.get("status") or "completed"
    reason = _common.field(response, "incomplete_details", "reason")
    raw = f"{status}.{reason}" if reason else status
    if status == "incomplete":
        if reason == "max_output_tokens":
            out.stop("length", raw=raw)
        else:
            message = f"Response incomplete: {reason}" if reason else "Response incomplete without a provider reason"
            out.stop("error", raw=raw, error_message=message)
    elif status in ("failed", "cancelled"):
        out.stop("error", raw=raw, error_message=f"Response {status}")
    else:
        out.stop("toolUse" if out.message.tool_calls() else "stop", raw=raw)
