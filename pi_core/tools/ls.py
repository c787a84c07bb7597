"""The ``ls`` tool: the entries of one directory."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import Field

from pi_hookspecs import ToolDefinition, ToolResult

from ._common import (
    ToolArgs,
    ToolError,
    ctx_cwd,
    ctx_signal,
    define_tool,
    listing_result,
    os_error_text,
    raise_if_aborted,
    read_only_annotations,
    require_path,
    resolve_path,
    run_abortable,
)
from .truncate import DEFAULT_MAX_BYTES

DEFAULT_LIMIT = 500


class LsArgs(ToolArgs):
    path: str | None = Field(default=None, description="Directory to list (default: the working directory)")
    limit: int | None = Field(
        default=None, ge=1, description=f"Largest number of entries to return (default: {DEFAULT_LIMIT})"
    )


DESCRIPTION = (
    "List the entries of a directory, sorted alphabetically, directories marked with a trailing '/'. "
    f"Includes dotfiles. Output stops after {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB, "
    "whichever comes first."
)


def list_directory(path: str, limit: int) -> tuple[list[str], bool]:
    """Up to ``limit`` entries of ``path`` (``name`` or ``name/``) and whether there
    were more. Entries that cannot be examined (a dangling link) are left out."""
    require_path(path, directory=True)
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise ToolError(f"Cannot read directory {path}: {os_error_text(exc)}") from None
    names.sort(key=lambda name: (name.lower(), name))
    entries: list[str] = []
    for name in names:
        if len(entries) >= limit:
            return entries, True
        full = os.path.join(path, name)
        try:
            is_dir = os.path.isdir(full) if os.path.exists(full) else None
        except OSError:
            is_dir = None
        if is_dir is None:
            continue
        entries.append(name + "/" if is_dir else name)
    return entries, False


async def run_ls(args: LsArgs, ctx: Any) -> ToolResult:
    signal = ctx_signal(ctx)
    raise_if_aborted(signal)
    path = resolve_path(args.path or ".", ctx_cwd(ctx))
    limit = args.limit or DEFAULT_LIMIT
    entries, more = await run_abortable(signal, asyncio.to_thread(list_directory, path, limit))
    if not entries:
        return ToolResult.text("(empty directory)")
    return listing_result(entries, limit=limit, limit_reached=more, unit="entries", limit_key="entryLimitReached")


def create_ls_tool() -> ToolDefinition:
    return define_tool(
        name="ls",
        description=DESCRIPTION,
        args_model=LsArgs,
        run=run_ls,
        prompt_snippet="List directory contents",
        prompt_guidelines=["Use ls to see what a directory holds instead of running ls through bash."],
        annotations=read_only_annotations("List directory"),
        default_active=False,
    )
