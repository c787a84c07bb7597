"""Branch summaries for ``/tree`` navigation.

Leaving a branch of the session tree, the user may have the abandoned work
summarised; the summary becomes a ``branch_summary`` entry where the session continues,
so the new branch knows what was tried. The summarised entries run from the old leaf
back to (not including) the deepest entry shared with the target's path. Compactions
on the way are not a boundary: their summaries are context like any other message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pi_hookspecs import (
    AbortSignal,
    AgentMessage,
    BranchSummaryEntry,
    BranchSummaryResult,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextEditEntry,
    FileOperations,
    Model,
    SessionEntry,
    ToolResultMessage,
    TreePreparation,
)

from ..session.paths import iso_to_ms
from .file_ops import FileOpsTracker, file_details, format_file_operations
from .projection import apply_context_edit, entry_messages
from .prompts import BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, NO_BRANCH_CONTENT, build_prompt, with_focus
from .serialize import ConvertToLlm, convert_for_summary, serialize_conversation
from .settings import DEFAULT_RESERVE_TOKENS
from .summarize import CompleteFn, request_summary
from .tokens import estimate_tokens

DEFAULT_CONTEXT_WINDOW = 128_000
SUMMARY_SQUEEZE_RATIO = 0.9
"""An earlier summary that overflows the budget is still taken while less than this
share of the budget is used: it is dense, valuable context."""


@dataclass(frozen=True, slots=True)
class BranchCollection:
    """The entries a branch summary covers (oldest first) and the common ancestor."""

    entries: list[SessionEntry]
    common_ancestor_id: str | None


@dataclass(frozen=True, slots=True)
class BranchPreparation:
    """The messages of a branch that fit the budget (oldest first), the branch's file
    operations and the estimated tokens of those messages."""

    messages: list[AgentMessage]
    file_ops: FileOperations
    total_tokens: int


def _index(entries: Mapping[str, SessionEntry] | Iterable[SessionEntry]) -> Mapping[str, SessionEntry]:
    return entries if isinstance(entries, Mapping) else {entry.id: entry for entry in entries}


def _ancestry(by_id: Mapping[str, SessionEntry], leaf_id: str) -> list[str]:
    """Ids from ``leaf_id`` up to its root."""
    if leaf_id not in by_id:
        raise KeyError(f"Unknown session entry {leaf_id!r}")
    ids: list[str] = []
    seen: set[str] = set()
    current: str | None = leaf_id
    while current is not None and current not in seen and current in by_id:
        seen.add(current)
        ids.append(current)
        current = by_id[current].parent_id
    return ids


def collect_entries_for_branch_summary(
    entries: Mapping[str, SessionEntry] | Iterable[SessionEntry],
    old_leaf_id: str | None,
    target_id: str,
) -> BranchCollection:
    """The entries left behind when moving the leaf from ``old_leaf_id`` to ``target_id``.

    ``entries`` are the session's entries (or a mapping id -> entry). The result holds
    the entries from the old leaf back to, not including, the deepest common ancestor
    of both positions, oldest first - empty without an old leaf, or when the target
    lies on the old leaf's own path. Raises ``KeyError`` for an unknown id.
    """
    by_id = _index(entries)
    if not old_leaf_id:
        return BranchCollection([], None)
    old_path = _ancestry(by_id, old_leaf_id)
    on_old_path = set(old_path)
    common = next((entry_id for entry_id in _ancestry(by_id, target_id) if entry_id in on_old_path), None)
    collected: list[SessionEntry] = []
    for entry_id in old_path:
        if entry_id == common:
            break
        collected.append(by_id[entry_id])
    collected.reverse()
    return BranchCollection(collected, common)


def prepare_tree(
    entries: Mapping[str, SessionEntry] | Iterable[SessionEntry],
    old_leaf_id: str | None,
    target_id: str,
    *,
    user_wants_summary: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
) -> TreePreparation:
    """The ``session_before_tree`` preparation of a move from ``old_leaf_id`` to ``target_id``."""
    collection = collect_entries_for_branch_summary(entries, old_leaf_id, target_id)
    return TreePreparation(
        target_id=target_id,
        old_leaf_id=old_leaf_id,
        common_ancestor_id=collection.common_ancestor_id,
        entries_to_summarize=collection.entries,
        user_wants_summary=user_wants_summary,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        label=label,
    )


def _branch_messages(entry: SessionEntry, edit: ContextEditEntry | None) -> list[AgentMessage]:
    if isinstance(entry, CompactionEntry):
        # Only the summary: the system checkpoint is not conversation.
        return [
            CompactionSummaryMessage(
                summary=entry.summary, tokens_before=entry.tokens_before, timestamp=iso_to_ms(entry.timestamp)
            )
        ]
    # Tool results are left out: the assistant's tool calls already say what was done.
    messages = apply_context_edit(entry_messages(entry), edit)
    return [m for m in messages if not isinstance(m, ToolResultMessage)]


def prepare_branch_entries(entries: Sequence[SessionEntry], token_budget: int = 0) -> BranchPreparation:
    """Select the messages of ``entries`` (oldest first) that a branch summary covers.

    Walks from the newest entry back, taking messages until ``token_budget`` would be
    exceeded (``0`` = no limit); an earlier summary that overflows is still taken while
    less than 90% of the budget is used. Context edits among ``entries`` apply. File
    operations come from the tool calls walked over and from every pi-generated branch
    summary among ``entries``.
    """
    files = FileOpsTracker()
    edits: dict[str, ContextEditEntry] = {}
    for entry in entries:
        if isinstance(entry, BranchSummaryEntry) and not entry.from_hook:
            files.add_details(entry.details)
        elif isinstance(entry, ContextEditEntry):
            edits[entry.target_id] = entry

    selected: list[list[AgentMessage]] = []
    total = 0
    for entry in reversed(entries):
        messages = _branch_messages(entry, edits.get(entry.id))
        if not messages:
            continue
        files.add_messages(messages)
        tokens = sum(estimate_tokens(m) for m in messages)
        if token_budget > 0 and total + tokens > token_budget:
            is_summary = isinstance(entry, CompactionEntry | BranchSummaryEntry)
            if is_summary and total < token_budget * SUMMARY_SQUEEZE_RATIO:
                selected.append(messages)
                total += tokens
            break
        selected.append(messages)
        total += tokens

    ordered = [m for group in reversed(selected) for m in group]
    return BranchPreparation(ordered, files.to_model(), total)


async def generate_branch_summary(
    entries: Sequence[SessionEntry],
    model: Model,
    complete: CompleteFn,
    *,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    signal: AbortSignal | None = None,
    max_tokens: int | None = None,
    convert_to_llm: ConvertToLlm | None = None,
    thinking_level: str | None = None,
    session_id: str | None = None,
) -> BranchSummaryResult:
    """Summarise an abandoned branch (``entries`` from
    :func:`collect_entries_for_branch_summary`).

    The messages fit ``context_window - reserve_tokens`` (``branchSummary.reserveTokens``).
    The summary (Goal, Constraints & Preferences, Progress, Key Decisions, Next Steps)
    is introduced by a sentence saying it describes another branch and followed by the
    ``<read-files>`` / ``<modified-files>`` lists; ``details`` holds the lists.
    ``custom_instructions`` add a focus, or replace the instructions altogether with
    ``replace_instructions=True``. A branch without any message gives the fixed summary
    "No content to summarize" without calling the model.

    Raises :class:`~pi_core.compaction.summarize.CompactionError` when the summary
    fails, is aborted or was cut at the output limit.
    """
    budget = (model.context_window or DEFAULT_CONTEXT_WINDOW) - reserve_tokens
    prepared = prepare_branch_entries(entries, max(budget, 0))
    details = file_details(prepared.file_ops)
    if not prepared.messages:
        return BranchSummaryResult(summary=NO_BRANCH_CONTENT, details=details)

    if replace_instructions and custom_instructions and custom_instructions.strip():
        instructions = custom_instructions.strip()
    else:
        instructions = with_focus(BRANCH_SUMMARY_PROMPT, custom_instructions)
    converted = (convert_to_llm or convert_for_summary)(prepared.messages)
    prompt = build_prompt(serialize_conversation(converted), instructions)
    summary = await request_summary(
        prompt,
        model,
        complete,
        label="Branch summarization",
        signal=signal,
        max_tokens=max_tokens,
        thinking_level=thinking_level,
        session_id=session_id,
    )
    return BranchSummaryResult(
        summary=BRANCH_SUMMARY_PREAMBLE + summary.text + format_file_operations(prepared.file_ops),
        usage=summary.usage,
        details=details,
    )
