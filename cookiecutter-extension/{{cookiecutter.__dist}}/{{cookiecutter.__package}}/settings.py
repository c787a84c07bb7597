"""The plugin's settings: the ``{{ cookiecutter.__settings_key }}`` key of pi's settings.json.

Two kinds of keys:

* **policy keys** (``blockedCommands``, ``redact``) are read from the user's settings
  alone (``ctx.get_settings("user")``, ``~/.pi/agent/settings.json``): a project the
  user trusts can still be someone else's repository, and its ``.pi/settings.json``
  must not switch a safeguard off. A project's policy keys are ignored (and reported);
* the other keys (``greeting``) come from the merged settings (``ctx.get_settings()``),
  where a trusted project's ``.pi/settings.json`` overrides the user's.

::

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
POLICY_FIELDS = ("blocked_commands", "redact")
"""The fields that make the policy: read from the user's settings only."""


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
    def policy_keys(cls) -> set[str]:
        """The keys (camelCase and snake_case) only the user's settings may set."""
        return {name for field_name in POLICY_FIELDS for name in (field_name, to_camel(field_name))}

    @classmethod
    def from_scopes(cls, user: dict[str, Any], effective: dict[str, Any]) -> tuple[Settings, list[str]]:
        """The settings from pi's user settings and the merged ones (``ctx.get_settings("user")``
        and ``ctx.get_settings()``): policy keys from ``user`` only, the rest from
        ``effective``. Returns them with the policy keys a project tried to set (ignored);
        raises :class:`SettingsError`."""
        mine = user.get(SETTINGS_KEY, {})
        merged = effective.get(SETTINGS_KEY, {})
        for value in (mine, merged):
            if not isinstance(value, dict):  # not an object: the validation reports it (fail closed)
                return cls.from_settings({SETTINGS_KEY: value}), []
        policy = cls.policy_keys()
        ignored = sorted(k for k in merged if k in policy and (k not in mine or merged[k] != mine[k]))
        data = {k: v for k, v in merged.items() if k not in policy}
        data.update({k: v for k, v in mine.items() if k in policy})
        return cls.from_settings({SETTINGS_KEY: data}), ignored

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
