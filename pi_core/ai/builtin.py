"""pi's built-in provider plugin: the wire APIs and the model catalogue it ships.

It registers through ``register_providers``, the hook any plugin uses to add an API,
a provider or models (as pytest's and llm's own behaviour ships as default plugins),
so the core keeps no table of its own: the API table of :mod:`pi_core.ai.apis` and
the built-in providers of :class:`~pi_core.ai.ModelRegistry` are both filled from
here. APIs are named as ``"module:function"`` and imported on their first request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_hookspecs import ApiDefinition, LoginMethod, hookimpl

from . import catalog
from .oauth import login_methods

NAME = "pi-providers"
"""The plugin's name in ``pi extensions list`` and in diagnostics."""

BUILTIN_APIS: dict[str, str] = {
    "anthropic-messages": "pi_core.ai.apis.anthropic:stream_anthropic",
    "openai-responses": "pi_core.ai.apis.openai_responses:stream_openai_responses",
    "openai-completions": "pi_core.ai.apis.openai_completions:stream_openai_completions",
    "google-generative-ai": "pi_core.ai.apis.google:stream_google",
    "google-vertex": "pi_core.ai.apis.google_vertex:stream_google_vertex",
    "mistral-conversations": "pi_core.ai.apis.mistral:stream_mistral",
    "azure-openai-responses": "pi_core.ai.apis.azure_openai_responses:stream_azure_openai_responses",
    "openai-codex-responses": "pi_core.ai.apis.openai_codex_responses:stream_openai_codex_responses",
    "faux": "pi_core.ai.faux:stream_faux",
}
"""Each built-in wire API and the function that speaks it."""

PLUGIN_APIS: dict[str, str] = {
    "bedrock-converse-stream": "pluggable-pi-bedrock",
}
"""pi 1.6.0's wire APIs that pi leaves to a separately installed plugin package (their
credentials need a heavy library), and the package that provides each: a request
of such an API without its plugin fails with one line saying what to install."""


def missing_plugin_message(model: Any) -> str | None:
    """The one line for a request of ``model`` whose API a plugin package provides
    (:data:`PLUGIN_APIS`) that is not installed; ``None`` for any other API."""
    package = PLUGIN_APIS.get(model.api)
    if package is None:
        return None
    return f"Model {model.ref} uses the {model.api} API of the {package} plugin: install it with pi install {package}"


def provider_entries() -> list[dict[str, Any]]:
    """The catalogue's providers, in the shape of a ``models.json`` provider plus its
    ``name``; ``"catalogue": <id>`` stands for the catalogue's models of that provider,
    which the registry reads only when one is asked for (see :mod:`pi_core.ai.catalog`)."""
    entries = []
    for name in catalog.provider_ids():
        info = catalog.provider_info(name) or {}
        entry = {"name": name, "displayName": info.get("name"), "baseUrl": info.get("baseUrl"),
                 "api": info.get("api"), "catalogue": name}
        if info.get("headers"):
            entry["headers"] = info["headers"]
        entries.append(entry)
    return entries


@hookimpl(trylast=True)
def register_providers(register: Callable[[Any], Any]) -> None:
    for name, target in BUILTIN_APIS.items():
        register(ApiDefinition.model_construct(name=name, stream=target))
    for entry in provider_entries():
        register(entry)
    for method in login_methods():
        register(method)


_registered: tuple[dict[str, ApiDefinition], list[dict[str, Any]]] | None = None
_logins: dict[str, LoginMethod] = {}


def registrations() -> tuple[dict[str, ApiDefinition], list[dict[str, Any]]]:
    """What :func:`register_providers` registers: the APIs by name, the providers
    (collected once per process)."""
    global _registered
    if _registered is None:
        _registered = _collect()
    return _registered


def _collect() -> tuple[dict[str, ApiDefinition], list[dict[str, Any]]]:
    apis: dict[str, ApiDefinition] = {}
    providers: list[dict[str, Any]] = []

    def collect(value: Any) -> None:
        if isinstance(value, ApiDefinition):
            apis[value.name] = value
        elif isinstance(value, LoginMethod):
            _logins.setdefault(value.provider, value)
        elif isinstance(value, dict):
            providers.append(value)
        else:
            providers.append(value.model_dump(by_alias=True, exclude_none=True))

    register_providers(collect)
    return apis, providers


def login_registrations() -> dict[str, LoginMethod]:
    """The login methods :func:`register_providers` registers, by provider."""
    registrations()
    return _logins
