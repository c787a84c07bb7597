"""The ConverseStream request body, built from pi's conversation (no botocore here).

Bedrock's Converse API speaks one message shape for every model family; what differs
between families is in :func:`thinking_fields` (Claude's extended or adaptive
thinking, OpenAI's reasoning effort) and :func:`supports_prompt_caching` (cache
points for the Claude models that take them).

The conversation arrives acceptable to the target model: the API is registered with
:class:`~pi_hookspecs.TranscriptRules`, so pi applies the rules it applies to its own
APIs first (a turn that failed is dropped, thinking and signatures from another model
become text, tool-call ids from another model are made Bedrock-safe, a tool call without
a result gets an error result, images become a note for a model without image input).
"""

from __future__ import annotations

import os
import re
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    ImageContent,
    LlmContext,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

EMPTY_TEXT = "<empty>"
ERROR_IMAGE_PLACEHOLDER = "(image attached after the tool results)"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
THINKING_BINDING_BETA = "thinking-binding-controls-2026-08-01"
MIN_ANSWER_TOKENS = 1024
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
_IMAGE_FORMATS = {
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
}
_GPT_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "max"}
_GPT_OSS_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


# --------------------------------------------------------------------------- model families


def _candidates(model: Model) -> list[str]:
    values = [model.id, model.name] if model.name else [model.id]
    result = []
    for value in values:
        lower = value.lower()
        result += [lower, re.sub(r"[\s_.:]+", "-", lower)]
    return result


def _any(model: Model, *parts: str) -> bool:
    return any(part in candidate for candidate in _candidates(model) for part in parts)


def is_claude(model: Model) -> bool:
    """An Anthropic Claude model (by id, inference-profile ARN or name)."""
    model_id, name = model.id.lower(), (model.name or "").lower()
    return "anthropic.claude" in model_id or "anthropic/claude" in model_id or "claude" in name


def adaptive_thinking(model: Model) -> bool:
    return _any(model, "opus-4-6", "opus-4-7", "opus-4-8", "opus-5", "sonnet-4-6", "sonnet-5", "haiku-5", "fable-5")


def _native_xhigh(model: Model) -> bool:
    return _any(model, "opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5")


def _block_binding(model: Model) -> bool:
    return _native_xhigh(model)


def supports_prompt_caching(model: Model) -> bool:
    """Claude 3.5 Haiku, 3.7 Sonnet, 4.x and 5 take cache points; any model does with
    ``AWS_BEDROCK_FORCE_CACHE=1`` (for application inference profiles, whose ARN does
    not name the model)."""
    if not _any(model, "claude"):
        return os.environ.get("AWS_BEDROCK_FORCE_CACHE") == "1"
    return _any(model, "fable-5", "opus-5", "sonnet-5", "haiku-5", "-4-", "claude-3-7-sonnet", "claude-3-5-haiku")


def cache_retention(options: StreamOptions) -> str:
    value = options.extra.get("cache_retention")
    if isinstance(value, str) and value:
        return value
    return "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"


def _cache_point(retention: str) -> dict[str, Any]:
    point: dict[str, Any] = {"type": "default"}
    if retention == "long":
        point["ttl"] = "1h"
    return {"cachePoint": point}


# --------------------------------------------------------------------------- thinking


def thinking_level(model: Model, requested: str | None) -> str:
    """The level sent for ``requested``, clamped as pi clamps it: the nearest level the
    model supports (``off`` … ``high`` less those its ``thinkingLevelMap`` sets to
    null, plus ``xhigh`` / ``max`` when the map names them), higher ones first."""
    if not model.reasoning:
        return "off"
    mapping = model.thinking_level_map or {}
    allowed = [
        name
        for name in LEVELS
        if not (name in mapping and mapping[name] is None) and not (name in ("xhigh", "max") and name not in mapping)
    ]
    level = requested or "off"
    if level in allowed or not allowed:
        return level if allowed else "off"
    if level not in LEVELS:
        return allowed[0]
    position = LEVELS.index(level)
    higher = [name for name in allowed if LEVELS.index(name) > position]
    return higher[0] if higher else allowed[-1]


def _effort(model: Model, level: str) -> str:
    if level == "xhigh" and _native_xhigh(model):
        return "xhigh"
    mapped = (model.thinking_level_map or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium"}.get(level, "high")


def thinking_fields(model: Model, level: str, options: StreamOptions, budget: int) -> dict[str, Any] | None:
    """``additionalModelRequestFields`` for ``level`` (``None`` for ``off``)."""
    if level == "off":
        return None
    if is_claude(model):
        gov_cloud = _gov_cloud(model, options)
        display = None if gov_cloud else (options.extra.get("thinking_display") or "summarized")
        if adaptive_thinking(model):
            thinking: dict[str, Any] = {"type": "adaptive"}
            if display:
                thinking["display"] = display
            binding = not gov_cloud and _block_binding(model)
            if binding:
                thinking["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
            fields: dict[str, Any] = {"thinking": thinking, "output_config": {"effort": _effort(model, level)}}
            if binding:
                fields["anthropic_beta"] = [THINKING_BINDING_BETA]
            return fields
        thinking = {"type": "enabled", "budget_tokens": budget}
        if display:
            thinking["display"] = display
        fields = {"thinking": thinking}
        if options.extra.get("interleaved_thinking", True):
            fields["anthropic_beta"] = [INTERLEAVED_THINKING_BETA]
        return fields
    if _any(model, "gpt-oss"):
        return {"reasoning_effort": _GPT_OSS_EFFORT[level]}
    if _any(model, "gpt-"):
        mapped = (model.thinking_level_map or {}).get(level)
        return {"reasoning": {"effort": mapped if isinstance(mapped, str) else _GPT_EFFORT[level]}}
    return None


def _gov_cloud(model: Model, options: StreamOptions) -> bool:
    region = str(
        options.extra.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
    )
    model_id = model.id.lower()
    return region.lower().startswith("us-gov-") or model_id.startswith(("us-gov.", "arn:aws-us-gov:"))


def token_limits(model: Model, level: str, options: StreamOptions) -> tuple[int, int]:
    """``(maxTokens, thinking budget)``: budget-based Claude thinking adds the level's
    budget on top of the requested output (up to the model's limit) and leaves at
    least 1024 tokens for the answer."""
    requested = options.max_tokens
    if level == "off" or not is_claude(model) or adaptive_thinking(model):
        return requested or model.max_tokens, 0
    budgets = {**THINKING_BUDGETS, **(options.extra.get("thinking_budgets") or {})}
    budget = int(budgets.get("high" if level in ("xhigh", "max") else level, THINKING_BUDGETS["high"]))
    max_tokens = model.max_tokens if requested is None else min(requested + budget, model.max_tokens)
    return max_tokens, min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))


# --------------------------------------------------------------------------- content


def _without_images(content: list[Any], placeholder: str) -> list[Any]:
    result: list[Any] = []
    for block in content:
        if isinstance(block, ImageContent):
            if not (result and isinstance(result[-1], TextContent) and result[-1].text == placeholder):
                result.append(TextContent(text=placeholder))
        else:
            result.append(block)
    return result


def _text_block(text: str) -> dict[str, Any] | None:
    return {"text": text} if text.strip() else None


def image_block(image: ImageContent) -> dict[str, Any]:
    image_format = _IMAGE_FORMATS.get(image.mime_type.lower())
    if image_format is None:
        raise ValueError(f"Unknown image type: {image.mime_type}")
    return {"image": {"format": image_format, "source": {"bytes": image.data}}}


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [_text_block(message.content) or {"text": EMPTY_TEXT}]
    content: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            text = _text_block(block.text)
            if text:
                content.append(text)
        elif isinstance(block, ImageContent):
            content.append(image_block(block))
    return content or [{"text": EMPTY_TEXT}]


def _strip_empty_keys(value: Any) -> Any:
    if isinstance(value, list):
        return [_strip_empty_keys(item) for item in value]
    if isinstance(value, dict):
        return {key: _strip_empty_keys(item) for key, item in value.items() if key}
    return value


def _assistant_content(message: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    signed = is_claude(model)
    for block in message.content:
        if isinstance(block, TextContent):
            text = _text_block(block.text)
            if text:
                content.append(text)
        elif isinstance(block, ToolCall):
            content.append(
                {"toolUse": {"toolUseId": block.id, "name": block.name, "input": _strip_empty_keys(block.arguments)}}
            )
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                if block.thinking_signature:
                    content.append({"reasoningContent": {"redactedContent": block.thinking_signature}})
                continue
            if not block.thinking.strip():
                continue
            if not signed:
                content.append({"reasoningContent": {"reasoningText": {"text": block.thinking}}})
            elif block.thinking_signature and block.thinking_signature.strip():
                content.append(
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": block.thinking, "signature": block.thinking_signature}
                        }
                    }
                )
            else:
                content.append({"text": block.thinking})
    return content


def _tool_result_content(content: list[Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, ImageContent):
            result.append(image_block(block))
        elif isinstance(block, TextContent):
            text = _text_block(block.text)
            if text:
                result.append(text)
    return result or [{"text": EMPTY_TEXT}]


def convert_messages(messages: list[Any], model: Model, retention: str) -> list[dict[str, Any]]:
    """Bedrock messages; consecutive tool results share one user message (Claude gets
    the images of error results after all the results of the turn)."""
    result: list[dict[str, Any]] = []
    index = 0
    claude = is_claude(model)
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, UserMessage):
            result.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            content = _assistant_content(message, model)
            if content:
                result.append({"role": "assistant", "content": content})
        elif isinstance(message, ToolResultMessage):
            results: list[dict[str, Any]] = []
            after: list[dict[str, Any]] = []
            group = [message]
            while index < len(messages) and isinstance(messages[index], ToolResultMessage):
                group.append(messages[index])
                index += 1
            for item in group:
                blocks = list(item.content)
                images = [b for b in blocks if isinstance(b, ImageContent)]
                if claude and item.is_error and images:
                    blocks = _without_images(blocks, ERROR_IMAGE_PLACEHOLDER)
                    after.append(
                        {"text": f"Images from the error result of tool call {item.tool_call_id} ({item.tool_name}):"}
                    )
                    after.extend(image_block(image) for image in images)
                results.append(
                    {
                        "toolResult": {
                            "toolUseId": item.tool_call_id,
                            "content": _tool_result_content(blocks),
                            "status": "error" if item.is_error else "success",
                        }
                    }
                )
            result.append({"role": "user", "content": results + after})
    if retention != "none" and supports_prompt_caching(model) and result and result[-1]["role"] == "user":
        result[-1]["content"].append(_cache_point(retention))
    return result


def tool_config(tools: list[ToolDeclaration], choice: Any) -> dict[str, Any] | None:
    if not tools or choice == "none":
        return None
    config: dict[str, Any] = {
        "tools": [
            {
                "toolSpec": {
                    "name": tool.name,
                    "description": tool.description,
                    "inputSchema": {"json": tool.parameters or {"type": "object", "properties": {}}},
                }
            }
            for tool in tools
        ]
    }
    if choice == "auto":
        config["toolChoice"] = {"auto": {}}
    elif choice == "any":
        config["toolChoice"] = {"any": {}}
    elif isinstance(choice, dict) and choice.get("type") == "tool" and choice.get("name"):
        config["toolChoice"] = {"tool": {"name": choice["name"]}}
    return config


def build_request(model: Model, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
    """The ConverseStream input, ``modelId`` included (it goes in the URL)."""
    prepared = context  # pi applied the transcript rules (the API is registered with TranscriptRules)
    retention = cache_retention(options)
    level = thinking_level(model, options.thinking_level)
    max_tokens, budget = token_limits(model, level, options)
    request: dict[str, Any] = {
        "modelId": model.id,
        "messages": convert_messages(prepared.messages, model, retention),
    }
    if prepared.system_prompt:
        system: list[dict[str, Any]] = [{"text": prepared.system_prompt}]
        if retention != "none" and supports_prompt_caching(model):
            system.append(_cache_point(retention))
        request["system"] = system
    inference: dict[str, Any] = {"maxTokens": max_tokens}
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    request["inferenceConfig"] = inference
    tools = tool_config(prepared.tools, options.extra.get("tool_choice"))
    if tools is not None:
        request["toolConfig"] = tools
    fields = thinking_fields(model, level, options, budget)
    if fields is not None:
        request["additionalModelRequestFields"] = fields
    metadata = options.extra.get("request_metadata")
    if isinstance(metadata, dict):
        request["requestMetadata"] = metadata
    return request
