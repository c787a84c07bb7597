"""The ``anthropic-messages`` API: Anthropic's Messages endpoint over HTTP and SSE."""

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

from .._memo import MISSING, MessageMemo, PrefixReuse
from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..models import MIN_ANSWER_TOKENS, budget_with_max_tokens, clamp_thinking_level, provider_thinking_value
from ..token_budget import clamp_max_tokens
from ..transform import (
    LLM_MESSAGE_TYPES,
    message_class,
    prepare_context,
    supports_mid_conversation_system,
    system_update_text,
)
from . import _common

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
OAUTH_BETA = "oauth-2025-04-20"
CLAUDE_CODE_BETA = "claude-code-20250219"
CLAUDE_CODE_VERSION = "2.1.322"
CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
CLAUDE_CODE_HEADERS = {
    "accept": "application/json",
    "anthropic-dangerous-direct-browser-access": "true",
    "user-agent": f"claude-cli/{CLAUDE_CODE_VERSION}",
    "x-app": "cli",
}
"""What a Claude Pro/Max login's requests (``sk-ant-oat`` tokens) must carry, as pi 1.6.0
sends them: Claude Code's identity headers, its system prompt line first and its tool
names (see :func:`claude_code_identity`)."""
CLAUDE_CODE_TOOLS = {
    name.lower(): name
    for name in (
        "Read",
        "Write",
        "Edit",
        "Bash",
        "Grep",
        "Glob",
        "AskUserQuestion",
        "EnterPlanMode",
        "ExitPlanMode",
        "KillShell",
        "NotebookEdit",
        "Skill",
        "Task",
        "TaskOutput",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
    )
}

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
    memo = _CONVERTED
    # for a conversation that grew at its end, the converted start is reused as a whole
    index, params, _ = _CONVERTED_PREFIX.resume(allow_empty, messages)
    mark_at, mark_length = -1, 0  # the last assistant message (its tuple made once, at the end)
    count = len(messages)
    while index < count:
        message = messages[index]
        index += 1
        kind = type(message)
        if kind not in LLM_MESSAGE_TYPES:
            kind = message_class(message)
        if kind is SystemMessage:
            text = system_update_text(message)
            if text:
                params.append({"role": "system", "content": [{"type": "text", "text": text}]})
        elif kind is UserMessage:
            entry: dict[str, Any] | None
            content = message.content
            if type(content) is str:  # cheaper than a memo lookup
                entry = {"role": "user", "content": content} if content and not content.isspace() else None
            else:
                entry = memo.get(message, "user")
                if entry is MISSING:
                    entry = memo.put(message, "user", _user_param(message))
            if entry is not None:
                params.append(entry)
        elif kind is AssistantMessage:
            content = message.content
            if len(content) == 1 and type(content[0]) is TextContent:  # one text block, inline
                text = content[0].text
                entry = (
                    {"role": "assistant", "content": [{"type": "text", "text": text}]}
                    if text and not text.isspace()
                    else None
                )
            else:
                entry = memo.get(message, allow_empty)
                if entry is MISSING:
                    blocks = _assistant_blocks(message, allow_empty)
                    entry = memo.put(message, allow_empty, {"role": "assistant", "content": blocks} if blocks else None)
            if entry is not None:
                mark_at, mark_length = index - 1, len(params)
                params.append(entry)
        elif kind is ToolResultMessage:
            results = [message]
            while index < count and message_class(messages[index]) is ToolResultMessage:
                results.append(messages[index])
                index += 1
            blocks = []
            for result in results:
                block = memo.get(result, "tool_result")
                if block is MISSING:
                    block = memo.put(result, "tool_result", _tool_result_block(result))
                blocks.append(block)
            params.append({"role": "user", "content": blocks})
    _CONVERTED_PREFIX.save(allow_empty, messages, params, (mark_at, mark_length, None) if mark_at >= 0 else None)
    if cache and params and params[-1]["role"] in ("user", "system"):
        # a copy: the converted messages are shared with later requests
        last = dict(params[-1])
        params[-1] = last
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache}]
        elif last["content"] and last["content"][-1].get("type") in ("text", "image", "tool_result"):
            last["content"] = [*last["content"][:-1], {**last["content"][-1], "cache_control": cache}]
    return params


_CONVERTED = MessageMemo()
_CONVERTED_PREFIX = PrefixReuse()
"""Each message's Messages form, converted once (see pi_core.ai._memo); never mutated."""


def _user_param(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content} if message.content.strip() else None
    blocks = _user_blocks(message.content)
    return {"role": "user", "content": blocks} if blocks else None


def _tool_result_block(result: ToolResultMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": _tool_result_content(result),
        "is_error": result.is_error,
    }


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
    # as pi 1.6.0: the output fitted into the context window (pi_core.ai.token_budget.clamp_max_tokens)
    base_max_tokens = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    payload: dict[str, Any] = {
        "model": model.id,
        "max_tokens": base_max_tokens,
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
                    base_max_tokens, model.max_tokens, level, options.extra.get("thinking_budgets")
                )
                max_tokens = clamp_max_tokens(model, context, max_tokens)
                budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
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


def claude_code_identity(payload: dict[str, Any], cache: dict[str, Any] | None) -> dict[str, str]:
    """Dress a request as Claude Code's (a subscription login's requests must be): its
    identity line first in ``system``, its spelling of the tools it shares with pi
    (``read`` → ``Read``) in ``tools`` and in earlier ``tool_use`` blocks. Returns the
    renamed tools (lowercase Claude Code name -> pi's name) to map the reply back.
    Converted messages are shared between requests, so changed ones are copies."""
    block: dict[str, Any] = {"type": "text", "text": CLAUDE_CODE_IDENTITY}
    if cache:
        block["cache_control"] = cache
    payload["system"] = [block, *(payload.get("system") or [])]
    renamed: dict[str, str] = {}
    tools = payload.get("tools")
    if tools:
        converted = []
        for tool in tools:
            name = CLAUDE_CODE_TOOLS.get(str(tool.get("name", "")).lower())
            if name and name != tool["name"]:
                renamed[name.lower()] = tool["name"]
                tool = {**tool, "name": name}
            converted.append(tool)
        payload["tools"] = converted
    messages = []
    for message in payload.get("messages") or []:
        content = message.get("content")
        if (
            message.get("role") == "assistant"
            and isinstance(content, list)
            and any(b.get("type") == "tool_use" and b.get("name", "").lower() in CLAUDE_CODE_TOOLS for b in content)
        ):
            message = _renamed_message(message)
        messages.append(message)
    payload["messages"] = messages
    return renamed


_RENAMED: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
"""Renamed copies of converted assistant messages by the original's id (the original is
kept alive with it): the same copy each request, so the encoder's reuse of the
previous request's JSON keeps working."""


def _renamed_message(message: dict[str, Any]) -> dict[str, Any]:
    known = _RENAMED.get(id(message))
    if known is not None and known[0] is message:
        return known[1]
    content = [
        {**b, "name": CLAUDE_CODE_TOOLS[b["name"].lower()]}
        if b.get("type") == "tool_use" and b.get("name", "").lower() in CLAUDE_CODE_TOOLS
        else b
        for b in message["content"]
    ]
    copy = {**message, "content": content}
    if len(_RENAMED) > 20_000:
        _RENAMED.clear()
    _RENAMED[id(message)] = (message, copy)
    return copy


# --------------------------------------------------------------------------- streaming


def _map_stop(reason: str, details: Any) -> tuple[str, str | None]:
    if reason in _STOP_REASONS:
        return _STOP_REASONS[reason], None
    if reason == "refusal":
        explanation = _common.field(details, "explanation")
        return "error", explanation or "The model refused to complete the request"
    return "error", f"Provider stopped with: {reason}"


async def stream_anthropic(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """Run one streaming Messages request, reporting it through ``out``."""
    payload, betas = build_request(model, context, options)
    base_url = _common.endpoint_base_url(model, DEFAULT_BASE_URL)
    headers = _common.base_headers(model, options, **_common.copilot_headers(model, context.messages))
    api_key = _common.require_api_key(model, options, headers, "authorization", "x-api-key")
    oauth = "sk-ant-oat" in api_key
    # GitHub Copilot's Anthropic endpoint takes its token as a bearer token (pi 1.6.0)
    bearer = bool(options.extra.get("auth_header")) or oauth or model.provider == _common.COPILOT_PROVIDER
    tool_names: dict[str, str] = {}
    if oauth:
        betas[:0] = [CLAUDE_CODE_BETA, OAUTH_BETA]
        tool_names = claude_code_identity(payload, cache_control(model, options))
        if headers.get("User-Agent") == _common.USER_AGENT:
            del headers["User-Agent"]  # pi's own agent gives way to Claude Code's
        for name, value in CLAUDE_CODE_HEADERS.items():
            _common.set_default_header(headers, name, value)
    existing = next((k for k in headers if k.lower() == "anthropic-beta"), None)
    if betas and existing is None:
        headers["anthropic-beta"] = ",".join(dict.fromkeys(betas))
    _common.set_default_header(headers, "anthropic-version", API_VERSION)
    if api_key != "unused" and not _common.cloudflare_gateway_auth(model, options, headers):
        if bearer:
            _common.set_default_header(headers, "Authorization", f"Bearer {api_key}")
        else:
            _common.set_default_header(headers, "X-Api-Key", api_key)
    state = _StreamState(model, out, tool_names)
    await _common.post_sse(
        _common.join_url(base_url, "/v1/messages"),
        payload=payload,
        headers=headers,
        options=options,
        out=out,
        on_event=state.handle,
        error_events=_error_event,
        forced={"stream": True},
    )
    state.finish()


def _error_event(name: str, data: Any) -> BaseException | None:
    """An ``error`` event ends the stream with the provider's error (the status is the
    stream's own 200: the error arrived after the response started)."""
    if name == "error" or _common.field(data, "type") == "error":
        return _common.HttpStatusError(200, data)
    return None


class _StreamState:
    """Turns the Messages events into builder calls."""

    def __init__(self, model: Model, out: MessageBuilder, tool_names: dict[str, str] | None = None) -> None:
        self.model = model
        self.out = out
        self.tool_names = tool_names or {}  # Claude Code's tool names -> ours
        self.blocks: dict[int, int] = {}  # Anthropic block index -> content index
        self.saw_start = False
        self.saw_stop = False

    async def handle(self, _name: str, event: Any) -> None:
        if not isinstance(event, dict):
            return
        out = self.out
        kind = event.get("type")
        if kind == "message_start":
            self.saw_start = True
            message = event.get("message") or {}
            out.message.response_id = message.get("id")
            response_model = message.get("model")
            if response_model and response_model != self.model.id:
                out.message.response_model = response_model
            _apply_usage(out, message.get("usage"))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            btype = block.get("type")
            position = int(event.get("index") or 0)
            if btype == "text":
                self.blocks[position] = out.text_start(block.get("text") or "")
            elif btype == "thinking":
                self.blocks[position] = out.thinking_start(
                    block.get("thinking") or "", signature=block.get("signature") or None
                )
            elif btype == "redacted_thinking":
                self.blocks[position] = out.thinking_start(
                    "[Reasoning redacted]", signature=block.get("data") or "", redacted=True
                )
            elif btype == "tool_use":
                name = block.get("name") or ""
                started = out.tool_start(block.get("id") or "", self.tool_names.get(name.lower(), name))
                self.blocks[position] = started
                initial = block.get("input")
                if isinstance(initial, dict) and initial:
                    out.tool_call(started).arguments = dict(initial)
        elif kind == "content_block_delta":
            index = self.blocks.get(int(event.get("index") or 0))
            if index is None:
                return
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                out.text_delta(index, delta.get("text") or "")
            elif dtype == "thinking_delta":
                out.thinking_delta(index, delta.get("thinking") or "")
            elif dtype == "signature_delta":
                out.thinking_signature(index, delta.get("signature") or "", append=True)
            elif dtype == "input_json_delta":
                out.tool_delta(index, delta.get("partial_json") or "")
        elif kind == "content_block_stop":
            ended = self.blocks.pop(int(event.get("index") or 0), None)
            if ended is None:
                return
            kind_of = out.message.content[ended].type
            if kind_of == "text":
                out.text_end(ended)
            elif kind_of == "thinking":
                out.thinking_end(ended)
            else:
                out.tool_end(ended)
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            reason = delta.get("stop_reason")
            if reason:
                stop, error = _map_stop(reason, delta.get("stop_details"))
                out.stop(stop, raw=reason, error_message=error)
            if event.get("usage") is not None:
                _apply_usage(out, event["usage"])
        elif kind == "message_stop":
            self.saw_stop = True

    def finish(self) -> None:
        if self.saw_start and not self.saw_stop:
            raise ProviderError("Anthropic stream ended before message_stop")
        if self.out.message.stop_reason == "pending":
            raise ProviderError("Anthropic stream ended without a stop reason")


def _apply_usage(out: MessageBuilder, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    out.set_usage(
        input=usage.get("input_tokens"),
        output=usage.get("output_tokens"),
        cache_read=usage.get("cache_read_input_tokens"),
        cache_write=usage.get("cache_creation_input_tokens"),
        cache_write_1h=_common.field(usage, "cache_creation", "ephemeral_1h_input_tokens"),
        reasoning=_common.field(usage, "output_tokens_details", "thinking_tokens"),
    )
