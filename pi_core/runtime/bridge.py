"""The event bridge: every agent event goes to the plugins, then to the host's
listeners, then (at ``message_end``) into the session file — all awaited before the
loop moves on, so a tool call's assistant message is stored before the tool runs.

It also runs the two actionable boundaries, ``turn_end`` and ``agent_before_settle``,
whose handlers may propose entries (drafts) that are validated as a whole and appended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pi_hookspecs import (
    AgentBeforeSettleEvent,
    AgentMessage,
    BoundaryContext,
    CustomMessage,
    MessageEndEvent,
    MessageStartEvent,
    NestedToolCalls,
    ToolResultMessage,
    TurnEndEvent,
    UserMessage,
)

from ..agent import FinishTurn, TurnInfo
from ..extensions import EventRunner
from ..session import SessionManager
from ..session.messages import LlmConversion
from .ports import Emit, Sync


def replace_in_place(target: Any, replacement: Any) -> None:
    """Make ``target`` hold ``replacement``'s fields (same object: state, host and file agree)."""
    for name in type(target).model_fields:
        setattr(target, name, getattr(replacement, name))
    extra = getattr(replacement, "__pydantic_extra__", None)
    if extra is not None:
        target.__pydantic_extra__ = dict(extra)


class EventBridge:
    """Connects the agent's events to the plugins, the listeners and the session file.

    * ``cwd`` - for the in-memory previews of proposed entries;
    * ``emit`` - the host's listeners;
    * ``take_nested(call_id)`` - the record of a finished tool call's nested calls;
    * ``will_retry()`` - whether a failed run is retried (``agent_end.will_retry``);
    * ``on_user_message(message)`` - a user message starts (it leaves the queue display);
    * ``sync`` - rebuild the agent's messages from the file after drafts were appended;
    * ``pending()`` - the messages waiting: the agent's queued steering and follow-up
      messages, and the custom messages queued for the next turn (for the boundaries'
      context preview).
    """

    def __init__(
        self,
        runner: EventRunner,
        sm: SessionManager,
        *,
        cwd: str,
        emit: Emit,
        take_nested: Callable[[str], NestedToolCalls | None],
        will_retry: Callable[[], bool],
        on_user_message: Callable[[UserMessage], None],
        sync: Sync,
        pending: Callable[[], tuple[list[AgentMessage], list[AgentMessage]]] = lambda: ([], []),
    ) -> None:
        self.runner = runner
        self.sm = sm
        self.cwd = cwd
        self._emit = emit
        self._take_nested = take_nested
        self._will_retry = will_retry
        self._on_user_message = on_user_message
        self._sync = sync
        self._pending = pending
        self._entry_ids: dict[int, str] = {}
        self._preview_llm = LlmConversion()
        self._held_custom: list[CustomMessage] = []

    # ------------------------------------------------------------------ events

    async def on_agent_event(self, event: Any) -> None:
        kind = event.type
        runner = self.runner
        if kind == "message_start" and isinstance(event.message, UserMessage):
            self._on_user_message(event.message)
        if kind == "message_end":
            if isinstance(event.message, ToolResultMessage):
                nested = self._take_nested(event.message.tool_call_id)
                if nested is not None:
                    event.message.nested_calls = nested
            if runner.has_handlers("message_end"):
                final = await runner.emit("message_end", event)
                if final is not event.message:
                    replace_in_place(event.message, final)
        elif kind == "agent_end":
            event.will_retry = self._will_retry()
            if runner.has_handlers(kind):
                await runner.emit(kind, event)
        elif kind != "turn_end" and runner.has_handlers(kind):
            await runner.emit(kind, event)
        if kind == "message_end":
            # on disk before anyone hears of it: a message a client saw end (json mode's
            # stdout, an RPC event) survives a kill -9 (tests/reliability)
            self.persist(event.message)
        self._emit(event)

    # ------------------------------------------------------------------ persistence

    def persist(self, message: AgentMessage) -> None:
        """Append ``message`` to the session file (a custom message as its own entry type)."""
        if isinstance(message, CustomMessage):
            entry_id = self.sm.append_custom_message_entry(
                message.custom_type, message.content, display=message.display, details=message.details
            )
        else:
            entry_id = self.sm.append_message(message)
        self._entry_ids[id(message)] = entry_id

    def entry_id_of(self, message: AgentMessage) -> str | None:
        """The entry a message of this process was stored as."""
        return self._entry_ids.get(id(message))

    def projection(self) -> list[AgentMessage]:
        return list(self.sm.build_session_context().messages)

    def omit(self, message: AgentMessage) -> None:
        """Leave a failed attempt out of the model's context (it stays in the file)."""
        entry_id = self.entry_id_of(message)
        if entry_id is not None:
            self.sm.append_context_edit(entry_id, None)
        self._sync()

    # ------------------------------------------------------------------ boundaries

    def hold_custom(self, message: CustomMessage) -> None:
        """A custom message sent during a run without a turn of its own: stored at the next
        turn end (after the turn's tool results, never between a call and its result), or
        when the run ends, as pi 1.6.0 does."""
        self._held_custom.append(message)

    def flush_custom(self) -> None:
        """Store the held custom messages, announce each to the listeners, and give the
        agent the context with them."""
        held, self._held_custom = self._held_custom, []
        for message in held:
            self.persist(message)
            self._emit(MessageStartEvent.model_construct(message=message))
            self._emit(MessageEndEvent.model_construct(message=message))
        if held:
            self._sync()

    async def finish_turn(self, info: TurnInfo) -> FinishTurn | None:
        """``turn_end``: handlers may append entries and ask for another turn."""
        self.flush_custom()
        if not self.runner.has_handlers("turn_end"):
            return None
        # Constructed, not validated: every field is a finished model or a plain value
        # (validating would build the schemas of every message and entry type, ≈ 15 ms).
        event = TurnEndEvent.model_construct(
            turn_index=info.turn_index,
            message=info.message,
            tool_results=list(info.tool_results),
            message_entry_id=self.entry_id_of(info.message),
            tool_result_entry_ids=[i for i in (self.entry_id_of(m) for m in info.tool_results) if i],
            outcome=info.outcome,
            context=self._event_preview("turn_end"),
        )
        outcome = await self.runner.emit_boundary(
            "turn_end", event, build_context=lambda drafts: self.preview(drafts, "turn_end")
        )
        self.commit_drafts("turn_end", outcome.entries or [])
        if info.outcome != "completed":
            return None
        return FinishTurn(continue_=self._may_continue("turn_end", bool(outcome.continue_)))

    async def before_settle(self, outcome_of_run: Literal["completed", "error", "aborted"] = "completed") -> bool:
        """``agent_before_settle``: handlers may append entries; returns whether they
        asked to continue the run."""
        if not self.runner.has_handlers("agent_before_settle"):
            return False
        event = AgentBeforeSettleEvent.model_construct(
            outcome=outcome_of_run, context=self._event_preview("agent_before_settle")
        )
        outcome = await self.runner.emit_boundary(
            "agent_before_settle", event, build_context=lambda drafts: self.preview(drafts, "agent_before_settle")
        )
        self.commit_drafts("agent_before_settle", outcome.entries or [])
        return self._may_continue("agent_before_settle", bool(outcome.continue_))

    def _event_preview(self, boundary: str) -> BoundaryContext:
        """The preview an event carries: built only when a handler takes the event (a
        ``turn_end(ctx)`` handler never sees it; converting a long history for nobody
        cost a resumed 20,000-entry session about 15 ms at its first turn end)."""
        if not self.runner.reads_event(boundary):
            return BoundaryContext.model_construct()
        return self.preview([], boundary)

    def _may_continue(self, boundary: str, requested: bool) -> bool:
        """A continuation is honoured only when the context (entries appended) can run."""
        if requested and not self.preview([], boundary).can_continue:
            self.runner.report(
                "<boundary>", boundary, f"{boundary} requested continuation without runnable model context"
            )
            return False
        return requested

    def _preview_manager(self, entries: list[Any]) -> SessionManager:
        preview = SessionManager.in_memory(self.cwd, entries=list(self.sm.get_branch()))
        for draft in entries:
            preview.append_draft(draft)
        return preview

    def preview(self, entries: list[Any], boundary: str = "turn_end") -> BoundaryContext:
        """The context as it would be with ``entries`` appended (nothing is written), and
        whether a continuation could run from it (pi 1.6.0's rule: the model context has
        more than system messages and does not end with an assistant message, or custom
        messages wait for the next turn, or — at ``turn_end``, or after an assistant
        message at ``agent_before_settle`` — steering/follow-up messages are queued)."""
        # No proposed entries (the common case): the live context is the preview; a copy
        # of the branch is only made to append drafts to.
        manager = self._preview_manager(entries) if entries else self.sm
        projection = manager.build_session_projection()
        queued, custom = self._pending()
        messages = list(projection.messages)
        llm = self._preview_llm(messages)  # only the messages new since the last boundary are converted
        final_role = llm[-1].role if llm else None
        context_ok = any(m.role != "system" for m in llm) and final_role != "assistant"
        if boundary == "turn_end":
            queued_ok = bool(queued)
        else:
            queued_ok = final_role == "assistant" and bool(queued)
        context = BoundaryContext.model_construct(
            context_entries=projection.entries,  # the session's own records, shared (frozen)
            context_messages=messages,
            llm_messages=list(llm),
            pending_messages=[*queued, *custom],
            can_continue=context_ok or bool(custom) or queued_ok,
        )
        return context

    def commit_drafts(self, hook: str, drafts: list[Any]) -> None:
        if not drafts:
            return
        try:
            self._preview_manager(drafts)  # validate the whole proposal before appending any of it
        except Exception as exc:
            self.runner.report(hook, hook, f"the proposed entries are invalid and were dropped: {exc}")
            return
        for draft in drafts:
            self.sm.append_draft(draft)
        self._sync()


__all__ = ["EventBridge", "replace_in_place"]
