"""The ``write`` tool: create or overwrite a file."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

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


class WriteArgs(ToolArgs):
    path: str = Field(description="Path of the file to write, relative to the working directory or absolute")
    content: str = Field(description="The complete content of the file")


DESCRIPTION = (
    "Write content to a file: creates it when it does not exist and overwrites it when it does. "
    "Missing parent directories are created."
)


def _write(path: str, shown: str, content: str) -> int:
    if os.path.isdir(path):
        raise ToolError(f"Could not write {shown}: it is a directory.")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ToolError(f"Could not write {shown}: not a regular file.")
    data = content.encode("utf-8", errors="replace")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, data, like_in_place=True)
    except FileExistsError:
        raise ToolError(f"Could not write {shown}: a parent path is a file, not a directory.") from None
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {os_error_text(exc)}.") from None
    return len(data)


async def _write_served(path: str, shown: str, content: str, ctx: Any) -> int:
    """Through a ``file_access`` handler (an editor) when one takes it, else locally."""
    if os.path.isdir(path):
        raise ToolError(f"Could not write {shown}: it is a directory.")
    served = await ctx_file_access(ctx, "write", path, tool_name="write", content=content)
    if served is None:
        return await run_to_completion(_write, path, shown, content)
    return len(content.encode("utf-8", errors="replace"))


async def run_write(args: WriteArgs, ctx: Any) -> ToolResult:
    if getattr(ctx, "_file_access", None) is not None:
        size = await run_async_file_mutation(ctx, args.path, _write_served, args.content, ctx)
    else:
        size = await run_file_mutation(ctx, args.path, _write, args.content)
    return ToolResult.text(f"Successfully wrote {size} bytes to {args.path}")


def create_write_tool() -> ToolDefinition:
    return define_tool(
        name="write",
        constrained_sampling=STRICT_PREFERRED,
        description=DESCRIPTION,
        args_model=WriteArgs,
        run=run_write,
        prompt_snippet="Create or overwrite files",
        prompt_guidelines=["Use write only for new files or to replace the whole content of a file."],
        annotations=destructive_annotations("Write file", idempotent=True),
        prepare_arguments=rename_path_alias,
    )
