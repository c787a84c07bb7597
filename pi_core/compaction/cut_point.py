"""Where compaction cuts: the first entry kept verbatim.

Walking back from the newest entry, estimated tokens add up until
``keep_recent_tokens`` is reached; the cut goes to the nearest *valid cut point* at or
after that entry. Valid cut points are entries contributing a user, assistant,
bashExecution, custom (``custom_message``) or summary (``branch_summary``) message - never
a tool result, which must stay with the assistant message that called the tool (cutting
at that assistant message keeps its results too). A cut that is not at the start of a
user-message span (user, bashExecution, custom or summary message) *splits* the span:
its beginning, from the span's start to the cut, is summarised separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pi_hookspecs import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextEditEntry,
    CustomMessage,
    MessageEntry,
    SessionEntry,
    UserMessage,
)

from .projection import ProjectedEntry, entry_messages
from .tokens import estimate_tokens

_TURN_START = (UserMessage, BashExecutionMessage, CustomMessage, BranchSummaryMessage, CompactionSummaryMessage)
_CUT_POINT = (*_TURN_START, AssistantMessage)


@dataclass(frozen=True, slots=True)
class CutPoint:
    """Result of :func:`find_cut_point`."""

    first_kept_entry_index: int
    """Index of the first entry kept verbatim."""
    turn_start_index: int | None
    """When the cut splits a user-message span: index of the entry starting it."""
    is_split_turn: bool


def _as_projected(entries: Sequence[SessionEntry | ProjectedEntry]) -> list[ProjectedEntry]:
    return [
        item if isinstance(item, ProjectedEntry) else ProjectedEntry(item, tuple(entry_messages(item)), index)
        for index, item in enumerate(entries)
    ]


def is_cut_point(item: ProjectedEntry) -> bool:
    """Whether the context may start at this entry (never at a tool result)."""
    return not isinstance(item.entry, CompactionEntry) and any(isinstance(m, _CUT_POINT) for m in item.messages)


def is_turn_start(item: ProjectedEntry) -> bool:
    """Whether this entry begins a user-message span."""
    return not isinstance(item.entry, CompactionEntry) and any(isinstance(m, _TURN_START) for m in item.messages)


def _message_tokens(messages: Sequence[AgentMessage]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def find_turn_start_index(
    entries: Sequence[SessionEntry | ProjectedEntry], entry_index: int, start_index: int
) -> int | None:
    """Index of the entry starting the user-message span that contains ``entry_index``
    (searching back no further than ``start_index``), or ``None``."""
    items = _as_projected(entries)
    for index in range(entry_index, start_index - 1, -1):
        if is_turn_start(items[index]):
            return index
    return None


def find_cut_point(
    entries: Sequence[SessionEntry | ProjectedEntry],
    start_index: int,
    end_index: int,
    keep_recent_tokens: int,
) -> CutPoint:
    """Find the first entry to keep so that about ``keep_recent_tokens`` stay verbatim.

    Only ``entries[start_index:end_index]`` are considered. ``entries`` are raw session
    entries or a projection (:func:`~pi_core.compaction.projection.project_path`); with
    a projection, context edits are honoured: omitted entries weigh nothing and are not
    cut points.

    * Without any valid cut point the result keeps everything from ``start_index``.
    * When the budget is never reached, everything from the first cut point is kept.
    * Context-invisible entries (labels, model changes, …) right before the cut are kept
      with it; they do not make the cut a split turn.
    * Recovery: when the budget is exceeded at the last visible entry and everything
      after it is an omitted assistant attempt (plus edits and metadata), the cut moves
      past that entry, so an over-budget input is summarised while the edits that keep
      the abandoned attempt omitted are retained. A replacement edit of the input or of
      anything before it blocks this, because the omitted attempt answered the
      unedited input.
    """
    items = _as_projected(entries)
    cut_points = [i for i in range(start_index, end_index) if is_cut_point(items[i])]
    if not cut_points:
        return CutPoint(start_index, None, False)

    cut_index = cut_points[0]
    exceeded = False
    accumulated = 0
    for index in range(end_index - 1, start_index - 1, -1):
        tokens = _message_tokens(items[index].messages)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            cut_index = next((c for c in cut_points if c >= index), cut_points[-1])
            exceeded = True
            break

    if exceeded and _can_advance_into_omitted_suffix(items, start_index, cut_index, end_index):
        cut_index += 1

    # Whether the span is split depends on the entry the cut was chosen at, not on the
    # metadata entries gathered in front of it below.
    chosen = cut_index
    while cut_index > start_index:
        previous = items[cut_index - 1]
        if isinstance(previous.entry, CompactionEntry) or previous.messages:
            break
        cut_index -= 1

    if is_turn_start(items[chosen]):
        return CutPoint(cut_index, None, False)
    turn_start = find_turn_start_index(items, chosen, start_index)
    return CutPoint(cut_index, turn_start, turn_start is not None)


def _is_omitted_assistant(item: ProjectedEntry) -> bool:
    entry = item.entry
    return isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage) and not item.messages


def _can_advance_into_omitted_suffix(
    items: Sequence[ProjectedEntry], start_index: int, cut_index: int, end_index: int
) -> bool:
    suffix = items[cut_index + 1 : end_index]
    if not suffix or any(item.messages for item in suffix):
        return False
    if not any(_is_omitted_assistant(item) for item in suffix):
        return False
    before = {items[i].entry.id for i in range(start_index, cut_index + 1)}
    return not any(
        isinstance(item.entry, ContextEditEntry)
        and item.entry.replacement is not None
        and item.entry.target_id in before
        for item in suffix
    )
