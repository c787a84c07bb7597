"""The ``openai-responses`` API (OpenAI Responses) over HTTP and SSE.

Requests are stateless (``store: false``): reasoning items come back with their
encrypted content and are replayed from the message history, kept in the thinking
block's ``thinking_signature`` (the item as JSON), for the same model only.

Two newer features follow the model's ``compat`` flags, as pi 1.6.0 sends them:

* ``supportsAdditionalTools`` with ``supportsMidConvoSystemMessages``: no top-level
  ``tools``; every tool is declared in ``additional_tools`` input items, the leading
  system message's tools at the head of the input and each later system message's
  additions where that message stands (a later item is preceded by a note that the
  earlier tools stay available; a removal is said in words, since an item cannot
  withdraw a tool);
* ``supportsMidConvoEffort``: the request's ``reasoning.effort`` stays ``medium`` and
  the thinking level travels in ``configuration_update`` items: one before each earlier
  answer of the same model (the level it was given, ``provider_thinking_level``) and
  one at the end (the level of this request), so that changing it keeps the prompt cache.
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
from ..transform import (
    PreparedContext,
    current_tools,
    prepare_context,
    supports_mid_conversation_system,
    system_update_text,
)
from . import _common

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MIN_OUTPUT_TOKENS = 16
CONFIGURATION_UPDATE_REQUEST_EFFORT = "medium"
"""``reasoning.effort`` of a request whose thinking level goes in ``configuration_update`` items."""


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
                # as JavaScript's JSON.stringify writes it, so that a replay matches pi 1.6.0's
                "arguments": json.dumps(block.arguments or {}, separators=(",", ":"), ensure_ascii=False),
            }
            if same and item_id.startswith("fc_"):
                call["id"] = item_id
            if same and block.namespace is not None:
                call["namespace"] = block.namespace
            items.append(call)
    return items


def tool_changes_in_place(model: Model) -> bool:
    """Whether ``model`` takes its tools in ``additional_tools`` input items (and tool
    changes where they happen) instead of the top-level ``tools`` list."""
    compat = model.compat or {}
    return bool(compat.get("supportsAdditionalTools")) and supports_mid_conversation_system(model, False)


def leading_tools(context: LlmContext, prepared: PreparedContext) -> list[ToolDeclaration]:
    """The tools declared at the head of the input: the leading system message's when
    later system messages stay in place, else every tool in effect."""
    if not any(isinstance(message, SystemMessage) for message in prepared.messages):
        return prepared.tools
    first = context.messages[0] if context.messages else None
    return current_tools([first]) if isinstance(first, SystemMessage) else []


def configuration_update(effort: str) -> dict[str, Any]:
    return {"type": "configuration_update", "reasoning": {"effort": effort}}


def additional_tools(
    tools: list[ToolDeclaration], model: Model, strict: bool | None, strict_supported: bool | None
) -> dict[str, Any]:
    converted = convert_tools(tools, model, strict=strict, strict_supported=strict_supported)
    return {"type": "additional_tools", "role": "developer", "tools": converted}


def _incremental_notice(unavailable: tuple[str, ...]) -> str:
    text = (
        "Tools update: the tools below are added to the ones declared before, which all stay available "
        "unless they were marked unavailable. A tool declared here again is available again, with this definition."
    )
    return f"{text}\nStill unavailable: {', '.join(unavailable)}." if unavailable else text


def _removal_notice(names: list[str]) -> str:
    return "These tools are no longer available; do not call them:\n" + "\n".join(f"- {name}" for name in names)


def convert_input(
    model: Model,
    prompt: str,
    messages: list[Any],
    *,
    head_tools: list[ToolDeclaration] | None = None,
    strict: bool | None = False,
    strict_supported: bool | None = None,
    effort: str | None = None,
) -> list[dict[str, Any]]:
    """The ``input`` items. ``head_tools`` not ``None``: tools go in ``additional_tools``
    items (:func:`tool_changes_in_place`), these first; ``effort`` not ``None``: the
    thinking level goes in ``configuration_update`` items, ``effort`` at the end."""
    role = "developer" if model.reasoning and _compat(model, "supportsDeveloperRole", True) else "system"
    in_place = head_tools is not None
    items: list[dict[str, Any]] = []
    if head_tools:
        items.append(additional_tools(head_tools, model, strict, strict_supported))
    if prompt:
        items.append(_common.instruction_item(role, prompt))
    # Each message's items are converted once (see pi_core.ai._memo) and never mutated.
    memo = _CONVERTED
    model_key = (model.provider, model.api, model.id, "image" in model.input)
    # for a conversation that grew at its end, the converted start is reused as a whole
    reuse_key = (model_key, role, in_place, strict, strict_supported, effort is not None)
    start, body, state = _CONVERTED_PREFIX.resume(reuse_key, messages)
    # tools declared in an additional_tools item so far; tools said to be removed since
    declared, unavailable = state if state is not None else (bool(head_tools), ())
    before_last = 0
    last_state = (declared, unavailable)
    for position in range(start, len(messages)):
        message = messages[position]
        before_last = len(body)
        last_state = (declared, unavailable)
        if isinstance(message, SystemMessage):
            text = system_update_text(message)
            if in_place:
                added = message.tools_added or []
                names = {tool.name for tool in added}
                unavailable = tuple(name for name in unavailable if name not in names)
                if added:
                    if declared:
                        body.append({"role": role, "content": _incremental_notice(unavailable)})
                    declared = True
                    body.append(additional_tools(added, model, strict, strict_supported))
                removed = [ref.name for ref in message.tools_removed or [] if ref.name not in names]
                if removed:
                    text = "\n\n".join(part for part in (text, _removal_notice(removed)) if part)
                    unavailable += tuple(name for name in removed if name not in unavailable)
            if text:
                body.append({"role": role, "content": text})
            continue
        key = (model_key, position)
        converted = memo.get(message, key)
        if converted is MISSING:
            converted = memo.put(message, key, _message_items(message, model, position))
        if (
            effort is not None
            and converted
            and isinstance(message, AssistantMessage)
            and message.provider_thinking_level is not None
            and _is_same_model(message, model)
        ):
            body.append(configuration_update(message.provider_thinking_level))
        body.extend(converted)
    mark = (len(messages) - 1, before_last, last_state) if messages else None
    _CONVERTED_PREFIX.save(reuse_key, messages, body, mark)
    items.extend(body)
    if effort is not None:
        items.append(configuration_update(effort))
    return items


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


def convert_tools(
    tools: list[ToolDeclaration], model: Model, *, strict: bool | None = False, strict_supported: bool | None = None
) -> list[dict[str, Any]]:
    """Function tools; each carries ``strict`` (``None`` is sent as JSON null, as the
    Codex backend expects) unless the model's ``supportsStrictMode`` is false. A tool
    that asks for JSON-schema constrained sampling (``constrainedSampling``) is sent
    with ``strict: true`` and its strict schema when ``strict_supported`` (by default
    ``supportsStrictMode``) and the schema fits the strict subset."""
    from .google_shared import make_strict_schema, strict_tool  # the strict subset of JSON Schema

    supports_strict = (model.compat or {}).get("supportsStrictMode")
    constrained = bool(supports_strict) if strict_supported is None else strict_supported
    converted = []
    for tool in tools:
        parameters = tool.parameters or {"type": "object", "properties": {}}
        tool_strict = strict
        if strict_tool(tool, constrained):
            parameters, tool_strict = make_strict_schema(parameters), True
        entry: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
        }
        if supports_strict is not False:
            entry["strict"] = tool_strict
        converted.append(entry)
    return converted


def is_chatgpt_sign_in(model: Model, api_key: str | None) -> bool:
    """A request to OpenAI's own endpoint with a ChatGPT sign-in token rather than an
    ``sk-`` key: that backend refuses ``configuration_update`` items."""
    return (
        model.provider == "openai"
        and model.base_url == DEFAULT_BASE_URL
        and api_key is not None
        and not api_key.startswith("sk-")
    )


def effort_update(model: Model, level: str | None) -> str | None:
    """The effort for ``configuration_update`` items when the model takes them
    (``supportsMidConvoEffort``) for thinking level ``level`` (``None``: none sent):
    the level's mapped value, or the level's own name."""
    if level is None or not _compat(model, "supportsMidConvoEffort", False):
        return None
    mapping = model.thinking_level_map or {}
    if level == "none":
        value = mapping.get("off", "none")
        return value if isinstance(value, str) else None
    value = mapping.get(level)
    return value if isinstance(value, str) else level


def request_effort(model: Model, options: StreamOptions) -> str | None:
    """The effort this request sends in ``configuration_update`` items, or ``None``."""
    level = clamp_thinking_level(model, options.thinking_level) if model.reasoning else "off"
    if level == "off" or is_chatgpt_sign_in(model, options.api_key):
        return None
    return effort_update(model, level)


def build_payload(model: Model, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
    prepared = prepare_context(model, context, mid_conversation_system=supports_mid_conversation_system(model, False))
    level = clamp_thinking_level(model, options.thinking_level) if model.reasoning else "off"
    effort = request_effort(model, options)
    in_place = tool_changes_in_place(model)
    payload: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(
            model,
            prepared.system_prompt,
            prepared.messages,
            head_tools=leading_tools(context, prepared) if in_place else None,
            effort=effort,
        ),
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
    if prepared.tools and not in_place:
        payload["tools"] = convert_tools(prepared.tools, model)
    tool_choice = options.extra.get("tool_choice")
    if tool_choice:
        payload["tool_choice"] = tool_choice
    if model.reasoning:
        if level != "off":
            payload["reasoning"] = {
                "effort": CONFIGURATION_UPDATE_REQUEST_EFFORT
                if effort is not None
                else provider_thinking_value(model, level) or "medium",
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
    out.message.provider_thinking_level = request_effort(model, options)
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
