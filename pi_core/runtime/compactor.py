"""Compaction in a running session: the threshold check, ``/compact`` and the overflow
recovery, with the ``session_before_compact`` / ``session_compact`` /
``session_compact_failed`` hooks around :func:`pi_core.compaction.compact`.

The summary request goes through the session's stream function
(:func:`complete_summary`); the result becomes a ``compaction`` entry of the session
file, after which the agent's messages are rebuilt from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, cast

import pi_hookspecs
from pi_hookspecs import (
    AbortController,
    AssistantMessage,
    CompactionEntry,
    LlmContext,
    Model,
    StreamOptions,
)

from ..compaction import CompactionSettings, CompactionSettingsLike, estimate_context_tokens, should_compact
from ..extensions import EventRunner
from ..session import SessionManager, convert_to_llm
from . import events  # the compaction events: made when a compaction first runs
from .ports import Emit, SummaryComplete, SummaryTarget, Sync, with_source

CompactionReason = Literal["manual", "threshold", "overflow"]


async def complete_summary(
    stream_fn: Callable[..., Any], model: Model, context: LlmContext, options: StreamOptions
) -> AssistantMessage:
    """One summary request through ``stream_fn``: its final assistant message."""
    stream = stream_fn(model, context, options)
    if asyncio.iscoroutine(stream) or isinstance(stream, asyncio.Future):
        stream = await stream
    result = getattr(stream, "result", None)
    if callable(result):
        async for _ in stream:
            pass
        final = result()
        if asyncio.iscoroutine(final) or isinstance(final, asyncio.Future):
            final = await final
        return cast(AssistantMessage, final)
    message: AssistantMessage | None = None
    async for event in stream:
        if event.type == "done":
            message = event.message
        elif event.type == "error":
            message = event.error
    if message is None:
        raise RuntimeError("the summary stream ended without a message")
    return message


class Compactor:
    """Summarises the older part of a session's context.

    * ``sm`` / ``runner`` - the session file and the plugin hooks;
    * ``emit`` - the session's listeners (``compaction_start`` / ``compaction_end``);
    * ``model()`` / ``thinking_level()`` - what the summary is requested with;
    * ``settings(model_ref)`` - ``compaction.*`` for a model;
    * ``enabled()`` - whether threshold compaction runs;
    * ``complete`` - one summary request (:func:`complete_summary` on the session's stream);
    * ``on_compacted`` - rebuild the agent's messages from the file;
    * ``summary_target(model, level, signal)`` - the model and level that write the
      summary (under a virtual selection, where the router sends it).
    """

    def __init__(
        self,
        sm: SessionManager,
        runner: EventRunner,
        *,
        emit: Emit,
        model: Callable[[], Model | None],
        thinking_level: Callable[[], str],
        settings: Callable[[str | None], CompactionSettingsLike],
        enabled: Callable[[], bool],
        complete: SummaryComplete,
        on_compacted: Sync,
        summary_target: SummaryTarget | None = None,
    ) -> None:
        self.sm = sm
        self._summary_target = summary_target
        self.runner = runner
        self._emit = emit
        self._model = model
        self._thinking_level = thinking_level
        self._settings = settings
        self._enabled = enabled
        self._complete = complete
        self._on_compacted = on_compacted

    async def maybe_compact(self, limits: Model | None = None) -> bool:
        """Compact when the context has grown past the window minus the reserve of
        ``limits`` (default: the session's model whose limits apply; a virtual
        selection's request checks the model it is routed to). Returns whether it did."""
        model = self._model()
        if model is None:
            return False
        settings = self._settings(model.ref)
        window = (limits or model).context_window
        if not self._enabled() or window <= 0:
            return False
        tokens = estimate_context_tokens(list(self.sm.build_session_context().messages)).tokens
        if should_compact(tokens, window, settings):
            return await self.compact(reason="threshold", raise_errors=False) is not None
        return False

    async def compact(
        self,
        custom_instructions: str | None = None,
        *,
        reason: CompactionReason = "manual",
        will_retry: bool = False,
        raise_errors: bool = True,
    ) -> CompactionEntry | None:
        """Summarise the older part of the context. Returns the saved entry, or None when
        a plugin cancelled it (or it failed and ``raise_errors`` is false, or an automatic
        compaction had nothing to summarise: it then reports nothing)."""
        # summarising is imported when a compaction runs, not by every session
        from ..compaction import CompactionError, prepare_compaction
        from ..compaction import compact as run_compaction

        model = self._model()
        prepared = None
        if reason != "manual":
            # automatic compaction without a model or with nothing to summarise does not
            # start (no compaction_start / compaction_end, as pi 1.6.0)
            if model is None:
                return None
            prepared = prepare_compaction(
                list(self.sm.get_branch()), CompactionSettings.coerce(self._settings(model.ref))
            )
            if prepared is None:
                return None
        self._emit(events.CompactionStartEvent(reason=reason))
        from_extension = False
        try:
            if model is None:
                raise CompactionError("no model to summarise with")
            preparation = (
                prepared
                if prepared is not None
                else prepare_compaction(
                    list(self.sm.get_branch()), CompactionSettings.coerce(self._settings(model.ref))
                )
            )
            if preparation is None:
                raise CompactionError("nothing to compact yet")
            signal = AbortController()
            result = None
            if self.runner.has_handlers("session_before_compact"):
                event = pi_hookspecs.SessionBeforeCompactEvent(
                    preparation=preparation,
                    branch_entries=list(self.sm.get_branch()),
                    custom_instructions=custom_instructions,
                    reason=reason,
                    will_retry=will_retry,
                    signal=signal.signal,
                )
                outcome = await self.runner.emit("session_before_compact", event)
                if outcome is not None and outcome.cancel:
                    await self._failed(reason, will_retry, aborted=True, message=None, from_extension=False)
                    return None
                if outcome is not None and outcome.compaction is not None:
                    result = outcome.compaction
                    from_extension = True
            if result is None:
                writer, level = model, self._thinking_level()
                if self._summary_target is not None:
                    writer, level = await self._summary_target(model, level, signal.signal)
                result = await run_compaction(
                    preparation,
                    writer,
                    with_source(self._complete, {"source": "compaction", "reason": reason}),
                    custom_instructions=custom_instructions,
                    convert_to_llm=convert_to_llm,
                    thinking_level=level,
                    session_id=self.sm.get_session_id(),
                )
            entry_id = self.sm.append_compaction(
                result.summary,
                result.first_kept_entry_id or None,
                result.tokens_before,
                details=result.details,
                from_hook=from_extension,
                usage=result.usage,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._failed(reason, will_retry, aborted=False, message=str(exc), from_extension=from_extension)
            if raise_errors:
                raise
            return None
        entry = cast(CompactionEntry, self.sm.get_entry(entry_id))
        self._on_compacted()
        estimated_after = estimate_context_tokens(
            list(self.sm.build_session_context().messages), use_usage=False
        ).tokens
        if self.runner.has_handlers("session_compact"):
            await self.runner.emit(
                "session_compact",
                pi_hookspecs.SessionCompactEvent(
                    compaction_entry=entry, from_extension=from_extension, reason=reason, will_retry=will_retry
                ),
            )
        self._emit(
            events.CompactionEndEvent(
                reason=reason,
                result={
                    key: value
                    for key, value in {
                        "summary": entry.summary,
                        "firstKeptEntryId": entry.first_kept_entry_id,
                        "tokensBefore": entry.tokens_before,
                        "estimatedTokensAfter": estimated_after,
                        "usage": entry.usage.to_json() if entry.usage is not None else None,
                        "details": entry.details,
                    }.items()
                    if value is not None
                },
                will_retry=will_retry,
            )
        )
        return entry

    async def _failed(
        self, reason: CompactionReason, will_retry: bool, *, aborted: bool, message: str | None, from_extension: bool
    ) -> None:
        if self.runner.has_handlers("session_compact_failed"):
            await self.runner.emit(
                "session_compact_failed",
                pi_hookspecs.SessionCompactFailedEvent(
                    reason=reason,
                    error_message=message,
                    aborted=aborted,
                    will_retry=will_retry,
                    from_extension=from_extension,
                ),
            )
        self._emit(
            events.CompactionEndEvent(reason=reason, aborted=aborted, will_retry=will_retry, error_message=message)
        )


__all__ = ["CompactionReason", "Compactor", "complete_summary"]
