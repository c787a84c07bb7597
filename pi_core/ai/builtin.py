"""pi's built-in provider plugin: the wire APIs and the model catalogue it ships.

The plugin host loads it first, as the built-in plugin :data:`NAME` (``pi extensions
list`` shows it), and dispatches its ``register_providers`` like any plugin's (as pytest's
and llm's own behaviour ships as default plugins): a session's model registry takes the
built-in APIs, providers and logins from the host, a plugin's registration of the same
name shadows them. Code without a host reads the same registrations through
:func:`registrations`. APIs are named as ``"module:function"`` and imported on their
first request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from pi_hookspecs import ApiDefinition, LoginMethod, ProviderDefinition, hookimpl

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
    "pi-messages": "pi_core.ai.apis.pi_messages:stream_pi_messages",
    "faux": "pi_core.ai.faux:stream_faux",
}
"""Each built-in wire API and the function that speaks it."""

CLASSIFIER_APIS: dict[str, str] = {
    "typesafe-system-one": "pi_core.ai.apis.system_one:classify_typesafe",
    "cloudflare-workers-ai-system-one": "pi_core.ai.apis.system_one:classify_cloudflare",
    "openai-decisions": "pi_core.ai.apis.openai_decisions:classify_openai_decisions",
    "llama-cpp-classify": "pi_core.ai.apis.llama_cpp_classify:classify_llama_cpp",
}
"""Each built-in classifier API and the function that speaks it."""

IMAGE_APIS: dict[str, str] = {
    "openrouter-images": "pi_core.ai.apis.openrouter_images:generate_openrouter_images",
}
"""Each built-in image API and the function that speaks it."""

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


def provider_definitions() -> list[ProviderDefinition]:
    """The catalogue's providers: each offers its catalogue's models (``catalogue``),
    which the registry reads only when one is asked for (see :mod:`pi_core.ai.catalog`)."""
    definitions = []
    for name in catalog.provider_ids():
        info = catalog.provider_info(name) or {}
        definitions.append(
            ProviderDefinition.model_construct(
                name=name,
                display_name=info.get("name"),
                base_url=info.get("baseUrl"),
                api=info.get("api"),
                headers=dict(info["headers"]) if info.get("headers") else None,
                catalogue=name,
            )
        )
    for name, info in catalog.typed_providers().items():  # only classifier or image models
        definitions.append(
            ProviderDefinition.model_construct(
                name=name, display_name=info.get("name"), base_url=info.get("baseUrl"), api=info.get("api")
            )
        )
    return definitions


@hookimpl(trylast=True)
def register_providers(register: Callable[[Any], Any]) -> None:
    for name, target in BUILTIN_APIS.items():
        register(ApiDefinition.model_construct(name=name, stream=target))
    for name, target in CLASSIFIER_APIS.items():
        register(ApiDefinition.model_construct(name=name, classify=target))
    for name, target in IMAGE_APIS.items():
        register(ApiDefinition.model_construct(name=name, generate_images=target))
    for definition in provider_definitions():
        register(definition)
    for method in login_methods():
        register(method)


class Registrations(NamedTuple):
    apis: dict[str, ApiDefinition]
    providers: list[ProviderDefinition]
    logins: dict[str, LoginMethod]


_registered: Registrations | None = None


def registrations() -> Registrations:
    """What :func:`register_providers` registers, collected once per process, for the
    code that runs without a plugin host: the module-level API table of
    :mod:`pi_core.ai.apis` and a :class:`~pi_core.ai.ModelRegistry` made on its own (the
    SDK's ``ModelRegistry()``). A session's registry takes them from the plugin host,
    which loads this module as the built-in plugin :data:`NAME`."""
    global _registered
    if _registered is None:
        apis: dict[str, ApiDefinition] = {}
        providers: list[ProviderDefinition] = []
        logins: dict[str, LoginMethod] = {}

        def collect(value: Any) -> None:
            if isinstance(value, ApiDefinition):
                apis[value.name] = value
            elif isinstance(value, LoginMethod):
                logins.setdefault(value.provider, value)
            else:
                providers.append(value)

        register_providers(collect)
        _registered = Registrations(apis, providers, logins)
    return _registered
