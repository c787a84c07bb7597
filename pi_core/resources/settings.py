"""``settings.json``: user settings in the agent directory, project settings in ``.pi``.

Project settings override user settings key by key; nested objects are merged one
level deep; resource lists (``extensions``, ``skills``, ``prompts``, ``themes``,
``packages``) are combined, user entries first. Project settings only count once the
project is trusted. A file that is not valid JSON is reported (file, line and column)
and ignored; it is never rewritten.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._paths import agent_dir as default_agent_dir
from .._paths import project_dir

RESOURCE_LIST_KEYS = frozenset({"extensions", "skills", "prompts", "themes", "packages"})
USER_ONLY_KEYS = frozenset({"defaultProjectTrust", "requiredExtensions"})


class SettingsError(ValueError):
    """A settings file that cannot be used. The message names the file and line."""

    def __init__(self, path: Path, message: str, line: int | None = None, column: int | None = None):
        self.path = path
        self.line = line
        self.column = column
        where = f"{path}:{line}:{column}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


def read_settings_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(path, f"cannot read: {exc.strerror or exc}") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(path, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from exc
    if not isinstance(data, dict):
        raise SettingsError(path, f"expected a JSON object at the top level, found {type(data).__name__}")
    return data


def merge_settings(user: dict[str, Any], project: dict[str, Any]) -> dict[str, Any]:
    """Project over user: one level of object merging, resource lists combined."""
    merged = copy.deepcopy(user)
    for key, value in project.items():
        if key in USER_ONLY_KEYS:
            continue
        current = merged.get(key)
        if key in RESOURCE_LIST_KEYS and isinstance(current, list) and isinstance(value, list):
            merged[key] = [*current, *value]
        elif isinstance(current, dict) and isinstance(value, dict):
            merged[key] = {**current, **copy.deepcopy(value)}
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@dataclass
class Settings:
    """The settings of one working directory."""

    user: dict[str, Any] = field(default_factory=dict)
    project: dict[str, Any] = field(default_factory=dict)
    user_path: Path | None = None
    project_path: Path | None = None
    project_trusted: bool = False
    errors: list[SettingsError] = field(default_factory=list)
    merged: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.merged.get(key, default)

    def copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.merged)


def load_settings(
    cwd: str | Path,
    *,
    agent_dir: Path | None = None,
    project_trusted: bool = False,
) -> Settings:
    """Read user and (when trusted) project settings of ``cwd``."""
    adir = agent_dir if agent_dir is not None else default_agent_dir()
    user_path = adir / "settings.json"
    project_path = project_dir(cwd) / "settings.json"
    settings = Settings(user_path=user_path, project_path=project_path, project_trusted=project_trusted)
    try:
        settings.user = read_settings_file(user_path)
    except SettingsError as exc:
        settings.errors.append(exc)
    if project_trusted:
        try:
            settings.project = read_settings_file(project_path)
        except SettingsError as exc:
            settings.errors.append(exc)
    settings.merged = merge_settings(settings.user, settings.project)
    return settings
