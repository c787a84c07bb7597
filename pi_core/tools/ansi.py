"""Terminal escape sequences and control characters out of command output.

A user's ``!command`` output is stored and shown to the model as plain text, as pi
1.6.0 does: complete ANSI sequences (CSI such as colours and cursor moves, OSC such as
titles and hyperlinks) are removed, so are control characters other than tab and
newline, carriage returns, and U+FFF9..U+FFFB (which break width computations).
Streamed output may end inside a sequence; :class:`AnsiStream` holds such a tail back
until the next chunk completes it.
"""

from __future__ import annotations

import re

# OSC: ESC ] ... terminated by BEL, ESC \ or the 8-bit ST; shortest match.
_OSC = r"\x1b\][\s\S]*?(?:\x07|\x1b\\|\x9c)"
# CSI and the other escape forms: an introducer (ESC [ or the 8-bit CSI, optionally a
# private marker < = > right after it; or ESC followed by intermediates), parameters,
# then one final byte.
_CSI_START = r"(?:(?:\x1b\[|\x9b)[<=>]|[\x1b\x9b][\[\]()#;?]*)(?:\d{1,4}(?:[;:]\d{0,4})*)?"
_CSI_FINAL = r"[\dA-PR-TZcf-nq-uy=><~]"
_SEQUENCE = re.compile(f"{_OSC}|{_CSI_START}{_CSI_FINAL}")
_UNFINISHED = re.compile(rf"(?:\x1b\](?:[^\x07\x9c\x1b]|\x1b(?!\\))*|{_CSI_START})$")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufff9-\ufffb\r]")
_MAX_PENDING = 256
"""Longest unfinished sequence held back between chunks; longer ones pass as text."""


def strip_ansi(text: str) -> str:
    """``text`` without complete ANSI escape sequences."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _SEQUENCE.sub("", text)


def sanitize_output(text: str) -> str:
    """``text`` as plain text: no escape sequences, no control characters but tab and
    newline, no carriage returns."""
    return _CONTROL.sub("", strip_ansi(text))


class AnsiStream:
    """Sanitises streamed text chunk by chunk; a sequence cut between two chunks is
    completed by the next one instead of leaking its tail."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, chunk: str) -> str:
        text = self._pending + chunk
        self._pending = ""
        if "\x1b" in text or "\x9b" in text:
            start = max(0, len(text) - _MAX_PENDING)
            match = _UNFINISHED.search(text, start)
            if match is not None:
                self._pending = text[match.start() :]
                text = text[: match.start()]
        return sanitize_output(text)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return sanitize_output(rest)


__all__ = ["AnsiStream", "sanitize_output", "strip_ansi"]
