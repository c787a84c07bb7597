"""The ``read`` tool: a text file (a window of lines) or an image."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import unicodedata
from typing import Any

from pydantic import Field

from pi_hookspecs import ImageContent, TextContent, ToolDefinition, ToolResult

from ._common import (
    ToolArgs,
    ToolError,
    ctx_cwd,
    ctx_file_access,
    ctx_optional,
    ctx_settings,
    ctx_signal,
    define_tool,
    os_error_text,
    raise_if_aborted,
    read_only_annotations,
    rename_path_alias,
    resolve_path,
    run_abortable,
    setting,
)
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, byte_len, format_size, truncate_head

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Images larger than this are described, not attached."""

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def detect_image_mime_type(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP image from its first bytes."""
    for signature, mime in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


class ReadArgs(ToolArgs):
    path: str = Field(description="Path of the file to read, relative to the working directory or absolute")
    offset: int | None = Field(default=None, description="First line to read, counting from 1")
    limit: int | None = Field(default=None, ge=1, description="Largest number of lines to read")


DESCRIPTION = (
    "Read a file. Text files come back as text; PNG, JPEG, GIF and WebP images come back as image "
    f"attachments. Text output stops after {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB, "
    "whichever comes first; a notice then says which offset continues. Use offset and limit to read "
    "a part of a large file, and keep reading with the given offset when you need all of it."
)


def _variants(path: str) -> list[str]:
    """Spellings macOS may have used for a file name a model typed (screenshots:
    narrow no-break space before AM/PM, decomposed accents, curly apostrophes)."""
    out = []
    ampm = path.replace(" AM.", "\u202fAM.").replace(" PM.", "\u202fPM.")
    nfd = unicodedata.normalize("NFD", path)
    for candidate in (ampm, nfd, path.replace("'", "\u2019"), nfd.replace("'", "\u2019")):
        if candidate != path and candidate not in out:
            out.append(candidate)
    return out


def resolve_read_path(path: str, cwd: str) -> str:
    resolved = resolve_path(path, cwd)
    if os.path.lexists(resolved):
        return resolved
    for candidate in _variants(resolved):
        if os.path.exists(candidate):
            return candidate
    return resolved


def _load(path: str, shown: str) -> tuple[bytes, str | None]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {os_error_text(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"Cannot read {shown}: it is a directory. List it with ls or bash instead.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"Cannot read {shown}: not a regular file")
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
            mime = detect_image_mime_type(head)
            if mime is not None and st.st_size > MAX_IMAGE_BYTES:
                return b"", mime
            return head + handle.read(), mime
    except PermissionError:
        raise ToolError(f"Cannot read {shown}: permission denied") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {os_error_text(exc)}") from None


def _image_result(data: bytes, mime: str, path: str, ctx: Any) -> ToolResult:
    note = f"Read image file [{mime}]"
    model = ctx_optional(ctx, "model")
    model_input = getattr(model, "input", None)
    vision = model_input is None or "image" in model_input
    if not data:
        size = format_size(os.path.getsize(path))
        note += f"\n[The image is {size}, larger than the {format_size(MAX_IMAGE_BYTES)} limit; it was not attached.]"
        return ToolResult(content=[TextContent(text=note)])
    if setting(ctx_settings(ctx), "images.blockImages", False) is True:
        note += "\n[Images are blocked by the images.blockImages setting; the image was not attached.]"
        return ToolResult(content=[TextContent(text=note)])
    if not vision:
        note += "\n[The current model does not support images. The image will be omitted from this request.]"
    encoded = base64.b64encode(data).decode("ascii")
    return ToolResult(content=[TextContent(text=note), ImageContent(data=encoded, mime_type=mime)])


def _text_result(data: bytes | str, args: ReadArgs) -> ToolResult:
    text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
    # As pi 1.6.0: lines are what split("\n") gives, so a final newline stays in the text
    # (and counts as an empty last line).
    lines = text.split("\n")
    total = len(lines)
    start = max(0, args.offset - 1) if args.offset else 0
    if start > 0 and start >= total:
        raise ToolError(f"Offset {args.offset} is beyond end of file ({total} lines total)")
    first = start + 1
    if args.limit is not None:
        end = min(start + args.limit, total)
        selected = lines[start:end]
    else:
        end = total
        selected = lines[start:]
    truncation = truncate_head("\n".join(selected))
    if truncation.first_line_exceeds_limit:
        size = format_size(byte_len(lines[start]))
        message = (
            f"[Line {first} is {size}, larger than the {format_size(DEFAULT_MAX_BYTES)} limit. "
            f"Use bash: sed -n '{first}p' {args.path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        return ToolResult.text(message, details={"truncation": truncation.to_json()})
    if truncation.truncated:
        last = first + truncation.output_lines - 1
        limit_note = "" if truncation.truncated_by == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        output = (
            f"{truncation.content}\n\n[Showing lines {first}-{last} of {total}{limit_note}. "
            f"Use offset={last + 1} to continue.]"
        )
        return ToolResult.text(output, details={"truncation": truncation.to_json()})
    if end < total:
        output = f"{truncation.content}\n\n[{total - end} more lines in file. Use offset={end + 1} to continue.]"
        return ToolResult.text(output)
    return ToolResult.text(truncation.content)


async def run_read(args: ReadArgs, ctx: Any) -> ToolResult:
    signal = ctx_signal(ctx)
    raise_if_aborted(signal)
    path = resolve_read_path(args.path, ctx_cwd(ctx))
    data, mime = await run_abortable(signal, asyncio.to_thread(_load, path, args.path))
    if mime is not None:
        return _image_result(data, mime, path, ctx)
    served = await ctx_file_access(ctx, "read", path, tool_name="read")
    return _text_result(served.content if served is not None and served.content is not None else data, args)


def create_read_tool() -> ToolDefinition:
    return define_tool(
        name="read",
        description=DESCRIPTION,
        args_model=ReadArgs,
        run=run_read,
        prompt_snippet="Read file contents (text files and images)",
        prompt_guidelines=["Use read to look at files instead of cat, head, tail or sed in bash."],
        annotations=read_only_annotations("Read file"),
        prepare_arguments=rename_path_alias,
    )
