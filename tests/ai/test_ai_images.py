"""images.autoResize: images over 2000x2000 (or 4.5 MB of base64) are shrunk as pi
1.6.0 does, with a note of the original size; smaller ones pass untouched."""

from __future__ import annotations

import base64
import io
import os

from PIL import Image

from pi_core.ai.images import MAX_BASE64_BYTES, fit_image, fit_message_images
from pi_hookspecs import ImageContent, TextContent, ToolResultMessage


def png(width: int, height: int, *, noise: bool = False) -> str:
    image = Image.new("RGB", (width, height), (200, 30, 30))
    if noise:
        image = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))  # incompressible
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def size_of(data: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


def test_a_small_image_is_sent_as_it_is() -> None:
    data = png(640, 480)
    fitted = fit_image(data, "image/png")
    assert fitted is not None and fitted.data is data and not fitted.resized


def test_a_wide_image_is_scaled_to_fit_with_its_original_size_noted() -> None:
    fitted = fit_image(png(3000, 1200), "image/png")
    assert fitted is not None and fitted.resized
    assert fitted.size == (2000, 800) and size_of(fitted.data) == (2000, 800)
    assert fitted.note() == (
        "[Image: original 3000x1200, displayed at 2000x800. Multiply coordinates by 1.50 to map to original image.]"
    )


def test_a_too_heavy_image_is_reencoded_below_the_byte_limit() -> None:
    data = png(1500, 1500, noise=True)
    assert len(data) > MAX_BASE64_BYTES
    fitted = fit_image(data, "image/png")
    assert fitted is not None and len(fitted.data) < MAX_BASE64_BYTES
    assert fitted.mime_type in ("image/png", "image/jpeg") and size_of(fitted.data) == fitted.size


def test_not_an_image_is_left_alone() -> None:
    assert fit_image(base64.b64encode(b"not an image").decode(), "image/png") is None


def test_a_message_gets_fitted_images_and_notes() -> None:
    small = ImageContent(data=png(10, 10), mime_type="image/png")
    message = ToolResultMessage(
        tool_call_id="c",
        tool_name="read",
        content=[TextContent(text="two images"), small, ImageContent(data=png(2500, 2500), mime_type="image/png")],
        timestamp=1,
    )
    fitted = fit_message_images(message)
    assert fitted is not message and message.content[2].data != fitted.content[2].data  # the original is kept
    kinds = [type(b).__name__ for b in fitted.content]
    assert kinds == ["TextContent", "ImageContent", "ImageContent", "TextContent"]
    assert fitted.content[1] is small and size_of(fitted.content[2].data) == (2000, 2000)
    assert "original 2500x2500" in fitted.content[3].text
    plain = ToolResultMessage(tool_call_id="c", tool_name="read", content=[small], timestamp=1)
    assert fit_message_images(plain) is plain
