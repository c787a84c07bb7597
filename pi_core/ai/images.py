"""Images sent to a model within its limits (``images.autoResize``).

An image wider or taller than 2000 pixels, or whose base64 text exceeds 4.5 MB (below
Anthropic's 5 MB), is shrunk as pi 1.6.0 does: scaled to fit 2000x2000 (EXIF rotation
applied), encoded as PNG and as JPEG (quality 80) and the smaller kept; then lower JPEG
qualities; then smaller sizes, three quarters at a time. The model is told the original
size so it can map coordinates back. Pillow is imported only when an image is checked.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Any

from pi_hookspecs import ImageContent, TextContent

MAX_WIDTH = 2000
MAX_HEIGHT = 2000
MAX_BASE64_BYTES = int(4.5 * 1024 * 1024)
JPEG_QUALITIES = (80, 85, 70, 55, 40)


@dataclass(frozen=True)
class FittedImage:
    data: str
    """Base64."""
    mime_type: str
    original: tuple[int, int]
    size: tuple[int, int]

    @property
    def resized(self) -> bool:
        return self.original != self.size

    def note(self) -> str:
        """The dimension note pi 1.6.0 puts after a resized image."""
        (ow, oh), (w, h) = self.original, self.size
        return (
            f"[Image: original {ow}x{oh}, displayed at {w}x{h}. "
            f"Multiply coordinates by {ow / w:.2f} to map to original image.]"
        )


def fit_image(data: str, mime_type: str) -> FittedImage | None:
    """``data`` (base64) within the limits; ``None`` when it is not an image Pillow
    reads (it is then sent as it is) or cannot be made small enough."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        raw = base64.b64decode(data, validate=False)
        with Image.open(io.BytesIO(raw)) as opened:
            width, height = opened.size  # from the header: nothing decoded yet
            if width <= MAX_WIDTH and height <= MAX_HEIGHT and len(data) < MAX_BASE64_BYTES:
                # (the limits are square: an EXIF rotation cannot take it over them)
                return FittedImage(data, mime_type, (width, height), (width, height))
            image = ImageOps.exif_transpose(opened)
            image.load()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    width, height = image.size
    target_w, target_h = width, height
    if target_w > MAX_WIDTH:
        target_h, target_w = max(1, round(target_h * MAX_WIDTH / target_w)), MAX_WIDTH
    if target_h > MAX_HEIGHT:
        target_w, target_h = max(1, round(target_w * MAX_HEIGHT / target_h)), MAX_HEIGHT
    while True:
        resized = (
            image.resize((target_w, target_h), Image.Resampling.LANCZOS)
            if (target_w, target_h) != image.size
            else image
        )
        png = _encode(resized, "PNG")
        jpeg = [_encode(resized, "JPEG", quality) for quality in JPEG_QUALITIES]
        preferred = [jpeg[0], png] if len(jpeg[0][0]) < len(png[0]) else [png, jpeg[0]]
        for encoded, mime in [*preferred, *jpeg[1:]]:
            if len(encoded) < MAX_BASE64_BYTES:
                return FittedImage(encoded, mime, (width, height), (target_w, target_h))
        if (target_w, target_h) == (1, 1):
            return None
        target_w, target_h = max(1, int(target_w * 0.75)), max(1, int(target_h * 0.75))


def _encode(image: Any, kind: str, quality: int | None = None) -> tuple[str, str]:
    buffer = io.BytesIO()
    if kind == "JPEG":
        image = image.convert("RGB") if image.mode not in ("RGB", "L") else image
        image.save(buffer, "JPEG", quality=quality)
        return base64.b64encode(buffer.getvalue()).decode("ascii"), "image/jpeg"
    image.save(buffer, "PNG", optimize=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii"), "image/png"


def fit_message_images(message: Any) -> Any:
    """``message`` with each image block fitted (a copy; the same object when none
    needed it); a resized image is followed by the dimension note."""
    content = getattr(message, "content", None)
    if type(content) is not list and not isinstance(content, list):
        return message
    for block in content:  # the exact class first: pydantic's isinstance is slow (a long history)
        kind = type(block)
        if kind is ImageContent or (kind is not TextContent and isinstance(block, ImageContent)):
            break
    else:
        return message
    blocks: list[Any] = []
    changed = False
    for block in content:
        if not isinstance(block, ImageContent):
            blocks.append(block)
            continue
        fitted = fit_image(block.data, block.mime_type)
        if fitted is None or (fitted.data is block.data and not fitted.resized):
            blocks.append(block)
            continue
        changed = True
        blocks.append(ImageContent(data=fitted.data, mime_type=fitted.mime_type))
        if fitted.resized:
            blocks.append(TextContent(text=fitted.note()))
    if not changed:
        return message
    copy_ = message.model_copy()
    copy_.content = blocks
    return copy_


__all__ = ["MAX_BASE64_BYTES", "MAX_HEIGHT", "MAX_WIDTH", "FittedImage", "fit_image", "fit_message_images"]
