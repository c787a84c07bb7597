"""The ``edit`` tool: exact text replacements in one file."""

from __future__ import annotations

import json
import os
import stat
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from pi_hookspecs import ToolDefinition, ToolResult

from .._fs import atomic_write
from ._common import (
    STRICT_PREFERRED,
    ToolArgs,
    ToolError,
    ctx_file_access,
    define_tool,
    destructive_annotations,
    os_error_text,
    rename_path_alias,
    run_async_file_mutation,
    run_file_mutation,
    run_to_completion,
)

if TYPE_CHECKING:
    from .edit_diff import Replacement

# matching, diffing and patching (edit_diff, difflib) are imported by the first edit


class EditBlock(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    oldText: str = Field(
        description="Exact text to replace. It must occur exactly once in the original file and must not "
        "overlap another edits[].oldText of the same call."
    )
    newText: str = Field(description="The text that replaces oldText.")


class EditArgs(ToolArgs):
    path: str = Field(description="Path of the file to edit, relative to the working directory or absolute")
    edits: list[EditBlock] = Field(
        description="One or more replacements, each matched against the original file (not against the result "
        "of the edits before it). Edits must not overlap; merge changes to nearby lines into one edit."
    )


DESCRIPTION = (
    "Edit one file by exact text replacement. Every edits[].oldText must match a unique region of the "
    "original file, and the regions must not overlap. Merge changes that touch the same or nearby lines "
    "into one edit; do not pad oldText with large unchanged regions to connect distant changes."
)


def prepare_edit_arguments(args: Any) -> Any:
    """Accept the older ``{path, oldText, newText}`` shape (folded into ``edits``) and
    ``edits`` sent as a JSON string."""
    args = rename_path_alias(args)
    if not isinstance(args, dict):
        return args
    args = dict(args)
    edits = args.get("edits")
    if isinstance(edits, str):
        try:
            parsed = json.loads(edits)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
        elif isinstance(parsed, dict):
            args["edits"] = [parsed]
    elif isinstance(edits, dict):
        args["edits"] = [edits]
    old, new = args.get("oldText"), args.get("newText")
    if isinstance(old, str) and isinstance(new, str):
        existing = args.get("edits")
        args["edits"] = [*(existing if isinstance(existing, list) else []), {"oldText": old, "newText": new}]
        args.pop("oldText")
        args.pop("newText")
    return args


def _read(path: str, shown: str) -> bytes:
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"Could not edit {shown}: it is a directory.")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"Could not edit {shown}: not a regular file.")
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ToolError(f"Could not edit {shown}: file not found. Use write to create a new file.") from None
    except OSError as exc:
        raise ToolError(f"Could not edit {shown}: {os_error_text(exc)}.") from None


def _edit_file(path: str, shown: str, edits: list[Replacement]) -> dict[str, Any]:
    raw = _read(path, shown).decode("utf-8", errors="surrogateescape")
    data, details = _edited(raw, shown, edits)
    try:
        atomic_write(path, data, like_in_place=True)
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {os_error_text(exc)}.") from None
    return details


def _edited(raw: str, shown: str, edits: list[Replacement]) -> tuple[bytes, dict[str, Any]]:
    """The file's new bytes and the result's details."""
    from .edit_diff import (
        EditError,
        apply_edits,
        detect_line_ending,
        display_diff,
        normalize_to_lf,
        restore_line_endings,
        strip_bom,
        unified_patch,
    )

    bom, content = strip_bom(raw)
    ending = detect_line_ending(content)
    base = normalize_to_lf(content)
    try:
        new = apply_edits(base, edits, shown)
    except EditError as exc:
        raise ToolError(str(exc)) from None
    data = (bom + restore_line_endings(new, ending)).encode("utf-8", errors="surrogateescape")
    diff, first_changed = display_diff(base, new)
    details: dict[str, Any] = {"diff": diff, "patch": unified_patch(shown, base, new)}
    if first_changed is not None:
        details["firstChangedLine"] = first_changed
    return data, details


async def _edit_served(path: str, shown: str, edits: list[Replacement], ctx: Any) -> dict[str, Any]:
    """The edit with the file's text read and written through ``file_access``
    handlers (an editor) where they take it, locally otherwise."""
    served = await ctx_file_access(ctx, "read", path, tool_name="edit")
    if served is None or served.content is None:
        raw = (await run_to_completion(_read, path, shown)).decode("utf-8", errors="surrogateescape")
    else:
        raw = served.content
    data, details = _edited(raw, shown, edits)
    text = data.decode("utf-8", errors="surrogateescape")
    if await ctx_file_access(ctx, "write", path, tool_name="edit", content=text) is None:
        try:
            await run_to_completion(lambda: atomic_write(path, data, like_in_place=True))
        except OSError as exc:
            raise ToolError(f"Could not write {shown}: {os_error_text(exc)}.") from None
    return details


async def run_edit(args: EditArgs, ctx: Any) -> ToolResult:
    if not args.edits:
        raise ToolError("Edit tool input is invalid: edits must contain at least one replacement.")
    from .edit_diff import Replacement

    edits = [Replacement(e.oldText, e.newText) for e in args.edits]
    if getattr(ctx, "_file_access", None) is not None:
        details = await run_async_file_mutation(ctx, args.path, _edit_served, edits, ctx)
    else:
        details = await run_file_mutation(ctx, args.path, _edit_file, edits)
    return ToolResult.text(f"Successfully replaced {len(edits)} block(s) in {args.path}.", details=details)


def create_edit_tool() -> ToolDefinition:
    return define_tool(
        name="edit",
        constrained_sampling=STRICT_PREFERRED,
        description=DESCRIPTION,
        args_model=EditArgs,
        run=run_edit,
        prompt_snippet="Make precise file edits by exact text replacement, several disjoint edits per call",
        prompt_guidelines=[
            "Use edit for precise changes: each edits[].oldText must match the file exactly.",
            "To change several separate places in one file, make one edit call with several entries in edits[] "
            "instead of several edit calls.",
            "edit matches every edits[].oldText against the original file, not against the result of earlier "
            "entries; do not send overlapping or nested edits, merge nearby changes into one entry.",
            "Keep each edits[].oldText in an edit call as short as possible while still unique in the file.",
        ],
        annotations=destructive_annotations("Edit file", idempotent=False),
        prepare_arguments=prepare_edit_arguments,
    )
