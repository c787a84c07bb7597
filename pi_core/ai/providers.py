"""The registry's provider table: how the layers (pi's catalogue, plugin providers,
``models.json``) combine into providers and model entries.

A provider's models are kept as entries (dicts of the ``models.json`` fields) and
catalogue placeholders, read from the catalogue when first needed; the registry
builds a ``Model`` from an entry only when it is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pi_hookspecs import ProviderDefinition, StreamFunction
from pi_hookspecs.record import dataclass

from . import catalog
from .config import ModelOverride, ModelsFile

_MERGED_FIELDS = {"thinking_level_map", "headers", "compat", "input_limits", "prompt_cache"}


@dataclass
class ProviderState:
    """One provider as the layers made it: its settings and its models' entries (the
    ``models.json`` fields, snake_case; a ``Model`` is built from one when needed)."""

    name: str
    source: str
    display_name: str | None = None
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth_header: bool = False
    compat: dict[str, Any] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    stream: StreamFunction | None = None
    needs_auth: bool = True
    catalogue: str | None = None
    """The catalogue provider whose data backs the placeholders in ``stubs``."""
    stubs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The catalogue's shared ``{"id", "name"}`` placeholders: an entry of ``models``
    that IS one of them is read from the catalogue when first needed."""
    routed: bool = False
    """``baseUrl`` set by a plugin or ``models.json``: it replaces the catalogue's own."""
    refresh_models: Any = None
    """A plugin's ``refresh_models`` function: the provider's catalogue is dynamic."""
    typed: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """Classifier and image models by ``(type, id)``, entries like ``models`` (with
    ``type``): a plugin's or ``models.json``'s. The same id may be a chat model too."""
    typed_catalogue: str | None = None
    """The catalogue provider whose classifier and image models the provider offers
    under ``typed`` (read when one is first asked for)."""


_CAMEL = {
    "baseUrl": "base_url",
    "contextWindow": "context_window",
    "maxTokens": "max_tokens",
    "thinkingLevelMap": "thinking_level_map",
    "inputLimits": "input_limits",
    "promptCache": "prompt_cache",
    "samplingParams": "sampling_params",
    "samplingParamsByThinkingLevel": "sampling_params_by_thinking_level",
}
_CAMEL_COST = {"cacheRead": "cache_read", "cacheWrite": "cache_write", "inputTokensAbove": "input_tokens_above"}


def _normalise(data: dict[str, Any]) -> dict[str, Any]:
    """A catalogue model (``models.json`` shape, camelCase) with the field names of the
    registry's entries (a new dict; the catalogue's data is checked by its tests, not
    validated at every run)."""
    entry = {_CAMEL.get(k, k): v for k, v in data.items() if k != "type"}
    cost = entry.get("cost")
    if isinstance(cost, dict):
        cost = {_CAMEL_COST.get(k, k): v for k, v in cost.items()}
        if isinstance(cost.get("tiers"), list):
            cost["tiers"] = [{_CAMEL_COST.get(k, k): v for k, v in tier.items()} for tier in cost["tiers"]]
        entry["cost"] = cost
    return entry


def use_catalogue(provider: ProviderState, catalogue: str) -> None:
    """Give ``provider`` the models of catalogue provider ``catalogue``: placeholders
    read from the catalogue when first needed (its own models keep theirs)."""
    provider.catalogue = catalogue
    provider.typed_catalogue = catalogue
    provider.stubs = catalog.stubs(catalogue)
    provider.models = {**provider.stubs, **provider.models}


def _route(provider: ProviderState, base_url: str) -> None:
    """Send every model the provider has so far to ``base_url`` (pi 1.6.0: a provider's
    ``baseUrl`` in ``models.json`` replaces its models' own)."""
    provider.base_url = base_url
    provider.routed = True
    for model_id, entry in list(provider.models.items()):
        if "base_url" in entry and provider.stubs.get(model_id) is not entry:
            provider.models[model_id] = {k: v for k, v in entry.items() if k != "base_url"}
    for key, entry in list(provider.typed.items()):
        provider.typed[key] = {k: v for k, v in entry.items() if k != "base_url"}


def config_fields(config: Any, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """``config.model_dump(exclude_none=True, exclude=exclude)`` of a ``models.json``
    model (:mod:`pi_core.ai.config`: plain fields, no serializers), read from the values
    its validation made, so a run does not build the serializer of each config model.
    Containers are copied; ``None`` inside a dict or list is kept, as pydantic keeps it."""
    skip = set(exclude)
    return {name: _plain(value) for name, value in config.__dict__.items() if value is not None and name not in skip}


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return config_fields(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _merge_override(entry: dict[str, Any], override: ModelOverride) -> dict[str, Any]:
    merged = dict(entry)
    for key, value in config_fields(override).items():
        if key == "cost":
            merged["cost"] = {**(merged.get("cost") or {}), **value}
        elif key in _MERGED_FIELDS and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        elif key == "sampling_params_by_thinking_level" and isinstance(merged.get(key), dict):
            levels = dict(merged[key])
            for level, params in value.items():
                levels[level] = {**levels.get(level, {}), **params}
            merged[key] = levels
        else:
            merged[key] = value
    return merged


def plugin_provider(definition: ProviderDefinition | dict[str, Any], source: str) -> ProviderState:
    """The provider a plugin registered (a ``ProviderDefinition`` or its dict)."""
    if isinstance(definition, dict):
        definition = ProviderDefinition.model_validate(definition)
    provider = ProviderState(
        name=definition.name,
        source=source,
        display_name=definition.display_name,
        base_url=definition.base_url,
        api=definition.api,
        api_key=definition.api_key,
        headers=dict(definition.headers or {}),
        auth_header=definition.auth_header,
        compat=dict(definition.compat or {}),
        stream=definition.stream,
        needs_auth=definition.stream is None,
        refresh_models=definition.refresh_models,
    )
    for model in definition.models:
        entry = model.model_dump(exclude_none=True, exclude={"provider"})
        if "base_url" in entry and entry["base_url"] == definition.base_url:
            entry.pop("base_url")
        if model.model_type != "chat":
            provider.typed[(model.model_type, model.id)] = entry
            continue
        entry.pop("type", None)
        provider.models[model.id] = entry
    if definition.catalogue:
        if definition.catalogue not in catalog.provider_ids():
            raise ValueError(f"catalogue {definition.catalogue!r} is not a provider of pi's model catalogue")
        use_catalogue(provider, definition.catalogue)
    return provider


def apply_plugin(providers: dict[str, ProviderState], plugin: ProviderState) -> None:
    """Layer a plugin's provider over ``providers`` (a new one, or changes to one)."""
    existing = providers.get(plugin.name)
    if existing is None:
        providers[plugin.name] = ProviderState(
            **{**plugin.__dict__, "models": dict(plugin.models), "typed": dict(plugin.typed)}
        )
        return
    existing.source = plugin.source
    if plugin.catalogue:
        existing.catalogue, existing.stubs = plugin.catalogue, plugin.stubs
        existing.typed_catalogue = plugin.typed_catalogue
    if plugin.base_url is not None and not plugin.models and not plugin.typed:
        _route(existing, plugin.base_url)
    for attribute in ("display_name", "base_url", "api", "api_key", "stream", "refresh_models"):
        value = getattr(plugin, attribute)
        if value is not None:
            setattr(existing, attribute, value)
    existing.headers.update(plugin.headers)
    existing.compat.update(plugin.compat)
    existing.auth_header = existing.auth_header or plugin.auth_header
    existing.needs_auth = existing.needs_auth and plugin.needs_auth
    if plugin.models or plugin.typed:  # a model list replaces the provider's, of every type (pi 1.6.0)
        existing.models = dict(plugin.models)
        existing.typed = dict(plugin.typed)
        existing.typed_catalogue = plugin.typed_catalogue


def apply_models_file(providers: dict[str, ProviderState], file: ModelsFile, path: Path) -> list[str]:
    """Apply the file's providers; a new provider without ``baseUrl`` / ``api`` is
    skipped (one message each), the others still apply."""
    problems: list[str] = []
    for name, config in file.providers.items():
        provider = providers.get(name)
        if provider is None:
            missing_api = not config.api and any(not m.api for m in config.models or [])
            if not config.base_url or missing_api or (not config.api and not config.models):
                problems.append(
                    f'{path}: providers.{name}: a new provider needs "baseUrl" and "api" '
                    "(on the provider or on each of its models); provider skipped"
                )
                continue
            provider = providers[name] = ProviderState(name=name, source="models.json")
        if config.base_url is not None:
            _route(provider, config.base_url)
        for attribute, value in (
            ("display_name", config.name),
            ("base_url", config.base_url),
            ("api", config.api),
            ("api_key", config.api_key),
        ):
            if value is not None:
                setattr(provider, attribute, value)
        provider.headers.update(config.headers or {})
        provider.compat.update(config.compat or {})
        if config.auth_header is not None:
            provider.auth_header = config.auth_header
        for model in config.models or []:
            if model.type in ("classifier", "image"):
                provider.typed[(model.type, model.id)] = config_fields(model)
            else:
                provider.models[model.id] = config_fields(model, exclude={"type"})
        for model_id, override in (config.model_overrides or {}).items():
            entry = model_entry(provider, model_id)
            if entry is not None:
                provider.models[model_id] = _merge_override(entry, override)
    return problems


def model_entry(provider: ProviderState, model_id: str) -> dict[str, Any] | None:
    """The provider's entry of ``model_id``, read from the catalogue on first use."""
    entry = provider.models.get(model_id)
    if entry is not None and provider.catalogue and provider.stubs.get(model_id) is entry:
        data = catalog.model_entry(provider.catalogue, model_id)
        if data is not None:
            entry = _normalise(data)
            if provider.routed:
                entry.pop("base_url", None)
            provider.models[model_id] = entry
    return entry


def typed_entries(provider: ProviderState) -> dict[tuple[str, str], dict[str, Any]]:
    """The provider's classifier and image models by ``(type, id)``: the catalogue's
    (read now; without their own ``baseUrl`` when the provider was routed elsewhere),
    then its own."""
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    if provider.typed_catalogue:
        for data in catalog.typed_models(provider.typed_catalogue):
            entry = _normalise(data)
            entry["type"] = data["type"]
            if provider.routed:
                entry.pop("base_url", None)
            entries[(data["type"], data["id"])] = entry
    entries.update(provider.typed)
    return entries


__all__ = [
    "ProviderState",
    "apply_models_file",
    "apply_plugin",
    "config_fields",
    "model_entry",
    "plugin_provider",
    "typed_entries",
    "use_catalogue",
]
