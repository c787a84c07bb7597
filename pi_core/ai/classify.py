"""Calling classifier and image models: :meth:`ModelRegistry.classify
<pi_core.ai.registry.ModelRegistry.classify>` and ``generate_images``.

A call names its model by provider and id (a ``Model`` or a dict of the two: codemode's
scripts pass what they listed), finds the API's function (a plugin's, else pi's own:
``typesafe-system-one``, ``cloudflare-workers-ai-system-one``, ``openai-decisions``,
``llama-cpp-classify``, ``openrouter-images``), resolves the provider's credentials as a
chat request does, and runs it. Whatever goes wrong becomes the result's
``error_message`` with ``stop_reason`` ``error`` — an unknown model, a question the
contract refuses, images for a model without image input, the service's own error — or
``aborted`` when ``options.signal`` fired. Nothing raises.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from pydantic import ValidationError

from pi_hookspecs import (
    AbortError,
    ClassifierContext,
    ClassifierResult,
    ImagesContext,
    ImagesResult,
    Model,
    StreamOptions,
)
from pi_hookspecs.signals import abortable

from .._async import maybe_await
from .message_stream import describe_error

ModelRegistry = Any
"""The calling :class:`~pi_core.ai.registry.ModelRegistry` (not imported: it imports this module)."""

R = TypeVar("R", ClassifierResult, ImagesResult)

API_LABELS = {
    "typesafe-system-one": "System One",
    "cloudflare-workers-ai-system-one": "Cloudflare Workers AI",
    "openai-decisions": "OpenAI Decisions",
    "llama-cpp-classify": "llama.cpp",
    "openrouter-images": "OpenRouter",
}
"""How errors name the service: ``"System One API error (401): …"``."""

DEFAULT_RETRIES = 2
"""Provider retries of a classifier or image request (pi 1.6.0's default)."""


class CallProblem(Exception):
    """A call pi refuses before any request; its text is the result's error message."""


def model_ref(model: Model | dict[str, Any] | Any) -> tuple[str, str]:
    """``(provider, id)`` of what a caller passed as the model."""
    if isinstance(model, Model):
        return model.provider, model.id
    if isinstance(model, dict):
        provider, model_id = model.get("provider"), model.get("id")
        if isinstance(provider, str) and provider and isinstance(model_id, str) and model_id:
            return provider, model_id
    raise CallProblem("the model must name its provider and id ({provider, id})")


def _short(error: ValidationError, what: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "(top level)"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"invalid {what}: {where}: {first.get('msg')}{more}"


def _options(options: StreamOptions | None) -> StreamOptions:
    options = options or StreamOptions()
    if "max_retries" not in options.extra:
        options = options.model_copy(update={"extra": {**options.extra, "max_retries": DEFAULT_RETRIES}})
    return options


async def _run(function: Any, model: Model, context: Any, options: StreamOptions) -> Any:
    """``function(model, context, options)``, cancelled when ``options.signal`` fires."""
    signal = options.signal
    if signal is not None and signal.aborted:  # before the call, not only before its awaiting
        raise AbortError(signal.reason)
    return await abortable(maybe_await(function(model, context, options)), signal)


async def _call(
    registry: ModelRegistry,
    kind: str,
    operation: str,
    model: Any,
    context: Any,
    options: StreamOptions | None,
    context_type: type[ClassifierContext] | type[ImagesContext],
    result_type: type[R],
) -> R:
    fields: dict[str, Any] = {}
    label = ""
    request = _options(options)
    try:
        provider, model_id = model_ref(model)
        fields.update(provider=provider, model=model_id)
        found = registry.get_of_type(kind, provider, model_id)
        if found is None:
            chat = registry.get(provider, model_id) if kind != "chat" else None
            hint = " (a chat model: only classifier and image models run here)" if chat is not None else ""
            raise CallProblem(f"No {kind} model {provider}/{model_id}{hint}; list them with get_available_of_type")
        fields["api"] = found.api
        label = API_LABELS.get(found.api, "")
        try:
            parsed = context if isinstance(context, context_type) else context_type.model_validate(context)
        except ValidationError as error:
            raise CallProblem(_short(error, f"{kind} request")) from None
        if isinstance(parsed, ClassifierContext) and parsed.images and "image" not in found.input:
            raise CallProblem(f"{found.ref} does not take images (its input is {', '.join(found.input)})")
        if found.api == "openai-decisions" and registry.credentials.logged_in(found.provider):
            raise CallProblem(
                f"{found.ref} needs an OpenAI API key: the Decisions API refuses ChatGPT account tokens. "
                f"Log out of {found.provider} (/logout) to use OPENAI_API_KEY"
            )
        function = registry.typed_api(operation, found.api)
        if function is None:
            raise CallProblem(f"No {kind} implementation for API {found.api!r} (model {found.ref})")
        if request.signal is not None and request.signal.aborted:
            raise AbortError(request.signal.reason)
        ready_model, ready_options = await registry.prepare_request(found, request)
        value = await _run(function, ready_model, parsed, ready_options)
        result = value if isinstance(value, result_type) else result_type.model_validate(value)
    except CallProblem as problem:
        return result_type.model_validate({**fields, "stop_reason": "error", "error_message": str(problem)})
    except (AbortError, asyncio.CancelledError) as error:
        if isinstance(error, asyncio.CancelledError) and not (request.signal and request.signal.aborted):
            raise
        return result_type.model_validate({**fields, "stop_reason": "aborted", "error_message": "Request was aborted"})
    except Exception as error:
        aborted = request.signal is not None and request.signal.aborted
        message = "Request was aborted" if aborted else describe_error(error, label or fields.get("provider", ""))
        return result_type.model_validate(
            {**fields, "stop_reason": "aborted" if aborted else "error", "error_message": message}
        )
    result.api = result.api or fields["api"]
    result.provider = result.provider or fields["provider"]
    result.model = result.model or fields["model"]
    return result


async def run_classify(
    registry: ModelRegistry, model: Any, context: Any, options: StreamOptions | None = None
) -> ClassifierResult:
    return await _call(registry, "classifier", "classify", model, context, options, ClassifierContext, ClassifierResult)


async def run_generate_images(
    registry: ModelRegistry, model: Any, context: Any, options: StreamOptions | None = None
) -> ImagesResult:
    return await _call(registry, "image", "generate_images", model, context, options, ImagesContext, ImagesResult)


__all__ = ["API_LABELS", "model_ref", "run_classify", "run_generate_images"]
