"""The ``code`` argument: raw Python, optionally fenced by mistake, optionally starting
with an options line::

    # @options: {"max_output_tokens": 2000, "timeout_ms": 60000}

The options line must be the first line; an options line anywhere else (outside a
string) fails the call before the script runs. It stays in the source as a comment, so
line numbers in errors match what the model wrote.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "ScriptOptions", "SourceError", "parse_source"]

DEFAULT_MAX_OUTPUT_TOKENS = 10_000
_OPTIONS = re.compile(r"^[ \t]*#[ \t]*@options:(.*)$")
_FENCE = re.compile(r"^\s*```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)\n?[ \t]*```\s*$", re.DOTALL | re.IGNORECASE)


class SourceError(ValueError):
    """The code argument cannot run (bad options line)."""


@dataclass(frozen=True)
class ScriptOptions:
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    timeout_ms: int | None = None


def strip_fence(code: str) -> str:
    """The source inside one markdown code fence, if the whole input is fenced."""
    match = _FENCE.match(code)
    return match.group(1) if match else code


def _parse_options(raw: str) -> ScriptOptions:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SourceError(f"the @options line is not a JSON object: {exc.msg}") from None
    if not isinstance(data, dict):
        raise SourceError("the @options line must hold a JSON object")
    unknown = sorted(set(data) - {"max_output_tokens", "timeout_ms"})
    if unknown:
        raise SourceError(f"unknown option(s) {', '.join(unknown)}; known: max_output_tokens, timeout_ms")
    values: dict[str, int] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SourceError(f"option {key} must be a positive integer, got {json.dumps(value)}")
        values[key] = value
    return ScriptOptions(**values)


def parse_source(code: str) -> tuple[str, ScriptOptions]:
    """The script to run and its options. Raises :class:`SourceError`."""
    code = strip_fence(code.replace("\r\n", "\n"))
    lines = code.split("\n")
    options = ScriptOptions()
    first = _OPTIONS.match(lines[0]) if lines else None
    if first:
        options = _parse_options(first.group(1).strip())
    for number, line in enumerate(lines[1:], start=2):
        if _OPTIONS.match(line):
            raise SourceError(f"an @options line must be the first line of the script (found on line {number})")
    return code, options
