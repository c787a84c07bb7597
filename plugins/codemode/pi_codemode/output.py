"""What a script outputs and how the result reads.

Text items (``text()``, the final expression) and images (``image()``) are kept in
order; ``print()`` goes to a console block after them. The result::

    Script completed                       (or: Script failed)
    Wall time: 0.012 s

    ==> text 1/2 <==                       (only when there are several text items)
    …
    ==> text 2/2 <==
    …

    <console_output>
    …
    </console_output>

    Script error:                          (failed scripts: after the partial output)
    …

Text longer than ``max_output_tokens`` (× 4 characters) keeps its start and end; the
full text goes to a temp file named in the result.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_hookspecs import ImageContent, TextContent, ToolResult

__all__ = ["MAX_OUTPUT_CALLS", "MAX_OUTPUT_CHARS", "Output", "OutputLimitError", "render_result", "temp_dir"]

MAX_OUTPUT_CHARS = 16_777_216
"""Text and base64 image data a script may output, print included."""
MAX_OUTPUT_CALLS = 100_000
"""``text()`` and ``image()`` calls a script may make."""
CHARS_PER_TOKEN = 4
_MIME = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
_DATA_URL = re.compile(r"^data:(image/[a-z+.-]+);base64,(.*)$", re.DOTALL | re.IGNORECASE)


class OutputLimitError(RuntimeError):
    """The script output more than it may; the script fails."""


def temp_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "pi-codemode-output"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_temp(data: bytes, suffix: str, prefix: str) -> str:
    handle = tempfile.NamedTemporaryFile(dir=temp_dir(), prefix=prefix, suffix=suffix, delete=False)
    with handle:
        handle.write(data)
    return handle.name


def format_value(value: Any) -> str:
    """Strings as they are, anything else as JSON (``repr`` for what JSON cannot hold)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)


def _image_block(value: Any) -> ImageContent:
    if isinstance(value, dict):
        if isinstance(value.get("image_url"), str):
            return _image_block(value["image_url"])
        data = value.get("data")
        mime = value.get("mime_type") or value.get("mimeType")
        if isinstance(data, str) and isinstance(mime, str):
            return _checked(mime, data)
        raise TypeError("image() expects a data: URL, {'image_url': url} or {'type': 'image', 'data', 'mime_type'}")
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            raise ValueError("image(): remote URLs are not supported; pass a base64 data: URL or an image block")
        match = _DATA_URL.match(value.strip())
        if match is None:
            raise ValueError("image(): a string must be a base64 data: URL (data:image/png;base64,...)")
        return _checked(match.group(1).lower(), match.group(2))
    raise TypeError(f"image() expects a data: URL or an image block, got {type(value).__name__}")


def _checked(mime: str, data: str) -> ImageContent:
    mime = mime.lower()
    if mime not in _MIME:
        raise ValueError(f"image(): {mime} is not supported (PNG, JPEG, GIF and WebP are)")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("image(): the data is not valid base64") from None
    return ImageContent(data=data, mime_type=mime)


@dataclass
class _Text:
    text: str


@dataclass
class _Image:
    block: ImageContent
    path: str


@dataclass
class Output:
    """Collects one script's output in order."""

    items: list[_Text | _Image] = field(default_factory=list)
    chars: int = 0
    calls: int = 0

    def _count(self, size: int) -> None:
        self.calls += 1
        self.chars += size
        if self.calls > MAX_OUTPUT_CALLS:
            raise OutputLimitError(f"the script made more than {MAX_OUTPUT_CALLS} text() and image() calls")
        if self.chars > MAX_OUTPUT_CHARS:
            raise OutputLimitError(
                f"the script output more than {MAX_OUTPUT_CHARS} characters; write large data to a file with a tool"
            )

    def text(self, value: Any) -> None:
        text = format_value(value)
        self._count(len(text))
        self.items.append(_Text(text))

    def image(self, value: Any) -> str:
        """Add an image; returns the temp file it was saved to."""
        block = _image_block(value)
        self._count(len(block.data))
        path = _write_temp(base64.b64decode(block.data), "." + _MIME[block.mime_type], "image-")
        self.items.append(_Image(block, path))
        return path

    @property
    def images(self) -> int:
        return sum(isinstance(item, _Image) for item in self.items)


def _console_lines(console: list[tuple[str, str]]) -> str:
    text = "".join(chunk if stream == "stdout" else _prefix_stderr(chunk) for stream, chunk in console)
    return text.rstrip("\n")


def _prefix_stderr(chunk: str) -> str:
    return "".join(f"[stderr] {line}" for line in chunk.splitlines(keepends=True))


def _truncate(text: str, max_chars: int) -> tuple[str, str | None]:
    if len(text) <= max_chars:
        return text, None
    path = _write_temp(text.encode(), ".txt", "output-")
    head = max_chars // 2
    tail = max_chars - head
    omitted = len(text) - head - tail
    marker = f"\n\n[… {omitted} characters omitted; the full output ({len(text)} characters) is in {path} …]\n\n"
    return text[:head] + marker + text[-tail:], path


@dataclass
class Outcome:
    """How a script ended, for :func:`render_result`."""

    ok: bool
    seconds: float
    output: Output
    console: list[tuple[str, str]]
    error: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)


def render_result(outcome: Outcome, max_output_tokens: int) -> ToolResult:
    """The ``codemode`` tool result: one text block (header, output in order with a
    placeholder line where each image goes, console, error), then the image blocks."""
    texts = sum(isinstance(item, _Text) for item in outcome.output.items)
    lines: list[str] = []
    images: list[ImageContent] = []
    n = 0
    for item in outcome.output.items:
        if isinstance(item, _Text):
            n += 1
            lines.append(f"==> text {n}/{texts} <==\n{item.text}" if texts > 1 else item.text)
        else:
            images.append(item.block)
            lines.append(f"[image {len(images)}: {item.block.mime_type}, saved to {item.path}]")
    console = _console_lines(outcome.console)
    if console:
        lines.append(f"<console_output>\n{console}\n</console_output>")
    body, full_path = _truncate("\n".join(lines), max_output_tokens * CHARS_PER_TOKEN)
    parts = [f"{'Script completed' if outcome.ok else 'Script failed'}\nWall time: {outcome.seconds:.3f} s"]
    if body:
        parts.append(body)
    elif outcome.ok:
        parts.append("(no output)")
    if not outcome.ok:
        parts.append(f"Script error:\n{outcome.error or 'unknown error'}")
    content: list[TextContent | ImageContent] = [TextContent(text="\n\n".join(parts)), *images]
    details: dict[str, Any] = {"calls": outcome.calls, "wall_ms": round(outcome.seconds * 1000, 3)}
    if full_path is not None:
        details["full_output_path"] = full_path
    return ToolResult(content=content, details=details, is_error=not outcome.ok)
