"""Tool-call ids a target API accepts.

A history recorded with one provider carries that provider's tool-call ids; another
API may restrict their characters or length (Mistral takes exactly nine alphanumeric
characters). :data:`DEFAULT_ID_NORMALIZERS` says how each API rewrites an id, and
:class:`ToolCallIdMap` keeps the rewritten ids unique within one request so that every
tool result still answers its call.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pi_hookspecs import AssistantMessage, Model

ToolCallIdNormalizer = Callable[[str, Model, AssistantMessage], str]
"""``(call id, target model, the assistant message holding the call) -> id to send``."""

_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize_id(value: str, limit: int) -> str:
    """``value`` with characters outside ``[a-zA-Z0-9_-]`` replaced by ``_``, cut to ``limit``."""
    return _UNSAFE_ID_CHARS.sub("_", value)[:limit]


def _anthropic_id(call_id: str, model: Model, source: AssistantMessage) -> str:
    return sanitize_id(call_id, 64)


def _completions_id(call_id: str, model: Model, source: AssistantMessage) -> str:
    if "|" in call_id:
        return sanitize_id(call_id.split("|", 1)[0], 40)
    if model.provider == "openai" and len(call_id) > 40:
        return call_id[:40]
    return call_id


def _responses_id(call_id: str, model: Model, source: AssistantMessage) -> str:
    return sanitize_id(call_id.split("|", 1)[0], 64)


_GEMINI_VERSION = re.compile(r"^gemini(?:-live)?-(\d+)")


def _google_id(call_id: str, model: Model, source: AssistantMessage) -> str:
    # only the models that are sent tool-call ids (Gemini 3+, Claude and gpt-oss on Vertex)
    version = _GEMINI_VERSION.match(model.id.lower())
    if model.id.startswith(("claude-", "gpt-oss-")) or (version is not None and int(version.group(1)) >= 3):
        return sanitize_id(call_id, 64)
    return call_id


def short_hash(text: str) -> str:
    """pi 1.6.0's short deterministic hash of ``text`` (two 32-bit halves, base 36)."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le")
    for position in range(0, len(units), 2):
        unit = units[position] | units[position + 1] << 8
        h1 = ((h1 ^ unit) * 2654435761) & 0xFFFFFFFF
        h2 = ((h2 ^ unit) * 1597334677) & 0xFFFFFFFF
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & 0xFFFFFFFF) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & 0xFFFFFFFF)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & 0xFFFFFFFF) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & 0xFFFFFFFF)
    return _base36(h2) + _base36(h1)


def _base36(value: int) -> str:
    digits = ""
    while True:
        value, digit = divmod(value, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
        if not value:
            return digits


_NOT_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9]")


def mistral_tool_call_id(call_id: str) -> str:
    """The nine alphanumeric characters Mistral accepts as a tool-call id: ``call_id``
    itself when it already is one, else derived from it by :func:`short_hash`."""
    normalized = _NOT_ALPHANUMERIC.sub("", call_id)
    if len(normalized) == 9:
        return normalized
    return _NOT_ALPHANUMERIC.sub("", short_hash(normalized or call_id))[:9]


def _mistral_id(call_id: str, model: Model, source: AssistantMessage) -> str:
    return mistral_tool_call_id(call_id)


DEFAULT_ID_NORMALIZERS: dict[str, ToolCallIdNormalizer] = {
    "anthropic-messages": _anthropic_id,
    "openai-completions": _completions_id,
    "openai-responses": _responses_id,
    "google-generative-ai": _google_id,
    "google-vertex": _google_id,
    "mistral-conversations": _mistral_id,
    "azure-openai-responses": _responses_id,
    "openai-codex-responses": _responses_id,
}
"""How each API normalises the tool-call ids of messages recorded with another model."""


class ToolCallIdMap:
    """Original tool-call id -> normalised id, keeping normalised ids unique."""

    def __init__(self) -> None:
        self.mapping: dict[str, str] = {}
        self.used: set[str] = set()

    def assign(self, original: str, normalized: str) -> str:
        if original in self.mapping:
            return self.mapping[original]
        candidate, counter = normalized, 2
        while candidate in self.used and candidate != original:
            suffix = f"_{counter}"
            candidate = normalized[: max(1, len(normalized) - len(suffix))] + suffix if normalized else suffix
            counter += 1
        self.used.add(candidate)
        if candidate != original:
            self.mapping[original] = candidate
        return candidate
