"""Where the policy finds its rules and writes its audit log: the ``policy`` key of the
USER settings (``<agent dir>/settings.json``).

A project's ``.pi/settings.json`` is deliberately not consulted: a project must not be
able to point the policy at rules of its own. The agent directory is found the way pi
finds it: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``::

    {"policy": {"rulesFile": "policy.yaml", "auditLog": "policy-audit.jsonl"}}

Relative paths start at the agent directory; ``auditLog: null`` turns the log off.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from .errors import PolicyError

SETTINGS_KEY = "policy"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


class Settings(BaseModel):
    """What ``{"policy": {...}}`` may hold (camelCase keys, like pi's own settings)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    rules_file: str = "policy.yaml"
    """The YAML rules (relative to the agent directory)."""
    audit_log: str | None = "policy-audit.jsonl"
    """The JSONL audit log (relative to the agent directory); ``null``: no log."""


@dataclass(frozen=True)
class Config:
    """The settings resolved to absolute paths."""

    settings_file: Path
    rules_file: Path
    audit_log: Path | None


def agent_dir() -> Path:
    override = os.environ.get(AGENT_DIR_ENV)
    return Path(override).expanduser() if override else Path.home() / ".pi" / "agent"


def _resolve(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def load_config(base: Path | None = None) -> Config:
    """Read and validate the ``policy`` key of ``<agent dir>/settings.json``; raise
    :class:`PolicyError` naming the file for anything unreadable or invalid."""
    base = base or agent_dir()
    settings_file = base / "settings.json"
    try:
        text = settings_file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise PolicyError(f"cannot read the settings {settings_file}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise PolicyError(f"the settings {settings_file} are not valid JSON: line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise PolicyError(f"the settings {settings_file} are not a JSON object")
    try:
        settings = Settings.model_validate(data.get(SETTINGS_KEY) or {})
    except ValidationError as exc:
        problems = "; ".join(
            ".".join([SETTINGS_KEY, *(str(part) for part in error["loc"])]) + f": {error['msg']}"
            for error in exc.errors()
        )
        raise PolicyError(f"invalid settings in {settings_file}: {problems}") from None
    return Config(
        settings_file=settings_file,
        rules_file=_resolve(base, settings.rules_file),
        audit_log=_resolve(base, settings.audit_log) if settings.audit_log else None,
    )
