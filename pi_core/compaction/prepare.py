"""What a compaction will summarise and what it keeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pi_hookspecs import AgentMessage, CompactionEntry, CompactionPreparation, SessionEntry, SystemMessage

from .cut_point import find_cut_point
from .file_ops import FileOpsTracker
from .projection import ProjectedEntry, estimate_projection_tokens, project_path
from .settings import CompactionSettings, CompactionSettingsLike

RETAIN_NONE: Final = ""
"""``first_kept_entry_id`` of a retain-none preparation: the compaction entry keeps no
earlier entry and must record its **own** id (see :func:`resolve_first_kept_entry_id`)."""


def resolve_first_kept_entry_id(first_kept_entry_id: str | None, own_id: str) -> str:
    """The ``firstKeptEntryId`` to write for a compaction entry with id ``own_id``:
    its own id for a retain-none compaction (``None`` or :data:`RETAIN_NONE`)."""
    return first_kept_entry_id or own_id


def _summarizable(items: Sequence[ProjectedEntry]) -> list[AgentMessage]:
    # A compaction replays its own system checkpoint; its summary is passed separately.
    return [
        message
        for item in items
        if not isinstance(item.entry, CompactionEntry)
        for message in item.messages
        if not isinstance(message, SystemMessage)
    ]


def prepare_compaction(
    path_entries: Sequence[SessionEntry],
    settings: CompactionSettingsLike | Mapping[str, Any] | None = None,
    *,
    retain_none: bool = False,
) -> CompactionPreparation | None:
    """Prepare the compaction of a root-to-leaf session path.

    Works on the model-visible projection of the path (see
    :func:`~pi_core.compaction.projection.project_path`): context edits apply, omitted
    entries are neither summarised nor counted. With an earlier compaction on the path,
    its summary becomes ``previous_summary`` (the new summary updates it) and the
    summarised span starts at its kept boundary - the entries it kept are summarised
    now - or right after it when it kept nothing (retain-none) or its kept entry is not
    on the path. File operations accumulate from the earlier compaction's ``details``
    (unless a plugin supplied it) and from the summarised tool calls.

    ``retain_none=True`` summarises everything and keeps nothing:
    ``first_kept_entry_id`` is :data:`RETAIN_NONE`.

    Returns ``None`` when there is nothing to compact: the path is empty, already ends
    with a compaction, or every message would be kept.
    """
    config = CompactionSettings.coerce(settings)
    if not path_entries or isinstance(path_entries[-1], CompactionEntry):
        return None

    projection = project_path(path_entries)
    previous = projection[0].entry if projection and isinstance(projection[0].entry, CompactionEntry) else None
    start = 1 if previous is not None else 0
    end = len(projection)
    if start >= end:
        return None

    turn_prefix: list[AgentMessage] = []
    is_split_turn = False
    if retain_none:
        first_kept_entry_id = RETAIN_NONE
        history = _summarizable(projection[start:end])
    else:
        cut = find_cut_point(projection, start, end, config.keep_recent_tokens)
        first_kept = cut.first_kept_entry_index
        if first_kept >= end:
            return None
        first_kept_entry_id = projection[first_kept].entry.id
        if cut.is_split_turn and cut.turn_start_index is not None:
            is_split_turn = True
            history = _summarizable(projection[start : cut.turn_start_index])
            turn_prefix = _summarizable(projection[cut.turn_start_index : first_kept])
        else:
            history = _summarizable(projection[start:first_kept])

    if not history and not turn_prefix:
        return None

    files = FileOpsTracker()
    if isinstance(previous, CompactionEntry) and not previous.from_hook:
        files.add_details(previous.details)
    files.add_messages(history)
    files.add_messages(turn_prefix)

    return CompactionPreparation(
        first_kept_entry_id=first_kept_entry_id,
        messages_to_summarize=history,
        turn_prefix_messages=turn_prefix,
        is_split_turn=is_split_turn,
        tokens_before=estimate_projection_tokens(projection).tokens,
        previous_summary=previous.summary if isinstance(previous, CompactionEntry) else None,
        file_ops=files.to_model(),
        settings=config.to_json(),
    )
