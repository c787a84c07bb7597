"""``DIR/results.jsonl``: one line per task, written by the driver alone (a task that
is retried after a worker died still ends in one line)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Status = Literal["ok", "error", "cancelled"]

RESULTS = "results.jsonl"


@dataclass
class Result:
    id: str
    status: Status
    session: str | None = None
    """The session file, relative to the output directory."""
    patch: str | None = None
    """The patch of the working copy (``git diff`` with new files), relative to the output directory."""
    tokens: int = 0
    cost: float = 0.0
    duration_s: float = 0.0
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        return cls(
            id=str(data["id"]),
            status=data.get("status", "error"),
            session=data.get("session"),
            patch=data.get("patch"),
            tokens=int(data.get("tokens") or 0),
            cost=float(data.get("cost") or 0.0),
            duration_s=float(data.get("duration_s") or 0.0),
            error=data.get("error"),
        )


def read_results(out: Path) -> dict[str, Result]:
    """The last line of each task id in ``out/results.jsonl`` (lines that are not results
    — a cut last line after a crash — are ignored)."""
    found: dict[str, Result] = {}
    path = out / RESULTS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return found
    for line in text.splitlines():
        try:
            data = json.loads(line)
            if isinstance(data, dict) and "id" in data:
                found[str(data["id"])] = Result.from_json(data)
        except (ValueError, TypeError, KeyError):
            continue
    return found


class ResultsFile:
    """Appends result lines (each flushed and synced at once); opened by :meth:`begin`,
    which keeps the lines of the tasks that are not run again."""

    def __init__(self, out: Path) -> None:
        self.path = out / RESULTS
        self._handle: Any = None

    def begin(self, keep: list[Result]) -> None:
        tmp = self.path.with_name(RESULTS + ".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            for result in keep:
                handle.write(_line(result))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._handle = self.path.open("a", encoding="utf-8")

    def append(self, result: Result) -> None:
        self._handle.write(_line(result))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _line(result: Result) -> str:
    return json.dumps(result.to_json(), ensure_ascii=False) + "\n"
