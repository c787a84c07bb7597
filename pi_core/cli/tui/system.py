"""The terminal's surroundings: the clipboard (copy, paste text or an image) and the
external editor."""

from __future__ import annotations

import base64
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

_COPY_TOOLS: tuple[tuple[str, ...], ...] = (
    ("pbcopy",),
    ("wl-copy",),
    ("xclip", "-selection", "clipboard"),
    ("xsel", "--clipboard", "--input"),
)
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _usable(tool: str) -> bool:
    if tool in ("wl-copy", "wl-paste"):
        return bool(os.environ.get("WAYLAND_DISPLAY"))
    if tool in ("xclip", "xsel"):
        return bool(os.environ.get("DISPLAY"))
    if tool in ("pbcopy", "pbpaste", "pngpaste"):
        return sys.platform == "darwin" or bool(shutil.which(tool))
    return True


OSC52_LIMIT = 100_000
"""The longest OSC 52 payload (base64 characters) pi writes, as pi 1.6.0: terminals drop
or truncate longer ones, and a multi-megabyte escape sequence stalls the terminal."""


def copy_to_clipboard(text: str, write_terminal: Callable[[str], None]) -> str:
    """Put ``text`` on the clipboard: the first clipboard tool that works (pbcopy,
    wl-copy, xclip, xsel), else the terminal's OSC 52 sequence. Returns how, or ``""``
    when neither can: no tool, and the text too long for OSC 52 (:data:`OSC52_LIMIT`)."""
    for command in _COPY_TOOLS:
        tool = shutil.which(command[0])
        if tool is None or not _usable(command[0]):
            continue
        try:
            subprocess.run([tool, *command[1:]], input=text.encode(), check=True, timeout=5, capture_output=True)
            return command[0]
        except (OSError, subprocess.SubprocessError):
            continue
    encoded = base64.b64encode(text.encode()).decode()
    if len(encoded) > OSC52_LIMIT:
        return ""
    write_terminal(f"\x1b]52;c;{encoded}\x07")
    return "OSC 52"


@dataclass
class Clipboard:
    image: tuple[bytes, str] | None = None
    text: str = ""
    problem: str | None = None


def _run(command: list[str]) -> bytes | None:
    try:
        done = subprocess.run(command, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None


def _image_mime(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_clipboard() -> Clipboard:
    """What the clipboard holds: an image (PNG, JPEG, GIF, WebP) when there is one, else
    its text. Uses wl-paste, xclip, xsel, pngpaste or pbpaste, whichever is there."""
    found = False
    image_commands: list[list[str]] = []
    text_commands: list[list[str]] = []
    if shutil.which("wl-paste") and _usable("wl-paste"):
        image_commands += [["wl-paste", "--no-newline", "--type", mime] for mime in _IMAGE_TYPES]
        text_commands.append(["wl-paste", "--no-newline"])
    if shutil.which("xclip") and _usable("xclip"):
        image_commands += [["xclip", "-selection", "clipboard", "-t", mime, "-o"] for mime in _IMAGE_TYPES]
        text_commands.append(["xclip", "-selection", "clipboard", "-o"])
    if shutil.which("xsel") and _usable("xsel"):
        text_commands.append(["xsel", "--clipboard", "--output"])
    if shutil.which("pngpaste"):
        image_commands.append(["pngpaste", "-"])
    if shutil.which("pbpaste"):
        text_commands.append(["pbpaste"])
    for command in image_commands:
        found = True
        data = _run(command)
        mime = _image_mime(data) if data else None
        if data and mime:
            return Clipboard(image=(data, mime))
    for command in text_commands:
        found = True
        data = _run(command)
        if data:
            return Clipboard(text=data.decode("utf-8", errors="replace"))
    if not found:
        return Clipboard(problem="No clipboard tool found: install wl-clipboard, xclip or xsel (pngpaste on macOS)")
    return Clipboard(problem="The clipboard holds no image or text")


def run_editor(command: str, path: str) -> int:
    """Run the editor ``command`` (a shell-like command line) on ``path`` in the
    terminal; its exit code."""
    argv = [*shlex.split(command), path]
    return subprocess.call(argv)
