"""The model-visible projection of a session path, as compaction sees it.

This is a small, self-contained version of the session layer's context building, kept
here so that compaction depends on the contract only:

1. with a compaction on the path, the latest one comes first (its system checkpoint
   and summary), then the non-system entries from its ``first_kept_entry_id`` up to it
   (none when that id is not found before it - a retain-none compaction stores its own
   id), then everything after it;
2. the latest ``context_edit`` of each selected target is applied: ``replacement=None``
   removes the target's messages, a replacement swaps their content.

Each :class:`ProjectedEntry` keeps its source entry and that entry's index in the path,
so cut points and ids can be mapped back to the raw session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pi_hookspecs import (
    AgentMessage,
    CompactionEntry,
    ContextEditEntry,
    MessageEntry,
    SessionEntry,
    SystemMessage,
)

from ..session.context import apply_edit
from ..session.context import entry_messages as session_entry_messages
from .tokens import ContextEstimate, estimate_context_tokens


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    """One selected entry and the messages it contributes to the model's context."""

    entry: SessionEntry
    messages: tuple[AgentMessage, ...]
    path_index: int
    """Index of ``entry`` in the path it was projected from."""


# One implementation of "entry -> context messages" and of context edits: the session
# store's (the compaction must see exactly what the model sees).
entry_messages = session_entry_messages
apply_context_edit = apply_edit


def _is_system_entry(entry: SessionEntry) -> bool:
    return isinstance(entry, MessageEntry) and isinstance(entry.message, SystemMessage)


def latest_compaction_index(path_entries: Sequence[SessionEntry]) -> int | None:
    """Index of the last compaction entry of the path, or ``None``."""
    for index in range(len(path_entries) - 1, -1, -1):
        if isinstance(path_entries[index], CompactionEntry):
            return index
    return None


def project_path(path_entries: Sequence[SessionEntry]) -> list[ProjectedEntry]:
    """The compaction-aware, context-edited projection of a root-to-leaf path."""
    selected: list[int]
    compaction_at = latest_compaction_index(path_entries)
    if compaction_at is None:
        selected = list(range(len(path_entries)))
    else:
        compaction = path_entries[compaction_at]
        assert isinstance(compaction, CompactionEntry)
        selected = [compaction_at]
        kept_from = next(
            (i for i in range(compaction_at) if path_entries[i].id == compaction.first_kept_entry_id),
            None,
        )
        if kept_from is not None:
            selected.extend(i for i in range(kept_from, compaction_at) if not _is_system_entry(path_entries[i]))
        selected.extend(range(compaction_at + 1, len(path_entries)))

    edits: dict[str, ContextEditEntry] = {}
    for index in selected:
        entry = path_entries[index]
        if isinstance(entry, ContextEditEntry):
            edits[entry.target_id] = entry

    projected: list[ProjectedEntry] = []
    for position, index in enumerate(selected):
        entry = path_entries[index]
        if isinstance(entry, CompactionEntry) and position > 0:
            messages: tuple[AgentMessage, ...] = ()  # an older compaction inside the kept range
        else:
            messages = apply_context_edit(entry_messages(entry), edits.get(entry.id))
        projected.append(ProjectedEntry(entry, messages, index))
    return projected


def projected_messages(projection: Sequence[ProjectedEntry]) -> list[AgentMessage]:
    """All messages of a projection, in order."""
    return [message for item in projection for message in item.messages]


def estimate_projected_context_tokens(path_entries: Sequence[SessionEntry]) -> ContextEstimate:
    """Estimate the context size of a path's projection.

    Like :func:`estimate_context_tokens`, but a reported usage is ignored (everything is
    estimated) when a ``context_edit`` or a compaction was appended after the response
    that reported it: that usage measured a context that no longer exists.
    """
    return estimate_projection_tokens(project_path(path_entries))


def estimate_projection_tokens(projection: Sequence[ProjectedEntry]) -> ContextEstimate:
    """:func:`estimate_projected_context_tokens` for an already built projection."""
    messages: list[AgentMessage] = []
    origin: list[int] = []  # path index of each message
    latest_change = -1  # path index of the latest context edit or compaction
    for item in projection:
        if isinstance(item.entry, ContextEditEntry | CompactionEntry):
            latest_change = max(latest_change, item.path_index)
        messages.extend(item.messages)
        origin.extend([item.path_index] * len(item.messages))
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is not None and origin[estimate.last_usage_index] < latest_change:
        return estimate_context_tokens(messages, use_usage=False)
    return estimate
