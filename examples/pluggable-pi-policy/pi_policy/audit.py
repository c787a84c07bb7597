"""The audit log: one JSON object per line for every tool call and its verdict."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import PolicyError


class AuditLog:
    def __init__(self, path: Path | None) -> None:
        self.path = path

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` (with the time); raise :class:`PolicyError` when that fails."""
        if self.path is None:
            return
        line = json.dumps({"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **record}, default=str)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError as exc:
            raise PolicyError(f"cannot write the audit log {self.path}: {exc.strerror or exc}") from None
