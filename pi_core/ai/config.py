"""``models.json``: the schema of the TypeScript pi's file, and loading it.

A file that cannot be used is reported in ONE message naming the file and the line
(invalid JSON) or the field (schema errors); the caller then carries on without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pi_hookspecs import camel_alias


class _Config(BaseModel):
    model_config = ConfigDict(alias_generator=camel_alias, populate_by_name=True, extra="forbid", defer_build=True)


class CostTier(_Config):
    input_tokens_above: float
    input: float
    output: float
    cache_read: float
    cache_write: float


class CostConfig(_Config):
    input: float
    output: float
    cache_read: float
    cache_write: float
    tiers: list[CostTier] | None = None


class CostOverride(_Config):
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    tiers: list[CostTier] | None = None


class _ModelFields(_Config):
    name: str | None = None
    reasoning: bool | None = None
    thinking_level_map: dict[Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"], str | None] | None = (
        None
    )
    input: list[Literal["text", "image"]] | None = None
    input_limits: dict[str, Any] | None = None
    prompt_cache: dict[str, Any] | None = None
    context_window: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    sampling_params: dict[str, Any] | None = None
    sampling_params_by_thinking_level: dict[str, dict[str, Any]] | None = None
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None


class ModelConfig(_ModelFields):
    """A ``models`` entry: adds a model, or replaces the provider's model of that id."""

    id: str = Field(min_length=1)
    api: str | None = None
    base_url: str | None = None
    cost: CostConfig | None = None
    type: Literal["chat", "classifier", "image"] | None = None
    output: list[Literal["text", "image"]] | None = None
    """An image model's output modalities."""


class ModelOverride(_ModelFields):
    """A ``modelOverrides`` entry: object fields merge with the model's, others replace."""

    cost: CostOverride | None = None


class ProviderConfig(_Config):
    name: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api: str | None = None
    oauth: str | None = None
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    auth_header: bool | None = None
    models: list[ModelConfig] | None = None
    model_overrides: dict[str, ModelOverride] | None = None


class ModelsFile(_Config):
    schema_: str | None = Field(default=None, alias="$schema")
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)


def _validate(data: Any) -> ModelsFile:
    """``ModelsFile.model_validate(data)``, by a validator built from a core schema kept
    between runs (:mod:`pi_core._schema_cache`): generating it costs about 2 ms of each
    start that reads a ``models.json``. The models and the errors are the same."""
    from .._schema_cache import model_validator

    result = model_validator(ModelsFile, __file__, "models").validate_python(data)
    assert isinstance(result, ModelsFile)
    return result


class ModelsConfigError(Exception):
    """``models.json`` cannot be used; ``str(error)`` is the one message to show."""


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def _problem(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected an object, got {_json_kind(error.get('input'))}"
    message = str(error.get("msg", "invalid value"))
    if "input" in error and kind not in ("model_type", "dict_type"):
        shown = json.dumps(error["input"]) if not isinstance(error["input"], dict) else "an object"
        if len(shown) <= 60:
            message += f" (got {shown})"
    return message


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "null" if value is None else type(value).__name__


def format_validation_error(path: Path, error: ValidationError) -> str:
    errors = error.errors()
    first = errors[0]
    text = f"{path}: {_location(tuple(first.get('loc', ())))}: {_problem(first)}"  # type: ignore[arg-type]
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return text


def parse_models_json(text: str, path: Path) -> ModelsFile:
    """Validate the text of a ``models.json``; raises :class:`ModelsConfigError`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ModelsConfigError(
            f"{path}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ModelsConfigError(f'{path}: expected a JSON object with "providers", got {type(data).__name__}')
    try:
        return _validate(data)
    except ValidationError as error:
        raise ModelsConfigError(format_validation_error(path, error)) from None


def parse_models_json_lenient(text: str, path: Path) -> tuple[ModelsFile, list[str]]:
    """Validate the text of a ``models.json``, leaving out what is broken instead of the
    whole file: a model with a bad field is skipped (the provider's other models stay),
    so is a bad ``modelOverrides`` entry; a bad provider field is ignored; a provider
    that is not an object is skipped. Returns the usable part and one message per
    problem (file and field). Raises :class:`ModelsConfigError` when nothing is usable
    (invalid JSON, not an object, ``providers`` not an object)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ModelsConfigError(
            f"{path}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ModelsConfigError(f'{path}: expected a JSON object with "providers", got {type(data).__name__}')
    problems: list[str] = []
    for _ in range(1000):  # each pass removes one broken part
        try:
            return _validate(data), problems
        except ValidationError as error:
            first = error.errors()[0]
            problems.append(_prune(data, tuple(first.get("loc", ())), _problem(first), path))  # type: ignore[arg-type]
    raise ModelsConfigError(f"{path}: too many problems")  # pragma: no cover - a bound, not a case


def _prune(data: dict[str, Any], loc: tuple[Any, ...], problem: str, path: Path) -> str:
    """Remove the part of ``data`` that ``loc`` is inside; the message saying so."""
    where = f"{path}: {_location(loc)}: {problem}"
    if not loc or loc[0] != "providers":
        if loc:
            data.pop(loc[0], None)
        return f"{where}; ignored"
    providers = data["providers"]
    if len(loc) == 1 or not isinstance(providers, dict):
        raise ModelsConfigError(where)
    name = loc[1]
    provider = providers.get(name)
    if len(loc) == 2 or not isinstance(provider, dict):
        providers.pop(name, None)
        return f"{where}; provider {name!r} is skipped"
    field = loc[2]
    items = provider.get(field)
    if field == "models" and len(loc) >= 4 and isinstance(loc[3], int) and isinstance(items, list):
        entry = items.pop(loc[3])
        model_id = entry.get("id") if isinstance(entry, dict) else None
        what = f"model {name}/{model_id}" if isinstance(model_id, str) and model_id else f"this model of {name!r}"
        return f"{where}; {what} is skipped"
    if field == "modelOverrides" and len(loc) >= 4 and isinstance(items, dict):
        items.pop(loc[3], None)
        return f"{where}; the override of {name}/{loc[3]} is skipped"
    provider.pop(field, None)
    return f"{where}; ignored"


def load_models_json(path: Path) -> ModelsFile | None:
    """The parsed file, ``None`` when it does not exist; raises :class:`ModelsConfigError`."""
    text = _read(path)
    return parse_models_json(text, path) if text is not None else None


def load_models_json_lenient(path: Path) -> tuple[ModelsFile | None, list[str]]:
    """The usable part of the file (see :func:`parse_models_json_lenient`) and its
    problems; ``(None, [])`` when the file does not exist or is empty."""
    text = _read(path)
    return parse_models_json_lenient(text, path) if text is not None else (None, [])


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ModelsConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ModelsConfigError(f"{path}: not UTF-8 text (byte {error.start}); expected a JSON object") from None
    return text if text.strip() else None
