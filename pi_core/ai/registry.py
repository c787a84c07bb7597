"""The model registry: built-in models, plugin providers and ``models.json``.

Layers, later ones winning: the built-in catalogue (plus the offline ``faux``
provider), providers registered by plugins (``register_providers``), then
``<agent dir>/models.json``. Credentials, first found wins: the request's own
``api_key`` (``--api-key``), ``auth.json``, the provider's ``apiKey``, then the
provider's environment variables.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_core._paths import agent_dir
from pi_hookspecs import (
    THINKING_LEVELS,
    ApiDefinition,
    ApiStreamFunction,
    AssistantMessage,
    CredentialRequest,
    CredentialSource,
    LlmContext,
    Model,
    ProviderDefinition,
    RequestCredentials,
    StreamFunction,
    StreamOptions,
)

from . import builtin
from .apis import known_apis, resolve_target
from .auth import AuthStore, CommandError, env_api_key, env_bearer_token, resolve_config_value
from .catalog import DEFAULT_MODELS
from .config import ModelConfig, ModelOverride, ModelsConfigError, ModelsFile, load_models_json
from .dispatch import provider_label, run_api, run_stream_function
from .faux import offline_demo_model
from .stream import AssistantMessageStream, MessageBuilder, maybe_await

_DATED = re.compile(r"-\d{8}$")
_MODEL_FIELDS = {
    "name", "reasoning", "thinking_level_map", "input", "context_window", "max_tokens", "headers", "compat",
}
_MERGED_FIELDS = {"thinking_level_map", "headers", "compat", "input_limits", "prompt_cache"}


class ModelResolutionError(ValueError):
    """A model pattern that selects no model (or several); the message says what to do."""


@dataclass
class ModelSelection:
    """A resolved ``--model`` pattern: the model, the ``:thinking`` suffix if any, and
    a warning to show (e.g. a custom model id on a known provider)."""

    model: Model
    thinking_level: str | None = None
    warning: str | None = None


@dataclass
class _Provider:
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


def _model_entry(data: dict[str, Any]) -> dict[str, Any]:
    """A models.json / catalogue model (camelCase) as Model field values."""
    entry = ModelConfig.model_validate(data).model_dump(exclude_none=True, exclude={"type"})
    return entry


def _merge_override(entry: dict[str, Any], override: ModelOverride) -> dict[str, Any]:
    merged = dict(entry)
    for key, value in override.model_dump(exclude_none=True).items():
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


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or not _DATED.search(model_id)


class ModelRegistry:
    """All models pi knows, their credentials, and requests to them.

    ``errors`` lists the problems of the files it read (a malformed ``models.json``
    or ``auth.json``): each is one message; the registry works without that file.
    """

    def __init__(
        self,
        *,
        models_path: Path | None = None,
        auth: AuthStore | None = None,
        builtins: bool = True,
        offline_demo: bool = True,
    ) -> None:
        self._models_path = models_path
        self.auth = auth or AuthStore()
        self._builtins = builtins
        self._offline_demo = offline_demo
        self._plugin_providers: list[_Provider] = []
        self._plugin_apis: dict[str, tuple[str, ApiStreamFunction | str]] = {}
        self._credential_sources: dict[str, tuple[str, CredentialSource]] = {}
        self._models_file: ModelsFile | None = None
        self.models_error: str | None = None
        self._providers: dict[str, _Provider] = {}
        self._models: list[Model] = []
        self.reload()

    # ------------------------------------------------------------------ loading

    @property
    def models_path(self) -> Path:
        return self._models_path or agent_dir() / "models.json"

    @property
    def errors(self) -> list[str]:
        return [e for e in (self.models_error, self.auth.error) if e]

    def reload(self) -> None:
        """Re-read ``models.json`` and rebuild the model list."""
        try:
            self._models_file = load_models_json(self.models_path)
            self.models_error = None
        except ModelsConfigError as error:
            self._models_file = None
            self.models_error = str(error)
        self._rebuild()

    def add_provider(self, definition: ProviderDefinition | dict[str, Any], source: str = "plugin") -> None:
        """Add a provider registered through ``register_providers``.

        For a provider that already exists, the fields given override its own
        (``base_url`` and ``headers`` keep its models); ``models`` replace its model
        list. A ``stream`` function serves the provider's models instead of the API
        table. ``models.json`` still applies on top.
        """
        if isinstance(definition, dict):
            definition = ProviderDefinition.model_validate(definition)
        provider = _Provider(
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
        )
        for model in definition.models:
            entry = model.model_dump(exclude_none=True, exclude={"provider"})
            if "base_url" in entry and entry["base_url"] == definition.base_url:
                entry.pop("base_url")
            provider.models[model.id] = entry
        self._plugin_providers = [p for p in self._plugin_providers if not (p.name == provider.name and p.source == source)]
        self._plugin_providers.append(provider)
        self._rebuild()

    def add_api(self, definition: ApiDefinition, source: str = "plugin") -> None:
        """Add a wire API registered through ``register_providers``: requests of models
        whose ``api`` is its name go to its ``stream`` (before pi's own table)."""
        self._plugin_apis[definition.name] = (source, definition.stream)

    def add_credential_source(self, definition: CredentialSource, source: str = "plugin") -> None:
        """Add a :class:`~pi_hookspecs.CredentialSource` registered through
        ``register_providers``: it lends the requests of its provider's models their
        credentials (see :meth:`stream`)."""
        self._credential_sources[definition.provider] = (source, definition)

    def api_names(self) -> list[str]:
        """Every API a request can use: pi's own and the plugins'."""
        return sorted({*known_apis(), *self._plugin_apis})

    def remove_providers(self, source: str) -> None:
        """Forget the providers and APIs ``source`` registered (on plugin reload)."""
        self._plugin_providers = [p for p in self._plugin_providers if p.source != source]
        self._plugin_apis = {name: entry for name, entry in self._plugin_apis.items() if entry[0] != source}
        self._credential_sources = {
            name: entry for name, entry in self._credential_sources.items() if entry[0] != source
        }
        self._rebuild()

    def _rebuild(self) -> None:
        providers: dict[str, _Provider] = {}
        if self._builtins:
            for data in builtin.registrations()[1]:
                name = data["name"]
                provider = _Provider(
                    name=name, source="builtin", display_name=data.get("displayName"), base_url=data.get("baseUrl"),
                    api=data.get("api"),
                )
                for model in data.get("models", ()):
                    provider.models[model["id"]] = _model_entry(model)
                providers[name] = provider
        if self._offline_demo:
            demo = offline_demo_model()
            providers["faux"] = _Provider(
                name="faux", source="builtin", display_name="Offline", api="faux", needs_auth=False,
                models={demo.id: demo.model_dump(exclude_none=True, exclude={"provider"})},
            )
        for plugin in self._plugin_providers:
            self._apply_plugin(providers, plugin)
        if self._models_file is not None:
            problem = self._apply_models_file(providers, self._models_file)
            if problem:
                self.models_error = problem
                self._providers = {}
                self._models_file = None
                self._rebuild()
                return
        self._providers = providers
        self._models = [self._materialise(p, entry) for p in providers.values() for entry in p.models.values()]

    def _apply_plugin(self, providers: dict[str, _Provider], plugin: _Provider) -> None:
        existing = providers.get(plugin.name)
        if existing is None:
            providers[plugin.name] = _Provider(**{**plugin.__dict__, "models": dict(plugin.models)})
            return
        existing.source = plugin.source
        for attribute in ("display_name", "base_url", "api", "api_key", "stream"):
            value = getattr(plugin, attribute)
            if value is not None:
                setattr(existing, attribute, value)
        existing.headers.update(plugin.headers)
        existing.compat.update(plugin.compat)
        existing.auth_header = existing.auth_header or plugin.auth_header
        existing.needs_auth = existing.needs_auth and plugin.needs_auth
        if plugin.models:
            existing.models = dict(plugin.models)

    def _apply_models_file(self, providers: dict[str, _Provider], file: ModelsFile) -> str | None:
        path = self.models_path
        for name, config in file.providers.items():
            provider = providers.get(name)
            if provider is None:
                missing_api = not config.api and any(not m.api for m in config.models or [])
                if not config.base_url or missing_api or (not config.api and not config.models):
                    return (
                        f"{path}: providers.{name}: a new provider needs \"baseUrl\" and \"api\" "
                        "(on the provider or on each of its models)"
                    )
                provider = providers[name] = _Provider(name=name, source="models.json")
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
                provider.models[model.id] = model.model_dump(exclude_none=True, exclude={"type"})
            for model_id, override in (config.model_overrides or {}).items():
                if model_id in provider.models:
                    provider.models[model_id] = _merge_override(provider.models[model_id], override)
        return None

    def _materialise(self, provider: _Provider, entry: dict[str, Any]) -> Model:
        data = dict(entry)
        data["provider"] = provider.name
        data.setdefault("name", data["id"])
        data["api"] = data.get("api") or provider.api or ""
        data["base_url"] = data.get("base_url") or provider.base_url
        headers = {**provider.headers, **(data.get("headers") or {})}
        data["headers"] = headers or None
        compat = {**provider.compat, **(data.get("compat") or {})}
        data["compat"] = compat or None
        return Model.model_validate(data)

    # ------------------------------------------------------------------ queries

    def models(self) -> list[Model]:
        """Every model, in provider order."""
        return list(self._models)

    def providers(self) -> list[str]:
        return list(self._providers)

    def provider_name(self, provider: str) -> str:
        state = self._providers.get(provider)
        return (state.display_name if state else None) or provider

    def get(self, provider: str, model_id: str) -> Model | None:
        for model in self._models:
            if model.provider == provider and model.id == model_id:
                return model
        return None

    def has_auth(self, provider: str) -> bool:
        """Whether a credential is configured for ``provider`` (without running
        ``!command`` values: configured is enough)."""
        state = self._providers.get(provider)
        if state is not None and not state.needs_auth:
            return True
        if self.auth.has(provider) or (state is not None and state.api_key):
            return True
        if state is not None and any(k.lower() in ("authorization", "x-api-key") for k in state.headers):
            return True
        lender = self._credential_sources.get(provider)
        if lender is not None:
            available = lender[1].available
            if available is None or available(self.auth.env(provider)):
                return True
        return bool(env_api_key(provider, self.auth.env(provider)) or env_bearer_token(provider))

    def available(self) -> list[Model]:
        """The models whose provider has a credential."""
        return [m for m in self._models if self.has_auth(m.provider)]

    def api_key(self, provider: str) -> str | None:
        """The provider's key: ``auth.json``, then its ``apiKey``, then its environment
        variables. Runs ``!command`` values; raises :class:`CommandError` when the
        provider's ``apiKey`` command fails."""
        key = self.auth.api_key(provider)
        if key:
            return key
        state = self._providers.get(provider)
        env = self.auth.env(provider)
        if state is not None and state.api_key:
            key = resolve_config_value(state.api_key, env)
            if key:
                return key
        return env_api_key(provider, env)

    def default_model(self) -> Model | None:
        """The default model of the first provider with a credential (the offline demo
        model when there is none)."""
        available = self.available()
        for provider, model_id in DEFAULT_MODELS.items():
            for model in available:
                if model.provider == provider and model.id == model_id and provider != "faux":
                    return model
        real = [m for m in available if m.api != "faux"]
        if real:
            return real[0]
        return available[0] if available else None

    # ------------------------------------------------------------------ selection

    def resolve(self, pattern: str, *, provider: str | None = None, thinking: str | None = None) -> ModelSelection:
        """The model ``--model pattern`` (and ``--provider``) selects.

        Accepts ``provider/id``, a bare id, a fuzzy part of an id or name, with an
        optional ``:<thinking>`` suffix. A bare id offered by several providers picks
        the one with a credential. An unknown id on a known provider gives a custom
        model of that provider (with a warning). Raises :class:`ModelResolutionError`.
        """
        models = self._models
        if not models:
            raise ModelResolutionError("No models available. Check your installation or add models to models.json.")
        canonical = {m.provider.lower(): m.provider for m in models}
        chosen = canonical.get(provider.lower()) if provider else None
        if provider and chosen is None:
            raise ModelResolutionError(
                f'Unknown provider "{provider}". Use --list-models to see available providers/models.'
            )
        text = pattern.strip()
        inferred = False
        if chosen is None and "/" in text:
            prefix, rest = text.split("/", 1)
            if prefix.lower() in canonical:
                chosen, text, inferred = canonical[prefix.lower()], rest, True
        if chosen is None:
            lower = text.lower()
            exact = [m for m in models if m.id.lower() == lower or m.ref.lower() == lower]
            if len(exact) == 1:
                return ModelSelection(exact[0])
            if len(exact) > 1:
                usable = [m for m in exact if self.has_auth(m.provider)]
                if len(usable) == 1:
                    return ModelSelection(usable[0])
                refs = ", ".join(sorted(m.ref for m in exact))
                hint = (
                    "No matching provider is authenticated."
                    if not usable
                    else "More than one matching provider is authenticated."
                )
                raise ModelResolutionError(
                    f'Model "{pattern}" is ambiguous across providers: {refs}. {hint} Use --provider or provider/model.'
                )
        elif provider and text.lower().startswith(f"{chosen.lower()}/"):
            text = text[len(chosen) + 1 :]
        candidates = [m for m in models if chosen is None or m.provider == chosen]
        found, level = _parse_pattern(text, candidates)
        if found is not None:
            return ModelSelection(found, level)
        if inferred:
            found, level = _parse_pattern(pattern.strip(), models)
            if found is not None:
                return ModelSelection(found, level)
        if chosen is not None:
            custom_id, level = text, None
            head, sep, tail = text.rpartition(":")
            if sep and tail in THINKING_LEVELS and thinking is None:
                custom_id, level = head, tail
            base = self._provider_base(chosen)
            if base is not None:
                update: dict[str, Any] = {"id": custom_id, "name": custom_id}
                if (thinking or level) not in (None, "off"):
                    update["reasoning"] = True
                return ModelSelection(
                    base.model_copy(update=update),
                    level,
                    f'Model "{custom_id}" not found for provider "{chosen}". Using custom model id.',
                )
        shown = f"{chosen}/{text}" if chosen else pattern
        raise ModelResolutionError(f'Model "{shown}" not found. Use --list-models to see available models.')

    def _provider_base(self, provider: str) -> Model | None:
        own = [m for m in self._models if m.provider == provider]
        default = DEFAULT_MODELS.get(provider)
        for model in own:
            if model.id == default:
                return model
        return own[0] if own else None

    def resolve_scope(self, patterns: Iterable[str]) -> tuple[list[ModelSelection], list[str]]:
        """``--models``: every model a comma list of patterns selects (exact ids, fuzzy
        matches, case-insensitive globs, ``:<thinking>`` suffixes), and warnings for
        patterns that match nothing."""
        selected: list[ModelSelection] = []
        warnings: list[str] = []
        seen: set[str] = set()

        def add(model: Model, level: str | None) -> None:
            if model.ref not in seen:
                seen.add(model.ref)
                selected.append(ModelSelection(model, level))

        for pattern in patterns:
            pattern = pattern.strip()
            if not pattern:
                continue
            if any(c in pattern for c in "*?["):
                glob, level = pattern, None
                head, sep, tail = pattern.rpartition(":")
                if sep and tail in THINKING_LEVELS:
                    glob, level = head, tail
                glob = glob.lower()
                matches = [
                    m for m in self._models
                    if fnmatch.fnmatchcase(m.ref.lower(), glob) or fnmatch.fnmatchcase(m.id.lower(), glob)
                ]
                if not matches:
                    warnings.append(f'No models match pattern "{pattern}"')
                for model in matches:
                    add(model, level)
                continue
            found, level, warning = _parse_pattern_lenient(pattern, self._models)
            if warning:
                warnings.append(warning)
            if found is None:
                warnings.append(f'No models match pattern "{pattern}"')
            else:
                add(found, level)
        return selected, warnings

    # ------------------------------------------------------------------ requests

    def stream(self, model: Model, context: LlmContext, options: StreamOptions | None = None) -> AssistantMessageStream:
        """Stream a request to ``model`` with the provider's credentials and headers
        resolved (commands run off the event loop). A provider's own stream function
        wins over the API table. Never raises for provider errors."""
        options = options or StreamOptions()
        state = self._providers.get(model.provider)

        async def run(out: MessageBuilder) -> None:
            request_model, request_options = await self._prepare(model, options, state)
            if state is not None and state.stream is not None:
                await run_stream_function(state.stream, request_model, context, request_options, out)
            elif request_model.api in self._plugin_apis:
                await self._plugin_api(request_model.api)(request_model, context, request_options, out)
            else:
                await run_api(request_model, context, request_options, out)

        return AssistantMessageStream(model, run, options, label=provider_label(model))

    def _plugin_api(self, name: str) -> ApiStreamFunction:
        source, target = self._plugin_apis[name]
        if isinstance(target, str):
            target = resolve_target(target)
            self._plugin_apis[name] = (source, target)
        return target

    async def complete(self, model: Model, context: LlmContext, options: StreamOptions | None = None) -> AssistantMessage:
        return await self.stream(model, context, options).result()

    async def _prepare(
        self, model: Model, options: StreamOptions, state: _Provider | None
    ) -> tuple[Model, StreamOptions]:
        stored = (self.auth.credential(model.provider) or {}).get("key")
        values = [
            options.api_key or "",
            *(model.headers or {}).values(),
            (state.api_key if state else None) or "",
            stored if isinstance(stored, str) else "",
        ]
        if any(value.startswith("!") for value in values):
            prepared = await asyncio.to_thread(self._prepare_sync, model, options, state)
        else:
            prepared = self._prepare_sync(model, options, state)
        lender = self._credential_sources.get(model.provider)
        return prepared if lender is None else await self._borrow(lender[1], *prepared)

    async def _borrow(
        self, lender: CredentialSource, model: Model, options: StreamOptions
    ) -> tuple[Model, StreamOptions]:
        """Apply what the provider's credential source lends this request."""
        request = CredentialRequest(
            provider=model.provider, model=model, api_key=options.api_key, env=self.auth.env(model.provider)
        )
        lent = await maybe_await(lender.resolve(request))
        if lent is None:
            return model, options
        if not isinstance(lent, RequestCredentials):
            lent = RequestCredentials.model_validate(lent)
        update: dict[str, Any] = {}
        if lent.api_key:
            update["api_key"] = lent.api_key
        if lent.headers:
            update["headers"] = {**options.headers, **lent.headers}
        if lent.extra:
            update["extra"] = {**options.extra, **lent.extra}
        return model, options.model_copy(update=update) if update else options

    def _prepare_sync(self, model: Model, options: StreamOptions, state: _Provider | None) -> tuple[Model, StreamOptions]:
        env = self.auth.env(model.provider)
        headers: dict[str, str] = {}
        for name, value in (model.headers or {}).items():
            try:
                resolved = resolve_config_value(value, env)
            except CommandError as error:
                raise RuntimeError(f"The {name} header command of provider {model.provider} failed: {error}") from None
            if resolved:
                headers[name] = resolved
        update: dict[str, Any] = {}
        extra = dict(options.extra)
        key = options.api_key
        if not key:
            try:
                key = self.api_key(model.provider)
            except CommandError as error:
                raise RuntimeError(f"The apiKey command of provider {model.provider} failed: {error}") from None
            if not key:
                bearer = env_bearer_token(model.provider)
                if bearer:
                    key = bearer
                    extra["auth_header"] = True
        if state is not None and state.auth_header:
            extra["auth_header"] = True
            if key and model.api != "anthropic-messages":
                headers.setdefault("Authorization", f"Bearer {key}")
        if key:
            update["api_key"] = key
        if extra != options.extra:
            update["extra"] = extra
        request_options = options.model_copy(update=update) if update else options
        request_model = model.model_copy(update={"headers": headers or None})
        return request_model, request_options


def _match(pattern: str, models: list[Model]) -> Model | None:
    lower = pattern.lower()
    for candidates in (
        [m for m in models if m.ref.lower() == lower],
        [m for m in models if m.id.lower() == lower],
    ):
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            return None
    partial = [m for m in models if lower in m.id.lower() or lower in (m.name or "").lower()]
    if not partial:
        return None
    aliases = sorted((m for m in partial if _is_alias(m.id)), key=lambda m: m.id, reverse=True)
    if aliases:
        return aliases[0]
    return sorted(partial, key=lambda m: m.id, reverse=True)[0]


def _parse_pattern(pattern: str, models: list[Model]) -> tuple[Model | None, str | None]:
    """Strict parsing (``--model``): the whole pattern, else ``prefix:<thinking>``."""
    found = _match(pattern, models)
    if found is not None:
        return found, None
    head, sep, tail = pattern.rpartition(":")
    if sep and tail in THINKING_LEVELS:
        found, _ = _parse_pattern(head, models)
        return found, (tail if found is not None else None)
    return None, None


def _parse_pattern_lenient(pattern: str, models: list[Model]) -> tuple[Model | None, str | None, str | None]:
    """Scope parsing (``--models``): an invalid ``:<thinking>`` suffix is ignored with a warning."""
    found = _match(pattern, models)
    if found is not None:
        return found, None, None
    head, sep, tail = pattern.rpartition(":")
    if not sep:
        return None, None, None
    found, level, warning = _parse_pattern_lenient(head, models)
    if found is None:
        return None, None, warning
    if tail in THINKING_LEVELS:
        return found, (level if warning else tail), warning
    return found, None, f'Invalid thinking level "{tail}" in pattern "{pattern}". Using default instead.'
