"""The read tool holds no more of a file than it returns: text is streamed (the same
answer as reading the whole file), binary files are described, and a 1 GB file costs
a few megabytes, not gigabytes (measured in a child process)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tools_support import FakeToolContext, call, text, write

from pi_core.tools import DEFAULT_MAX_BYTES, create_read_tool
from pi_core.tools import read as read_module
from pi_core.tools.read import ReadArgs, _text_result, detect_binary_kind

GIB = 1 << 30


@pytest.fixture
def read():
    return create_read_tool()


@pytest.fixture
def ctx(tmp_path: Path) -> FakeToolContext:
    return FakeToolContext(tmp_path)


def _random_text(rng: random.Random) -> bytes:
    pieces: list[bytes] = []
    for _ in range(rng.randint(0, 60)):
        kind = rng.random()
        if kind < 0.05:
            pieces.append(b"y" * rng.randint(DEFAULT_MAX_BYTES - 5, DEFAULT_MAX_BYTES + 5))  # a line at the limit
        elif kind < 0.1:
            pieces.append(b"caf\xe9 \xc3")  # not UTF-8, a cut character
        elif kind < 0.2:
            pieces.append(b"")  # an empty line
        elif kind < 0.3:
            pieces.append("é€😀".encode() * rng.randint(1, 3000))
        else:
            pieces.append(b"w" * rng.randint(1, 120) + (b"\r" if rng.random() < 0.2 else b""))
    data = b"\n".join(pieces)
    if rng.random() < 0.1:  # many short lines: the 2000-line limit
        data += b"\n".join(b"%d" % i for i in range(rng.randint(1990, 2010)))
    return data + (b"\n" if rng.random() < 0.5 else b"")


@pytest.mark.parametrize("seed", range(80))
async def test_streamed_windows_equal_the_whole_file_answer(read, ctx, tmp_path, monkeypatch, seed):
    """The streamed answer (text, notices, truncation details) is the one the old
    whole-file read gave, for any offset and limit, across chunk boundaries."""
    rng = random.Random(seed)
    monkeypatch.setattr(read_module, "SCAN_CHUNK_BYTES", rng.choice([1, 7, 4096, 1 << 20]))
    data = _random_text(rng)
    write(tmp_path / "f.txt", data)
    total = data.count(b"\n") + 1
    for _ in range(6):
        args: dict[str, int] = {}
        if rng.random() < 0.7:
            args["offset"] = rng.randint(0, total + 2)
        if rng.random() < 0.6:
            args["limit"] = rng.randint(1, total + 3)
        streamed = await call(read, ctx, path="f.txt", **args)
        try:
            expected = _text_result(data, ReadArgs(path="f.txt", **args))
        except Exception as exc:  # ToolError: the tool returns it as an error result
            assert streamed.is_error and text(streamed) == str(exc), args
            continue
        assert not streamed.is_error, (args, text(streamed))
        assert text(streamed) == text(expected), args
        if streamed.details and expected.details:
            got, want = streamed.details["truncation"], expected.details["truncation"]
            # sizes of unread bytes are counted raw (a replaced byte counts 1, not 3)
            if b"\xe9" not in data and b"\xc3\n" not in data:
                assert got == want, args
            else:
                assert {k: v for k, v in got.items() if k != "totalBytes"} == {
                    k: v for k, v in want.items() if k != "totalBytes"
                }, args
        else:
            assert streamed.details == expected.details, args


@pytest.mark.parametrize("width", [DEFAULT_MAX_BYTES - 1, DEFAULT_MAX_BYTES, DEFAULT_MAX_BYTES + 1])
@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
async def test_lines_at_the_byte_limit_stream_like_the_whole_file(read, ctx, tmp_path, monkeypatch, width, chunk):
    monkeypatch.setattr(read_module, "SCAN_CHUNK_BYTES", chunk)
    data = b"a\n" + b"y" * width + b"\nzz\n" + b"x" * 10
    write(tmp_path / "f.txt", data)
    for args in ({}, {"offset": 2}, {"offset": 2, "limit": 1}, {"offset": 3}):
        streamed = await call(read, ctx, path="f.txt", **args)
        expected = _text_result(data, ReadArgs(path="f.txt", **args))
        assert (text(streamed), streamed.details) == (text(expected), expected.details), args


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 40, "ELF executable or shared library"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + b"\x00" * 8, "PDF document"),
        (b"PK\x03\x04\x14\x00\x00\x00", "ZIP archive"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 8, "gzip-compressed data"),
        (b"SQLite format 3\x00" + b"\x10\x00", "SQLite database"),
        (b"\xff\xfeh\x00i\x00", "UTF-16 text"),
        (b"abc\x00def", "binary data"),
        (bytes(range(1, 32)) * 8, "binary data"),  # no NUL, not UTF-8-looking control soup
    ],
)
async def test_binary_files_are_described_not_sent(read, ctx, tmp_path, head, kind):
    write(tmp_path / "blob.bin", head + b"\x00" * 100)
    result = await call(read, ctx, path="blob.bin")
    body = text(result)
    assert not result.is_error
    assert body.startswith("[blob.bin is a binary file (") and kind in body, body
    assert "not shown as text" in body and "B)" in body  # the size
    assert result.details["binary"]["size"] == len(head) + 100
    assert "\x00" not in body


def test_text_that_is_not_utf8_is_still_text():
    assert detect_binary_kind("café déjà vu\n".encode("latin-1")) is None
    assert detect_binary_kind("naïve".encode() + "é".encode()[:1]) is None  # a character cut by the probe
    assert detect_binary_kind(b"\x1b[31mred\x1b[0m\ttab\r\n") is None


async def test_a_binary_name_guess_falls_back_to_the_extension(read, ctx, tmp_path):
    write(tmp_path / "model.onnx", b"\x08\x07\x12\x00\x00\x01")
    assert "binary data" in text(await call(read, ctx, path="model.onnx"))
    write(tmp_path / "song.mp3", b"\xff\xfb\x90\x00\x00\x00")
    assert "audio/mpeg" in text(await call(read, ctx, path="song.mp3"))


CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, sys
    sys.path.insert(0, sys.argv[1])
    from tools_support import FakeToolContext, call
    from pi_core.tools import create_read_tool

    args = json.loads(sys.argv[3])
    result = asyncio.run(call(create_read_tool(), FakeToolContext(sys.argv[2]), **args))
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"text": result.text_content(), "error": result.is_error, "peak_mb": peak_kb / 1024}))
    """
)


def _read_in_child(cwd: Path, **args: object) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(Path(__file__).parent), str(cwd), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _sparse(path: Path, head: bytes, size: int = GIB) -> Path:
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def test_one_line_of_a_1gb_text_file_costs_megabytes_not_gigabytes(tmp_path):
    head = b"first line\n" + b"".join(b"line %d\n" % i for i in range(2, 3000))  # 8 KiB of text, then 1 GB
    _sparse(tmp_path / "huge.log", head)
    one = _read_in_child(tmp_path, path="huge.log", offset=1, limit=1)
    assert one["text"] == "first line\n\n[2999 more lines in file. Use offset=2 to continue.]"
    assert float(one["peak_mb"]) < 200, one["peak_mb"]  # the whole file read was 3.1 GB
    window = _read_in_child(tmp_path, path="huge.log")
    assert str(window["text"]).endswith("line 2000\n\n[Showing lines 1-2000 of 3000. Use offset=2001 to continue.]")
    assert float(window["peak_mb"]) < 200, window["peak_mb"]
    last = _read_in_child(tmp_path, path="huge.log", offset=3000)  # a 1 GB last line
    assert str(last["text"]).startswith("[Line 3000 is 1024.0MB, larger than the 50.0KB limit.")
    assert float(last["peak_mb"]) < 200, last["peak_mb"]


def test_a_1gb_binary_file_is_described_from_its_first_bytes(tmp_path):
    _sparse(tmp_path / "disk.img", b"short first line\n")
    result = _read_in_child(tmp_path, path="disk.img")
    assert result["text"] == (
        "[disk.img is a binary file (binary data, 1024.0MB); it is not shown as text. Inspect it with bash "
        "instead, e.g. file disk.img, xxd disk.img | head, or strings disk.img | head.]"
    )
    assert float(result["peak_mb"]) < 200, result["peak_mb"]


# --------------------------------------------------------------------------- grep (Python search)

GREP_CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, sys
    sys.path.insert(0, sys.argv[1])
    from tools_support import FakeToolContext, call
    from pi_core.tools import create_grep_tool

    args = json.loads(sys.argv[3])
    result = asyncio.run(call(create_grep_tool(use_rg=False), FakeToolContext(sys.argv[2]), **args))
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"text": result.text_content(), "peak_mb": peak_kb / 1024}))
    """
)


def test_python_grep_skips_a_1gb_binary_file_without_loading_it(tmp_path):
    _sparse(tmp_path / "disk.img", b"needle\n")
    write(tmp_path / "notes.txt", "a needle here\n")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            GREP_CHILD,
            str(Path(__file__).parent),
            str(tmp_path),
            json.dumps({"pattern": "needle"}),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(out.stdout)
    assert result["text"] == "notes.txt:1: a needle here"
    assert result["peak_mb"] < 200, result["peak_mb"]


async def test_python_grep_streams_lines_and_context_like_the_whole_file(ctx, tmp_path, monkeypatch):
    from pi_core.tools import create_grep_tool
    from pi_core.tools import grep as grep_module

    rows = "".join(f"row {i} {'hit' if i % 7 == 0 else 'miss'}\r\n" for i in range(1, 60))
    write(tmp_path / "f.txt", rows + "y" * 2000 + "hit\n" + "x" * 300)
    grep = create_grep_tool(use_rg=False)
    whole = [text(await call(grep, ctx, pattern="hit", context=c)) for c in (0, 2)]
    monkeypatch.setattr(grep_module, "_LINE_PIECE_BYTES", 600)  # the long line read in pieces
    monkeypatch.setattr(grep_module, "_WHOLE_FILE_BYTES", 0)  # context lines streamed
    assert [text(await call(grep, ctx, pattern="hit", context=c)) for c in (0, 2)] == whole
