"""Server-sent events decoding for the provider wire APIs, on the standard library alone.

The wire APIs used to decode their event streams with ``httpx2.EventSource``; importing
``httpx2`` costs about 20 ms of every ``pi -p`` run, and the hot-path HTTP client is
pi's own (h11 on asyncio, ``_transport.py``), so this module takes over the SSE part.
It yields what the APIs read from an event, ``(event_name, data)``, and decodes any
byte stream exactly as ``httpx2.EventSource(response, max_event_size=None)`` decodes a
``text/event-stream`` response (``tests/ai/test_ai_sse.py`` holds it to that):

- bytes are text through an incremental decoder of the response's charset (UTF-8 by
  default) with ``errors="replace"``: a character split across chunks is joined, an
  invalid byte is U+FFFD, and a byte order mark is NOT dropped (it stays the first
  character of the first line, whose field name it then spoils);
- lines end at CRLF, LF or a lone CR, wherever the chunk boundaries fall;
- a line starting with ``:`` is a comment; otherwise the field name runs to the first
  ``:`` (the whole line when there is none, with an empty value) and one space after
  the colon is dropped from the value;
- ``event`` names the event, ``data`` lines are joined with ``\\n``; ``id`` (unless it
  holds a NUL) and ``retry`` (when ``int()`` reads it) only make the event pending;
  other fields are ignored;
- a blank line dispatches a pending event (named ``"message"`` unless named) and starts
  the next;
- at the end of the stream an unterminated last line is still read as a field, but the
  event is dispatched only when a blank line follows, except that a stream whose very
  last byte is a CR counts that CR as one more blank line (``httpx2``'s flush).

The work per chunk is proportional to the chunk: an unterminated line is kept as a list
of pieces and joined once, when its end arrives.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator

__all__ = ["SSEDecoder", "sse_events", "stream_encoding"]


def stream_encoding(content_type: str | None) -> str:
    """The text encoding of a response with this ``Content-Type``: its ``charset``
    parameter when Python knows it as a text encoding, else UTF-8 (as ``httpx2`` picks
    it, without the cost of ``email.message``; a codec on which ``httpx2`` would fail,
    byte-to-byte like ``base64`` or unable to replace errors like ``idna``, is UTF-8)."""
    if not content_type or ";" not in content_type:
        return "utf-8"
    charset = ""
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        key = key.strip().lower()
        if key == "charset":
            charset = value
        elif key == "charset*":  # RFC 2231: charset'language'value
            charset = value.split("'", 2)[-1]
    charset = charset.strip().strip('"').strip().lower()
    if not charset:
        return "utf-8"
    try:
        if not getattr(codecs.lookup(charset), "_is_text_encoding", True):
            return "utf-8"
        codecs.getincrementaldecoder(charset)(errors="replace").decode(b"", True)
    except Exception:  # unknown, or a codec that cannot replace errors (idna, undefined)
        return "utf-8"
    return charset


class SSEDecoder:
    """Push-style decoder: ``feed`` each chunk of bytes, then ``finish`` once; both return
    the ``(event_name, data)`` pairs completed by that input."""

    __slots__ = ("_data", "_decoder", "_event", "_parts", "_pending", "_trailing_cr")

    def __init__(self, encoding: str = "utf-8") -> None:
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._parts: list[str] = []  # the unterminated line so far, in pieces
        self._trailing_cr = False  # the text so far ended with CR: a following LF is part of it
        self._event = ""
        self._data: list[str] = []
        self._pending = False

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events that ``chunk`` completes."""
        text = self._decoder.decode(chunk)
        return self._text(text) if text else []

    def finish(self) -> list[tuple[str, str]]:
        """The events the end of the stream completes (see the module docstring)."""
        # a cut-off last character is U+FFFD; it can only end an unterminated line
        rest = self._decoder.decode(b"", True)
        events = self._text(rest) if rest else []
        last = "".join(self._parts)
        self._parts = []
        lines = [last] if last else []
        if self._trailing_cr:
            self._trailing_cr = False
            lines = [last, ""]
        self._lines(lines, events)
        return events

    def _text(self, text: str) -> list[tuple[str, str]]:
        if self._trailing_cr:
            self._trailing_cr = False
            # the CR ended the pending line; an LF right after it is the rest of a CRLF
            text = text if text[0] == "\n" else "\n" + text
        if text and text[-1] == "\r":
            self._trailing_cr = True
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            if text:
                self._parts.append(text)
            return []
        lines = text.split("\n")
        parts = self._parts
        if parts:
            parts.append(lines[0])
            lines[0] = "".join(parts)
            parts.clear()
        tail = lines.pop()
        if tail:
            parts.append(tail)
        events: list[tuple[str, str]] = []
        self._lines(lines, events)
        return events

    def _lines(self, lines: list[str], events: list[tuple[str, str]]) -> None:
        event = self._event
        data = self._data
        pending = self._pending
        for line in lines:
            if not line:
                if pending:
                    events.append((event or "message", "\n".join(data)))
                    event = ""
                    data = []
                    pending = False
                continue
            if line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
                pending = True
            elif name == "event":
                event = value
                pending = True
            elif name == "id":
                if "\0" not in value:
                    pending = True
            elif name == "retry":
                try:
                    int(value)
                except ValueError:
                    continue
                pending = True
        self._event = event
        self._data = data
        self._pending = pending


async def sse_events(chunks: AsyncIterable[bytes], *, encoding: str = "utf-8") -> AsyncIterator[tuple[str, str]]:
    """The ``(event_name, data)`` pairs of the event stream whose bytes ``chunks`` yields
    (any sizes, any boundaries). ``encoding`` is the response's: pass
    ``stream_encoding(content_type)`` to decode by its ``charset`` as ``httpx2`` does;
    event streams are UTF-8 otherwise."""
    decoder = SSEDecoder(encoding)
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.finish():
        yield event
