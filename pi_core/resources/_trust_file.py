"""Reading ``<agent dir>/trust.json`` without the trust module (private).

:mod:`.trust` owns the trust store (locking, writing, the decision); this module holds
what :mod:`.settings` needs as well, below both: the nearest saved decision for a
directory, and a lock-free peek at the file used before the session starts (the file
is only ever replaced whole, by a rename, so an unlocked read sees one version)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ._files import MAX_RESOURCE_FILE_BYTES, canonical_path, read_text

TRUST_FILE_NAME = "trust.json"


def nearest_decision(data: Mapping[str, bool | None], cwd: str | os.PathLike[str]) -> tuple[str, bool] | None:
    """``(directory, trusted)`` of the decision saved for ``cwd`` or its nearest ancestor."""
    current = canonical_path(cwd)
    while True:
        value = data.get(current)
        if value is True or value is False:
            return current, value
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def peek_saved_trust(cwd: str | os.PathLike[str], agent_dir: Path) -> bool | None:
    """The saved decision for ``cwd`` (nearest ancestor), ``None`` without one; a
    missing, oversized or broken file counts as no decision. Never locks or raises."""
    try:
        text = read_text(agent_dir / TRUST_FILE_NAME, limit=MAX_RESOURCE_FILE_BYTES)
        data = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    found = nearest_decision(data, cwd)
    return found[1] if found is not None else None
