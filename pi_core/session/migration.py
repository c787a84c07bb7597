"""Upgrade session files of format versions 1 and 2 to version 3 (in place, on dicts).

* v1 -> v2: entries were a linear list without ids; each gets an 8-hex ``id`` and the
  previous entry as ``parentId``; a compaction's ``firstKeptEntryIndex`` (an index into the
  file's lines, header included) becomes ``firstKeptEntryId``.
* v2 -> v3: the message role ``hookMessage`` was renamed ``custom``.
"""

from __future__ import annotations

from typing import Any

from pi_hookspecs import SESSION_VERSION

from .paths import new_entry_id


def _v1_to_v2(records: list[dict[str, Any]]) -> None:
    ids: set[str] = set()
    previous: str | None = None
    for record in records:
        if record.get("type") == "session":
            record["version"] = 2
            continue
        entry_id = new_entry_id(ids)
        ids.add(entry_id)
        record["id"] = entry_id
        record["parentId"] = previous
        previous = entry_id
    for record in records:
        if record.get("type") != "compaction" or "firstKeptEntryIndex" not in record:
            continue
        index = record.pop("firstKeptEntryIndex")
        if isinstance(index, int) and 0 <= index < len(records):
            target = records[index]
            if target.get("type") != "session":
                record["firstKeptEntryId"] = target["id"]


def _v2_to_v3(records: list[dict[str, Any]]) -> None:
    for record in records:
        if record.get("type") == "session":
            record["version"] = 3
        elif record.get("type") == "message":
            message = record.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"


def file_version(records: list[dict[str, Any]]) -> int:
    header = records[0] if records and records[0].get("type") == "session" else None
    version = header.get("version") if header else None
    return version if isinstance(version, int) else 1


def migrate(records: list[dict[str, Any]]) -> bool:
    """Bring ``records`` (header first) to the current version. True when anything changed."""
    version = file_version(records)
    if version >= SESSION_VERSION:
        return False
    if version < 2:
        _v1_to_v2(records)
    if version < 3:
        _v2_to_v3(records)
    return True
