"""The plugin's settings: the ``{{ cookiecutter.__settings_key }}`` key of pi's settings.json.

User settings (``~/.pi/agent/settings.json``) and a trusted project's ``.pi/settings.json``
are merged by pi; the plugin reads the result with ``ctx.get_settings()``::

    {
      "{{ cookiecutter.__settings_key }}": {
        "greeting": "Hi",
        "blockedCommands": ["\\\\bsudo\\\\b"],
        "redact": ["sk-[A-Za-z0-9]+"]
      }
    }
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

SETTINGS_KEY = "{{ cookiecutter.__settings_key }}"


class SettingsError(ValueError):
    """The settings under :data:`SETTINGS_KEY` are invalid; the message names each key."""


class Settings(BaseModel):
    """What ``{"{{ cookiecutter.__settings_key }}": {...}}`` may hold. Keys are camelCase like pi's own."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    greeting: str = "Hello"
    """How the ``{{ cookiecutter.__tool }}`` tool starts its answer."""
    blocked_commands: list[str] = Field(default_factory=lambda: [r"\brm\s+-rf\s+/(\s|$)"])
    """Regular expressions: a ``bash`` command in which one is found is blocked."""
    redact: list[str] = Field(default_factory=list)
    """Regular expressions: what they match in tool results becomes ``[redacted]``."""

    @field_validator("blocked_commands", "redact")
    @classmethod
    def _valid_patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return patterns

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Settings:
        """Validate ``settings[SETTINGS_KEY]`` (absent: the defaults); raise :class:`SettingsError`."""
        try:
            return cls.model_validate(settings.get(SETTINGS_KEY, {}))
        except ValidationError as exc:
            problems = "; ".join(
                ".".join([SETTINGS_KEY, *(str(part) for part in error["loc"])]) + f": {error['msg']}"
                for error in exc.errors()
            )
            raise SettingsError(f"invalid settings: {problems}") from None
