"""From a conversation to what one model can be sent.

* :func:`transform_messages` makes a history recorded with any model acceptable to
  the target model (thinking, signatures, tool-call ids, images, orphan tool calls,
  failed turns).
* :func:`current_system_prompt` / :func:`current_tools` replay the transcript's
  :class:`SystemMessage` values into the prompt and the tool loadout in effect.
* :func:`prepare_context` combines both for a provider.

How tool-call ids are rewritten for a target API is :mod:`pi_core.ai.tool_call_ids`;
the input-token estimate and ``max_tokens`` fitting are :mod:`pi_core.ai.token_budget`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Any

from pi_hookspecs import (
    AnyMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    LlmContext,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    TranscriptRules,
    UserMessage,
)
from pi_hookspecs.record import dataclass

from ._memo import MISSING, MessageMemo, PrefixReuse
from .tool_call_ids import DEFAULT_ID_NORMALIZERS, ToolCallIdMap, ToolCallIdNormalizer, sanitize_id

USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
NO_RESULT_TEXT = "No result provided"

COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:"


# pydantic's models answer ``isinstance`` in Python (about 150 ns a call), which the
# loops over a long history below pay per message and per block: they look the exact
# class up first and call ``isinstance`` only for a subclass.
_LLM_CLASSES = (SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)
LLM_MESSAGE_TYPES: frozenset[type] = frozenset(_LLM_CLASSES)
_BLOCK_CLASSES = (TextContent, ThinkingContent, ToolCall, ImageContent)
BLOCK_TYPES: frozenset[type] = frozenset(_BLOCK_CLASSES)


def message_class(message: Any) -> type:
    """Which of the four provider message classes ``message`` is (its own class when
    none); the usual caller checks ``type(message) in`` :data:`LLM_MESSAGE_TYPES` first."""
    return _class_among(message, LLM_MESSAGE_TYPES, _LLM_CLASSES)


def block_class(block: Any) -> type:
    """Which of the text, thinking, tool-call and image block classes ``block`` is
    (its own class when none)."""
    return _class_among(block, BLOCK_TYPES, _BLOCK_CLASSES)


def _class_among(obj: Any, exact: frozenset[type], classes: Iterable[type]) -> type:
    # the exact class first: pydantic answers isinstance on its models in Python (≈150 ns)
    kind = type(obj)
    if kind in exact:
        return kind
    for cls in classes:
        if isinstance(obj, cls):
            return cls
    return kind


# --------------------------------------------------------------------------- system messages


def system_message_text(message: SystemMessage) -> str:
    """The ``content`` of a system message as one string."""
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content)


def _replay_prompt(messages: Iterable[Any]) -> list[str]:
    parts: list[tuple[str | None, str]] = []  # (section name or None, text)
    index: dict[str, int] = {}
    for message in messages:
        if not isinstance(message, SystemMessage):
            continue
        text = system_message_text(message)
        if text.strip():
            parts.append((None, text))
        for name, value in (message.sections or {}).items():
            if value is None:
                if name in index:
                    parts[index.pop(name)] = (None, "")
                continue
            if name in index:
                parts[index[name]] = (name, value)
            else:
                index[name] = len(parts)
                parts.append((name, value))
    return [text for _, text in parts if text.strip()]


def current_system_prompt(messages: Iterable[Any]) -> str:
    """The system prompt in effect after replaying every :class:`SystemMessage`.

    The leading message declares ``sections`` (rendered in insertion order); later
    ones patch them by name: ``None`` removes a section, a new name is appended, an
    existing name keeps its position. A non-empty ``content`` is a part of its own,
    placed before the message's sections. The prompt is the non-empty parts joined
    with a blank line.
    """
    return "\n\n".join(_replay_prompt(messages))


def current_tools(messages: Iterable[Any]) -> list[ToolDeclaration]:
    """The tools in effect after replaying every :class:`SystemMessage`: each message
    removes ``tools_removed`` (by name), then adds ``tools_added`` (a name already
    present is replaced in place; a new one is appended)."""
    tools: dict[str, ToolDeclaration] = {}
    for message in messages:
        if not isinstance(message, SystemMessage):
            continue
        for ref in message.tools_removed or ():
            tools.pop(ref.name, None)
        for tool in message.tools_added or ():
            tools[tool.name] = tool
    return list(tools.values())


def system_update_text(message: SystemMessage) -> str:
    """What a mid-conversation system message adds, as text: its content and the
    sections it sets."""
    return current_system_prompt([message])


# --------------------------------------------------------------------------- other roles


def _text_user(text: str, timestamp: int | None) -> UserMessage:
    if timestamp is None:
        return UserMessage(content=[TextContent(text=text)])
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


def bash_execution_text(message: BashExecutionMessage) -> str:
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code not in (None, 0):
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def to_llm_messages(messages: Iterable[Any]) -> list[AnyMessage]:
    """Keep the roles a provider understands (system, user, assistant, toolResult);
    turn the coding-agent roles into user messages (``custom`` keeps its content,
    ``bashExecution`` and the summaries become text); drop unknown roles.

    The agent layer normally does this before a request; here it is a safety net so
    that a provider never sees a role it cannot send."""
    result: list[AnyMessage] = []
    for message in messages:
        if type(message) in LLM_MESSAGE_TYPES or message_class(message) in LLM_MESSAGE_TYPES:
            result.append(message)
        elif isinstance(message, CustomMessage):
            result.append(UserMessage(content=message.content, timestamp=message.timestamp))
        elif isinstance(message, BashExecutionMessage):
            if not message.exclude_from_context:
                result.append(_text_user(bash_execution_text(message), message.timestamp))
        elif isinstance(message, BranchSummaryMessage):
            text = f"{BRANCH_SUMMARY_PREFIX}\n\n<summary>\n{message.summary}\n</summary>"
            result.append(_text_user(text, message.timestamp))
        elif isinstance(message, CompactionSummaryMessage):
            text = f"{COMPACTION_SUMMARY_PREFIX}\n\n<summary>\n{message.summary}\n</summary>"
            result.append(_text_user(text, message.timestamp))
    return result


# --------------------------------------------------------------------------- transform


def _replace_images(content: Sequence[Any], placeholder: str) -> list[Any]:
    result: list[Any] = []
    previous_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not previous_placeholder:
                result.append(TextContent(text=placeholder))
            previous_placeholder = True
            continue
        result.append(block)
        previous_placeholder = isinstance(block, TextContent) and block.text == placeholder
    return result


def _is_same_model(message: AssistantMessage, model: Model) -> bool:
    return message.provider == model.provider and message.api == model.api and message.model == model.id


def _transform_assistant(
    message: AssistantMessage, model: Model, normalize: ToolCallIdNormalizer | None, ids: ToolCallIdMap
) -> AssistantMessage:
    same = _is_same_model(message, model)
    blocks: list[Any] = []
    changed = False
    for block in message.content or ():
        if isinstance(block, ThinkingContent):
            if block.redacted:
                if same:
                    blocks.append(block)
                else:
                    changed = True
                continue
            if same and block.thinking_signature:
                blocks.append(block)
                continue
            if not block.thinking or not block.thinking.strip():
                changed = True
                continue
            if same:
                blocks.append(block)
            else:
                blocks.append(TextContent(text=block.thinking))
                changed = True
        elif isinstance(block, TextContent):
            if same or block.text_signature is None:
                blocks.append(block)
            else:
                blocks.append(TextContent(text=block.text))
                changed = True
        elif isinstance(block, ToolCall):
            call = block
            if not same:
                update: dict[str, Any] = {}
                if call.thought_signature is not None:
                    update["thought_signature"] = None
                if normalize is not None:
                    new_id = ids.assign(call.id, normalize(call.id, model, message))
                    if new_id != call.id:
                        update["id"] = new_id
                if update:
                    call = call.model_copy(update=update)
                    changed = True
            blocks.append(call)
        else:
            blocks.append(block)
    if not changed and message.content is not None:
        return message
    return message.model_copy(update={"content": blocks})


def _transform_one(
    message: Any, model: Model, normalize: ToolCallIdNormalizer | None, ids: ToolCallIdMap, vision: bool
) -> Any:
    if getattr(message, "content", ()) is None:
        message = message.model_copy(update={"content": []})
    if isinstance(message, UserMessage):
        if (
            not vision
            and isinstance(message.content, list)
            and any(isinstance(b, ImageContent) for b in message.content)
        ):
            message = message.model_copy(update={"content": _replace_images(message.content, USER_IMAGE_PLACEHOLDER)})
    elif isinstance(message, ToolResultMessage):
        update: dict[str, Any] = {}
        if not vision and any(isinstance(b, ImageContent) for b in message.content):
            update["content"] = _replace_images(message.content, TOOL_IMAGE_PLACEHOLDER)
        mapped = ids.mapping.get(message.tool_call_id)
        if mapped is not None:
            update["tool_call_id"] = mapped
        if update:
            message = message.model_copy(update=update)
    elif isinstance(message, AssistantMessage):
        message = _transform_assistant(message, model, normalize, ids)
    return message


_TRANSFORMED = MessageMemo()
_TRANSFORM_PREFIX = PrefixReuse()


def _unchanged(message: Any, vision: bool) -> bool:
    """Whether :func:`_transform_one` leaves a user message, a tool result or an
    assistant message of the target model as it is (the usual case)."""
    content = message.content
    if content is None:
        return False
    if type(content) is str:
        return True
    kind = type(message)
    if (kind if kind in LLM_MESSAGE_TYPES else message_class(message)) is AssistantMessage:  # only empty thinking goes
        for block in content:
            kind = type(block)
            if kind is TextContent:
                continue
            if (
                (kind is ThinkingContent or block_class(block) is ThinkingContent)
                and not block.redacted
                and not block.thinking_signature
                and not (block.thinking and block.thinking.strip())
            ):
                return False
        return True
    if vision:
        return True
    for block in content:
        kind = type(block)
        if kind is ImageContent or (kind not in BLOCK_TYPES and isinstance(block, ImageContent)):
            return False
    return True


def _memoised(message: Any, key: Any, model: Model, ids: ToolCallIdMap, vision: bool) -> Any:
    """:func:`_transform_one` of a message whose form depends on it and ``key`` alone
    (no tool-call id is renamed), computed once per message."""
    found = _TRANSFORMED.get(message, key)
    if found is MISSING:
        found = _TRANSFORMED.put(message, key, _transform_one(message, model, None, ids, vision))
    return found


def transform_messages(
    messages: Sequence[Any],
    model: Model,
    normalize_tool_call_id: ToolCallIdNormalizer | None = None,
) -> list[Any]:
    """A copy of ``messages`` that ``model`` accepts. The input is not modified.

    * An assistant message is from the same model only when its provider, api and
      model id all match the target. From another model, thinking becomes plain
      text, redacted and empty thinking is dropped, signatures are removed, and
      tool-call ids are normalised for the target API (``normalize_tool_call_id``,
      by default the one of :data:`DEFAULT_ID_NORMALIZERS`), with the matching tool
      results remapped.
    * Images become a text placeholder for a model without image input.
    * Assistant messages that ended in ``error`` or ``aborted`` are dropped.
    * A tool call without a result gets a synthetic error result ("No result
      provided") before the next user, system or assistant message; a tool result
      that answers no known tool call is dropped.
    * Missing content is treated as empty.
    """
    normalize = normalize_tool_call_id or DEFAULT_ID_NORMALIZERS.get(model.api)
    vision = "image" in model.input
    ids = ToolCallIdMap()
    # What a message becomes depends on the message and the model alone — except where
    # tool-call ids of another model's messages are renamed: those are redone each time.
    same_key = (model.provider, model.api, model.id, vision)
    # A conversation grows at its end: the result for the unchanged start of the list
    # is reused from the last call, from its last clean point on (see _memo.PrefixReuse).
    reuse = _TRANSFORM_PREFIX
    start, result, _state = reuse.resume((same_key, normalize), messages)

    pending: list[ToolCall] = []
    answered: set[str] = set()
    mark_at, mark_length = -1, 0  # the last clean point (its tuple made once, at the end)

    def flush() -> None:
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(text=NO_RESULT_TEXT)],
                        is_error=True,
                    )
                )
        pending.clear()
        answered.clear()

    # One pass: each message is transformed, then its tool calls are paired with their
    # results. Most messages need no change, which _unchanged tells faster than a memo
    # lookup; the others are memoised (except where tool-call ids are renamed).
    provider, api, model_id = model.provider, model.api, model.id
    position = start - 1
    for original in messages[start:] if start else messages:
        position += 1
        kind = type(original)
        if kind not in LLM_MESSAGE_TYPES:
            kind = message_class(original)
        if kind is AssistantMessage:
            if pending:
                flush()
            mark_at, mark_length = position, len(result)  # nothing pending: a clean point to resume from
            if original.stop_reason in ("error", "aborted"):
                continue
            if original.provider == provider and original.api == api and original.model == model_id:
                content = original.content
                if type(content) is list and len(content) == 1 and type(content[0]) is TextContent:
                    message = original  # one text block (the usual answer): as _unchanged says, without the call
                elif _unchanged(original, vision):
                    message = original
                else:
                    message = _memoised(original, same_key, model, ids, vision)
            else:
                message = _transform_one(original, model, normalize, ids, vision)
            for block in message.content:
                block_kind = type(block)
                if block_kind is ToolCall or (block_kind not in BLOCK_TYPES and block_class(block) is ToolCall):
                    pending.append(block)
            result.append(message)
        elif kind is UserMessage and type(original.content) is str:  # the most common message, inline
            if pending:
                flush()
            mark_at, mark_length = position, len(result)
            result.append(original)
        elif kind is ToolResultMessage:
            if ids.mapping:
                message = _transform_one(original, model, normalize, ids, vision)
            else:
                message = (
                    original if _unchanged(original, vision) else _memoised(original, same_key, model, ids, vision)
                )
            call_id = message.tool_call_id
            if call_id in answered or not any(call.id == call_id for call in pending):
                continue
            answered.add(call_id)
            result.append(message)
        else:
            if kind is UserMessage and _unchanged(original, vision):
                message = original
            else:
                message = _memoised(original, same_key, model, ids, vision)
            if message_class(message) in (SystemMessage, UserMessage):
                if pending:
                    flush()
                mark_at, mark_length = position, len(result)
            result.append(message)
    flush()
    mark = (mark_at, mark_length, None) if mark_at >= 0 and not ids.mapping else None
    reuse.save((same_key, normalize), messages, result, mark)
    return result


# --------------------------------------------------------------------------- for providers


@dataclass
class PreparedContext:
    """What a provider serialises: the prompt, the tools and the messages."""

    system_prompt: str = ""
    tools: list[ToolDeclaration] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    """Transformed messages; :class:`SystemMessage` values only when sent in place."""


def prepare_context(
    model: Model,
    context: LlmContext,
    *,
    mid_conversation_system: bool = False,
    normalize_tool_call_id: ToolCallIdNormalizer | None = None,
) -> PreparedContext:
    """Prompt, tools and transformed messages of ``context`` for ``model``.

    When ``context.messages`` holds system messages, the prompt and tools come from
    replaying them; later system messages are folded into the leading prompt unless
    ``mid_conversation_system`` allows sending them in place (then the prompt is the
    leading message's, and each later one stays where it is; a later message that
    removes a section forces folding, since text already sent cannot be taken back).
    Without system messages, ``context.system_prompt`` and ``context.tools`` are used.
    """
    messages, system = _llm_and_system(context.messages)
    if not system:
        return PreparedContext(
            system_prompt=context.system_prompt or "",
            tools=list(context.tools),
            messages=transform_messages(messages, model, normalize_tool_call_id),
        )
    tools = current_tools(system)
    leading = messages[0] if isinstance(messages[0], SystemMessage) else None
    later = [m for m in system if m is not leading]
    removes_section = any(value is None for m in later for value in (m.sections or {}).values())
    if mid_conversation_system and later and not removes_section:
        prompt = current_system_prompt([leading]) if leading is not None else ""
        kept = messages[1:] if leading is not None else messages
    else:
        prompt = current_system_prompt(system)
        kept = messages if len(system) == 0 else _without_system(messages, len(system))
    return PreparedContext(
        system_prompt=prompt, tools=tools, messages=transform_messages(kept, model, normalize_tool_call_id)
    )


def apply_transcript_rules(model: Model, context: LlmContext, rules: TranscriptRules) -> LlmContext:
    """The context a plugin's wire API asked pi to prepare (``ApiDefinition.transcript``):
    :func:`prepare_context` with tool-call ids made safe as ``rules`` say."""
    limit = rules.tool_call_id_max_length

    def safe_id(call_id: str, target: Model, source: AssistantMessage) -> str:
        return sanitize_id(call_id, limit)

    prepared = prepare_context(
        model, context, mid_conversation_system=rules.mid_conversation_system, normalize_tool_call_id=safe_id
    )
    return LlmContext.model_construct(
        system_prompt=prepared.system_prompt, tools=prepared.tools, messages=prepared.messages
    )


_SPLIT_PREFIX = PrefixReuse()


def _llm_and_system(messages: Sequence[Any]) -> tuple[list[AnyMessage], list[SystemMessage]]:
    """:func:`to_llm_messages` of ``messages`` and the system messages among them;
    for a list that grew at its end only the new messages are converted."""
    start, llm, state = _SPLIT_PREFIX.resume(None, messages)
    system: list[SystemMessage] = list(state) if start else []
    memo = _LLM_FORM
    for message in messages[start:] if start else messages:
        kind = type(message)
        if kind not in LLM_MESSAGE_TYPES:
            kind = message_class(message)
        if kind is SystemMessage:
            system.append(message)
            llm.append(message)
        elif kind in LLM_MESSAGE_TYPES:
            llm.append(message)
        else:
            # the same user message for the same custom message: later stages find
            # their own conversions of it again by identity
            converted = memo.get(message, None)
            if converted is MISSING:
                converted = memo.put(message, None, to_llm_messages([message]))
            llm.extend(converted)
    if messages:
        # next time, start again at the last message: everything before it is final
        last = messages[-1]
        before = len(llm) - _llm_length(last, memo)
        system_before = system[:-1] if isinstance(last, SystemMessage) else system
        _SPLIT_PREFIX.save(None, messages, llm, (len(messages) - 1, before, tuple(system_before)))
    else:
        _SPLIT_PREFIX.save(None, messages, llm, None)
    return llm, system


def _llm_length(message: Any, memo: MessageMemo) -> int:
    if message_class(message) in LLM_MESSAGE_TYPES:
        return 1
    converted = memo.get(message, None)
    return len(converted) if converted is not MISSING else 0


_LLM_FORM = MessageMemo()
_KEPT_PREFIX = PrefixReuse()


def _without_system(messages: list[Any], count: int) -> list[Any]:
    """``messages`` less their ``count`` system messages; for a list that grew at its
    end only the new messages are looked at."""
    start, kept, _ = _KEPT_PREFIX.resume(None, messages)
    if not start and count == 1 and isinstance(messages[0], SystemMessage):
        kept = messages[1:]
    else:
        kept.extend(
            m
            for m in (messages[start:] if start else messages)
            if (kind := type(m)) is not SystemMessage
            and (kind in LLM_MESSAGE_TYPES or not isinstance(m, SystemMessage))
        )
    if messages:
        last = messages[-1]
        before = len(kept) - (0 if isinstance(last, SystemMessage) else 1)
        _KEPT_PREFIX.save(None, messages, kept, (len(messages) - 1, before, None))
    return kept


def supports_mid_conversation_system(model: Model, default: bool = False) -> bool:
    """``compat.supportsMidConvoSystemMessages`` of ``model``, else ``default``."""
    value = (model.compat or {}).get("supportsMidConvoSystemMessages")
    return default if value is None else bool(value)
