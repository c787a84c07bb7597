"""Token estimates and the compaction trigger.

Estimates use the conservative ``characters / 4`` heuristic of the TypeScript pi: it
over-counts English prose a little, which errs on the side of compacting early. An
image counts as 4,800 characters (1,200 tokens). When the context ends with (or after)
an assistant response that reported real usage, that usage is the base and only the
messages after it are estimated.

These are compaction's estimates, over the session's own message types. The size of a
request's input, from which a provider's ``max_tokens`` is fitted into the window, is
estimated apart, at 3.5 characters a token over model-ready messages
(:func:`pi_core.ai.token_budget.estimate_request_input_tokens`): pi 1.6.0 has the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_hookspecs import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_hookspecs.record import dataclass

from ._json import js_json
from .settings import CompactionSettingsLike

CHARS_PER_TOKEN = 4
"""Compaction's characters per token (pi 1.6.0's, in its coding agent)."""
IMAGE_CHARS = 4800
"""An image block is estimated as this many characters (1,200 tokens)."""


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def _content_chars(content: str | Sequence[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ImageContent):
            chars += IMAGE_CHARS
    return chars


def estimate_tokens(message: AgentMessage) -> int:
    """Estimated tokens of one message (``ceil(chars / 4)``).

    Counted: user / custom / tool-result text (images as 4,800 characters), assistant
    text, thinking and tool calls (name + JSON arguments), a ``!command`` and its
    output, summary text, and a system message's content plus all its sections.
    Messages of unknown roles count 0.
    """
    if isinstance(message, UserMessage | CustomMessage | ToolResultMessage):
        return _tokens(_content_chars(message.content))
    if isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(js_json(block.arguments))
        return _tokens(chars)
    if isinstance(message, BashExecutionMessage):
        return _tokens(len(message.command) + len(message.output))
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return _tokens(len(message.summary))
    if isinstance(message, SystemMessage):
        chars = _content_chars(message.content)
        for text in (message.sections or {}).values():
            if text:
                chars += len(text)
        return _tokens(chars)
    return 0


def calculate_context_tokens(usage: Usage) -> int:
    """The context size a response's usage reports: ``total_tokens`` when the provider
    gave it, else input + output + cache reads + cache writes."""
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def assistant_usage(message: AgentMessage) -> Usage | None:
    """The usage of an assistant message when it can be trusted as a context size:
    not aborted, not an error, and not all zero."""
    if (
        isinstance(message, AssistantMessage)
        and message.stop_reason not in ("aborted", "error")
        and calculate_context_tokens(message.usage) > 0
    ):
        return message.usage
    return None


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    """An estimate of the context size.

    ``tokens`` = ``usage_tokens`` (from the last trustworthy assistant usage, 0 without
    one) + ``trailing_tokens`` (estimated messages after it). ``last_usage_index`` is
    the index of that assistant message, ``None`` when everything was estimated."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[AgentMessage], *, use_usage: bool = True) -> ContextEstimate:
    """Estimate the tokens ``messages`` occupy in the model's context.

    With ``use_usage`` (the default) the last assistant message whose usage can be
    trusted (see :func:`assistant_usage`) provides the base and only the messages after
    it are estimated with :func:`estimate_tokens`; without such a message, or with
    ``use_usage=False`` (e.g. the usage predates a context edit), every message is
    estimated.
    """
    if use_usage:
        for index in range(len(messages) - 1, -1, -1):
            usage = assistant_usage(messages[index])
            if usage is not None:
                base = calculate_context_tokens(usage)
                trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
                return ContextEstimate(base + trailing, base, trailing, index)
    estimated = sum(estimate_tokens(m) for m in messages)
    return ContextEstimate(estimated, 0, estimated, None)


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettingsLike) -> bool:
    """Whether automatic compaction should run: it is enabled and fewer than
    ``reserve_tokens`` of the context window remain
    (``context_tokens > context_window - reserve_tokens``)."""
    if not settings.enabled or context_window <= 0:  # an unknown window (a virtual model's)
        return False
    return context_tokens > context_window - settings.reserve_tokens
