"""Keeping tool output small enough for a model's context.

Two limits apply together and whichever is reached first wins: :data:`DEFAULT_MAX_LINES`
lines and :data:`DEFAULT_MAX_BYTES` bytes (UTF-8). :func:`truncate_head` keeps the start
(file reads, search results), :func:`truncate_tail` keeps the end (command output).
Neither returns a partial line, except :func:`truncate_tail` when the last line alone is
larger than the byte limit: then the end of that line is kept.
"""

from __future__ import annotations

from typing import Any, Literal

from pi_hookspecs.record import dataclass

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
"""Characters kept of one grep match line."""

TruncatedBy = Literal["lines", "bytes"]


@dataclass
class TruncationResult:
    """Text cut to the line and byte limits, with what was cut."""

    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool = False
    first_line_exceeds_limit: bool = False
    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES

    def to_json(self) -> dict[str, Any]:
        """The details shape of the TypeScript pi (camelCase), without the content."""
        return {
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def byte_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def split_lines(content: str) -> list[str]:
    """Lines of ``content``; a final newline ends the last line instead of starting one."""
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def format_size(size: int) -> str:
    """``512B``, ``50.0KB``, ``1.5MB``."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def _untruncated(content: str, lines: int, size: int, max_lines: int, max_bytes: int) -> TruncationResult:
    return TruncationResult(content, False, None, lines, size, lines, size, max_lines=max_lines, max_bytes=max_bytes)


def truncate_head(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first complete lines that fit both limits. When even the first line is
    larger than ``max_bytes`` the content is empty and ``first_line_exceeds_limit`` set."""
    total_bytes = byte_len(content)
    lines = split_lines(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)
    if byte_len(lines[0]) > max_bytes:
        return TruncationResult(
            "",
            True,
            "bytes",
            total_lines,
            total_bytes,
            0,
            0,
            first_line_exceeds_limit=True,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )
    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    for index, line in enumerate(lines[:max_lines]):
        size = byte_len(line) + (1 if index else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        used += size
    text = "\n".join(kept)
    return TruncationResult(
        text,
        True,
        truncated_by,
        total_lines,
        total_bytes,
        len(kept),
        byte_len(text),
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _tail_bytes(text: str, max_bytes: int) -> str:
    """The end of ``text`` in at most ``max_bytes`` bytes, cut at a character boundary."""
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "surrogateescape")


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last complete lines that fit both limits (the end of the last line when
    it alone is too large: ``last_line_partial``)."""
    total_bytes = byte_len(content)
    lines = split_lines(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = byte_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            if not kept:
                kept.append(_tail_bytes(line, max_bytes))
                partial = True
            break
        kept.append(line)
        used += size
    kept.reverse()
    text = "\n".join(kept)
    return TruncationResult(
        text,
        True,
        truncated_by,
        total_lines,
        total_bytes,
        len(kept),
        byte_len(text),
        last_line_partial=partial,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """``line`` cut to ``max_chars`` characters with a ``... [truncated]`` marker."""
    if len(line) <= max_chars:
        return line, False
    return f"{line[:max_chars]}... [truncated]", True
