"""``store(key, value)`` / ``load(key)``: small JSON values kept across codemode calls.

Each successful script that changed the store appends one ``codemode-store`` custom
entry ``{"set": {key: value}, "delete": [key]}`` (the TypeScript pi's format). The
values a script starts with are those entries on the current branch applied from the
root, so every branch (``/tree``, fork, resume) sees only what was written on its path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_TOTAL_CHARS", "MAX_VALUE_CHARS", "STORE_ENTRY", "ScriptStore", "read_store"]

STORE_ENTRY = "codemode-store"
MAX_VALUE_CHARS = 262_144
MAX_TOTAL_CHARS = 1_048_576


def _entry_data(entry: Any) -> tuple[dict[str, Any], list[str]] | None:
    if getattr(entry, "type", None) != "custom" or getattr(entry, "custom_type", None) != STORE_ENTRY:
        return None
    data = getattr(entry, "data", None)
    if not isinstance(data, dict):
        return None
    values, deleted = data.get("set"), data.get("delete", [])
    if not isinstance(values, dict) or not isinstance(deleted, list):
        return None
    return values, [key for key in deleted if isinstance(key, str)]


def read_store(branch: Iterable[Any]) -> dict[str, Any]:
    """The store values of a branch (entries from the root to the leaf)."""
    store: dict[str, Any] = {}
    for entry in branch:
        data = _entry_data(entry)
        if data is None:
            continue
        values, deleted = data
        for key in deleted:
            store.pop(key, None)
        store.update(values)
    return store


class ScriptStore:
    """One script's view of the store: the branch's values plus its own writes."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = {key: json.dumps(value) for key, value in values.items()}
        self._set: dict[str, Any] = {}
        self._deleted: set[str] = set()

    def store(self, key: Any, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise TypeError("store() key must be a non-empty string")
        if value is None:
            self._values.pop(key, None)
            self._set.pop(key, None)
            self._deleted.add(key)
            return
        try:
            dumped = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"store({key!r}, …): the value must be JSON (dict, list, str, int, float, bool): {exc}"
            ) from None
        if len(dumped) > MAX_VALUE_CHARS:
            raise ValueError(f"store({key!r}, …): {len(dumped)} characters of JSON, at most {MAX_VALUE_CHARS}")
        total = sum(len(v) for k, v in self._values.items() if k != key) + len(dumped)
        if total > MAX_TOTAL_CHARS:
            raise ValueError(
                f"store({key!r}, …): the store would hold {total} characters of JSON, at most {MAX_TOTAL_CHARS}"
            )
        self._values[key] = dumped
        self._set[key] = json.loads(dumped)
        self._deleted.discard(key)

    def load(self, key: Any, default: Any = None) -> Any:
        if not isinstance(key, str):
            raise TypeError("load() key must be a string")
        dumped = self._values.get(key)
        return default if dumped is None else json.loads(dumped)

    def changes(self) -> dict[str, Any] | None:
        """The entry data for this script's writes, or ``None`` when it wrote nothing."""
        if not self._set and not self._deleted:
            return None
        return {"set": dict(self._set), "delete": sorted(self._deleted)}
