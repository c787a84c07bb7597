"""Parsing JSON that is still arriving: tool-call arguments stream in pieces."""

from __future__ import annotations

import json
from typing import Any

_CLOSERS = {"{": "}", "[": "]"}


def parse_streaming_json(text: str | None) -> dict[str, Any]:
    """The object that ``text`` (a possibly incomplete JSON object) describes so far.

    Complete JSON parses as usual. Incomplete JSON is closed (open strings, arrays and
    objects; a dangling key, colon or comma dropped) before parsing. Anything that is
    not an object, or cannot be repaired, gives ``{}``.
    """
    if not text or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        value = _parse_partial(text)
    return value if isinstance(value, dict) else {}


def _parse_partial(text: str) -> Any:
    repaired = _close(text)
    while repaired:
        try:
            return json.loads(repaired)
        except ValueError:
            # Drop the last member (an unfinished number, literal or key) and retry.
            cut = max(repaired.rfind(","), repaired.rfind("{"), repaired.rfind("["))
            if cut <= 0:
                return None
            head = repaired[:cut] if repaired[cut] == "," else repaired[: cut + 1]
            repaired = _close(head)
    return None


def _close(text: str) -> str:
    """Close the open strings and containers of ``text``."""
    stack: list[str] = []
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "}]" and stack:
            stack.pop()
    body = text
    if in_string:
        if escaped:
            body = body[:-1]
        body += '"'
    body = body.rstrip()
    while body.endswith((",", ":")):
        body = body[:-1].rstrip()
        if body.endswith('"') and stack and stack[-1] == "}":
            # a key without a value: drop the key as well
            start = _string_start(body)
            if start is not None and body[:start].rstrip().endswith(("{", ",")):
                body = body[:start].rstrip()
    return body + "".join(reversed(stack))


def _string_start(body: str) -> int | None:
    """Index of the opening quote of the string that ends ``body``."""
    index = len(body) - 2
    while index >= 0:
        if body[index] == '"':
            backslashes = 0
            probe = index - 1
            while probe >= 0 and body[probe] == "\\":
                backslashes += 1
                probe -= 1
            if backslashes % 2 == 0:
                return index
        index -= 1
    return None
