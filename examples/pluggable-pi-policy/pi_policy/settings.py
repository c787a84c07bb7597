"""Where the policy finds its rules and writes its audit log: the ``policy`` key of the
USER settings (``<agent dir>/settings.json``).

A project's ``.pi/settings.json`` is deliberately not consulted: a project must not be
able to point the policy at rules of its own. The agent directory and the file are found
and read the way pi does it (:mod:`pi_hookspecs.toolkit`)::

    {"policy": {"rulesFile": "policy.yaml", "auditLog": "policy-audit.jsonl"}}

Relative paths start at the agent directory; ``auditLog: null`` turns the log off.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pi_hookspecs import toolkit
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from .errors import PolicyError

SETTINGS_KEY = "policy"


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


agent_dir = toolkit.agent_dir


def _resolve(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def load_config(base: Path | None = None) -> Config:
    """Read and validate the ``policy`` key of ``<agent dir>/settings.json``; raise
    :class:`PolicyError` naming the file for anything unreadable or invalid."""
    base = base or agent_dir()
    settings_file = toolkit.user_settings_file(base)
    try:
        section = toolkit.settings_section(SETTINGS_KEY, settings_file)
    except toolkit.SettingsFileError as exc:
        if exc.key:
            raise PolicyError(f"invalid settings in {settings_file}: {exc.message}") from None
        raise PolicyError(f"the settings file {exc}") from None
    try:
        settings = Settings.model_validate(section or {})
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
