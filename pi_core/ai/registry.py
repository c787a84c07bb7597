"""The model registry: built-in models, plugin providers and ``models.json``.

Layers, later ones winning: the built-in catalogue (plus the offline ``faux``
provider, whose demo model answers only when chosen by name), providers registered
by plugins (``register_providers``), then ``<agent dir>/models.json``. Credentials,
first found wins: the request's own ``api_key`` (``--api-key``), ``auth.json``, the
provider's ``apiKey``, then the provider's environment variables.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from pi_core._paths import agent_dir
from pi_hookspecs import (
    ApiDefinition,
    ApiStreamFunction,
    AssistantMessage,
    CredentialRequest,
    CredentialSource,
    LlmContext,
    LoginCallbacks,
    LoginMethod,
    Model,
    OAuthCredentials,
    ProviderDefinition,
    RequestCredentials,
    StreamFunction,
    StreamOptions,
    TranscriptRules,
)

from .._async import maybe_await
from . import builtin, catalog, selection
from .apis import known_apis, resolve_target
from .auth import (
    AuthFileError,
    AuthStore,
    CommandError,
    LoginRequiredError,
    env_api_key,
    env_bearer_token,
    refresh_margin,
    resolve_config_value,
)
from .catalog import DEFAULT_MODELS
from .config import ModelOverride, ModelsConfigError, ModelsFile, load_models_json_lenient
from .dispatch import provider_label, run_api, run_stream_function
from .faux import register_offline_demo
from .message_stream import AssistantMessageStream, MessageBuilder
from .transform import apply_transcript_rules

REFRESH_TIMEOUT = 30.0
"""Seconds a login method's refresh may take (it runs under the lock of auth.json)."""
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
    catalogue: str | None = None
    """The catalogue provider whose data backs the placeholders in ``stubs``."""
    stubs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The catalogue's shared ``{"id", "name"}`` placeholders: an entry of ``models``
    that IS one of them is read from the catalogue when first needed."""
    routed: bool = False
    """``baseUrl`` set by a plugin or ``models.json``: it replaces the catalogue's own."""


class _Ref(NamedTuple):
    """A model as model selection sees it (no ``Model`` object built)."""

    provider: str
    id: str
    name: str


_CAMEL = {
    "baseUrl": "base_url", "contextWindow": "context_window", "maxTokens": "max_tokens",
    "thinkingLevelMap": "thinking_level_map", "inputLimits": "input_limits", "promptCache": "prompt_cache",
    "samplingParams": "sampling_params", "samplingParamsByThinkingLevel": "sampling_params_by_thinking_level",
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


def _use_catalogue(provider: _Provider, catalogue: str) -> None:
    """Give ``provider`` the models of catalogue provider ``catalogue``: placeholders
    read from the catalogue when first needed (its own models keep theirs)."""
    provider.catalogue = catalogue
    provider.stubs = catalog.stubs(catalogue)
    provider.models = {**provider.stubs, **provider.models}


def _route(provider: _Provider, base_url: str) -> None:
    """Send every model the provider has so far to ``base_url`` (pi 1.6.0: a provider's
    ``baseUrl`` in ``models.json`` replaces its models' own)."""
    provider.base_url = base_url
    provider.routed = True
    for model_id, entry in list(provider.models.items()):
        if "base_url" in entry and provider.stubs.get(model_id) is not entry:
            provider.models[model_id] = {k: v for k, v in entry.items() if k != "base_url"}


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
        self._offline_demo = offline_demo
        self._builtin_providers: list[ProviderDefinition] = []
        self._plugin_providers: list[_Provider] = []
        self._plugin_apis: dict[str, tuple[str, ApiStreamFunction | str, TranscriptRules | None]] = {}
        self._credential_sources: dict[str, tuple[str, CredentialSource]] = {}
        self._login_methods: dict[str, tuple[str, LoginMethod]] = {}
        if builtins:  # made on its own: pi's provider plugin, as a plugin host would load it
            own = builtin.registrations()
            self._builtin_providers = list(own.providers)
            self._login_methods = {name: ("builtin", method) for name, method in own.logins.items()}
        self._models_file: ModelsFile | None = None
        self._file_problems: list[str] = []
        self.models_error: str | None = None
        self.models_problems: list[str] = []
        """Broken parts of ``models.json`` left out (one message each); the rest is used."""
        self._providers: dict[str, _Provider] = {}
        self._named_only: set[tuple[str, str]] = set()
        self._built: dict[tuple[str, str], Model] = {}
        self._refs: list[_Ref] | None = None
        self.reload()

    # ------------------------------------------------------------------ loading

    @property
    def models_path(self) -> Path:
        return self._models_path or agent_dir() / "models.json"

    @property
    def errors(self) -> list[str]:
        return [e for e in (self.models_error, *self.models_problems, self.auth.check()) if e]

    def reload(self) -> None:
        """Re-read ``models.json`` and rebuild the model list."""
        try:
            self._models_file, self._file_problems = load_models_json_lenient(self.models_path)
            self.models_error = None
        except ModelsConfigError as error:
            self._models_file, self._file_problems = None, []
            self.models_error = str(error)
        self._rebuild()

    def add_provider(self, definition: ProviderDefinition | dict[str, Any], source: str = "plugin") -> None:
        """Add a provider registered through ``register_providers``.

        For a provider that already exists, the fields given override its own
        (``base_url`` and ``headers`` keep its models); ``models`` replace its model
        list. A ``stream`` function serves the provider's models instead of the API
        table. ``models.json`` still applies on top.
        """
        provider = self._plugin_provider(definition, source)
        self._plugin_providers = [p for p in self._plugin_providers if not (p.name == provider.name and p.source == source)]
        self._plugin_providers.append(provider)
        self._rebuild()

    @staticmethod
    def _plugin_provider(definition: ProviderDefinition | dict[str, Any], source: str) -> _Provider:
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
        if definition.catalogue:
            if definition.catalogue not in catalog.provider_ids():
                raise ValueError(f"catalogue {definition.catalogue!r} is not a provider of pi's model catalogue")
            _use_catalogue(provider, definition.catalogue)
        return provider

    def add_api(self, definition: ApiDefinition, source: str = "plugin") -> None:
        """Add a wire API registered through ``register_providers``: requests of models
        whose ``api`` is its name go to its ``stream`` (before pi's own table)."""
        self._plugin_apis[definition.name] = (source, definition.stream, definition.transcript)

    def add_credential_source(self, definition: CredentialSource, source: str = "plugin") -> None:
        """Add a :class:`~pi_hookspecs.CredentialSource` registered through
        ``register_providers``: it lends the requests of its provider's models their
        credentials (see :meth:`stream`)."""
        self._credential_sources[definition.provider] = (source, definition)

    def add_login_method(self, method: LoginMethod, source: str = "plugin") -> None:
        """Add a :class:`~pi_hookspecs.LoginMethod` registered through
        ``register_providers`` (it replaces pi's own for the same provider)."""
        self._login_methods[method.provider] = (source, method)

    def login_method(self, provider: str) -> LoginMethod | None:
        """How users sign in to ``provider``: a plugin's login method, else pi's own."""
        entry = self._login_methods.get(provider)
        return entry[1] if entry is not None else None

    def login_methods(self) -> dict[str, LoginMethod]:
        """Every login method by provider (pi's own and the plugins')."""
        return {name: entry[1] for name, entry in self._login_methods.items()}

    def api_names(self) -> list[str]:
        """Every API a request can use: pi's own and the plugins'."""
        return sorted({*known_apis(), *self._plugin_apis})

    def use_registrations(self, registered: Iterable[tuple[Any, str]]) -> list[str]:
        """Take what the plugins of a plugin host registered through
        ``register_providers`` — ``(value, source)`` pairs in load order, ``source``
        ``"builtin"`` for pi's own provider plugin — in place of what this registry
        had from plugins, and rebuild once. pi's own providers are the bottom layer;
        a plugin's provider of the same name changes them (see :meth:`add_provider`).
        Returns one message per provider that could not be used."""
        self._builtin_providers, self._plugin_providers = [], []
        self._plugin_apis, self._credential_sources, self._login_methods = {}, {}, {}
        problems: list[str] = []
        for value, source in registered:
            if isinstance(value, ApiDefinition):
                self._plugin_apis[value.name] = (source, value.stream, value.transcript)
            elif isinstance(value, LoginMethod):
                self._login_methods[value.provider] = (source, value)
            elif isinstance(value, CredentialSource):
                self._credential_sources[value.provider] = (source, value)
            elif source == "builtin" and isinstance(value, ProviderDefinition):
                self._builtin_providers.append(value)
            else:
                try:
                    self._plugin_providers.append(self._plugin_provider(value, source))
                except Exception as exc:
                    name = getattr(value, "name", None) or (value.get("name") if isinstance(value, dict) else "?")
                    problems.append(f"provider {name!r}: {exc}")
        self._rebuild()
        return problems

    def remove_providers(self, source: str) -> None:
        """Forget the providers and APIs ``source`` registered (on plugin reload)."""
        self._plugin_providers = [p for p in self._plugin_providers if p.source != source]
        self._plugin_apis = {name: entry for name, entry in self._plugin_apis.items() if entry[0] != source}
        self._credential_sources = {
            name: entry for name, entry in self._credential_sources.items() if entry[0] != source
        }
        self._login_methods = {name: entry for name, entry in self._login_methods.items() if entry[0] != source}
        self._rebuild()

    def _rebuild(self) -> None:
        providers: dict[str, _Provider] = {}
        for definition in self._builtin_providers:
            provider = _Provider(
                name=definition.name, source="builtin", display_name=definition.display_name,
                base_url=definition.base_url, api=definition.api, headers=dict(definition.headers or {}),
            )
            if definition.catalogue:
                _use_catalogue(provider, definition.catalogue)
            for model in definition.models:
                provider.models[model.id] = model.model_dump(exclude_none=True, exclude={"provider"})
            providers[definition.name] = provider
        named_only: set[tuple[str, str]] = set()
        if self._offline_demo:
            demo = register_offline_demo()
            providers["faux"] = _Provider(
                name="faux", source="builtin", display_name="Offline", api="faux", needs_auth=False,
                models={demo["id"]: demo},
            )
            named_only.add(("faux", demo["id"]))
        for plugin in self._plugin_providers:
            self._apply_plugin(providers, plugin)
        self.models_problems = list(self._file_problems)
        if self._models_file is not None:
            self.models_problems += self._apply_models_file(providers, self._models_file)
        self._providers = providers
        self._named_only = {key for key in named_only if key[0] in providers and key[1] in providers[key[0]].models}
        self._built = {}
        self._refs = None

    def _apply_plugin(self, providers: dict[str, _Provider], plugin: _Provider) -> None:
        existing = providers.get(plugin.name)
        if existing is None:
            providers[plugin.name] = _Provider(**{**plugin.__dict__, "models": dict(plugin.models)})
            return
        existing.source = plugin.source
        if plugin.catalogue:
            existing.catalogue, existing.stubs = plugin.catalogue, plugin.stubs
        if plugin.base_url is not None and not plugin.models:
            _route(existing, plugin.base_url)
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

    def _apply_models_file(self, providers: dict[str, _Provider], file: ModelsFile) -> list[str]:
        """Apply the file's providers; a new provider without ``baseUrl`` / ``api`` is
        skipped (one message each), the others still apply."""
        path = self.models_path
        problems: list[str] = []
        for name, config in file.providers.items():
            provider = providers.get(name)
            if provider is None:
                missing_api = not config.api and any(not m.api for m in config.models or [])
                if not config.base_url or missing_api or (not config.api and not config.models):
                    problems.append(
                        f"{path}: providers.{name}: a new provider needs \"baseUrl\" and \"api\" "
                        "(on the provider or on each of its models); provider skipped"
                    )
                    continue
                provider = providers[name] = _Provider(name=name, source="models.json")
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
                provider.models[model.id] = config_fields(model, exclude={"type"})
            for model_id, override in (config.model_overrides or {}).items():
                entry = self._entry(provider, model_id)
                if entry is not None:
                    provider.models[model_id] = _merge_override(entry, override)
        return problems

    def _entry(self, provider: _Provider, model_id: str) -> dict[str, Any] | None:
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

    def _model(self, provider: _Provider, model_id: str) -> Model | None:
        """The ``Model`` of one of the provider's entries, built on first use."""
        key = (provider.name, model_id)
        model = self._built.get(key)
        if model is None:
            entry = self._entry(provider, model_id)
            if entry is None:
                return None
            model = self._built[key] = self._materialise(provider, entry)
        return model

    def _provider_models(self, provider: _Provider, skip: Set[tuple[str, str]] = frozenset()) -> list[Model]:
        ids = [model_id for model_id in list(provider.models) if (provider.name, model_id) not in skip]
        return [m for m in (self._model(provider, model_id) for model_id in ids) if m is not None]

    def _model_of(self, ref: _Ref) -> Model:
        model = self._model(self._providers[ref.provider], ref.id)
        assert model is not None
        return model

    def _references(self) -> list[_Ref]:
        """Every model as ``(provider, id, name)``, without building ``Model`` objects."""
        if self._refs is None:
            self._refs = [
                _Ref(p.name, model_id, entry.get("name") or model_id)
                for p in self._providers.values()
                for model_id, entry in p.models.items()
            ]
        return self._refs

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
        # Model.model_validate, by a validator whose schema is kept between runs
        from .._schema_cache import model_validator

        model = model_validator(Model, __file__, "model").validate_python(data)
        assert isinstance(model, Model)
        return model

    # ------------------------------------------------------------------ queries

    def models(self) -> list[Model]:
        """Every model, in provider order (builds every model: prefer :meth:`get`,
        :meth:`available` or :meth:`resolve`)."""
        return [m for p in self._providers.values() for m in self._provider_models(p)]

    def model_refs(self) -> list[tuple[str, str, str]]:
        """``(provider, id, name)`` of every model, in provider order (cheap)."""
        return list(self._references())

    def providers(self) -> list[str]:
        return list(self._providers)

    def provider_name(self, provider: str) -> str:
        state = self._providers.get(provider)
        return (state.display_name if state else None) or provider

    def get(self, provider: str, model_id: str) -> Model | None:
        state = self._providers.get(provider)
        return self._model(state, model_id) if state is not None else None

    def has_auth(self, provider: str) -> bool:
        """Whether a credential is configured for ``provider`` (without running
        ``!command`` values: configured is enough)."""
        state = self._providers.get(provider)
        if state is not None and not state.needs_auth:
            return True
        if self.auth.has_oauth(provider) and self.login_method(provider) is not None:
            return True  # a stored login (without its login method, the other sources count)
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

    def named_only(self, model: Model) -> bool:
        """Whether ``model`` answers only when chosen by name (``--model``, the settings'
        ``defaultModel``, a resumed session): pi's offline demo, ``faux/offline-demo``.
        :meth:`available` and :meth:`default_model` leave such a model out, so a run
        without credentials fails instead of answering with the demo."""
        return (model.provider, model.id) in self._named_only

    def available(self, current: Model | None = None) -> list[Model]:
        """The models whose provider has a credential (for a login whose method narrows
        the provider's models, the ones the account may use): what model lists, pickers
        and cycles offer. A :meth:`named_only` model is left out unless it is
        ``current`` (the session's model), so a session on the demo still lists it."""
        skip = self._named_only - {(current.provider, current.id)} if current is not None else self._named_only
        usable = [m for p in self._providers.values() if self.has_auth(p.name) for m in self._provider_models(p, skip)]
        narrowed: dict[str, set[str]] = {}
        for provider in {m.provider for m in usable}:
            method = self.login_method(provider) if self.auth.has_oauth(provider) else None
            credentials = self.auth.oauth(provider) if method is not None and method.models else None
            if method is not None and method.models is not None and credentials is not None:
                own = [m for m in usable if m.provider == provider]
                try:
                    narrowed[provider] = {m.id for m in method.models(credentials, own)}
                except Exception:
                    continue
        return [m for m in usable if m.provider not in narrowed or m.id in narrowed[m.provider]]

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
        """The default model of the first provider with a credential, as pi 1.6.0 picks
        it: the providers in the order of its default models, then the first model with
        a credential; ``None`` when no provider has one (the offline demo, a
        :meth:`named_only` model, is never the default). Builds only the model it
        returns (unless a login narrows a provider's models)."""
        usable = [state for state in self._providers.values() if self.has_auth(state.name)]
        narrowing = any(self.auth.has_oauth(s.name) and self.login_method(s.name) is not None for s in usable)
        if narrowing:
            available = self.available()  # a login may narrow its provider's models
            for provider, model_id in DEFAULT_MODELS.items():
                found = [m for m in available if m.provider == provider and m.id == model_id]
                if found:
                    return found[0]
            real = [m for m in available if m.api != "faux"]
            return real[0] if real else (available[0] if available else None)
        by_name = {state.name: state for state in usable}
        for provider, model_id in DEFAULT_MODELS.items():
            state = by_name.get(provider)
            if state is not None and model_id in state.models and (provider, model_id) not in self._named_only:
                return self._model(state, model_id)
        fallback: tuple[_Provider, str] | None = None
        for state in usable:
            for model_id, entry in list(state.models.items()):
                if (state.name, model_id) in self._named_only:
                    continue
                if (entry.get("api") or state.api) == "faux":
                    fallback = fallback or (state, model_id)
                    continue
                model = self._model(state, model_id)
                if model is not None:
                    return model
        return self._model(*fallback) if fallback else None

    # ------------------------------------------------------------------ selection

    def resolve(
        self, pattern: str, *, provider: str | None = None, thinking: str | None = None, inline_api_key: bool = False
    ) -> ModelSelection:
        """The model ``--model pattern`` (and ``--provider``) selects, by pi 1.6.0's rules
        (:mod:`pi_core.ai.selection`): ``provider/id``, a bare id, a part of an id or
        name, with an optional ``:<thinking>`` suffix. Among several providers, the ones
        with a credential are preferred (none is with ``inline_api_key``: ``--api-key``
        does not choose a provider). An unknown id on a known provider gives a custom
        model of that provider, with a warning. Raises :class:`ModelResolutionError`.
        """
        refs = self._references()
        if not refs:
            raise ModelResolutionError("No models available. Check your installation or add models to models.json.")
        chosen: str | None = None
        if provider:
            chosen = next((r.provider for r in refs if r.provider.lower() == provider.lower()), None)
            if chosen is None:
                raise ModelResolutionError(
                    f'Unknown provider "{provider}". Use --list-models to see available providers/models.'
                )
        usable = (lambda _p: False) if inline_api_key else self.has_auth
        result = selection.resolve_reference(pattern, refs, usable, provider=chosen)
        if result.status == "resolved" and result.model is not None:
            return ModelSelection(self._model_of(result.model), result.thinking_level, result.warning)
        if result.status == "ambiguous":
            matches = ", ".join(selection.sort_refs(f"{m.provider}/{m.id}" for m in result.candidates))
            if inline_api_key:
                hint = "--api-key does not choose a provider."
            elif result.usable_count == 0:
                hint = "No matching provider is authenticated."
            else:
                hint = "More than one matching provider is authenticated."
            raise ModelResolutionError(
                f'Model "{pattern}" is ambiguous across providers: {matches}. {hint} Use --provider or provider/model.'
            )
        target = result.target
        if target is None:
            raise ModelResolutionError(f'Model "{pattern}" not found. Use --list-models to see available models.')
        model_id = target.model_text if thinking else target.model_id
        level = None if thinking else target.thinking_level
        default = DEFAULT_MODELS.get(target.provider)
        base = next((r for r in target.provider_models if r.id == default), target.provider_models[0])
        update: dict[str, Any] = {"id": model_id, "name": model_id}
        if (thinking or level) not in (None, "off"):
            update["reasoning"] = True
        return ModelSelection(
            self._model_of(base).model_copy(update=update),
            level,
            f'Model "{model_id}" not found for provider "{target.provider}". Using custom model id.',
        )

    def resolve_scope(self, patterns: Iterable[str]) -> tuple[list[ModelSelection], list[str]]:
        """``--models``: every model a comma list of patterns selects (exact ids, fuzzy
        matches, case-insensitive globs, ``:<thinking>`` suffixes), and warnings for
        patterns that match nothing or several providers."""
        chosen, warnings = selection.resolve_scope([p.strip() for p in patterns if p.strip()], self._references())
        return [ModelSelection(self._model_of(ref), level) for ref, level in chosen], warnings

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
                function, rules = self._plugin_api(request_model.api)
                prepared = context if rules is None else apply_transcript_rules(request_model, context, rules)
                await function(request_model, prepared, request_options, out)
            else:
                await run_api(request_model, context, request_options, out)

        return AssistantMessageStream(model, run, options, label=provider_label(model))

    def _plugin_api(self, name: str) -> tuple[ApiStreamFunction, TranscriptRules | None]:
        source, target, rules = self._plugin_apis[name]
        if isinstance(target, str):
            target = resolve_target(target)
            self._plugin_apis[name] = (source, target, rules)
        return target, rules

    async def complete(self, model: Model, context: LlmContext, options: StreamOptions | None = None) -> AssistantMessage:
        return await self.stream(model, context, options).result()

    async def oauth_credentials(
        self, provider: str, *, refresh: bool = True, min_validity_ms: int | None = None
    ) -> OAuthCredentials:
        """The stored login of ``provider``, refreshed through its login method when it
        expires within :data:`~pi_hookspecs.REFRESH_MARGIN_MS` (or ``min_validity_ms``).

        The refresh runs under the lock of ``auth.json`` and re-reads the file there: when
        another process refreshed meanwhile its tokens are used, and the new tokens are
        stored before the lock is released (a cancelled caller does not cancel them).
        Raises :class:`LoginRequiredError` (one line naming the provider and
        ``pi auth login <provider>``) when there is no usable login.
        """
        method = self.login_method(provider)
        stored = self.auth.oauth(provider)
        if stored is None:
            raise LoginRequiredError(provider, "has no stored login")
        if method is None:
            raise LoginRequiredError(provider, "has a stored login but no login method (is its plugin installed?)")
        margin = refresh_margin(min_validity_ms)
        if not refresh or not stored.expires_within(margin):
            return stored
        entry = await asyncio.shield(asyncio.ensure_future(self._refresh_locked(provider, method, margin)))
        credentials = OAuthCredentials.model_validate(entry)
        if min_validity_ms is not None and credentials.expires_within(margin):
            raise LoginRequiredError(provider, "login was refreshed but its token still expires too soon")
        return credentials

    async def login(self, provider: str, callbacks: LoginCallbacks) -> OAuthCredentials:
        """Run ``provider``'s login method with ``callbacks`` and store the credentials
        it returns in ``auth.json`` (under the lock). Raises :class:`LoginRequiredError`
        when the provider has no login method; the method's own errors propagate."""
        method = self.login_method(provider)
        if method is None:
            raise LoginRequiredError(provider, "has no account sign-in")
        credentials = await maybe_await(method.login(callbacks))
        if not isinstance(credentials, OAuthCredentials):
            credentials = OAuthCredentials.model_validate(credentials)
        entry = credentials.to_json()

        async def store(_current: dict[str, Any] | None) -> dict[str, Any]:
            return entry

        await self.auth.modify_async(provider, store)
        return credentials

    async def _refresh_locked(self, provider: str, method: LoginMethod, margin: int) -> dict[str, Any]:
        async def update(current: dict[str, Any] | None) -> dict[str, Any] | None:
            if current is None or current.get("type") != "oauth":
                raise LoginRequiredError(provider, "was logged out")
            try:
                credentials = OAuthCredentials.model_validate(current)
            except ValueError:
                raise LoginRequiredError(provider, "has an invalid login in auth.json") from None
            if not credentials.expires_within(margin):
                return None  # another process refreshed it meanwhile
            try:
                refreshed = await asyncio.wait_for(maybe_await(method.refresh(credentials)), REFRESH_TIMEOUT)
                if not isinstance(refreshed, OAuthCredentials):
                    refreshed = OAuthCredentials.model_validate(refreshed)
            except Exception as error:
                detail = str(error) or type(error).__name__
                raise LoginRequiredError(provider, f"login has expired and could not be refreshed ({detail})") from None
            return refreshed.to_json()

        try:
            entry = await self.auth.modify_async(provider, update)
        except AuthFileError as error:
            raise LoginRequiredError(provider, f"login cannot be refreshed: {error}") from None
        if entry is None:
            raise LoginRequiredError(provider, "was logged out")
        return entry

    async def _login_auth(self, model: Model) -> tuple[str, dict[str, str], str | None]:
        """``(key, headers, base URL)`` a request sends with the provider's login."""
        credentials = await self.oauth_credentials(model.provider)
        method = self.login_method(model.provider)
        assert method is not None
        try:
            key = method.api_key(credentials) if method.api_key else credentials.access
            headers = dict(method.headers(credentials, model) or {}) if method.headers else {}
            base_url = method.base_url(credentials, model) if method.base_url else None
        except Exception as error:
            raise LoginRequiredError(model.provider, f"login cannot be used ({error})") from None
        return str(key), {str(k): str(v) for k, v in headers.items()}, base_url

    async def _prepare(
        self, model: Model, options: StreamOptions, state: _Provider | None
    ) -> tuple[Model, StreamOptions]:
        login = None
        if not options.api_key and self.auth.has_oauth(model.provider) and self.login_method(model.provider):
            login = await self._login_auth(model)
        stored = (self.auth.credential(model.provider) or {}).get("key")
        values = [
            options.api_key or "",
            *(model.headers or {}).values(),
            (state.api_key if state else None) or "",
            stored if isinstance(stored, str) else "",
        ]
        if any(value.startswith("!") for value in values):
            prepared = await asyncio.to_thread(self._prepare_sync, model, options, state, login)
        else:
            prepared = self._prepare_sync(model, options, state, login)
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

    def _prepare_sync(
        self,
        model: Model,
        options: StreamOptions,
        state: _Provider | None,
        login: tuple[str, dict[str, str], str | None] | None = None,
    ) -> tuple[Model, StreamOptions]:
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
        model_update: dict[str, Any] = {}
        if login is not None and not key:
            key = login[0]
            headers.update(login[1])
            if login[2]:
                model_update["base_url"] = login[2]
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
        request_model = model.model_copy(update={**model_update, "headers": headers or None})
        return request_model, request_options

