"""Conversation -> plain text for a summarisation prompt.

The summariser is shown a transcript, never a live conversation, so it does not try to
carry it on. Each message becomes one labelled paragraph (paragraphs are separated by
a blank line)::

    [User]: What they said
    [Assistant]: Response text
    [Assistant tool calls]: read(path="foo.py"); edit(path="bar.py", ...)
    [Tool result]: Output from tool

Thinking blocks are left out: they are usually provider-written digests of the real
reasoning and could make the request bigger than the context it condenses. Tool
results are cut to :data:`TOOL_RESULT_MAX_CHARS` characters with a marker saying how
many characters were dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pi_hookspecs import (
    AgentMessage,
    AssistantMessage,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from ..ai.transform import to_llm_messages
from ..session.messages import content_text
from ._json import js_json

TOOL_RESULT_MAX_CHARS = 2000

ConvertToLlm = Callable[[list[AgentMessage]], Sequence[Any]]
"""``convert_to_llm(messages)``: session messages -> provider messages (user,
assistant, tool result, system). The runtime passes the session layer's conversion;
:func:`convert_for_summary` is the stand-alone default."""


def convert_for_summary(messages: Iterable[AgentMessage]) -> list[AgentMessage]:
    """Render session-only roles as the user messages the model would see
    (:func:`pi_core.ai.transform.to_llm_messages`), without system messages.

    ``bashExecution`` -> the command and its output (left out when excluded from the
    context); ``custom`` -> its content; ``branchSummary`` / ``compactionSummary`` -> the
    summary inside ``<summary>`` tags; user, assistant and tool-result messages are kept;
    system messages and unknown roles are dropped.
    """
    return [message for message in to_llm_messages(messages) if not isinstance(message, SystemMessage)]


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """``text`` cut to ``max_chars`` characters, with a marker naming how many were dropped."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n\n[... {len(text) - max_chars} more characters truncated]"


def format_tool_call(call: ToolCall) -> str:
    """``name(key=<json>, key=<json>)``."""
    arguments = ", ".join(f"{key}={js_json(value)}" for key, value in call.arguments.items())
    return f"{call.name}({arguments})"


def serialize_conversation(messages: Iterable[Any]) -> str:
    """The transcript of provider messages (run :func:`convert_for_summary` or the
    session's ``convert_to_llm`` first; other roles are skipped)."""
    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            text = content_text(message.content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif isinstance(message, AssistantMessage):
            texts = [b.text for b in message.content if isinstance(b, TextContent)]
            calls = [format_tool_call(b) for b in message.content if isinstance(b, ToolCall)]
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif isinstance(message, ToolResultMessage):
            text = content_text(message.content, "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
    return "\n\n".join(parts)
