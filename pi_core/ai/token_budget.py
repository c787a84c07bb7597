"""How many tokens a request's input is estimated at, and the ``max_tokens`` that
leaves room for it in the model's context window, as pi 1.6.0's pi-ai computes them.

This is the request-side estimate (3.5 characters a token over model-ready messages);
compaction keeps its own, over the session's message types, in
:mod:`pi_core.compaction.tokens` (4 characters a token): pi 1.6.0 has the two, for
the two purposes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from itertools import islice
from operator import attrgetter
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    LlmContext,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    camel_alias,
)

from ._memo import PrefixReuse
from .transform import BLOCK_TYPES, LLM_MESSAGE_TYPES, block_class, message_class

CHARS_PER_TOKEN = 3.5
"""The request-size estimate's characters per token (pi 1.6.0's, in pi-ai)."""
IMAGE_CHARS = 4800
CONTEXT_SAFETY_TOKENS = 4096
CONTEXT_SAFETY_RATIO = 0.15
"""OpenRouter counts the input with its own tokenizer, up to 12% above the provider's."""
MIN_OUTPUT_WITH_RATIO_MARGIN = 32768


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content or ():
        kind = type(block)
        if kind not in BLOCK_TYPES:
            kind = block_class(block)
        chars += len(block.text) if kind is TextContent else IMAGE_CHARS
    return chars


def _json_chars(value: Any) -> int:
    try:
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return len("[unserializable]")


def estimate_message_tokens(message: Any) -> int:
    """pi 1.6.0's estimate of one model-ready message: its text (a system message's
    content and sections, and the JSON of the tools it adds or removes), thinking, tool
    calls' names and JSON arguments, 4,800 characters an image; 3.5 characters a token.
    (Compaction's estimate, ``pi_core.compaction.tokens``, counts 4 characters a token
    over the session's own message types: pi 1.6.0 has the two, for the two purposes.)"""
    kind = message_class(message)
    if kind is SystemMessage:
        parts = [message.content if isinstance(message.content, str) else _text(message.content)]
        parts += [text for text in (message.sections or {}).values() if text is not None]
        tokens = _tokens(len("\n\n".join(part for part in parts if part)))
        for tools in (message.tools_added, message.tools_removed):
            if tools:
                tokens += _tokens(_json_chars([_tool_fields(tool) for tool in tools]))
        return tokens
    if kind is AssistantMessage:
        chars = 0
        for block in message.content or ():
            block_kind = type(block)
            if block_kind not in BLOCK_TYPES:
                block_kind = block_class(block)
            if block_kind is TextContent:
                chars += len(block.text)
            elif block_kind is ThinkingContent:
                chars += len(block.thinking)
            elif block_kind is ToolCall:
                chars += len(block.name) + _json_chars(block.arguments)
        return _tokens(chars)
    return _tokens(_content_chars(getattr(message, "content", None)))


def _tool_fields(tool: Any) -> dict[str, Any]:
    """A tool declaration or reference as its JSON record holds it (camelCase keys, no
    null values), without building a serializer for an estimate."""
    fields = {camel_alias(key): value for key, value in vars(tool).items() if value is not None}
    fields.update(tool.__pydantic_extra__ or {})
    return fields


def _text(content: Sequence[Any]) -> str:
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def _usage_tokens(message: Any) -> int:
    usage = message.usage
    return int(usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write))


_USAGE_PREFIX = PrefixReuse()


def _last_usage(messages: Sequence[Any]) -> tuple[int | None, int]:
    """``(index, context tokens)`` of the last assistant message whose usage describes
    the context before it (not aborted, not an error, not zero, and no newer message
    before it, such as a compaction summary inserted later); ``(None, 0)`` without one.
    The scan goes on from where the last call left off when the list only grew."""
    start, _, state = _USAGE_PREFIX.resume(None, messages)
    count = len(messages)
    if not count:
        return None, 0
    if start:
        before_last = _usage_scan(messages, start, count - 1, state)
    else:
        before_last = _usage_state(messages, count - 1)
    _latest, index, tokens = _usage_scan(messages, count - 1, count, before_last)
    _USAGE_PREFIX.save(None, messages, [], (count - 1, 0, before_last))
    return index, tokens


_UsageState = tuple[float, int | None, int]
"""(the newest timestamp so far, index and tokens of the usage found so far)."""

_NO_USAGE: _UsageState = (-math.inf, None, 0)


def _usage_scan(messages: Sequence[Any], start: int, stop: int, state: _UsageState) -> _UsageState:
    """The state of :func:`_last_usage` after ``messages[start:stop]``, from ``state``."""
    latest, index, tokens = state
    for position in range(start, stop):
        message = messages[position]
        timestamp = getattr(message, "timestamp", 0) or 0
        kind = type(message)
        if (kind if kind in LLM_MESSAGE_TYPES else message_class(message)) is AssistantMessage and timestamp >= latest:
            if message.stop_reason not in ("aborted", "error"):
                used = _usage_tokens(message)
                if used > 0:
                    index, tokens = position, used
        if timestamp > latest:
            latest = timestamp
    return latest, index, tokens


def _usage_state(messages: Sequence[Any], stop: int) -> _UsageState:
    """:func:`_usage_scan` of ``messages[:stop]`` from nothing, for a long history (a
    resumed session's first request): the answer is looked for from the end, where it
    usually is, and the timestamps before it are compared in one C loop."""
    if stop < 256:
        return _usage_scan(messages, 0, stop, _NO_USAGE)
    try:
        for position in range(stop - 1, -1, -1):
            message = messages[position]
            kind = type(message)
            if (kind if kind in LLM_MESSAGE_TYPES else message_class(message)) is not AssistantMessage:
                continue
            if message.stop_reason in ("aborted", "error"):
                continue
            used = _usage_tokens(message)
            if used <= 0:
                continue
            before = max(map(_TIMESTAMP, islice(messages, position)), default=-math.inf)
            if message.timestamp < before:  # a newer message before it: rare, the full scan decides
                return _usage_scan(messages, 0, stop, _NO_USAGE)
            latest = max(before, max(map(_TIMESTAMP, islice(messages, position, stop))))
            return latest, position, used
        return max(map(_TIMESTAMP, islice(messages, stop))), None, 0
    except (AttributeError, TypeError):  # a message without a number for a timestamp
        return _usage_scan(messages, 0, stop, _NO_USAGE)


_TIMESTAMP = attrgetter("timestamp")


def estimate_request_input_tokens(messages: Sequence[Any]) -> int:
    """pi 1.6.0's estimate of a request's input: the context size the last usable
    assistant usage reports, plus an estimate of the messages after it (of all of them
    without such a usage)."""
    index, tokens = _last_usage(messages)
    trailing = messages[index + 1 :] if index is not None else messages
    return tokens + sum(estimate_message_tokens(message) for message in trailing)


def clamp_max_tokens(model: Model, context: LlmContext, max_tokens: int) -> int:
    """``max_tokens`` fitted into the model's context window as pi 1.6.0 does: the
    estimated input plus a margin (15% of it, at least 4,096 tokens) stays free; when
    that leaves less than 32,768 tokens, only the fixed margin is kept and the output
    is capped at 32,768. Never below 1."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    estimate = estimate_request_input_tokens(context.messages)
    margin = max(CONTEXT_SAFETY_TOKENS, math.ceil(estimate * CONTEXT_SAFETY_RATIO))
    room = model.context_window - estimate - margin
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(MIN_OUTPUT_WITH_RATIO_MARGIN, model.context_window - estimate - CONTEXT_SAFETY_TOKENS)
    return min(max_tokens, max(1, room))
