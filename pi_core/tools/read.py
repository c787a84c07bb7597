"""The ``read`` tool: a text file (a window of lines), an image, or a binary file's description.

Memory stays bounded by what is returned, whatever the file's size: a text file is
streamed (in chunks of :data:`SCAN_CHUNK_BYTES`) to count its lines and find the window
asked for, and only the window (at most :data:`~pi_core.tools.truncate.DEFAULT_MAX_BYTES`
plus two bytes of it) is ever held. A file with NUL bytes in its first
:data:`BINARY_PROBE_BYTES` bytes (or whose start is not UTF-8 and full of control
characters) is binary: it is described (type guess and size), never sent as text.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import os
import stat
import threading
import unicodedata
from typing import Any, BinaryIO

from pydantic import Field

from pi_hookspecs import ImageContent, TextContent, ToolDefinition, ToolResult
from pi_hookspecs.record import dataclass

from ._common import (
    STRICT_PREFERRED,
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
    run_stoppable,
    setting,
)
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncationResult, byte_len, format_size, truncate_head

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Images larger than this are described, not attached."""

BINARY_PROBE_BYTES = 8192
"""How much of the start of a file decides whether it is binary (as git does)."""

SCAN_CHUNK_BYTES = 1024 * 1024
"""The piece of a file held at a time while its lines are counted."""

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

_BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (also .jar, .docx, .xlsx, .whl)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"\x7fELF", "ELF executable or shared library"),
    (b"MZ", "Windows executable (PE)"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"\xfe\xed\xfa\xcf", "Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "Mach-O universal binary or Java class file"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\x00asm", "WebAssembly module"),
    (b"OggS", "Ogg audio/video"),
    (b"ID3", "MP3 audio"),
    (b"fLaC", "FLAC audio"),
    (b"\x1a\x45\xdf\xa3", "Matroska/WebM video"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"\x00\x00\x01\x00", "ICO image"),
    (b"wOFF", "WOFF font"),
    (b"wOF2", "WOFF2 font"),
    (b"OTTO", "OpenType font"),
    (b"\x00\x01\x00\x00", "TrueType font"),
)

_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v\b\x1b")


def detect_image_mime_type(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP image from its first bytes."""
    for signature, mime in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3 and exc.reason == "unexpected end of data":
            return False  # a character cut by the probe's end
    # not UTF-8 (Latin-1 text is still text): binary when full of control characters
    controls = sum(1 for byte in head if (byte < 0x20 and byte not in _TEXT_CONTROLS) or byte == 0x7F)
    return controls * 10 > len(head)


def detect_binary_kind(head: bytes, path: str = "") -> str | None:
    """``None`` for text; for a binary file (judged from its first bytes ``head``, see
    :data:`BINARY_PROBE_BYTES`) a short guess of its type, from its signature, else its
    name, else ``"binary data"``."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" in head:
        return "UTF-16 text (convert it with iconv -f UTF-16 -t UTF-8)"
    if not _looks_binary(head):
        return None
    for signature, kind in _BINARY_SIGNATURES:
        if head.startswith(signature):
            return kind
    if len(head) >= 12 and head[:4] == b"RIFF":
        return {b"WAVE": "WAV audio", b"AVI ": "AVI video"}.get(head[8:12], "RIFF data")
    if head[4:8] == b"ftyp":
        return "MP4/QuickTime media"
    if head[257:262] == b"ustar":
        return "tar archive"
    guessed = mimetypes.guess_type(path)[0] if path else None
    return guessed if guessed and guessed != "application/octet-stream" else "binary data"


class ReadArgs(ToolArgs):
    path: str = Field(description="Path of the file to read, relative to the working directory or absolute")
    offset: int | None = Field(default=None, description="First line to read, counting from 1")
    limit: int | None = Field(default=None, ge=1, description="Largest number of lines to read")


DESCRIPTION = (
    "Read a file. Text files come back as text; PNG, JPEG, GIF and WebP images come back as image "
    f"attachments; other binary files are described (type and size), not shown. Text output stops after "
    f"{DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB, "
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


@dataclass(frozen=True)
class _Probe:
    """What the start of a file says: an image (with its bytes when small enough), a
    binary file (``binary``: the type guess) or text."""

    size: int
    mime: str | None = None
    image: bytes = b""
    binary: str | None = None


def _probe(path: str, shown: str) -> _Probe:
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
            head = handle.read(BINARY_PROBE_BYTES)
            mime = detect_image_mime_type(head)
            if mime is not None:
                if st.st_size > MAX_IMAGE_BYTES:
                    return _Probe(st.st_size, mime)
                return _Probe(st.st_size, mime, head + handle.read(MAX_IMAGE_BYTES + 1 - len(head)))
    except PermissionError:
        raise ToolError(f"Cannot read {shown}: permission denied") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {os_error_text(exc)}") from None
    return _Probe(st.st_size, binary=detect_binary_kind(head, path))


def _image_result(data: bytes, mime: str, path: str, ctx: Any) -> ToolResult:
    note = f"Read image file [{mime}]"
    model = ctx_optional(ctx, "model")
    model_input = getattr(model, "input", None)
    vision = model_input is None or "image" in model_input
    if not data or len(data) > MAX_IMAGE_BYTES:
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


def _binary_result(kind: str, size: int, shown: str) -> ToolResult:
    text = (
        f"[{shown} is a binary file ({kind}, {format_size(size)}); it is not shown as text. "
        f"Inspect it with bash instead, e.g. file {shown}, xxd {shown} | head, or strings {shown} | head.]"
    )
    return ToolResult.text(text, details={"binary": {"kind": kind, "size": size}})


def _start_line(args: ReadArgs) -> int:
    return max(0, args.offset - 1) if args.offset else 0


def _window_result(
    args: ReadArgs, truncation: TruncationResult, *, start: int, end: int, total: int, first_line_bytes: int
) -> ToolResult:
    """The tool's answer for lines ``start`` to ``end`` (0-based, end excluded) of a
    text of ``total`` lines, given the truncation of those lines."""
    first = start + 1
    if truncation.first_line_exceeds_limit:
        message = (
            f"[Line {first} is {format_size(first_line_bytes)}, larger than the "
            f"{format_size(DEFAULT_MAX_BYTES)} limit. "
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


def _text_result(data: bytes | str, args: ReadArgs) -> ToolResult:
    """The answer for a whole text held in memory (content a ``file_access`` handler served)."""
    text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
    # As pi 1.6.0: lines are what split("\n") gives, so a final newline stays in the text
    # (and counts as an empty last line).
    lines = text.split("\n")
    total = len(lines)
    start = _start_line(args)
    if start > 0 and start >= total:
        raise ToolError(f"Offset {args.offset} is beyond end of file ({total} lines total)")
    end = min(start + args.limit, total) if args.limit is not None else total
    truncation = truncate_head("\n".join(lines[start:end]))
    first_line_bytes = byte_len(lines[start]) if truncation.first_line_exceeds_limit else 0
    return _window_result(args, truncation, start=start, end=end, total=total, first_line_bytes=first_line_bytes)


class _Stopped(Exception):
    """The read was aborted while the file was scanned."""


def _scan_newlines(handle: BinaryIO, wanted: set[int], stop: threading.Event) -> tuple[int, int, dict[int, int]]:
    """``(newlines, size, positions)``: how many newlines the file has, how many bytes,
    and the byte offset of each newline whose (0-based) index is in ``wanted``. Holds
    one chunk of the file at a time."""
    pending = sorted(index for index in wanted if index >= 0)
    positions: dict[int, int] = {}
    count = offset = 0
    handle.seek(0)
    while True:
        if stop.is_set():
            raise _Stopped
        chunk = handle.read(SCAN_CHUNK_BYTES)
        if not chunk:
            return count, offset, positions
        newlines = chunk.count(b"\n")
        while pending and pending[0] < count + newlines:
            index = pending.pop(0)
            pos = -1
            for _ in range(index - count + 1):
                pos = chunk.index(b"\n", pos + 1)
            positions[index] = offset + pos
        count += newlines
        offset += len(chunk)


def _read_window(path: str, args: ReadArgs, stop: threading.Event) -> ToolResult:
    """The answer for a text file on disk, streamed: the same as :func:`_text_result`
    on the whole file, while holding at most one scan chunk and the window."""
    start = _start_line(args)
    stop_line = start + args.limit if args.limit is not None else None
    wanted = {start - 1, start} | ({stop_line - 1} if stop_line is not None else set())
    try:
        with open(path, "rb") as handle:
            try:
                newlines, size, positions = _scan_newlines(handle, wanted, stop)
            except _Stopped:
                return ToolResult.text("")  # run_stoppable reports the abort
            total = newlines + 1
            if start > 0 and start >= total:
                raise ToolError(f"Offset {args.offset} is beyond end of file ({total} lines total)")
            end = min(stop_line, total) if stop_line is not None else total
            begin = positions[start - 1] + 1 if start > 0 else 0
            finish = positions[end - 1] if end - 1 < newlines else size
            first_line_end = positions[start] if start < newlines else size
            handle.seek(begin)
            # two bytes past the limit: even when the last byte read ends a line, what
            # comes before it is over the limit, so truncate_head decides as on the whole
            window = handle.read(min(finish - begin, DEFAULT_MAX_BYTES + 2))
            partial = len(window) < finish - begin
            last_byte = b""
            if partial:
                handle.seek(finish - 1)
                last_byte = handle.read(1)
    except PermissionError:
        raise ToolError(f"Cannot read {args.path}: permission denied") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {args.path}: {os_error_text(exc)}") from None
    truncation = truncate_head(window.decode("utf-8", errors="replace"))
    if partial:  # only the start of the window was read: report the whole window's size
        truncation.total_bytes = finish - begin
        truncation.total_lines = (end - start) - (1 if last_byte == b"\n" else 0)
    return _window_result(args, truncation, start=start, end=end, total=total, first_line_bytes=first_line_end - begin)


async def run_read(args: ReadArgs, ctx: Any) -> ToolResult:
    signal = ctx_signal(ctx)
    raise_if_aborted(signal)
    path = resolve_read_path(args.path, ctx_cwd(ctx))
    probe = await run_abortable(signal, asyncio.to_thread(_probe, path, args.path))
    if probe.mime is not None:
        return _image_result(probe.image, probe.mime, path, ctx)
    served = await ctx_file_access(ctx, "read", path, tool_name="read")
    if served is not None and served.content is not None:
        return _text_result(served.content, args)
    if probe.binary is not None:
        return _binary_result(probe.binary, probe.size, args.path)
    return await run_stoppable(signal, _read_window, path, args)


def create_read_tool() -> ToolDefinition:
    return define_tool(
        name="read",
        constrained_sampling=STRICT_PREFERRED,
        description=DESCRIPTION,
        args_model=ReadArgs,
        run=run_read,
        prompt_snippet="Read file contents (text files and images)",
        prompt_guidelines=["Use read to look at files instead of cat, head, tail or sed in bash."],
        annotations=read_only_annotations("Read file"),
        prepare_arguments=rename_path_alias,
    )
