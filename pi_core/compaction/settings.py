"""Compaction and branch-summary settings (``compaction.*`` / ``branchSummary.*``).

The runtime usually resolves these through :mod:`pi_core.resources`; the models here
are what the compaction functions need, readable straight from a ``settings.json``
dict (camelCase keys) for tests, SDK use and plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from pi_hookspecs import camel_alias

MAX_SAFE_INTEGER = 2**53 - 1
"""Token values must be JSON-safe integers (the TypeScript pi's ``Number.isSafeInteger``)."""

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000


class CompactionSettingsLike(Protocol):
    """Anything with the three compaction knobs (this module's model, or the
    ``CompactionSettings`` dataclass of :mod:`pi_core.resources.settings`)."""

    @property
    def enabled(self) -> bool: ...

    @property
    def reserve_tokens(self) -> int: ...

    @property
    def keep_recent_tokens(self) -> int: ...


class SettingsValueError(ValueError):
    """A compaction setting has a value of the wrong type or range."""


class _SettingsModel(BaseModel):
    # Validators are built on first use: a run that never compacts does not pay for them.
    model_config = ConfigDict(
        alias_generator=camel_alias, populate_by_name=True, extra="ignore", frozen=True, defer_build=True
    )

    def to_json(self) -> dict[str, Any]:
        """The camelCase dict, as in ``settings.json``."""
        return self.model_dump(by_alias=True)


_TokenCount = StrictInt
_M = TypeVar("_M", bound="_SettingsModel")


class CompactionSettings(_SettingsModel):
    """When automatic compaction starts and how much recent context it keeps.

    * ``enabled`` - automatic compaction on/off (``/compact`` works either way);
    * ``reserve_tokens`` - compaction starts once fewer than this many tokens of the
      context window are free;
    * ``keep_recent_tokens`` - roughly this many of the newest tokens stay verbatim.
    """

    enabled: StrictBool = True
    reserve_tokens: _TokenCount = Field(default=DEFAULT_RESERVE_TOKENS, ge=0, le=MAX_SAFE_INTEGER)
    keep_recent_tokens: _TokenCount = Field(default=DEFAULT_KEEP_RECENT_TOKENS, ge=0, le=MAX_SAFE_INTEGER)

    @classmethod
    def coerce(cls, settings: CompactionSettingsLike | Mapping[str, Any] | None) -> CompactionSettings:
        """``settings`` as this model: ``None`` gives the defaults, a mapping is read as
        ``compaction`` section (camelCase or snake_case keys) - or, when it has a
        ``compaction`` object, as a whole ``settings.json`` dict - and any object with
        the three attributes is copied."""
        if settings is None:
            return cls()
        if isinstance(settings, CompactionSettings):
            return settings
        if isinstance(settings, Mapping):
            if isinstance(settings.get("compaction"), Mapping):  # a whole settings.json dict
                return cls.from_settings(settings)
            return _validate(cls, settings, "compaction")
        return _validate(
            cls,
            {
                "enabled": settings.enabled,
                "reserve_tokens": settings.reserve_tokens,
                "keep_recent_tokens": settings.keep_recent_tokens,
            },
            "compaction",
        )

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None, model: str | None = None) -> CompactionSettings:
        """Read the ``compaction`` object of a (merged) ``settings.json`` dict.

        ``model`` (``"provider/modelId"``) applies ``compaction.modelOverrides[model]``:
        ``reserveTokens`` and ``keepRecentTokens`` each fall back on their own from the
        override to the ordinary value to the default; ``enabled`` is never overridden.
        Raises :class:`SettingsValueError` for a value of the wrong type or range.
        """
        section = (settings or {}).get("compaction")
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            raise SettingsValueError("compaction must be an object")
        values = {k: section[k] for k in ("enabled", "reserveTokens", "keepRecentTokens") if k in section}
        base = _validate(cls, values, "compaction")
        if model is None:
            return base
        overrides = section.get("modelOverrides")
        if overrides is None:
            return base
        if not isinstance(overrides, Mapping):
            raise SettingsValueError("compaction.modelOverrides must be an object")
        override = overrides.get(model)
        if override is None:
            return base
        if not isinstance(override, Mapping):
            raise SettingsValueError(f'compaction.modelOverrides["{model}"] must be an object')
        update = {k: override[k] for k in ("reserveTokens", "keepRecentTokens") if k in override}
        return _validate(cls, {**base.to_json(), **update}, f'compaction.modelOverrides["{model}"]')


class BranchSummarySettings(_SettingsModel):
    """``branchSummary.*``: the context budget of ``/tree`` branch summaries."""

    reserve_tokens: _TokenCount = Field(default=DEFAULT_RESERVE_TOKENS, ge=0, le=MAX_SAFE_INTEGER)
    skip_prompt: StrictBool = False

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> BranchSummarySettings:
        section = (settings or {}).get("branchSummary")
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            raise SettingsValueError("branchSummary must be an object")
        return _validate(cls, {k: section[k] for k in ("reserveTokens", "skipPrompt") if k in section}, "branchSummary")


def _validate(cls: type[_M], values: Mapping[str, Any], where: str) -> _M:
    try:
        return cls.model_validate(dict(values))
    except ValidationError as exc:
        problems = "; ".join(
            f"{where}.{'.'.join(str(p) for p in err['loc'])}: {_describe(err)}" for err in exc.errors()
        )
        raise SettingsValueError(problems) from None


def _describe(error: Any) -> str:
    kind = error.get("type", "")
    if kind in {"int_type", "greater_than_equal", "less_than_equal", "int_from_float"}:
        return f"must be a non-negative integer, found {error.get('input')!r}"
    if kind == "bool_type":
        return f"must be true or false, found {error.get('input')!r}"
    return str(error.get("msg", "invalid value"))
