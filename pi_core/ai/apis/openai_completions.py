"""The ``openai-completions`` API (Chat Completions) over HTTP and SSE.

Serves any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server,
OpenRouter, …); the differences between endpoints are the ``compat`` options of
``models.json`` (see :func:`resolve_compat` for the defaults).
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

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
from ..models import clamp_thinking_level, provider_thinking_value, thinking_budget
from ..token_budget import clamp_max_tokens
from ..transform import (
    LLM_MESSAGE_TYPES,
    message_class,
    prepare_context,
    supports_mid_conversation_system,
    system_update_text,
)
from . import _common

DEFAULT_BASE_URL = "https://api.openai.com/v1"
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
TOOL_RESULTS_BRIDGE = "I have processed the tool results."

_FINISH = {"stop": "stop", "end": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse"}


def detect_compat(model: Model) -> dict[str, Any]:
    """The defaults of the compat options for ``model``'s provider and base URL."""
    url = (model.base_url or DEFAULT_BASE_URL).lower()
    provider = model.provider
    is_openai = "api.openai.com" in url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in url
    is_deepseek = provider == "deepseek" or "deepseek.com" in url
    is_zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in url or "open.bigmodel.cn" in url
    is_together = provider == "together" or "api.together." in url
    is_moonshot = provider.startswith("moonshotai") or "api.moonshot." in url
    is_xai = provider == "xai" or "api.x.ai" in url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in url
    uses_max_tokens = is_deepseek or is_moonshot or is_together or is_nvidia or is_zai or "chutes.ai" in url
    if is_deepseek:
        thinking_format = "deepseek"
    elif is_zai:
        thinking_format = "zai"
    elif is_together:
        thinking_format = "together"
    elif is_openrouter:
        thinking_format = "openrouter"
    else:
        thinking_format = "openai"
    openrouter_vendor = is_openrouter and model.id.startswith(("anthropic/", "openai/"))
    # Hosts known to reject OpenAI's `store` field; every other one gets `store: false`
    # (as pi 1.6.0 sends it, e.g. to a local OpenAI-compatible server).
    non_standard = (
        is_nvidia
        or is_xai
        or is_together
        or is_deepseek
        or is_zai
        or is_moonshot
        or provider in ("cerebras", "opencode", "cloudflare-workers-ai", "cloudflare-ai-gateway", "ant-ling")
        or any(
            host in url
            for host in (
                "cerebras.ai",
                "chutes.ai",
                "opencode.ai",
                "api.cloudflare.com",
                "gateway.ai.cloudflare.com",
                "api.ant-ling.com",
            )
        )
    )
    return {
        "supportsStore": not non_standard,
        "supportsDeveloperRole": is_openai or openrouter_vendor,
        "supportsReasoningEffort": not (is_xai or is_zai or is_moonshot or is_together or is_nvidia),
        "supportsUsageInStreaming": True,
        "supportsFinishReason": True,
        "maxTokensField": "max_tokens" if uses_max_tokens else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresNonNullAssistantContent": False,
        "requiresToolsWithToolHistory": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": is_deepseek,
        "thinkingFormat": thinking_format,
        "chatTemplateKwargs": {},
        "chatTemplateArgs": {},
        "supportsStrictMode": False,
        "cacheControlFormat": "anthropic" if is_openrouter and model.id.startswith("anthropic/") else None,
        "supportsMidConvoSystemMessages": False,
        "openRouterRouting": None,
        "thinkingTokenBudgetField": None,
        "sendSessionAffinityHeaders": is_openrouter,
        "promptCacheKey": is_openai,
    }


def resolve_compat(model: Model) -> dict[str, Any]:
    """:func:`detect_compat` overridden by ``model.compat`` (field by field)."""
    compat = detect_compat(model)
    for key, value in (model.compat or {}).items():
        if value is not None:
            compat[key] = value
    if compat.get("supportsThinkingTokenBudget") and not compat.get("thinkingTokenBudgetField"):
        compat["thinkingTokenBudgetField"] = "thinking_token_budget"
    return compat


# --------------------------------------------------------------------------- request


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def _user_message(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_image_part(block))
    return {"role": "user", "content": parts} if parts else None


def _assistant_message(message: AssistantMessage, model: Model, compat: dict[str, Any]) -> dict[str, Any] | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text.strip())
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    null_content = "" if compat["requiresNonNullAssistantContent"] else None
    entry: dict[str, Any] = {"role": "assistant", "content": text or null_content}
    details = _reasoning_details(message)
    if thinking:
        joined = "\n\n".join(b.thinking for b in thinking)
        if compat["requiresThinkingAsText"]:
            entry["content"] = f"{joined}\n\n{text}" if text else joined
        elif details is None:
            field = thinking[0].thinking_signature
            if field in REASONING_FIELDS:
                entry[field] = joined
    if details is not None:
        entry["reasoning_details"] = details
    if compat["requiresReasoningContentOnAssistantMessages"] and model.reasoning and "reasoning_content" not in entry:
        entry["reasoning_content"] = ""
    if calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments or {}, separators=(",", ":"), ensure_ascii=False),
                },
            }
            for call in calls
        ]
    if not entry.get("content") and not calls:
        return None
    return entry


def _plain_text(content: list[Any]) -> str | None:
    """The text :func:`_assistant_message` sends for content of text blocks only;
    ``None`` for any other content."""
    parts = []
    for block in content:
        if type(block) is not TextContent:
            return None
        if block.text.strip():
            parts.append(block.text)
    return "".join(parts)


def _reasoning_details(message: AssistantMessage) -> list[Any] | None:
    for block in message.content:
        if isinstance(block, ThinkingContent) and block.thinking_signature:
            signature = block.thinking_signature
            if signature.startswith("["):
                try:
                    parsed = json.loads(signature)
                except ValueError:
                    continue
                if isinstance(parsed, list) and parsed and all(isinstance(d, dict) for d in parsed):
                    return parsed
    return None


def _tool_result(
    result: ToolResultMessage, compat: dict[str, Any], vision: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tool result's ``tool`` message, and its images when the model can see them."""
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    has_images = any(isinstance(b, ImageContent) for b in result.content)
    entry: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "content": text or ("(see attached image)" if has_images else "(no tool output)"),
    }
    if compat["requiresToolResultName"] and result.tool_name:
        entry["name"] = result.tool_name
    images = [_image_part(b) for b in result.content if isinstance(b, ImageContent)] if has_images and vision else []
    return entry, images


_CONVERTED = MessageMemo()
_CONVERTED_PREFIX = PrefixReuse()


def compat_key(compat: dict[str, Any]) -> str:
    """A hashable form of resolved compat options, for memo keys."""
    return json.dumps(compat, sort_keys=True, default=str)


def convert_messages(model: Model, prompt: str, messages: list[Any], compat: dict[str, Any]) -> list[dict[str, Any]]:
    instruction_role = "developer" if model.reasoning and compat["supportsDeveloperRole"] else "system"
    vision = "image" in model.input
    # A message's form depends on it, the model's reasoning flag and vision, and compat:
    # converted once per message (see pi_core.ai._memo); never mutated afterwards. For
    # a conversation that grew at its end, the converted start is reused as a whole.
    key = (model.reasoning, vision, compat_key(compat))
    memo = _CONVERTED
    index, params, _ = _CONVERTED_PREFIX.resume(key, messages)
    mark_at, mark_length = -1, 0  # the last assistant message (its tuple made once, at the end)
    last_role: str | None = None
    empty_reasoning = bool(compat["requiresReasoningContentOnAssistantMessages"] and model.reasoning)
    bridge_after_tools = compat["requiresAssistantAfterToolResult"]
    count = len(messages)
    while index < count:
        message = messages[index]
        index += 1
        kind = type(message)
        if kind not in LLM_MESSAGE_TYPES:
            kind = message_class(message)
        if bridge_after_tools and last_role == "tool" and kind is UserMessage:
            params.append({"role": "assistant", "content": TOOL_RESULTS_BRIDGE})
        if kind is SystemMessage:
            text = system_update_text(message)
            if text:
                params.append({"role": instruction_role, "content": text})
                last_role = "system"
        elif kind is UserMessage:
            content = message.content
            if type(content) is str:  # cheaper than a memo lookup
                entry = {"role": "user", "content": content}
            else:
                entry = memo.get(message, "user")
                if entry is MISSING:
                    entry = memo.put(message, "user", _user_message(message))
            if entry is not None:
                params.append(entry)
                last_role = "user"
        elif kind is AssistantMessage:
            content = message.content
            plain: str | None
            if len(content) == 1 and type(content[0]) is TextContent:  # one text block, inline
                plain = content[0].text
                if plain.isspace():  # (as a strip() would tell, without the copy)
                    plain = ""
            else:
                plain = _plain_text(content)
            if plain is not None:  # text blocks only: cheaper than a memo lookup
                entry = None  # no text: nothing to send (as _assistant_message decides)
                if plain:
                    entry = {"role": "assistant", "content": plain}
                    if empty_reasoning:
                        entry["reasoning_content"] = ""
            else:
                entry = memo.get(message, key)
                if entry is MISSING:
                    entry = memo.put(message, key, _assistant_message(message, model, compat))
            if entry is not None:
                mark_at, mark_length = index - 1, len(params)  # what follows does not depend on what came before
                params.append(entry)
                last_role = "assistant"
        elif kind is ToolResultMessage:
            results = [message]
            while index < count and message_class(messages[index]) is ToolResultMessage:
                results.append(messages[index])
                index += 1
            images: list[dict[str, Any]] = []
            for result in results:
                converted = memo.get(result, key)
                if converted is MISSING:
                    converted = memo.put(result, key, _tool_result(result, compat, vision))
                entry, result_images = converted
                params.append(entry)
                images.extend(result_images)
            last_role = "tool"
            if images:
                if compat["requiresAssistantAfterToolResult"]:
                    params.append({"role": "assistant", "content": TOOL_RESULTS_BRIDGE})
                params.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
                    }
                )
                last_role = "user"
    _CONVERTED_PREFIX.save(key, messages, params, (mark_at, mark_length, None) if mark_at >= 0 else None)
    return [_common.instruction_item(instruction_role, prompt), *params] if prompt else params


def convert_tools(tools: list[ToolDeclaration], compat: dict[str, Any]) -> list[dict[str, Any]]:
    """Function tools; with ``supportsStrictMode`` each says ``strict``, true (with its
    strict schema) for a tool that asks for JSON-schema constrained sampling."""
    from .google_shared import make_strict_schema, strict_tool

    supported = bool(compat["supportsStrictMode"])
    converted = []
    for tool in tools:
        parameters = tool.parameters or {"type": "object", "properties": {}}
        strict = strict_tool(tool, supported)
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": make_strict_schema(parameters) if strict else parameters,
        }
        if supported:
            function["strict"] = strict
        converted.append({"type": "function", "function": function})
    return converted


def _resolve_template_value(value: Any, effort: str | None, level: str, model: Model, budget: int | None) -> Any:
    if not isinstance(value, dict) or "$var" not in value:
        return value
    if effort is None and value.get("omitWhenOff"):
        return None
    var = value["$var"]
    if var == "thinking.enabled":
        return effort is not None
    if var == "thinking.budget":
        return budget
    return provider_thinking_value(model, level)


def _apply_reasoning(payload: dict[str, Any], model: Model, options: StreamOptions, compat: dict[str, Any]) -> None:
    if not model.reasoning:
        return
    level = clamp_thinking_level(model, options.thinking_level)
    effort = None if level == "off" else provider_thinking_value(model, level)
    on = level != "off"
    fmt = compat["thinkingFormat"]
    supports_effort = compat["supportsReasoningEffort"]
    off_value = (model.thinking_level_map or {}).get("off", "none")
    ceiling = payload.get("max_tokens") or payload.get("max_completion_tokens") or model.max_tokens
    budget = None
    if on:
        budget = min(thinking_budget(level, options.extra.get("thinking_budgets")), max(0, ceiling - 1024)) or None
    if fmt == "zai":
        payload["thinking"] = {"type": "enabled", "clear_thinking": False} if on else {"type": "disabled"}
        if on and supports_effort and effort:
            payload["reasoning_effort"] = effort
    elif fmt == "qwen":
        payload["enable_thinking"] = on
        if on and supports_effort and effort:
            payload["reasoning_effort"] = effort
    elif fmt == "qwen-chat-template":
        payload["chat_template_kwargs"] = {"enable_thinking": on, "preserve_thinking": True}
    elif fmt in ("chat-template", "baseten"):
        source = compat["chatTemplateKwargs"] if fmt == "chat-template" else compat["chatTemplateArgs"]
        values = {
            key: resolved
            for key, raw in (source or {}).items()
            if (resolved := _resolve_template_value(raw, effort if on else None, level, model, budget)) is not None
        }
        if values:
            payload["chat_template_kwargs" if fmt == "chat-template" else "chat_template_args"] = values
        if fmt == "baseten" and supports_effort and effort:
            payload["reasoning_effort"] = effort
    elif fmt == "deepseek":
        payload["thinking"] = {"type": "enabled" if on else "disabled"}
        if on and supports_effort and effort:
            payload["reasoning_effort"] = effort
    elif fmt == "openrouter":
        if on:
            payload["reasoning"] = {"effort": effort}
        elif off_value is not None:
            payload["reasoning"] = {"effort": off_value}
    elif fmt == "together":
        payload["reasoning"] = {"enabled": on}
        if on and supports_effort and effort:
            payload["reasoning_effort"] = effort
    elif fmt == "string-thinking":
        if on:
            payload["thinking"] = effort
        elif off_value is not None:
            payload["thinking"] = off_value
    elif fmt == "ant-ling":
        if on and effort:
            payload["reasoning"] = {"effort": effort}
    elif supports_effort:
        if on and effort:
            payload["reasoning_effort"] = effort
        elif not on and isinstance((model.thinking_level_map or {}).get("off"), str):
            payload["reasoning_effort"] = model.thinking_level_map["off"]  # type: ignore[index]
    field = compat.get("thinkingTokenBudgetField")
    if field and budget:
        payload[field] = budget


def sampling_params(model: Model, options: StreamOptions) -> dict[str, Any]:
    """``samplingParams`` of the model, its ``samplingParamsByThinkingLevel`` entry for
    the effective level, then ``options.extra["sampling_params"]`` (later wins)."""
    merged: dict[str, Any] = {}
    merged.update(model.sampling_params or {})
    by_level = model.sampling_params_by_thinking_level or {}
    merged.update(by_level.get(clamp_thinking_level(model, options.thinking_level)) or {})
    merged.update(options.extra.get("sampling_params") or {})
    return merged


def build_payload(model: Model, context: LlmContext, options: StreamOptions, compat: dict[str, Any]) -> dict[str, Any]:
    prepared = prepare_context(model, context, mid_conversation_system=supports_mid_conversation_system(model, False))
    payload: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, prepared.system_prompt, prepared.messages, compat),
        "stream": True,
    }
    if compat["supportsUsageInStreaming"]:
        payload["stream_options"] = {"include_usage": True}
    if compat["supportsStore"]:
        payload["store"] = False
    max_tokens = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    payload["max_tokens" if compat["maxTokensField"] == "max_tokens" else "max_completion_tokens"] = max_tokens
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if prepared.tools:
        payload["tools"] = convert_tools(prepared.tools, compat)
    elif compat["requiresToolsWithToolHistory"] and any(
        isinstance(m, ToolResultMessage) or (isinstance(m, AssistantMessage) and m.tool_calls())
        for m in prepared.messages
    ):
        payload["tools"] = []
    tool_choice = options.extra.get("tool_choice")
    if tool_choice:
        payload["tool_choice"] = tool_choice
    if compat["promptCacheKey"] and options.session_id and options.extra.get("cache_retention") != "none":
        payload["prompt_cache_key"] = options.session_id[:64]
    _apply_reasoning(payload, model, options, compat)
    if compat.get("openRouterRouting"):
        payload["provider"] = compat["openRouterRouting"]
    if compat.get("vllmPriority") is not None:
        payload["priority"] = compat["vllmPriority"]
    if compat.get("cacheControlFormat") == "anthropic" and options.extra.get("cache_retention") != "none":
        _anthropic_cache_markers(payload)
    payload.update(sampling_params(model, options))
    return payload


def _marked(message: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of ``message`` whose last text part carries a cache marker, or ``None``
    when it has no text. The original is left alone: converted messages are shared
    between requests."""
    marker = {"type": "ephemeral"}
    content = message.get("content")
    if isinstance(content, str) and content:
        return {**message, "content": [{"type": "text", "text": content, "cache_control": marker}]}
    if isinstance(content, list):
        for position in range(len(content) - 1, -1, -1):
            part = content[position]
            if part.get("type") == "text":
                parts = list(content)
                parts[position] = {**part, "cache_control": marker}
                return {**message, "content": parts}
    return None


def _anthropic_cache_markers(payload: dict[str, Any]) -> None:
    messages = payload["messages"]
    for position, message in enumerate(messages):
        if message["role"] in ("system", "developer"):
            marked = _marked(message)
            if marked is not None:
                messages[position] = marked
            break
    if payload.get("tools"):
        payload["tools"][-1] = {**payload["tools"][-1], "cache_control": {"type": "ephemeral"}}
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message["role"] in ("user", "assistant", "tool"):
            marked = _marked(message)
            if marked is not None:
                messages[position] = marked
                break


# --------------------------------------------------------------------------- streaming


async def stream_openai_completions(
    model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder
) -> None:
    compat = resolve_compat(model)
    payload = build_payload(model, context, options, compat)
    extra: dict[str, str | None] = {}
    if options.session_id and compat.get("sendSessionAffinityHeaders"):
        extra["x-session-id"] = options.session_id
    extra.update(_common.copilot_headers(model, context.messages))
    state = _ChunkState(model, out)
    await _common.stream_openai(
        model,
        options,
        out,
        payload=payload,
        extra_headers=extra,
        base_url=_common.endpoint_base_url(model, DEFAULT_BASE_URL),
        path="/chat/completions",
        on_event=state.handle,
    )
    state.finish(compat)


class _ChunkState:
    """Turns Chat Completions chunks into builder calls."""

    def __init__(self, model: Model, out: MessageBuilder) -> None:
        self.model = model
        self.out = out
        self.text: int | None = None
        self.thinking: int | None = None
        self.tools_by_index: dict[int, int] = {}
        self.tools_by_id: dict[str, int] = {}
        self.details: list[dict[str, Any]] | None = None
        self.finished = False

    async def handle(self, _name: str, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        out = self.out
        if not out.message.response_id and chunk.get("id"):
            out.message.response_id = chunk["id"]
        chunk_model = chunk.get("model")
        if chunk_model and chunk_model != self.model.id and not out.message.response_model:
            out.message.response_model = chunk_model
        usage = chunk.get("usage")
        choices = chunk.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else None
        if usage is None and choice is not None:
            usage = choice.get("usage")
        if isinstance(usage, dict):
            _apply_usage(out, usage)
        if choice is None:
            return
        reason = choice.get("finish_reason")
        if reason:
            stop = _FINISH.get(reason)
            if stop is None:
                out.stop("error", raw=reason, error_message=f"Provider finish_reason: {reason}")
            else:
                out.stop(stop, raw=reason)
            self.finished = True
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._apply_delta(delta)

    def finish(self, compat: dict[str, Any]) -> None:
        out = self.out
        if self.details is not None and self.thinking is not None:
            out.thinking_signature(self.thinking, json.dumps(self.details))
        out.end_open_blocks()
        if not self.finished:
            if compat["supportsFinishReason"]:
                raise ProviderError("Stream ended without finish_reason")
            out.stop("toolUse" if out.message.tool_calls() else "stop")

    def _apply_delta(self, delta: dict[str, Any]) -> None:
        out = self.out
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self.text is None:
                self.text = out.text_start()
            out.text_delta(self.text, content)
        for name in REASONING_FIELDS:
            value = delta.get(name)
            if isinstance(value, str) and value:
                if self.thinking is None:
                    self.thinking = out.thinking_start(signature=name)
                out.thinking_delta(self.thinking, value)
                break
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            for detail in details:
                if isinstance(detail, dict) and isinstance(detail.get("type"), str):
                    if self.thinking is None:
                        self.thinking = out.thinking_start()
                    _merge_detail(self, detail)
        for call in delta.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            position = call.get("index") if isinstance(call.get("index"), int) else None
            call_id = call.get("id") or ""
            index = self.tools_by_index.get(position) if position is not None else None
            if index is None and call_id:
                index = self.tools_by_id.get(call_id)
            function = call.get("function") if isinstance(call.get("function"), dict) else None
            name = (function.get("name") if function is not None else None) or ""
            if index is None:
                index = out.tool_start(call_id, name)
                if position is not None:
                    self.tools_by_index[position] = index
            block = out.tool_call(index)
            if call_id:
                self.tools_by_id[call_id] = index
                if not block.id:
                    block.id = call_id
            if name and not block.name:
                block.name = name
            arguments = function.get("arguments") if function is not None else None
            out.tool_delta(index, arguments if isinstance(arguments, str) else "", report_empty=True)


def _merge_detail(state: _ChunkState, detail: dict[str, Any]) -> None:
    details = state.details if state.details is not None else []
    state.details = details
    last = details[-1] if details else None
    kind = detail["type"]
    if last is not None and last.get("type") == kind == "reasoning.text":
        last["text"] = last.get("text", "") + detail.get("text", "")
        last["signature"] = last.get("signature") or detail.get("signature")
    elif last is not None and last.get("type") == kind == "reasoning.summary":
        last["summary"] = last.get("summary", "") + detail.get("summary", "")
    else:
        details.append(dict(detail))


def _apply_usage(out: MessageBuilder, usage: dict[str, Any]) -> None:
    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else None

    prompt = get(usage, "prompt_tokens") or 0
    completion = get(usage, "completion_tokens") or 0
    prompt_details = get(usage, "prompt_tokens_details")
    cached = get(prompt_details, "cached_tokens")
    if cached is None:
        cached = get(usage, "prompt_cache_hit_tokens")
    if cached is None:
        cached = get(usage, "cached_tokens")
    cached = cached or 0
    written = get(prompt_details, "cache_write_tokens") or 0
    reasoning = get(get(usage, "completion_tokens_details"), "reasoning_tokens") or get(usage, "reasoning_tokens") or 0
    result = out.set_usage(
        input=max(0, prompt - cached - written),
        output=completion,
        cache_read=cached,
        cache_write=written,
        reasoning=reasoning,
    )
    if out.model.provider == "openrouter" or "openrouter.ai" in (out.model.base_url or ""):
        _apply_reported_cost(result.cost, usage)


def _valid_cost(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf")


def _apply_reported_cost(cost: Any, reported: dict[str, Any]) -> None:
    """OpenRouter reports what it billed: that amount replaces the total computed from
    the catalogue's prices (with a user's own key, the upstream cost is added)."""
    billed = reported.get("cost")
    if not _valid_cost(billed):
        return
    if reported.get("is_byok") is False:
        cost.total = float(billed)
        cost.total_from_provider = True
        return
    if reported.get("is_byok") is True:
        details = reported.get("cost_details")
        if not isinstance(details, dict):
            return
        upstream = details.get("upstream_inference_cost")
        if upstream is None:
            prompt_cost = details.get("upstream_inference_prompt_cost")
            completion_cost = details.get("upstream_inference_completions_cost")
            if not (_valid_cost(prompt_cost) and _valid_cost(completion_cost)):
                return
            upstream = prompt_cost + completion_cost
        if not _valid_cost(upstream):
            return
        cost.total = float(billed) + float(upstream)
        cost.total_from_provider = True
