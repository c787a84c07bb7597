"""``/tree``: moving the session's leaf to another entry, optionally summarising the
branch left behind, with the ``session_before_tree`` / ``session_tree`` hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pi_hookspecs
from pi_hookspecs import (
    AbortController,
    BranchSummaryEntry,
    Model,
    UserMessage,
)

from ..compaction.settings import DEFAULT_RESERVE_TOKENS
from ..extensions import EventRunner
from ..session import SessionManager, convert_to_llm
from .errors import SessionBusyError
from .ports import SummaryComplete, SummaryTarget, Sync, with_source


def message_text(content: Any) -> str:
    """The text of a user message's content (its text blocks joined)."""
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content or [])


class TreeNavigator:
    """Moves the leaf of ``sm``.

    * ``is_busy()`` - a run is active (navigation is refused then);
    * ``check_model()`` - the model for a branch summary (raises when there is none);
    * ``thinking_level()`` - the summary request's thinking level;
    * ``complete`` - one summary request;
    * ``on_moved`` - rebuild the agent's messages from the file;
    * ``reserve_tokens()`` - ``branchSummary.reserveTokens`` (``None``: the default);
    * ``summary_target(model, level, signal)`` - the model and level that write the
      summary (under a virtual selection, where the router sends it).
    """

    def __init__(
        self,
        sm: SessionManager,
        runner: EventRunner,
        *,
        is_busy: Callable[[], bool],
        check_model: Callable[[], Model],
        thinking_level: Callable[[], str],
        complete: SummaryComplete,
        on_moved: Sync,
        reserve_tokens: Callable[[], int] | None = None,
        summary_target: SummaryTarget | None = None,
    ) -> None:
        self.sm = sm
        self._summary_target = summary_target
        self.runner = runner
        self._is_busy = is_busy
        self._check_model = check_model
        self._thinking_level = thinking_level
        self._complete = complete
        self._on_moved = on_moved
        self._reserve_tokens = reserve_tokens

    async def navigate(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> dict[str, Any]:
        """Move the leaf to ``target_id``. Selecting a user message moves to its parent
        and returns its text as ``editor_text`` (to edit and resend); with ``summarize``
        the abandoned branch is summarised into a ``branch_summary``."""
        if self._is_busy():
            raise SessionBusyError("cannot navigate the tree while a run is active")
        sm = self.sm
        target = sm.get_entry(target_id)
        if target is None:
            raise KeyError(f"no entry {target_id!r} in this session")
        old_leaf = sm.get_leaf_id()
        # branch summaries are imported when the tree is navigated, not by every session
        from ..compaction import generate_branch_summary, prepare_tree

        preparation = prepare_tree(
            sm.get_entries(),
            old_leaf,
            target_id,
            user_wants_summary=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        summary = None
        from_extension = False
        if self.runner.has_handlers("session_before_tree"):
            outcome = await self.runner.emit(
                "session_before_tree",
                pi_hookspecs.SessionBeforeTreeEvent(preparation=preparation, signal=AbortController().signal),
            )
            if outcome is not None and outcome.cancel:
                return {"cancelled": True}
            if outcome is not None:
                if outcome.custom_instructions is not None:
                    preparation.custom_instructions = outcome.custom_instructions
                if outcome.replace_instructions is not None:
                    preparation.replace_instructions = outcome.replace_instructions
                if outcome.label is not None:
                    preparation.label = outcome.label
                if outcome.summary is not None and summarize:
                    summary, from_extension = outcome.summary, True
        editor_text = None
        leaf: str | None = target_id
        message = getattr(target, "message", None)
        if isinstance(message, UserMessage):
            leaf = target.parent_id
            editor_text = message_text(message.content)
        if summarize and summary is None and preparation.entries_to_summarize:
            model, level = self._check_model(), self._thinking_level()
            if self._summary_target is not None:
                model, level = await self._summary_target(model, level, None)
            summary = await generate_branch_summary(
                preparation.entries_to_summarize,
                model,
                with_source(self._complete, {"source": "branchSummary"}),
                custom_instructions=preparation.custom_instructions,
                replace_instructions=preparation.replace_instructions,
                convert_to_llm=convert_to_llm,
                thinking_level=level,
                session_id=sm.get_session_id(),
                reserve_tokens=self._reserve_tokens() if self._reserve_tokens is not None else DEFAULT_RESERVE_TOKENS,
            )
        summary_entry: BranchSummaryEntry | None = None
        if summary is not None:
            entry_id = sm.branch_with_summary(
                leaf, summary.summary, details=summary.details, from_hook=from_extension, usage=summary.usage
            )
            summary_entry = sm.get_entry(entry_id)  # type: ignore[assignment]
            if preparation.label:
                sm.set_label(entry_id, preparation.label)
        else:
            if leaf is None:
                sm.reset_leaf()
            else:
                sm.branch(leaf)
            if preparation.label:
                sm.set_label(target_id, preparation.label)
        self._on_moved()
        if self.runner.has_handlers("session_tree"):
            await self.runner.emit(
                "session_tree",
                pi_hookspecs.SessionTreeEvent(
                    new_leaf_id=sm.get_leaf_id(),
                    old_leaf_id=old_leaf,
                    summary_entry=summary_entry,
                    from_extension=from_extension,
                ),
            )
        return {"cancelled": False, "editor_text": editor_text}


__all__ = ["TreeNavigator", "message_text"]
