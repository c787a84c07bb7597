"""Summaries: the model requests behind compaction and branch summaries.

The model is called through an injected ``complete(model, context, options)``
coroutine (the runtime passes ``pi_core.ai.complete``, possibly wrapped with its retry
policy; tests pass a scripted function). A summary is accepted only when the response
ended normally with some text and no tool call; anything else - an error, an abort, a
response cut at the output limit - raises :class:`CompactionError`, so an incomplete
checkpoint can never replace history.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pi_hookspecs import (
    AbortError,
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    CompactionPreparation,
    CompactionResult,
    LlmContext,
    Model,
    StreamOptions,
    TextContent,
    ToolCall,
    Usage,
    UserMessage,
)

from ..ai.models import combine_usage
from .file_ops import file_details, format_file_operations
from .prompts import (
    CHECKPOINT_PROMPT,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZER_SYSTEM_PROMPT,
    TURN_PREFIX_PROMPT,
    UPDATE_CHECKPOINT_PROMPT,
    build_prompt,
    with_focus,
)
from .serialize import ConvertToLlm, convert_for_summary, serialize_conversation

CompleteFn = Callable[[Model, LlmContext, StreamOptions], Awaitable[AssistantMessage]]
"""``complete(model, context, options)`` -> the final assistant message of one request."""

DEFAULT_OUTPUT_LIMIT = 16384
"""Output limit assumed for a model that declares none."""
MIN_SUMMARY_TOKENS = 1024
"""A summary request never asks for fewer output tokens than this (or the model's limit)."""


class CompactionError(Exception):
    """A summary could not be produced; nothing must be written.

    ``aborted`` tells a cancellation (``session_compact_failed`` with ``aborted=True``)
    from a failure (``error_message`` = ``str(error)``).
    """

    def __init__(self, message: str, *, aborted: bool = False) -> None:
        super().__init__(message)
        self.aborted = aborted


@dataclass(frozen=True, slots=True)
class Summary:
    """The text of an accepted summary and the usage of the request(s) behind it."""

    text: str
    usage: Usage | None = None


def summary_max_tokens(model: Model, prompt_text: str) -> int:
    """Output tokens to request: the model's output limit, lowered when the estimated
    prompt plus that limit would not fit the context window (never below
    :data:`MIN_SUMMARY_TOKENS`, or the model's limit if that is smaller)."""
    limit = model.max_tokens if model.max_tokens > 0 else DEFAULT_OUTPUT_LIMIT
    prompt_tokens = -(-(len(SUMMARIZER_SYSTEM_PROMPT) + len(prompt_text)) // 4)
    room = model.context_window - prompt_tokens
    return max(min(limit, room), min(limit, MIN_SUMMARY_TOKENS))


def _options(
    model: Model,
    *,
    signal: AbortSignal | None,
    max_tokens: int,
    thinking_level: str | None,
    session_id: str | None,
) -> StreamOptions:
    values: dict[str, Any] = {
        "signal": signal,
        "max_tokens": max_tokens,
        # A one-off request: its own routing id keeps it out of the session's cache.
        "session_id": session_id or uuid.uuid4().hex,
    }
    if model.reasoning and thinking_level and thinking_level != "off":
        values["thinking_level"] = thinking_level
    if "cache_retention" in StreamOptions.model_fields:  # honoured once the contract has it
        values["cache_retention"] = "none"
    return StreamOptions(**values)


def summary_failure(response: AssistantMessage, label: str, max_tokens: int | None = None) -> str | None:
    """Why ``response`` cannot be stored as a summary, or ``None`` when it can."""
    if response.stop_reason == "error":
        return f"{label} failed: {response.error_message or 'Unknown error'}"
    if response.stop_reason == "length":
        limit = f" ({max_tokens} tokens)" if max_tokens else ""
        return f"{label} failed: the model hit its output limit{limit} and the summary is incomplete"
    if any(isinstance(block, ToolCall) for block in response.content):
        return f"{label} failed: the model tried to call a tool instead of writing the summary"
    if response.stop_reason != "stop":
        return f"{label} failed: the response ended with stop reason {response.stop_reason!r}"
    if not response.text().strip():
        return f"{label} failed: the model returned an empty summary"
    return None


async def request_summary(
    prompt_text: str,
    model: Model,
    complete: CompleteFn,
    *,
    label: str = "Summarization",
    signal: AbortSignal | None = None,
    max_tokens: int | None = None,
    thinking_level: str | None = None,
    session_id: str | None = None,
) -> Summary:
    """Send one summarisation request (the summariser system prompt and ``prompt_text``)
    and return the accepted summary. Raises :class:`CompactionError`."""
    if signal is not None and signal.aborted:
        raise CompactionError(f"{label} aborted", aborted=True)
    tokens = max_tokens if max_tokens is not None else summary_max_tokens(model, prompt_text)
    context = LlmContext(
        system_prompt=SUMMARIZER_SYSTEM_PROMPT,
        messages=[UserMessage(content=[TextContent(text=prompt_text)])],
    )
    options = _options(model, signal=signal, max_tokens=tokens, thinking_level=thinking_level, session_id=session_id)
    try:
        response = await complete(model, context, options)
    except AbortError as exc:
        raise CompactionError(f"{label} aborted", aborted=True) from exc
    except CompactionError:
        raise
    except Exception as exc:
        raise CompactionError(f"{label} failed: {exc}") from exc
    if response.stop_reason == "aborted" or (signal is not None and signal.aborted):
        raise CompactionError(f"{label} aborted", aborted=True)
    failure = summary_failure(response, label, tokens)
    if failure:
        raise CompactionError(failure)
    return Summary(response.text().strip(), response.usage)


def _transcript(messages: Sequence[AgentMessage], convert_to_llm: ConvertToLlm | None) -> str:
    converted = (convert_to_llm or convert_for_summary)(list(messages))
    return serialize_conversation(converted)


async def generate_summary(
    messages: Sequence[AgentMessage],
    model: Model,
    complete: CompleteFn,
    *,
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
    signal: AbortSignal | None = None,
    max_tokens: int | None = None,
    convert_to_llm: ConvertToLlm | None = None,
    thinking_level: str | None = None,
    session_id: str | None = None,
) -> Summary:
    """Summarise ``messages`` into the structured checkpoint (Goal, Constraints &
    Preferences, Progress, Key Decisions, Next Steps, Critical Context).

    With ``previous_summary`` the model updates that checkpoint with the new messages
    instead of starting afresh; ``custom_instructions`` (``/compact <focus>``) are
    appended as an additional focus. ``max_tokens`` defaults to
    :func:`summary_max_tokens`. Raises :class:`CompactionError`.
    """
    base = UPDATE_CHECKPOINT_PROMPT if previous_summary else CHECKPOINT_PROMPT
    prompt = build_prompt(
        _transcript(messages, convert_to_llm), with_focus(base, custom_instructions), previous_summary
    )
    return await request_summary(
        prompt,
        model,
        complete,
        label="Summarization",
        signal=signal,
        max_tokens=max_tokens,
        thinking_level=thinking_level,
        session_id=session_id,
    )


async def generate_turn_prefix_summary(
    messages: Sequence[AgentMessage],
    model: Model,
    complete: CompleteFn,
    *,
    signal: AbortSignal | None = None,
    max_tokens: int | None = None,
    convert_to_llm: ConvertToLlm | None = None,
    thinking_level: str | None = None,
    session_id: str | None = None,
) -> Summary:
    """Summarise the beginning of a split user-message span (Original Request, Progress
    So Far, Context Needed to Continue). Raises :class:`CompactionError`."""
    prompt = build_prompt(_transcript(messages, convert_to_llm), TURN_PREFIX_PROMPT)
    return await request_summary(
        prompt,
        model,
        complete,
        label="Turn prefix summarization",
        signal=signal,
        max_tokens=max_tokens,
        thinking_level=thinking_level,
        session_id=session_id,
    )


async def compact(
    preparation: CompactionPreparation,
    model: Model,
    complete: CompleteFn,
    *,
    custom_instructions: str | None = None,
    signal: AbortSignal | None = None,
    max_tokens: int | None = None,
    convert_to_llm: ConvertToLlm | None = None,
    thinking_level: str | None = None,
    session_id: str | None = None,
) -> CompactionResult:
    """Write the summary of a prepared compaction.

    A split turn gets two summaries - the history before the turn (or the previous
    summary, or "No prior history.") and the turn's beginning - joined under a
    "Turn Context (split turn)" heading, with their usage added up. The file lists are
    appended as ``<read-files>`` / ``<modified-files>`` and stored in ``details``
    (``{"readFiles": [...], "modifiedFiles": [...]}``).

    Raises :class:`CompactionError` when any summary fails, is aborted or was cut at
    the output limit; no result is returned then, so nothing can be written.
    """
    common: dict[str, Any] = {
        "signal": signal,
        "max_tokens": max_tokens,
        "convert_to_llm": convert_to_llm,
        "thinking_level": thinking_level,
        "session_id": session_id,
    }
    history_messages = preparation.messages_to_summarize
    split_turn = bool(preparation.is_split_turn and preparation.turn_prefix_messages)
    if not history_messages and not split_turn:
        raise CompactionError("Nothing to compact: the preparation has no messages to summarize")
    if history_messages:
        history = await generate_summary(
            history_messages,
            model,
            complete,
            previous_summary=preparation.previous_summary,
            custom_instructions=custom_instructions,
            **common,
        )
    else:
        history = Summary(preparation.previous_summary or NO_PRIOR_HISTORY)
    text, usage = history.text, history.usage
    if split_turn:
        prefix = await generate_turn_prefix_summary(preparation.turn_prefix_messages, model, complete, **common)
        text += SPLIT_TURN_SEPARATOR + prefix.text
        usage = combine_usage(history.usage, prefix.usage)

    return CompactionResult(
        summary=text + format_file_operations(preparation.file_ops),
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        usage=usage,
        details=file_details(preparation.file_ops),
    )
