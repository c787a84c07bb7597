"""Inline images in the transcript: the kitty graphics protocol or iTerm2's inline images,
where the terminal has one, else a line of text naming the image.

Which protocol: the ``terminal.images`` setting (``"kitty"``, ``"iterm2"``, ``false``,
``"auto"``), then ``PI_IMAGE_PROTOCOL`` (``kitty``, ``iterm2``, ``none``), then what the
environment tells of the terminal, as pi 1.6.0 reads it (kitty, Ghostty, WezTerm, Warp
and a few others speak kitty's protocol; iTerm2 its own; none under tmux or screen).
``terminal.showImages: false`` shows every image as text. Kitty's protocol takes PNG
only: other formats are shown as text there. pi 1.6.0 has no sixel output, nor has this.

In fullscreen mode the pane redraws its own text, so an image is sent to the terminal once
(:func:`kitty_transmit`) and placed wherever the pane shows it (:func:`kitty_place`, cut
at the pane's edges; :func:`kitty_remove` when it scrolls away); iTerm2's images, which
scroll with the text, are named in text there, as pi 1.6.0 does.
"""

from __future__ import annotations

import base64
import binascii
import os
import random
import struct
from collections.abc import Mapping
from typing import Any

CELL_WIDTH_PX, CELL_HEIGHT_PX = 9, 18
"""The size of a terminal cell pi assumes (no terminal is asked)."""
KITTY_CHUNK = 4096


def detect_protocol(env: Mapping[str, str] | None = None) -> str | None:
    """``"kitty"``, ``"iterm2"`` or ``None`` from the environment alone."""
    env = os.environ if env is None else env
    forced = env.get("PI_IMAGE_PROTOCOL", "").lower()
    if forced in ("kitty", "iterm2"):
        return forced
    if forced in ("none", "0"):
        return None
    program = env.get("TERM_PROGRAM", "").lower()
    term = env.get("TERM", "").lower()
    if env.get("TMUX") or term.startswith(("tmux", "screen")):
        return None  # a multiplexer in between: images are unreliable
    if program in ("herdr", "rex") or (program == "orca" and env.get("ORCA_IMAGE_PROTOCOL") == "kitty"):
        return "kitty"
    if env.get("KITTY_WINDOW_ID") or program == "kitty":
        return "kitty"
    if program == "ghostty" or "ghostty" in term or env.get("GHOSTTY_RESOURCES_DIR"):
        return "kitty"
    if env.get("WEZTERM_PANE") or program == "wezterm":
        return "kitty"
    if program == "warpterminal" or env.get("WARP_SESSION_ID") or env.get("WARP_TERMINAL_SESSION_UUID"):
        return "kitty"
    if env.get("ITERM_SESSION_ID") or program == "iterm.app":
        return "iterm2"
    return None


def image_protocol(settings: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The protocol to draw images with under these settings (``None``: text)."""
    show, _ = settings.lookup("terminal", "showImages")
    if show is False:
        return None
    chosen, _ = settings.lookup("terminal", "images")
    if chosen in ("kitty", "iterm2"):
        return str(chosen)
    if chosen is False:
        return None
    return detect_protocol(env)


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from the file's header (PNG, JPEG, GIF, WebP)."""
    try:
        if mime == "image/png" and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if mime == "image/gif" and data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
        if mime == "image/jpeg" and data[:2] == b"\xff\xd8":
            at = 2
            while at + 9 < len(data):
                if data[at] != 0xFF:
                    at += 1
                    continue
                marker = data[at + 1]
                if 0xC0 <= marker <= 0xC2:
                    height, width = struct.unpack(">HH", data[at + 5 : at + 9])
                    return int(width), int(height)
                length = struct.unpack(">H", data[at + 2 : at + 4])[0]
                if length < 2:
                    return None
                at += 2 + length
            return None
        if mime == "image/webp" and data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
            chunk = data[12:16]
            if chunk == b"VP8 ":
                width, height = struct.unpack("<HH", data[26:30])
                return int(width) & 0x3FFF, int(height) & 0x3FFF
            if chunk == b"VP8L":
                bits = struct.unpack("<I", data[21:25])[0]
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8X":
                return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    except (struct.error, IndexError):
        return None
    return None


def cells(size: tuple[int, int], max_columns: int) -> tuple[int, int]:
    """``(columns, rows)`` an image of ``size`` pixels takes at most ``max_columns`` wide
    (never taller than it is wide in cells' pixels: a tall image is shrunk to fit)."""
    width_px, height_px = max(1, size[0]), max(1, size[1])
    max_columns = max(1, max_columns)
    max_rows = max(1, -(-max_columns * CELL_WIDTH_PX // CELL_HEIGHT_PX))
    scale = min(max_columns * CELL_WIDTH_PX / width_px, max_rows * CELL_HEIGHT_PX / height_px)
    columns = max(1, min(max_columns, -(-int(width_px * scale) // CELL_WIDTH_PX)))
    rows = max(1, min(max_rows, -(-int(height_px * scale) // CELL_HEIGHT_PX)))
    return columns, rows


def kitty_sequence(payload: str, columns: int, rows: int, image_id: int) -> str:
    """Transmit and show a PNG (base64 ``payload``) over ``columns`` x ``rows`` cells,
    the cursor left where it was; in chunks of 4096 bytes."""
    head = f"a=T,f=100,q=2,C=1,c={columns},r={rows},i={image_id}"
    if len(payload) <= KITTY_CHUNK:
        return f"\x1b_G{head};{payload}\x1b\\"
    parts = [payload[i : i + KITTY_CHUNK] for i in range(0, len(payload), KITTY_CHUNK)]
    out = [f"\x1b_G{head},m=1;{parts[0]}\x1b\\"]
    out += [f"\x1b_Gm=1;{part}\x1b\\" for part in parts[1:-1]]
    out.append(f"\x1b_Gm=0;{parts[-1]}\x1b\\")
    return "".join(out)


def iterm2_sequence(payload: str, size: int, columns: int) -> str:
    return f"\x1b]1337;File=inline=1;size={size};width={columns};height=auto:{payload}\x07"


def fallback_text(mime: str, size: tuple[int, int] | None) -> str:
    """The line an image shows as where the terminal cannot draw it."""
    return f"[Image: [{mime}]{f' {size[0]}x{size[1]}' if size else ''}]"


def draw_image(payload: str, mime: str, protocol: str | None, *, max_columns: int, indent: int = 0) -> str | None:
    """Terminal text that draws the image (the sequence, then a line per row it
    covers), or ``None`` where the text fallback is due: no protocol, kitty and not a
    PNG, data that is not base64."""
    if protocol not in ("kitty", "iterm2"):
        return None
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if protocol == "kitty" and not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    size = image_size(data, mime) or (800, 600)
    columns, rows = cells(size, max_columns)
    pad = " " * indent
    if protocol == "kitty":
        image_id = random.randint(1, 0xFFFFFFFE)
        return pad + kitty_sequence(payload, columns, rows, image_id) + "\n" * rows
    return pad + iterm2_sequence(payload, len(data), columns) + "\n"


def describe(payload: str, mime: str) -> str:
    """:func:`fallback_text` for a base64 ``payload``."""
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return fallback_text(mime, None)
    return fallback_text(mime, image_size(data, mime))


# --------------------------------------------------------------------------- kitty in the fullscreen pane


def _kitty_chunks(head: str, payload: str) -> str:
    if len(payload) <= KITTY_CHUNK:
        return f"\x1b_G{head};{payload}\x1b\\"
    parts = [payload[i : i + KITTY_CHUNK] for i in range(0, len(payload), KITTY_CHUNK)]
    out = [f"\x1b_G{head},m=1;{parts[0]}\x1b\\"]
    out += [f"\x1b_Gm=1;{part}\x1b\\" for part in parts[1:-1]]
    out.append(f"\x1b_Gm=0;{parts[-1]}\x1b\\")
    return "".join(out)


def kitty_transmit(payload: str, image_id: int) -> str:
    """Send a PNG (base64 ``payload``) to the terminal as image ``image_id``, not shown yet."""
    return _kitty_chunks(f"a=t,f=100,q=2,i={image_id}", payload)


def kitty_place(
    image_id: int, columns: int, rows: int, size: tuple[int, int], hidden: int = 0, rows_shown: int | None = None
) -> str:
    """Show image ``image_id`` at the cursor over ``columns`` x ``rows`` cells (placement 1:
    placing it again moves it), the cursor left where it was. ``hidden`` rows cut off the
    top and ``rows_shown`` rows shown: the part of the picture still in the pane."""
    rows_shown = rows if rows_shown is None else max(1, min(rows_shown, rows - hidden))
    head = f"a=p,q=2,i={image_id},p=1,C=1,c={columns},r={rows_shown}"
    if hidden or rows_shown < rows:
        height = max(1, size[1])
        top = height * hidden // rows
        bottom = -(-height * (hidden + rows_shown) // rows)
        head += f",y={top},h={max(1, min(height, bottom) - top)}"
    return f"\x1b_G{head}\x1b\\"


def kitty_remove(image_id: int) -> str:
    """Take image ``image_id`` off the screen (the terminal keeps it to place again)."""
    return f"\x1b_Ga=d,d=i,i={image_id},q=2\x1b\\"


def kitty_free_all() -> str:
    """Delete every image pi sent (and free the terminal's memory for them)."""
    return "\x1b_Ga=d,d=A,q=2\x1b\\"


def pane_image_parts(payload: str, mime: str, protocol: str | None) -> tuple[tuple[int, int], str] | None:
    """``(size, mime)`` of an image the fullscreen pane can draw (kitty, a PNG with valid
    base64); ``None``: it shows as text there, as iTerm2's images do (they scroll with the
    text, which the pane redraws itself)."""
    if protocol != "kitty" or mime != "image/png":
        return None
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    return image_size(data, mime) or (800, 600), mime


def new_image_id() -> int:
    return random.randint(1, 0xFFFFFFFE)
