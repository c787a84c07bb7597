"""Coding-agent messages: how session-only roles reach the model.

:func:`convert_to_llm` is the conversion the runtime hands to the agent loop. It renders
``bashExecution``, ``custom``, ``branchSummary`` and ``compactionSummary`` messages as user
messages, word for word as the TypeScript pi does, so a session produces the same requests
(and prompt-cache hits) in either program.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from pi_hookspecs import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    SystemMessage,
    TextContent,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

from ..ai.transform import LLM_MESSAGE_TYPES, bash_execution_text, message_class

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"

LlmMessage = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
"""What a provider accepts: the four base roles."""


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """The user text a ``!command`` becomes in the model's context."""
    return bash_execution_text(message)


def _user_text(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


def convert_to_llm(messages: Iterable[AgentMessage]) -> list[LlmMessage]:
    """Turn agent messages into provider messages.

    * ``bashExecution`` -> user text (dropped when ``exclude_from_context``, the ``!!`` form);
    * ``custom`` -> a user message with the same content;
    * ``branchSummary`` / ``compactionSummary`` -> user text wrapped in ``<summary>``;
    * ``system``, ``user``, ``assistant``, ``toolResult`` -> unchanged (the same objects);
    * any other role -> dropped (a provider could not accept it).
    """
    if not isinstance(messages, Sequence):
        messages = list(messages)
    if all(map(LLM_MESSAGE_TYPES.__contains__, map(type, messages))):  # the usual history, in C loops
        return list(messages)
    out: list[LlmMessage] = []
    for message in messages:
        if type(message) in LLM_MESSAGE_TYPES or message_class(message) in LLM_MESSAGE_TYPES:
            out.append(message)  # type: ignore[arg-type]
        elif isinstance(message, BashExecutionMessage):
            if not message.exclude_from_context:
                out.append(_user_text(bash_execution_to_text(message), message.timestamp))
        elif isinstance(message, CustomMessage):
            content = [TextContent(text=message.content)] if isinstance(message.content, str) else message.content
            out.append(UserMessage(content=content, timestamp=message.timestamp))
        elif isinstance(message, BranchSummaryMessage):
            text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
            out.append(_user_text(text, message.timestamp))
        elif isinstance(message, CompactionSummaryMessage):
            text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
            out.append(_user_text(text, message.timestamp))
    return out


class LlmConversion:
    """:func:`convert_to_llm` of a list that grows at its end (a turn end's preview of
    the context): the messages of the previous call that start the list again, the same
    objects, are not converted again — checking that costs a fraction of converting."""

    __slots__ = ("_reuse",)

    def __init__(self) -> None:
        from ..ai._memo import PrefixReuse

        self._reuse = PrefixReuse()

    def __call__(self, messages: Sequence[AgentMessage]) -> list[LlmMessage]:
        start, out, _ = self._reuse.resume(None, messages)
        out.extend(convert_to_llm(messages[start:] if start else messages))
        if messages:
            # next time, start again at the last message (its own conversion redone)
            last = len(convert_to_llm(messages[-1:]))
            self._reuse.save(None, messages, out, (len(messages) - 1, len(out) - last, None))
        return out


def content_text(content: str | Sequence[Any], separator: str = "\n") -> str:
    """The text of a message content (text blocks joined by ``separator``)."""
    if isinstance(content, str):
        return content
    return separator.join(block.text for block in content if isinstance(block, TextContent))


def _system_messages(messages: Iterable[AgentMessage]) -> Iterator[SystemMessage]:
    """The system messages among ``messages`` (the exact class is looked up first:
    pydantic's ``isinstance`` is slow on a long history)."""
    for message in messages:
        kind = type(message)
        if kind is SystemMessage or (kind not in LLM_MESSAGE_TYPES and isinstance(message, SystemMessage)):
            yield cast(SystemMessage, message)


def current_system_message(messages: Iterable[AgentMessage]) -> SystemMessage | None:
    """Replay every system message into one complete checkpoint: content is appended,
    ``sections`` patched by name (``None`` removes one), tools added and removed by name.
    ``None`` when there is no system message at all."""
    content: list[str] = []
    sections: dict[str, str] = {}
    tools: dict[str, ToolDeclaration] = {}
    timestamp: int | None = None
    for message in _system_messages(messages):
        if timestamp is None:
            timestamp = message.timestamp
        text = content_text(message.content)
        if text:
            content.append(text)
        for name, value in (message.sections or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for ref in message.tools_removed or []:
            tools.pop(ref.name, None)
        for tool in message.tools_added or []:
            tools[tool.name] = tool
    if timestamp is None and not tools:
        return None
    # made from the replayed messages' own validated values: constructed, not validated again
    return SystemMessage.model_construct(
        role="system",
        tools_removed=None,
        content="\n\n".join(content),
        sections=cast(dict[str, str | None], sections) or None,
        tools_added=list(tools.values()) or None,
        timestamp=timestamp or 0,
    )
