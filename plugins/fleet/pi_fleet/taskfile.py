"""The task file: one JSON object per line, ``{"id", "repo", "prompt"}`` with optional
``"model"``, ``"settings"`` and ``"ref"``. Every mistake is one line naming the file,
the line and the field."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""Task ids name files and folders under the output directory."""

FIELDS = {"id", "repo", "prompt", "model", "settings", "ref"}


class TaskFileError(Exception):
    """A task file that cannot be used (the message is one line)."""


@dataclass(frozen=True)
class Task:
    id: str
    repo: str
    prompt: str
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    ref: str | None = None

    def spec(self) -> dict[str, Any]:
        """What a worker receives (plain data)."""
        return {
            "id": self.id,
            "repo": self.repo,
            "prompt": self.prompt,
            "model": self.model,
            "settings": dict(self.settings),
            "ref": self.ref,
        }


def is_remote(repo: str) -> bool:
    """A git URL (``https://``, ``ssh://``, ``git@host:path``, ``file://``) rather than a local path."""
    return "://" in repo or bool(re.match(r"^[\w.-]+@[\w.-]+:", repo))


def _text(where: str, record: dict[str, Any], name: str, *, required: bool) -> str | None:
    value = record.get(name)
    if value is None:
        if required:
            raise TaskFileError(f"{where}: the field {name!r} is missing")
        return None
    if not isinstance(value, str) or not value.strip():
        raise TaskFileError(f"{where}: the field {name!r} must be a non-empty string")
    return value


def parse_task(where: str, record: Any, base: Path) -> Task:
    if not isinstance(record, dict):
        raise TaskFileError(f"{where}: expected a JSON object, found {type(record).__name__}")
    unknown = sorted(set(record) - FIELDS)
    if unknown:
        raise TaskFileError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(FIELDS))})")
    task_id = _text(where, record, "id", required=True)
    assert task_id is not None
    if not ID_PATTERN.match(task_id):
        raise TaskFileError(
            f"{where}: the id {task_id!r} must be letters, digits, '.', '_' or '-' (it names files under --out)"
        )
    repo = _text(where, record, "repo", required=True)
    prompt = _text(where, record, "prompt", required=True)
    assert repo is not None and prompt is not None
    if not is_remote(repo):
        path = Path(repo).expanduser()
        repo = str((base / path).resolve() if not path.is_absolute() else path)
    settings = record.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise TaskFileError(f"{where}: the field 'settings' must be an object of pi settings")
    return Task(
        id=task_id,
        repo=repo,
        prompt=prompt,
        model=_text(where, record, "model", required=False),
        settings=dict(settings or {}),
        ref=_text(where, record, "ref", required=False),
    )


def read_tasks(path: Path) -> list[Task]:
    """The tasks of ``path``; relative repository paths are taken from the file's folder.
    Blank lines are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{path}: cannot read: {exc}") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    base = path.resolve().parent
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        task = parse_task(where, record, base)
        if task.id in seen:
            raise TaskFileError(f"{where}: the id {task.id!r} is already used on line {seen[task.id]}")
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (one JSON object per line)")
    return tasks
