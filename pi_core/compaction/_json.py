"""JSON text as JavaScript's ``JSON.stringify`` writes it (compact, non-ASCII kept)."""

from __future__ import annotations

import json
from typing import Any


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: no spaces after separators, Unicode kept as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
