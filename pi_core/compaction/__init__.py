"""Compaction: keep long sessions inside the model's context window.

* :func:`should_compact` - the trigger (``context_tokens > context_window - reserve_tokens``);
  :func:`estimate_context_tokens` / :func:`estimate_projected_context_tokens` size the context.
* :func:`prepare_compaction` - what to summarise and the first entry kept
  (:func:`find_cut_point`; never at a tool result; split user-message spans).
* :func:`compact` - the structured summary (:func:`generate_summary`, iterative over the
  previous one; split spans get a second summary), with ``<read-files>`` /
  ``<modified-files>`` lists. Failures raise :class:`CompactionError`: nothing is written.
* :func:`collect_entries_for_branch_summary` / :func:`generate_branch_summary` - ``/tree``.

Everything here works on plain :mod:`pi_hookspecs` entries and messages; the model is
called through an injected ``complete(model, context, options)`` coroutine. Writing
entries and firing ``session_before_compact`` / ``session_compact`` /
``session_compact_failed`` / ``session_before_tree`` is the runtime's job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Each name is imported from its module when first read: estimating tokens does not
# import summarisation, cut points and branch summaries (see pi_core._lazy).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "..ai.models": "combine_usage",
        ".branch": (
            "BranchCollection BranchPreparation collect_entries_for_branch_summary "
            "generate_branch_summary prepare_branch_entries prepare_tree"
        ),
        ".cut_point": "CutPoint find_cut_point find_turn_start_index is_cut_point is_turn_start",
        ".file_ops": "FileOpsTracker file_details file_lists format_file_operations",
        ".prepare": "RETAIN_NONE prepare_compaction resolve_first_kept_entry_id",
        ".projection": (
            "ProjectedEntry apply_context_edit entry_messages "
            "estimate_projected_context_tokens estimate_projection_tokens project_path "
            "projected_messages"
        ),
        ".prompts": "SUMMARIZER_SYSTEM_PROMPT",
        ".serialize": (
            "TOOL_RESULT_MAX_CHARS ConvertToLlm convert_for_summary format_tool_call "
            "serialize_conversation truncate_for_summary"
        ),
        ".settings": "BranchSummarySettings CompactionSettings CompactionSettingsLike SettingsValueError",
        ".summarize": (
            "CompactionError CompleteFn Summary compact generate_summary "
            "generate_turn_prefix_summary request_summary summary_failure summary_max_tokens"
        ),
        ".tokens": (
            "ContextEstimate assistant_usage calculate_context_tokens estimate_context_tokens "
            "estimate_tokens should_compact"
        ),
    },
)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from ..ai.models import combine_usage
    from .branch import (
        BranchCollection,
        BranchPreparation,
        collect_entries_for_branch_summary,
        generate_branch_summary,
        prepare_branch_entries,
        prepare_tree,
    )
    from .cut_point import CutPoint, find_cut_point, find_turn_start_index, is_cut_point, is_turn_start
    from .file_ops import FileOpsTracker, file_details, file_lists, format_file_operations
    from .prepare import RETAIN_NONE, prepare_compaction, resolve_first_kept_entry_id
    from .projection import (
        ProjectedEntry,
        apply_context_edit,
        entry_messages,
        estimate_projected_context_tokens,
        estimate_projection_tokens,
        project_path,
        projected_messages,
    )
    from .prompts import SUMMARIZER_SYSTEM_PROMPT
    from .serialize import (
        TOOL_RESULT_MAX_CHARS,
        ConvertToLlm,
        convert_for_summary,
        format_tool_call,
        serialize_conversation,
        truncate_for_summary,
    )
    from .settings import BranchSummarySettings, CompactionSettings, CompactionSettingsLike, SettingsValueError
    from .summarize import (
        CompactionError,
        CompleteFn,
        Summary,
        compact,
        generate_summary,
        generate_turn_prefix_summary,
        request_summary,
        summary_failure,
        summary_max_tokens,
    )
    from .tokens import (
        ContextEstimate,
        assistant_usage,
        calculate_context_tokens,
        estimate_context_tokens,
        estimate_tokens,
        should_compact,
    )

__all__ = [
    "RETAIN_NONE",
    "SUMMARIZER_SYSTEM_PROMPT",
    "TOOL_RESULT_MAX_CHARS",
    "BranchCollection",
    "BranchPreparation",
    "BranchSummarySettings",
    "CompactionError",
    "CompactionSettings",
    "CompactionSettingsLike",
    "CompleteFn",
    "ContextEstimate",
    "ConvertToLlm",
    "CutPoint",
    "FileOpsTracker",
    "ProjectedEntry",
    "SettingsValueError",
    "Summary",
    "apply_context_edit",
    "assistant_usage",
    "calculate_context_tokens",
    "collect_entries_for_branch_summary",
    "combine_usage",
    "compact",
    "convert_for_summary",
    "entry_messages",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "estimate_projection_tokens",
    "estimate_tokens",
    "file_details",
    "file_lists",
    "find_cut_point",
    "find_turn_start_index",
    "format_file_operations",
    "format_tool_call",
    "generate_branch_summary",
    "generate_summary",
    "generate_turn_prefix_summary",
    "is_cut_point",
    "is_turn_start",
    "prepare_branch_entries",
    "prepare_compaction",
    "prepare_tree",
    "project_path",
    "projected_messages",
    "request_summary",
    "resolve_first_kept_entry_id",
    "serialize_conversation",
    "should_compact",
    "summary_failure",
    "summary_max_tokens",
    "truncate_for_summary",
]
