"""The read tool: text windows, truncation notices, images, path handling, errors."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from tools_support import FakeToolContext, call, text, write

from pi_core.tools import DEFAULT_MAX_BYTES, create_read_tool
from pi_core.tools.read import MAX_IMAGE_BYTES, detect_image_mime_type
from pi_hookspecs import ImageContent, Model

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 20
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 20
GIF = b"GIF89a" + b"\x00" * 20
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20


@pytest.fixture
def read():
    return create_read_tool()


@pytest.fixture
def ctx(tmp_path: Path) -> FakeToolContext:
    return FakeToolContext(tmp_path)


def lines(n: int, start: int = 1) -> str:
    return "".join(f"line {i}\n" for i in range(start, start + n))


async def test_small_file_is_returned_whole(read, ctx, tmp_path):
    write(tmp_path / "a.txt", "hello\nworld\n")
    result = await call(read, ctx, path="a.txt")
    assert not result.is_error
    assert text(result) == "hello\nworld\n"  # the final newline kept, as pi 1.6.0
    assert result.details is None


async def test_long_file_is_cut_at_2000_lines_with_a_continuation_notice(read, ctx, tmp_path):
    write(tmp_path / "big.txt", lines(2500))
    result = await call(read, ctx, path="big.txt")
    body = text(result)
    assert body.splitlines()[0] == "line 1"
    assert "line 2000\n\n[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]" in body
    assert "line 2001" not in body
    assert result.details["truncation"]["truncatedBy"] == "lines"
    assert result.details["truncation"]["totalLines"] == 2500
    again = await call(read, ctx, path="big.txt", offset=2001)
    assert text(again).splitlines()[0] == "line 2001" and text(again).endswith("line 2500\n")


async def test_byte_limit_cuts_before_the_line_limit(read, ctx, tmp_path):
    write(tmp_path / "wide.txt", "".join(f"{i:04d}" + "x" * 96 + "\n" for i in range(1000)))  # 101 bytes a line
    result = await call(read, ctx, path="wide.txt")
    shown = DEFAULT_MAX_BYTES // 101  # complete lines that fit
    assert f"[Showing lines 1-{shown} of 1001 (50.0KB limit). Use offset={shown + 1} to continue.]" in text(result)
    assert result.details["truncation"]["truncatedBy"] == "bytes"


async def test_offset_and_limit_select_a_window_and_say_what_remains(read, ctx, tmp_path):
    write(tmp_path / "f.txt", lines(10))
    result = await call(read, ctx, path="f.txt", offset=3, limit=2)
    assert text(result) == "line 3\nline 4\n\n[7 more lines in file. Use offset=5 to continue.]"
    tail = await call(read, ctx, path="f.txt", offset=9, limit=5)
    assert text(tail) == "line 9\nline 10\n"


async def test_offset_beyond_the_end_is_an_error(read, ctx, tmp_path):
    write(tmp_path / "f.txt", lines(3))
    result = await call(read, ctx, path="f.txt", offset=10)
    assert result.is_error
    assert text(result) == "Offset 10 is beyond end of file (4 lines total)"


async def test_a_single_line_larger_than_the_limit_points_to_bash(read, ctx, tmp_path):
    write(tmp_path / "min.js", "short\n" + "y" * (DEFAULT_MAX_BYTES + 10) + "\n")
    result = await call(read, ctx, path="min.js", offset=2)
    body = text(result)
    assert body.startswith("[Line 2 is 50.0KB, larger than the 50.0KB limit.")
    assert "sed -n '2p' min.js | head -c 51200" in body
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


async def test_invalid_utf8_is_replaced_not_fatal(read, ctx, tmp_path):
    write(tmp_path / "latin1.txt", "caf\xe9\n".encode("latin-1"))
    result = await call(read, ctx, path="latin1.txt")
    assert text(result) == "caf\ufffd\n"


@pytest.mark.parametrize(
    ("data", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")]
)
async def test_images_are_detected_by_their_bytes_not_their_name(read, ctx, tmp_path, data, mime):
    write(tmp_path / "picture.dat", data)
    result = await call(read, ctx, path="picture.dat")
    assert text(result) == f"Read image file [{mime}]"
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == mime and base64.b64decode(image.data) == data


async def test_a_text_file_named_png_is_text(read, ctx, tmp_path):
    write(tmp_path / "fake.png", "not an image")
    result = await call(read, ctx, path="fake.png")
    assert text(result) == "not an image" and len(result.content) == 1


def test_detect_image_mime_type_rejects_other_riff_files():
    assert detect_image_mime_type(b"RIFF\x10\x00\x00\x00WAVEfmt ") is None
    assert detect_image_mime_type(b"") is None


async def test_block_images_setting_keeps_the_image_out(tmp_path, read):
    write(tmp_path / "p.png", PNG)
    ctx = FakeToolContext(tmp_path, settings={"images": {"blockImages": True}})
    result = await call(read, ctx, path="p.png")
    assert len(result.content) == 1
    assert "images.blockImages" in text(result)


async def test_a_model_without_vision_gets_a_note(tmp_path, read):
    write(tmp_path / "p.png", PNG)
    ctx = FakeToolContext(tmp_path)
    ctx.model = Model(id="m", provider="p", input=["text"])  # type: ignore[attr-defined]
    result = await call(read, ctx, path="p.png")
    assert "does not support images" in text(result)
    assert isinstance(result.content[1], ImageContent)


async def test_images_over_the_size_limit_are_described(read, ctx, tmp_path):
    write(tmp_path / "huge.png", PNG + b"\x00" * MAX_IMAGE_BYTES)
    result = await call(read, ctx, path="huge.png")
    assert len(result.content) == 1
    assert "larger than the 5.0MB limit" in text(result)


async def test_paths_strip_at_and_expand_home(read, ctx, tmp_path, monkeypatch):
    write(tmp_path / "notes.md", "at-path")
    assert text(await call(read, ctx, path="@notes.md")) == "at-path"
    assert text(await call(read, ctx, path=str(tmp_path / "notes.md"))) == "at-path"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert text(await call(read, ctx, path="~/notes.md")) == "at-path"


async def test_file_path_alias_is_accepted(read, ctx, tmp_path):
    write(tmp_path / "a.txt", "aliased")
    assert text(await call(read, ctx, file_path="a.txt")) == "aliased"


async def test_missing_file_and_directory_are_clear_errors(read, ctx, tmp_path):
    missing = await call(read, ctx, path="nope.txt")
    assert missing.is_error and text(missing) == "File not found: nope.txt"
    (tmp_path / "dir").mkdir()
    directory = await call(read, ctx, path="dir")
    assert directory.is_error and "Cannot read dir: it is a directory" in text(directory)


async def test_permission_denied(read, ctx, tmp_path, monkeypatch):
    target = write(tmp_path / "secret.txt", "x")
    if os.geteuid() != 0:
        target.chmod(0)
    else:  # root reads anything: make open() refuse as it would for a user
        real_open = open

        def refusing_open(path, *args, **kwargs):
            if str(path) == str(target):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr("builtins.open", refusing_open)
    result = await call(read, ctx, path="secret.txt")
    assert result.is_error and text(result) == "Cannot read secret.txt: permission denied"


async def test_an_aborted_signal_stops_before_reading(read, ctx, tmp_path):
    write(tmp_path / "a.txt", "x")
    ctx.abort()
    result = await call(read, ctx, path="a.txt")
    assert result.is_error and text(result) == "Operation aborted"


async def test_macos_screenshot_names_are_found(read, ctx, tmp_path):
    write(tmp_path / "Screenshot 2024-01-01 at 10.00.00\u202fAM.png", PNG)
    result = await call(read, ctx, path="Screenshot 2024-01-01 at 10.00.00 AM.png")
    assert text(result) == "Read image file [image/png]"


async def test_special_files_are_refused(read, ctx, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    result = await call(read, ctx, path="pipe")
    assert result.is_error and text(result) == "Cannot read pipe: not a regular file"
