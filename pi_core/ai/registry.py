"""The model registry: built-in models, plugin providers and ``models.json``.

Layers, later ones winning: the built-in catalogue (plus the offline ``faux``
provider, whose demo model answers only when chosen by name), providers registered
by plugins (``register_providers``), then ``<agent dir>/models.json``. Their
credentials (keys, ``auth.json``, logins, credential sources) are
:class:`~pi_core.ai.credentials.Credentials`, which the registry delegates to.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_core._paths import agent_dir
from pi_hookspecs import (
    VIRTUAL_MODEL_API,
    ApiDefinition,
    ApiKeyCredentials,
    ApiStreamFunction,
    AssistantMessage,
    CredentialSource,
    LlmContext,
    LoginCallbacks,
    LoginMethod,
    Model,
    OAuthCredentials,
    ProviderDefinition,
    StreamOptions,
    TranscriptRules,
    VirtualModelDefinition,
    is_virtual_model,
)

if TYPE_CHECKING:  # classifier and image models: their module loads when first used
    from pi_hookspecs import ClassifierContext, ClassifierResult, ImagesContext, ImagesResult

from pi_hookspecs.record import dataclass

from . import builtin, selection
from ._offline_demo import OFFLINE_DEMO
from .apis import known_apis, resolve_target
from .auth import AuthStore
from .catalog import DEFAULT_MODELS
from .catalog import typed_providers as catalog_typed_providers
from .catalogue_snapshots import STORE_FILE, DynamicCatalogues, apply_dynamic, network_disabled, refresh_catalogues
from .config import ModelsConfigError, ModelsFile, load_models_json_lenient
from .credentials import Credentials
from .dispatch import provider_label, run_api, run_stream_function
from .message_stream import AssistantMessageStream, MessageBuilder
from .providers import (
    ProviderState,
    apply_models_file,
    apply_plugin,
    config_fields,
    model_entry,
    plugin_provider,
    typed_entries,
    use_catalogue,
)
from .transform import apply_transcript_rules
from .virtual import apply_virtual, direct_stream, resolve_route


class ModelResolutionError(ValueError):
    """A model pattern that selects no model (or several); the message says what to do."""


@dataclass
class ModelSelection:
    """A resolved ``--model`` pattern: the model, the ``:thinking`` suffix if any, and
    a warning to show (e.g. a custom model id on a known provider)."""

    model: Model
    thinking_level: str | None = None
    warning: str | None = None


class _Ref(NamedTuple):
    """A model as model selection sees it (no ``Model`` object built)."""

    provider: str
    id: str
    name: str


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
        self._offline_demo = offline_demo
        self._builtin_providers: list[ProviderDefinition] = []
        self._plugin_providers: list[ProviderState] = []
        self._plugin_apis: dict[str, tuple[str, ApiStreamFunction | str, TranscriptRules | None]] = {}
        self._virtual: dict[str, tuple[VirtualModelDefinition, str]] = {}
        """Virtual models by ``provider/id``: ``(definition, plugin)``."""
        self.catalogues = DynamicCatalogues(lambda: self.models_path.with_name(STORE_FILE))
        """The dynamic catalogues' refreshed models and ``models-store.json``."""
        self._typed_apis: dict[tuple[str, str], tuple[str, Any]] = {}
        """``("classify" | "generate_images", api name)`` -> ``(source, function or "module:function")``."""
        self._typed_built: dict[tuple[str, str, str], Model] = {}
        logins: dict[str, LoginMethod] = {}
        if builtins:  # made on its own: pi's provider plugin, as a plugin host would load it
            own = builtin.registrations()
            self._builtin_providers = list(own.providers)
            logins = dict(own.logins)
        self.credentials = Credentials(auth or AuthStore(), self._providers_get, logins.items())
        """Keys, ``auth.json``, logins and credential sources of the providers."""
        self._models_file: ModelsFile | None = None
        self._file_problems: list[str] = []
        self.models_error: str | None = None
        self.models_problems: list[str] = []
        """Broken parts of ``models.json`` left out (one message each); the rest is used."""
        self._providers: dict[str, ProviderState] = {}
        self._named_only: set[tuple[str, str]] = set()
        self._built: dict[tuple[str, str], Model] = {}
        self._refs: list[_Ref] | None = None
        self.reload()

    # ------------------------------------------------------------------ loading

    @property
    def auth(self) -> AuthStore:
        """``auth.json``."""
        return self.credentials.auth

    def _providers_get(self, provider: str) -> ProviderState | None:
        return self._providers.get(provider)

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
        provider = plugin_provider(definition, source)
        self._plugin_providers = [
            p for p in self._plugin_providers if not (p.name == provider.name and p.source == source)
        ]
        self._plugin_providers.append(provider)
        self._rebuild()

    def add_api(self, definition: ApiDefinition, source: str = "plugin") -> None:
        """Add a wire API registered through ``register_providers``: requests of models
        whose ``api`` is its name go to its ``stream`` (before pi's own table); its
        ``classify`` / ``generate_images`` serve classifier and image models."""
        self._add_api(definition, source)

    def _add_api(self, definition: ApiDefinition, source: str) -> None:
        if definition.stream is not None:
            self._plugin_apis[definition.name] = (source, definition.stream, definition.transcript)
        for operation in ("classify", "generate_images"):
            function = getattr(definition, operation, None)
            if function is not None:
                self._typed_apis[(operation, definition.name)] = (source, function)

    def add_credential_source(self, definition: CredentialSource, source: str = "plugin") -> None:
        """Add a :class:`~pi_hookspecs.CredentialSource` registered through
        ``register_providers``: it lends the requests of its provider's models their
        credentials (see :meth:`stream`)."""
        self.credentials.add_source(definition, source)

    def add_login_method(self, method: LoginMethod, source: str = "plugin") -> None:
        """Add a :class:`~pi_hookspecs.LoginMethod` registered through
        ``register_providers`` (it replaces pi's own for the same provider)."""
        self.credentials.add_login_method(method, source)

    def login_method(self, provider: str) -> LoginMethod | None:
        """How users sign in to ``provider``: a plugin's login method, else pi's own."""
        return self.credentials.login_method(provider)

    def login_methods(self) -> dict[str, LoginMethod]:
        """Every login method by provider (pi's own and the plugins')."""
        return self.credentials.login_methods()

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
        self._builtin_providers, self._plugin_providers, self._plugin_apis = [], [], {}
        self._typed_apis = {}
        self.credentials.clear()
        problems: list[str] = []
        for value, source in registered:
            if isinstance(value, ApiDefinition):
                self._add_api(value, source)
            elif isinstance(value, LoginMethod):
                self.credentials.add_login_method(value, source)
            elif isinstance(value, CredentialSource):
                self.credentials.add_source(value, source)
            elif source == "builtin" and isinstance(value, ProviderDefinition):
                self._builtin_providers.append(value)
            else:
                try:
                    self._plugin_providers.append(plugin_provider(value, source))
                except Exception as exc:
                    name = getattr(value, "name", None) or (value.get("name") if isinstance(value, dict) else "?")
                    problems.append(f"provider {name!r}: {exc}")
        self._rebuild()
        return problems

    def remove_providers(self, source: str) -> None:
        """Forget the providers and APIs ``source`` registered (on plugin reload)."""
        self._plugin_providers = [p for p in self._plugin_providers if p.source != source]
        self._plugin_apis = {name: entry for name, entry in self._plugin_apis.items() if entry[0] != source}
        self._typed_apis = {key: entry for key, entry in self._typed_apis.items() if entry[0] != source}
        self.credentials.remove(source)
        self._rebuild()

    def _rebuild(self) -> None:
        providers: dict[str, ProviderState] = {}
        for definition in self._builtin_providers:
            provider = ProviderState(
                name=definition.name,
                source="builtin",
                display_name=definition.display_name,
                base_url=definition.base_url,
                api=definition.api,
                headers=dict(definition.headers or {}),
            )
            if definition.catalogue:
                use_catalogue(provider, definition.catalogue)
            elif definition.name in catalog_typed_providers():
                provider.typed_catalogue = definition.name  # only classifier or image models (TypeSafe)
            for model in definition.models:
                provider.models[model.id] = model.model_dump(exclude_none=True, exclude={"provider"})
            providers[definition.name] = provider
        named_only: set[tuple[str, str]] = set()
        if self._offline_demo:
            demo = copy.deepcopy(OFFLINE_DEMO)  # its script is registered when it first answers
            providers["faux"] = ProviderState(
                name="faux",
                source="builtin",
                display_name="Offline",
                api="faux",
                needs_auth=False,
                models={demo["id"]: demo},
            )
            named_only.add(("faux", demo["id"]))
        for plugin in self._plugin_providers:
            apply_plugin(providers, plugin)
        apply_dynamic(providers, self.catalogues.models)
        self.models_problems = list(self._file_problems)
        if self._models_file is not None:
            self.models_problems += apply_models_file(providers, self._models_file, self.models_path)
        apply_virtual(providers, self._virtual)
        self._providers = providers
        self._named_only = {key for key in named_only if key[0] in providers and key[1] in providers[key[0]].models}
        self._built = {}
        self._typed_built = {}
        self._refs = None

    def _model(self, provider: ProviderState, model_id: str) -> Model | None:
        """The ``Model`` of one of the provider's entries, built on first use."""
        key = (provider.name, model_id)
        model = self._built.get(key)
        if model is None:
            entry = model_entry(provider, model_id)
            if entry is None:
                return None
            model = self._built[key] = self._materialise(provider, entry)
        return model

    def _provider_models(self, provider: ProviderState, skip: Set[tuple[str, str]] = frozenset()) -> list[Model]:
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

    def _materialise(self, provider: ProviderState, entry: dict[str, Any]) -> Model:
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
        return self.credentials.has_auth(provider)

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
        variables. Runs ``!command`` values; raises :class:`~pi_core.ai.auth.CommandError`
        when the provider's ``apiKey`` command fails."""
        return self.credentials.api_key(provider)

    def default_model(self) -> Model | None:
        """The default model of the first provider with a credential, as pi 1.6.0 picks
        it: the providers in the order of its default models, then the first model with
        a credential; ``None`` when no provider has one (the offline demo, a
        :meth:`named_only` model, is never the default). Builds only the model it
        returns (unless a login narrows a provider's models)."""
        usable = [state for state in self._providers.values() if self.has_auth(state.name)]
        narrowing = any(self.credentials.logged_in(s.name) for s in usable)
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
        fallback: tuple[ProviderState, str] | None = None
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

    # ------------------------------------------------------------------ classifier and image models

    def models_of_type(self, model_type: str, provider: str | None = None) -> list[Model]:
        """Every model of ``model_type`` (``chat``, ``classifier``, ``image``), optionally
        of one provider. Classifier and image models are never among :meth:`models`."""
        if model_type == "chat":
            return [m for m in self.models() if provider is None or m.provider == provider]
        states = [self._providers[provider]] if provider in self._providers else []
        if provider is None:
            states = list(self._providers.values())
        out: list[Model] = []
        for state in states:
            for (kind, model_id), entry in typed_entries(state).items():
                if kind == model_type:
                    out.append(self._typed_model(state, kind, model_id, entry))
        return out

    def available_of_type(self, model_type: str, provider: str | None = None) -> list[Model]:
        """The models of ``model_type`` whose provider has a credential. OpenAI's Decisions
        API takes only API keys: its models are left out while the provider is signed in
        with an account (pi 1.6.0)."""
        if model_type == "chat":
            return [m for m in self.available() if provider is None or m.provider == provider]
        usable: dict[str, bool] = {}
        out = []
        for model in self.models_of_type(model_type, provider):
            if model.provider not in usable:
                usable[model.provider] = self.has_auth(model.provider)
            if not usable[model.provider]:
                continue
            if model.api == "openai-decisions" and self.credentials.logged_in(model.provider):
                continue
            out.append(model)
        return out

    def get_of_type(self, model_type: str, provider: str, model_id: str) -> Model | None:
        """One model of ``model_type``, ``None`` when the provider has none of that id."""
        if model_type == "chat":
            return self.get(provider, model_id)
        state = self._providers.get(provider)
        if state is None:
            return None
        key = (provider, model_type, model_id)
        built = self._typed_built.get(key)
        if built is not None:
            return built
        entry = typed_entries(state).get((model_type, model_id))
        return self._typed_model(state, model_type, model_id, entry) if entry is not None else None

    def _typed_model(self, state: ProviderState, model_type: str, model_id: str, entry: dict[str, Any]) -> Model:
        key = (state.name, model_type, model_id)
        model = self._typed_built.get(key)
        if model is None:
            model = self._typed_built[key] = self._materialise(state, {**entry, "type": model_type})
        return model

    def typed_api(self, operation: str, api: str) -> Any:
        """The function a plugin (or pi's built-in provider plugin) registered for
        ``operation`` (``classify`` / ``generate_images``) of ``api``, ``None`` if none."""
        entry = self._typed_apis.get((operation, api))
        if entry is None:  # a registry made without a plugin host: pi's own APIs
            registered = builtin.registrations().apis.get(api)
            own = getattr(registered, operation, None) if registered is not None else None
            if own is None:
                return None
            entry = self._typed_apis[(operation, api)] = ("builtin", own)
        source, function = entry
        if isinstance(function, str):
            function = resolve_target(function)
            self._typed_apis[(operation, api)] = (source, function)
        return function

    async def classify(
        self,
        model: Model | dict[str, Any],
        context: ClassifierContext | dict[str, Any],
        options: StreamOptions | None = None,
    ) -> ClassifierResult:
        """Answer ``context.questions`` about ``context.state`` with a classifier model,
        with the provider's credentials (see :mod:`pi_core.ai.classify`). Never raises
        for provider errors: the result's ``stop_reason`` says ``error``."""
        from .classify import run_classify

        return await run_classify(self, model, context, options)

    async def generate_images(
        self,
        model: Model | dict[str, Any],
        context: ImagesContext | dict[str, Any],
        options: StreamOptions | None = None,
    ) -> ImagesResult:
        """Make images with an image model (see :mod:`pi_core.ai.classify`). Never raises
        for provider errors."""
        from .classify import run_generate_images

        return await run_generate_images(self, model, context, options)

    async def prepare_request(self, model: Model, options: StreamOptions) -> tuple[Model, StreamOptions]:
        """``model`` and ``options`` of a request with the provider's credentials and
        headers resolved, and Cloudflare's account / gateway ids filled into the URL."""
        state = self._providers.get(model.provider)
        request_model, request_options = await self.credentials.prepare(model, options, state)
        if request_model.base_url and "{" in request_model.base_url:
            from .apis._common import fill_base_url

            filled = fill_base_url(request_model.base_url, self.credentials.auth.env(request_model.provider))
            if filled != request_model.base_url:
                request_model = request_model.model_copy(update={"base_url": filled})
        return request_model, request_options

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
            raise ModelResolutionError(
                f'Model "{pattern}" not found. Use --list-models to see available models.{self._typed_hint(pattern)}'
            )
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
            f'Model "{model_id}" not found for provider "{target.provider}". Using custom model id.'
            + self._typed_hint(f"{target.provider}/{model_id}"),
        )

    def _typed_hint(self, pattern: str) -> str:
        """For ``provider/id`` of a classifier or image model: that it does not chat."""
        provider, _, model_id = pattern.partition("/")
        for kind, article in (("classifier", "a"), ("image", "an")):
            if model_id and provider in self._providers and self.get_of_type(kind, provider, model_id) is not None:
                return f" ({pattern} is {article} {kind} model: it does not chat; codemode's models module runs it)"
        return ""

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
        if is_virtual_model(model):
            return direct_stream(self, model, context, options)  # routed first (reason "direct")
        state = self._providers.get(model.provider)

        async def run(out: MessageBuilder) -> None:
            request_model, request_options = await self.credentials.prepare(model, options, state)
            if request_model.base_url and "{" in request_model.base_url:
                # Cloudflare's {CLOUDFLARE_ACCOUNT_ID} / {CLOUDFLARE_GATEWAY_ID}: the
                # credential's env first, then the process environment (pi 1.6.0)
                from .apis._common import fill_base_url

                filled = fill_base_url(request_model.base_url, self.credentials.auth.env(request_model.provider))
                if filled != request_model.base_url:
                    request_model = request_model.model_copy(update={"base_url": filled})
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

    async def complete(
        self, model: Model, context: LlmContext, options: StreamOptions | None = None
    ) -> AssistantMessage:
        return await self.stream(model, context, options).result()

    async def oauth_credentials(
        self, provider: str, *, refresh: bool = True, min_validity_ms: int | None = None
    ) -> OAuthCredentials:
        """The stored login of ``provider``, refreshed when it expires soon (see
        :meth:`Credentials.oauth_credentials <pi_core.ai.credentials.Credentials.oauth_credentials>`).
        Raises :class:`~pi_core.ai.auth.LoginRequiredError` when there is no usable login."""
        return await self.credentials.oauth_credentials(provider, refresh=refresh, min_validity_ms=min_validity_ms)

    async def login(
        self, provider: str, callbacks: LoginCallbacks, kind: str | None = None
    ) -> OAuthCredentials | ApiKeyCredentials:
        """Run ``provider``'s login method (of ``kind``: ``"oauth"`` or ``"api_key"``)
        with ``callbacks`` and store the credentials it returns in ``auth.json``. A
        provider with a dynamic catalogue is refreshed right after (as pi 1.6.0 does; not
        offline, at most 15 s; a failure leaves it to the next start)."""
        credentials = await self.credentials.login(provider, callbacks, kind)
        if state := self._providers.get(provider):
            if state.refresh_models is not None and not network_disabled():
                try:
                    await asyncio.wait_for(self.refresh_catalogues(allow_network=True, providers=[provider]), 15)
                except Exception:  # a timeout included: the login stands
                    pass
        return credentials

    # ------------------------------------------------------------------ virtual models

    def use_virtual_models(self, registered: Iterable[tuple[VirtualModelDefinition, str]]) -> list[str]:
        """Take the virtual models plugins registered (``register_virtual_models``):
        ``(definition, plugin)`` pairs, in place of the ones this registry had. A virtual
        model whose id is one of its provider's physical models is left out (one message
        each); a catalogue refresh that adds such a model later is hidden by it."""
        registered = list(registered)
        if not registered and not self._virtual:
            return []
        problems: list[str] = []
        accepted: dict[str, tuple[VirtualModelDefinition, str]] = {}
        for definition, plugin in registered:
            state = self._providers.get(definition.provider)
            entry = state.models.get(definition.id) if state is not None else None
            if entry is not None and entry.get("api") != VIRTUAL_MODEL_API:
                problems.append(
                    f"plugin {plugin!r}: virtual model {definition.ref} conflicts with a physical model; skipped"
                )
                continue
            accepted[definition.ref] = (definition, plugin)
        self._virtual = accepted
        self._rebuild()
        return problems

    def virtual_models(self) -> list[VirtualModelDefinition]:
        """The registered virtual models."""
        return [definition for definition, _ in self._virtual.values()]

    def virtual_definition(self, model: Model) -> VirtualModelDefinition | None:
        """The definition of virtual model ``model`` (``None``: not a registered one)."""
        found = self._virtual.get(model.ref)
        return found[0] if found is not None else None

    def physical_model(self, provider: str, model_id: str) -> Model | None:
        """A model of the catalogue that is not virtual, ``None`` when there is none."""
        model = self.get(provider, model_id)
        return model if model is not None and not is_virtual_model(model) else None

    async def route(
        self,
        model: Model,
        messages: list[Any],
        *,
        reason: Any,
        thinking_level: str,
        state: Any = None,
        failed: AssistantMessage | None = None,
        signal: Any = None,
        ctx: Any = None,
    ) -> tuple[Model, str, Any]:
        """Route one request of virtual model ``model``: ``(physical model, thinking level,
        new router state or None)``; raises
        :class:`~pi_core.ai.virtual.VirtualRouteError` (see :func:`~pi_core.ai.virtual.resolve_route`)."""
        return await resolve_route(
            self,
            model,
            messages,
            reason=reason,
            thinking_level=thinking_level,
            state=state,
            failed=failed,
            signal=signal,
            ctx=ctx,
        )

    # ------------------------------------------------------------------ dynamic catalogues

    def provider_states(self) -> list[ProviderState]:
        return list(self._providers.values())

    def dynamic_providers(self) -> list[str]:
        """The providers whose catalogue a plugin refreshes (``refresh_models``)."""
        return [state.name for state in self._providers.values() if state.refresh_models is not None]

    async def refresh_catalogues(
        self,
        *,
        allow_network: bool,
        force: bool = False,
        providers: Iterable[str] | None = None,
        signal: Any = None,
    ) -> dict[str, str]:
        """Refresh the dynamic catalogues (see :func:`~pi_core.ai.catalogue_snapshots.refresh_catalogues`);
        one message per provider whose refresh failed."""
        return await refresh_catalogues(
            self, allow_network=allow_network, force=force, providers=providers, signal=signal
        )

    def catalogues_changed(self) -> None:
        """Rebuild the model list after a refresh changed a dynamic catalogue."""
        self._rebuild()


__all__ = ["ModelRegistry", "ModelResolutionError", "ModelSelection", "config_fields"]
