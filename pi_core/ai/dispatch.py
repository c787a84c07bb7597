"""``stream`` and ``complete``: one request to any model, through the API table."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from pi_hookspecs import AssistantMessage, AssistantMessageEvent, LlmContext, Model, StreamFunction, StreamOptions

from .._async import maybe_await
from .apis import get_api
from .auth import env_api_key
from .builtin import missing_plugin_message
from .errors import ProviderError
from .message_stream import AssistantMessageStream, MessageBuilder

_event_adapter: TypeAdapter[Any] | None = None

PROVIDER_LABELS = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "google": "Google",
    "google-vertex": "Google Vertex AI",
    "mistral": "Mistral",
    "azure": "Azure OpenAI",
    "openai-codex": "OpenAI Codex",
}


def provider_label(model: Model) -> str:
    """How errors name the provider: ``"Anthropic API error (429): …"``."""
    return PROVIDER_LABELS.get(model.provider, model.provider or model.api)


def _as_event(value: Any) -> Any:
    global _event_adapter
    if isinstance(value, dict):
        if _event_adapter is None:
            _event_adapter = TypeAdapter(AssistantMessageEvent)
        return _event_adapter.validate_python(value)
    if not hasattr(value, "type"):
        raise ProviderError(f"a provider stream yielded {type(value).__name__}, expected a stream event")
    return value


async def run_api(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """Run the implementation of ``model.api`` (raises when there is none)."""
    implementation = get_api(model.api)
    if implementation is None:
        message = missing_plugin_message(model) or f"No implementation for API {model.api!r} (model {model.ref})"
        raise ProviderError(message)
    await implementation(model, context, options, out)


async def run_stream_function(
    function: StreamFunction, model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder
) -> None:
    """Pass on the events of a plugin's stream function until its ``done`` or
    ``error``; events may be the contract's models or dicts of them."""
    events = await maybe_await(function(model, context, options))
    async for raw in events:
        out.forward(_as_event(raw))
        if out.finished:
            break
    if not out.finished:
        raise ProviderError(f"The stream of provider {model.provider} ended without a done or error event")
    final = out.message
    final.api = final.api or model.api
    final.provider = final.provider or model.provider
    final.model = final.model or model.id


def stream(model: Model, context: LlmContext, options: StreamOptions | None = None) -> AssistantMessageStream:
    """Stream one model request through the implementation of ``model.api``.

    Without ``options.api_key`` the provider's standard environment variable is used
    (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, …); :meth:`ModelRegistry.stream`
    resolves ``auth.json`` and ``models.json`` credentials as well. Never raises for
    provider or network errors: see :class:`AssistantMessageStream`.
    """
    options = options or StreamOptions()
    if not options.api_key:
        key = env_api_key(model.provider)
        if key:
            options = options.model_copy(update={"api_key": key})
    final_options = options

    async def run(out: MessageBuilder) -> None:
        await run_api(model, context, final_options, out)

    return AssistantMessageStream(model, run, options, label=provider_label(model))


def stream_function(
    function: StreamFunction, model: Model, context: LlmContext, options: StreamOptions | None = None
) -> AssistantMessageStream:
    """Wrap a plugin's stream function (``ProviderDefinition.stream``) so that it has
    the guarantees of the built-in APIs: one final ``done`` or ``error`` event, never
    an exception, aborts honoured."""
    final_options = options or StreamOptions()

    async def run(out: MessageBuilder) -> None:
        await run_stream_function(function, model, context, final_options, out)

    return AssistantMessageStream(model, run, final_options, label=model.provider)


async def complete(model: Model, context: LlmContext, options: StreamOptions | None = None) -> AssistantMessage:
    """The final message of :func:`stream` (never raises for provider errors)."""
    return await stream(model, context, options).result()
