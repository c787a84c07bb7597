"""pi's own SSE decoder (pi_core.ai.apis._sse) against the reference it replaces,
``httpx2.EventSource``: the same byte chunks go to both and the ``(event, data)`` pairs
must be equal, for every recorded provider stream (cut anywhere) and for the edge cases
of the event-stream format."""

from __future__ import annotations

import codecs
import itertools
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx2
import pytest

from pi_core.ai.apis._sse import SSEDecoder, sse_events, stream_encoding

STREAMS = Path(__file__).parent / "conformance" / "streams"
RECORDED = sorted(STREAMS.glob("*/*.sse"))
SHORT = 1300  # streams up to this size are cut at every single offset
LINE_ENDINGS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}

Events = list[tuple[str, str]]


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


async def _aiter(chunks: Sequence[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def reference(chunks: Sequence[bytes], content_type: str = "text/event-stream") -> Events:
    response = httpx2.Response(
        200,
        headers={"content-type": content_type},
        stream=_Chunks(chunks),
        request=httpx2.Request("POST", "http://127.0.0.1/v1/messages"),
    )
    return [(sse.event, sse.data) async for sse in httpx2.EventSource(response, max_event_size=None)]


async def ours(chunks: Sequence[bytes], encoding: str = "utf-8") -> Events:
    return [event async for event in sse_events(_aiter(chunks), encoding=encoding)]


async def assert_same(chunks: Sequence[bytes]) -> Events:
    expected = await reference(chunks)
    assert await ours(chunks) == expected, chunks
    return expected


def cut(data: bytes, offsets: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(offsets), len(data)]
    return [data[start:end] for start, end in itertools.pairwise(bounds)]


def random_cuts(data: bytes, rng: random.Random, max_piece: int) -> list[bytes]:
    offsets: list[int] = []
    position = rng.randint(0, max_piece)
    while position < len(data):
        offsets.append(position)
        position += rng.randint(0, max_piece)  # 0: an empty chunk now and then
    return cut(data, offsets)


async def assert_same_every_split(data: bytes) -> Events:
    """Equal for the whole stream, at every single cut point, and one byte at a time."""
    whole = await assert_same([data])
    for offset in range(len(data) + 1):
        assert await assert_same(cut(data, [offset])) == whole
    assert await assert_same([data[i : i + 1] for i in range(len(data))]) == whole
    return whole


# --------------------------------------------------------------------------- recorded streams


def _recorded(path: Path, line_ending: str) -> bytes:
    data = path.read_bytes()
    assert b"\r" not in data  # the recordings are LF; the other endings are made here
    return data.replace(b"\n", LINE_ENDINGS[line_ending])


@pytest.mark.parametrize("line_ending", list(LINE_ENDINGS))
@pytest.mark.parametrize("path", RECORDED, ids=lambda path: f"{path.parent.name}/{path.stem}")
async def test_recorded_streams_decode_as_httpx2_does(path: Path, line_ending: str) -> None:
    data = _recorded(path, line_ending)
    whole = await assert_same([data])
    assert len(whole) >= 3 and all(payload for _, payload in whole)
    if len(data) <= SHORT:
        for offset in range(1, len(data)):
            assert await ours(cut(data, [offset])) == whole, offset
        # the reference too, at a sample of the same offsets (it is the slow side)
        for offset in range(1, len(data), 17):
            assert await reference(cut(data, [offset])) == whole, offset
    rng = random.Random(f"{path.parent.name}/{path.stem}/{line_ending}")
    for max_piece in (1, 3, 8, 64, 512):
        for _ in range(3):
            assert await assert_same(random_cuts(data, rng, max_piece)) == whole


def test_there_are_recorded_streams_of_every_api() -> None:
    assert {path.parent.name for path in RECORDED} >= {"anthropic-messages", "openai-completions", "openai-responses"}
    assert any(path.stat().st_size <= SHORT for path in RECORDED)
    assert any(path.stat().st_size > SHORT for path in RECORDED)


async def test_recorded_streams_mixed_line_endings() -> None:
    """Each line break of a recording replaced by a random one of CRLF, LF and CR."""
    rng = random.Random("mixed")
    for path in RECORDED:
        pieces = path.read_bytes().split(b"\n")
        data = pieces[0]
        for piece in pieces[1:]:
            # a CR before an empty piece then an LF would be one CRLF break, not two
            ending = rng.choice([b"\r\n", b"\r"] if data.endswith(b"\r") else [b"\r\n", b"\n", b"\r"])
            data += ending + piece
        whole = await assert_same([data])
        assert whole == await ours([path.read_bytes()])
        for max_piece in (2, 16, 128):
            assert await assert_same(random_cuts(data, rng, max_piece)) == whole


# --------------------------------------------------------------------------- edge cases


EDGE_CASES: dict[str, tuple[bytes, Events]] = {
    "lf": (b"event: a\ndata: 1\n\ndata: 2\n\n", [("a", "1"), ("message", "2")]),
    "crlf": (b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", [("a", "1"), ("message", "2")]),
    "cr only": (b"event: a\rdata: 1\r\rdata: 2\r\r", [("a", "1"), ("message", "2")]),
    "mixed endings": (b"data: 1\r\n\rdata: 2\n\r\ndata: 3\r\r", [("message", "1"), ("message", "2"), ("message", "3")]),
    "blank lines only": (b"\n\r\n\r\r\n\n", []),
    "comments": (b": hello\n:\ndata: x\n: between\ndata: y\n\n:only a comment\n\n", [("message", "x\ny")]),
    "multi-line data": (b"data: one\ndata: two\ndata:\ndata: four\n\n", [("message", "one\ntwo\n\nfour")]),
    "data without colon": (b"data\ndata\n\n", [("message", "\n")]),
    "lone data line": (b"data\n\n", [("message", "")]),
    "no space after colon": (b"event:e\ndata:x\n\n", [("e", "x")]),
    "only one space dropped": (b"event:  e \ndata:   x\t\n\n", [(" e ", "  x\t")]),
    "colon in value": (b"data: a: b:c\n\n", [("message", "a: b:c")]),
    "event without data": (b"event: e\n\n", [("e", "")]),
    "empty event name": (b"event:\ndata: x\n\n", [("message", "x")]),
    "event name resets": (b"event: a\ndata: 1\n\ndata: 2\n\n", [("a", "1"), ("message", "2")]),
    "last event name wins": (b"event: a\nevent: b\ndata: x\n\n", [("b", "x")]),
    "id alone dispatches": (b"id: 7\n\n", [("message", "")]),
    "id with nul": (b"id: 7\x00\n\nid: a\x00b\ndata: x\n\n", [("message", "x")]),
    "retry integer": (b"retry: 1000\n\n", [("message", "")]),
    "retry not integer": (b"retry: soon\n\nretry: 1.5\n\nretry:\n\n", []),
    "retry as int() reads it": (b"retry: -5\n\nretry: +7\n\nretry: 1_000\n\n", [("message", "")] * 3),
    "unknown fields": (b"foo: bar\nDATA: x\nEvent: y\n data: z\n\n", []),
    "unknown field beside data": (b"foo: bar\ndata: x\n\n", [("message", "x")]),
    "no trailing blank line": (b"data: 1\n\ndata: 2\n", [("message", "1")]),
    "no trailing newline": (b"data: 1\n\ndata: 2", [("message", "1")]),
    "stream ends in CR": (b"data: 1\n\ndata: 2\r", [("message", "1"), ("message", "2")]),
    "stream ends in CRLF": (b"data: 1\n\ndata: 2\r\n", [("message", "1")]),
    "stream ends in LF CR": (b"data: 1\n\r", [("message", "1")]),
    "empty stream": (b"", []),
    "bom": (b"\xef\xbb\xbfdata: 1\n\ndata: 2\n\n", [("message", "2")]),
    "bom before comment": (b"\xef\xbb\xbf: c\ndata: 1\n\n", [("message", "1")]),
    "bom later is data": (b"data: \xef\xbb\xbfx\n\n", [("message", "\ufeffx")]),
    "multibyte": ("data: héllo ✓ 𝄞 日本\n\n".encode(), [("message", "héllo ✓ 𝄞 日本")]),
    "invalid utf-8": (b"data: a\xffb\xc3(\xe2\x82\n\n", [("message", "a\ufffdb\ufffd(\ufffd")]),
    "truncated character at end": (b"data: 1\n\ndata: \xe2\x82", [("message", "1")]),
    "truncated character then CR": (b"data: \xe2\x82\r", [("message", "\ufffd")]),
    "nul and controls in data": (b"data: a\x00\x0b\x0c\x1c\x7fb\n\n", [("message", "a\x00\x0b\x0c\x1c\x7fb")]),
    "unicode line separators": ("data: a\u2028b\u0085c\n\n".encode(), [("message", "a\u2028b\u0085c")]),
    "done marker": (b"data: {}\n\ndata: [DONE]\n\n", [("message", "{}"), ("message", "[DONE]")]),
}


@pytest.mark.parametrize("case", list(EDGE_CASES))
async def test_edge_cases_decode_as_httpx2_does(case: str) -> None:
    data, expected = EDGE_CASES[case]
    assert await assert_same_every_split(data) == expected


async def test_crlf_split_across_chunks_is_one_line_break() -> None:
    two = [("message", "1"), ("message", "2")]
    assert await assert_same([b"data: 1\r", b"\n\r", b"\ndata: 2\r", b"\n\r", b"\n"]) == two
    assert await assert_same([b"data: 1\r", b"", b"\n\r", b"", b"\ndata: 2\r\n\r", b"", b"\n"]) == two
    # CR CR LF: the first CR ends the line, CR LF is the blank line
    assert await assert_same([b"data: 1\r", b"\r", b"\n"]) == [("message", "1")]
    # CR LF LF: one line break, then a blank line
    assert await assert_same([b"data: 1\r", b"\n", b"\ndata: 2\r", b"\n\n"]) == two


async def test_multibyte_character_split_at_every_byte() -> None:
    text = "data: 𝄞€é\n\n".encode()
    for first in range(len(text)):
        for second in range(first, len(text)):
            assert await assert_same(cut(text, [first, second])) == [("message", "𝄞€é")]


CONTENT_TYPES = [
    "text/event-stream",
    "text/event-stream; charset=utf-8",
    "text/event-stream;charset=UTF-8",
    'text/event-stream; charset="Latin-1"',
    "text/event-stream; foo=bar; CHARSET=iso-8859-2 ",
    "text/event-stream; charset = cp1252",
    "text/event-stream; charset*=utf-8''latin-1",
    "text/event-stream; charset=bogus",
    "text/event-stream; charset=",
    "text/event-stream; charset=utf-8-sig",
    "text/event-stream; charset=utf-16",
]


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
async def test_charset_of_the_response_as_httpx2_reads_it(content_type: str) -> None:
    response = httpx2.Response(200, headers={"content-type": content_type}, stream=_Chunks([]))
    assert codecs.lookup(stream_encoding(content_type)).name == codecs.lookup(response.encoding or "").name
    data = "\ufeffdata: é ÿ ✓\n\nevent: ß\ndata: x\n\n".encode(stream_encoding(content_type), errors="replace")
    expected = await reference([data], content_type)
    assert await ours([data], encoding=stream_encoding(content_type)) == expected
    for max_piece in (1, 3):
        chunks = random_cuts(data, random.Random(content_type), max_piece)
        assert await ours(chunks, encoding=stream_encoding(content_type)) == expected


async def test_latin1_stream() -> None:
    data = "event: é\ndata: ÿ\n\n".encode("latin-1")
    encoding = stream_encoding("text/event-stream; charset=ISO-8859-1")
    assert await ours([data], encoding=encoding) == [("é", "ÿ")]
    assert await ours([data]) == [("\ufffd", "\ufffd")]  # read as UTF-8


@pytest.mark.parametrize("charset", ["base64", "rot13", "zlib", "idna", "undefined"])
def test_charset_httpx2_would_fail_on_is_utf8(charset: str) -> None:
    assert stream_encoding(f"text/event-stream; charset={charset}") == "utf-8"
    assert stream_encoding(None) == "utf-8"


async def test_random_event_streams_decode_as_httpx2_does() -> None:
    """Streams made of random lines from a small vocabulary of awkward pieces."""
    rng = random.Random(1234)
    pieces = [b"data", b"data:", b"data: ", b"event:", b"event: x", b"id: 1", b"id:\x00", b"retry: 5", b"retry: x",
              b":c", b"foo", b"", b" ", b"\xc3\xa9", b"\xe2", b"\xff", b"\xef\xbb\xbf", b"v", b"\t"]  # fmt: skip
    endings = [b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r", b"\r\n\r\n"]
    for _ in range(300):
        data = b"".join(
            rng.choice(pieces) + rng.choice(pieces) + rng.choice(endings) for _ in range(rng.randint(0, 12))
        )
        if rng.random() < 0.5:
            data += rng.choice(pieces)
        whole = await assert_same([data])
        for max_piece in (1, 2, 5):
            assert await assert_same(random_cuts(data, rng, max_piece)) == whole


# --------------------------------------------------------------------------- size


async def test_one_event_in_ten_thousand_one_byte_chunks() -> None:
    payload = ("x" * 3981) + ("é" * 1000) + ("y" * 4000)  # two-byte characters split too
    data = b"event: big\ndata: " + payload.encode() + b"\n\n"
    assert len(data) == 10_000
    events = await ours([data[i : i + 1] for i in range(len(data))])
    assert events == [("big", payload)]


def test_decoder_is_usable_push_style() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: a\ndata: 1") == []
    assert decoder.feed(b"\ndata: 2\r") == []
    assert decoder.feed(b"\n\r\ndata: 3") == [("a", "1\n2")]
    assert decoder.feed(b"\n\n: done\n") == [("message", "3")]
    assert decoder.finish() == []


async def test_many_events_in_one_chunk() -> None:
    data = b"".join(b'event: e%d\ndata: {"i": %d}\n\n' % (i, i) for i in range(5000))
    events = await ours([data])
    assert events == [(f"e{i}", f'{{"i": {i}}}') for i in range(5000)]
    assert events == await reference([data])
