"""The ``openai-responses`` API (OpenAI Responses) on the official ``openai`` SDK.

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

from ..errors import ProviderError
from ..models import clamp_thinking_level, provider_thinking_value
from ..stream import MessageBuilder
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
        items.append({"role": role, "content": prompt})
    for position, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if text:
                items.append({"role": role, "content": text})
        elif isinstance(message, UserMessage):
            if isinstance(message.content, str):
                items.append({"role": "user", "content": [{"type": "input_text", "text": message.content}]})
                continue
            parts: list[dict[str, Any]] = []
            for block in message.content:
                if isinstance(block, TextContent):
                    parts.append({"type": "input_text", "text": block.text})
                elif isinstance(block, ImageContent):
                    parts.append(_image_input(block))
            if parts:
                items.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message, model, position))
        elif isinstance(message, ToolResultMessage):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id.partition("|")[0],
                    "output": _tool_output(model, message),
                }
            )
    return items


def convert_tools(tools: list[ToolDeclaration], model: Model) -> list[dict[str, Any]]:
    strict = (model.compat or {}).get("supportsStrictMode")
    converted = []
    for tool in tools:
        entry: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters or {"type": "object", "properties": {}},
        }
        if strict is not False:
            entry["strict"] = False
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
        payload["max_output_tokens"] = max(options.max_tokens or model.max_tokens, MIN_OUTPUT_TOKENS)
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
    extra = model.model_extra or {}
    payload.update(extra.get("samplingParams") or {})
    by_level = extra.get("samplingParamsByThinkingLevel") or {}
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
    await _common.stream_openai(
        model,
        options,
        out,
        payload=payload,
        extra_headers=extra,
        base_url=model.base_url or DEFAULT_BASE_URL,
        path="/responses",
        sdk_types=_sdk_types,
        consume=lambda events: _consume(events, options, out),
    )


def _sdk_types() -> tuple[Any, Any]:
    import openai
    from openai.types.responses import Response, ResponseStreamEvent

    return Response, openai.AsyncStream[ResponseStreamEvent]


def _item_dict(item: Any) -> dict[str, Any]:
    if hasattr(item, "to_dict"):
        return item.to_dict()  # type: ignore[no-any-return]
    return dict(item) if isinstance(item, dict) else {}


async def _consume(events: Any, options: StreamOptions, out: MessageBuilder) -> None:
    slots: dict[int, int] = {}  # output_index -> content index
    terminal = False
    async for event in events:
        await _common.report_raw_event(options, event)
        kind = event.type
        if kind == "response.created":
            out.message.response_id = event.response.id
        elif kind == "response.output_item.added":
            _open_item(event, slots, out)
        elif kind == "response.output_item.done":
            _finish_item(event, slots, out)
        elif kind in _DELTAS:
            _apply_delta(kind, event, slots, out)
        elif kind in ("response.completed", "response.incomplete"):
            terminal = True
            _finish_response(event.response, out)
        elif kind == "response.failed":
            _raise_failure(event.response)
        elif kind == "error":
            raise ProviderError(f"Error Code {getattr(event, 'code', None)}: {getattr(event, 'message', '')}")
    if not terminal:
        raise ProviderError("OpenAI Responses stream ended before a terminal response event")


_DELTAS = {
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
}


def _open_item(event: Any, slots: dict[int, int], out: MessageBuilder) -> None:
    item = event.item
    if item.type == "reasoning":
        slots[event.output_index] = out.thinking_start()
    elif item.type == "message":
        slots[event.output_index] = out.text_start()
    elif item.type == "function_call":
        index = out.tool_start(f"{item.call_id}|{item.id}", item.name, namespace=getattr(item, "namespace", None))
        slots[event.output_index] = index
        if getattr(item, "arguments", None):
            out.tool_delta(index, item.arguments)


def _apply_delta(kind: str, event: Any, slots: dict[int, int], out: MessageBuilder) -> None:
    index = slots.get(event.output_index)
    if index is None:
        return
    if kind == "response.reasoning_summary_part.added":
        if getattr(event, "summary_index", 0):
            out.thinking_delta(index, "\n\n")
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        out.thinking_delta(index, event.delta)
    elif kind in ("response.output_text.delta", "response.refusal.delta"):
        out.text_delta(index, event.delta)
    else:
        out.tool_delta(index, event.delta)


def _raise_failure(response: Any) -> None:
    error = getattr(response, "error", None)
    if error is not None:
        raise ProviderError(f"{error.code or 'unknown'}: {error.message or 'no message'}")
    details = getattr(response, "incomplete_details", None)
    reason = getattr(details, "reason", None)
    raise ProviderError(f"incomplete: {reason}" if reason else "Unknown error (no error details in response)")


def _finish_item(event: Any, slots: dict[int, int], out: MessageBuilder) -> None:
    item = event.item
    index = slots.pop(event.output_index, None)
    if item.type == "reasoning":
        if index is None:
            index = out.thinking_start()
        summary = "\n\n".join(part.text for part in (getattr(item, "summary", None) or []))
        content = "\n\n".join(part.text for part in (getattr(item, "content", None) or []))
        current = out.message.content[index]
        thinking = summary or content or (current.thinking if isinstance(current, ThinkingContent) else "")
        out.thinking_end(index, thinking=thinking, signature=json.dumps(_item_dict(item)))
    elif item.type == "message":
        if index is None:
            index = out.text_start()
        text = "".join(
            getattr(part, "text", None) or getattr(part, "refusal", None) or "" for part in (item.content or [])
        )
        out.text_end(index, text=text, signature=encode_text_signature(item.id, getattr(item, "phase", None)))
    elif item.type == "function_call":
        if index is None:
            index = out.tool_start(f"{item.call_id}|{item.id}", item.name)
        out.tool_end(index, arguments_json=item.arguments or None)


def _finish_response(response: Any, out: MessageBuilder) -> None:
    if getattr(response, "id", None):
        out.message.response_id = response.id
    usage = getattr(response, "usage", None)
    if usage is not None:
        input_details = getattr(usage, "input_tokens_details", None)
        cached = getattr(input_details, "cached_tokens", 0) or 0
        output_details = getattr(usage, "output_tokens_details", None)
        out.set_usage(
            input=max(0, (usage.input_tokens or 0) - cached),
            output=usage.output_tokens or 0,
            cache_read=cached,
            cache_write=0,
            reasoning=getattr(output_details, "reasoning_tokens", None),
            total_tokens=getattr(usage, "total_tokens", None),
        )
    status = getattr(response, "status", None) or "completed"
    details = getattr(response, "incomplete_details", None)
    reason = getattr(details, "reason", None)
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
