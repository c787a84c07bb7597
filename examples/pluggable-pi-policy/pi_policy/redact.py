"""Secret redaction: every string of a value, with every ``redact`` rule applied in order."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

Rule = tuple[re.Pattern[str], str]


def redact_text(text: str, rules: Sequence[Rule]) -> str:
    for pattern, replacement in rules:
        text = pattern.sub(replacement, text)
    return text


def redact_value(value: Any, rules: Sequence[Rule]) -> Any:
    """``value`` with its strings redacted, in dicts and lists at any depth (a new object
    where something changed; other values are returned as they are)."""
    if not rules:
        return value
    if isinstance(value, str):
        return redact_text(value, rules)
    if isinstance(value, dict):
        return {key: redact_value(item, rules) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item, rules) for item in value)
    return value
