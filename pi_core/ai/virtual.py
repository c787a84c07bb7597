"""Virtual models in the registry: their catalogue entries and routing one request.

A virtual model (:class:`~pi_hookspecs.VirtualModelDefinition`) is listed like any
model, with the api :data:`~pi_hookspecs.VIRTUAL_MODEL_API`, which no provider serves.
Before a request, :func:`resolve_route` asks its router for a physical model and
thinking level and checks the answer: a model of the catalogue that is not virtual,
whose provider has credentials; the level clamped to it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pi_hookspecs import (
    THINKING_LEVELS,
    VIRTUAL_MODEL_API,
    AgentMessage,
    AssistantMessage,
    FailedRequest,
    Model,
    Route,
    RoutedModel,
    RouteReason,
    RouteRequest,
    VirtualModelDefinition,
    is_virtual_model,
)

from .message_stream import AssistantMessageStream, MessageBuilder
from .models import clamp_thinking_level


class RoutingRegistry(Protocol):
    """What routing needs of the model registry (:class:`~pi_core.ai.ModelRegistry`)."""

    def get(self, provider: str, model_id: str) -> Model | None: ...

    def available(self, current: Model | None = None) -> list[Model]: ...

    def has_auth(self, provider: str) -> bool: ...

    def physical_model(self, provider: str, model_id: str) -> Model | None: ...

    def virtual_definition(self, model: Model) -> VirtualModelDefinition | None: ...

    def stream(self, model: Model, context: Any, options: Any = None) -> Any: ...


class VirtualRouteError(Exception):
    """Routing a request of a virtual model failed; the message names the virtual model."""


def virtual_entry(definition: VirtualModelDefinition) -> dict[str, Any]:
    """The registry entry (``models.json`` fields, snake_case) of a virtual model."""
    levels = definition.thinking_levels or ["off"]
    return {
        "id": definition.id,
        "name": definition.name or definition.id,
        "api": VIRTUAL_MODEL_API,
        "base_url": "",
        "reasoning": any(level != "off" for level in levels),
        "thinking_level_map": {level: (level if level in levels else None) for level in THINKING_LEVELS},
        "input": list(definition.input),
        "cost": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
        "context_window": definition.context_window or 0,
        "max_tokens": definition.max_tokens or 0,
    }


def latest_response(messages: Sequence[Any]) -> AssistantMessage | None:
    """The latest successful response (neither failed nor aborted): its model is physical."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted"):
            return message
    return None


def _route_arguments(route: Callable[..., Any]) -> int:
    """How many positional arguments ``route`` takes: 1 (request) or 2 (request, ctx)."""
    try:
        parameters = list(inspect.signature(route).parameters.values())
    except (TypeError, ValueError):
        return 1
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 2
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return 2 if len(positional) >= 2 else 1


async def resolve_route(
    registry: RoutingRegistry,
    model: Model,
    messages: Sequence[AgentMessage],
    *,
    reason: RouteReason,
    thinking_level: str,
    state: Any = None,
    failed: AssistantMessage | None = None,
    signal: Any = None,
    ctx: Any = None,
) -> tuple[Model, str, Any]:
    """Ask the router of virtual model ``model`` where one request goes: ``(physical
    model, thinking level, state)``, the state as returned (``None``: keep). Raises
    :class:`VirtualRouteError` with one line naming the virtual model."""
    definition = registry.virtual_definition(model)
    if definition is None:
        raise VirtualRouteError(f"Virtual model {model.ref} is not registered")
    name = f"Virtual model {model.provider}/{model.id}"
    latest = latest_response(messages)
    previous_model = registry.physical_model(latest.provider, latest.model) if latest is not None else None
    failed_model = registry.physical_model(failed.provider, failed.model) if failed is not None else None
    request = RouteRequest.model_construct(
        model=model,
        thinking_level=thinking_level,
        reason=reason,
        previous=(
            RoutedModel.model_construct(model=previous_model, thinking_level=latest.thinking_level)
            if previous_model is not None and latest is not None
            else None
        ),
        failed=(
            FailedRequest.model_construct(model=failed_model, thinking_level=failed.thinking_level, message=failed)
            if failed_model is not None and failed is not None
            else None
        ),
        state=None if reason == "direct" else state,
        messages=list(messages),
        models=registry,
        signal=signal,
    )
    route = definition.route
    try:
        answer = route(request, ctx) if _route_arguments(route) == 2 else route(request)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        raise VirtualRouteError(f"{name}: its route failed: {type(exc).__name__}: {exc}") from exc
    try:
        if isinstance(answer, dict):
            answer = Route.model_validate(answer)
        elif isinstance(answer, Model):
            answer = Route.model_construct(model=answer, thinking_level=None, state=None)
    except ValueError as exc:
        raise VirtualRouteError(f"{name}: its route returned an invalid route: {exc}") from None
    if not isinstance(answer, Route):
        raise VirtualRouteError(f"{name}: its route returned {type(answer).__name__}, expected a Route")
    target_ref = answer.model if isinstance(answer.model, str) else answer.model.ref
    provider, _, model_id = target_ref.partition("/")
    routed = f"{name} routed to {target_ref}"
    target = registry.physical_model(provider, model_id) if model_id else None
    if target is None:
        raise VirtualRouteError(f"{routed}, which is not a physical model")
    if not registry.has_auth(target.provider):
        raise VirtualRouteError(f"{routed}, which has no credentials")
    level = clamp_thinking_level(target, answer.thinking_level or thinking_level)
    state_out = None if reason == "direct" or answer.state is request.state else answer.state
    return target, level, state_out


def apply_virtual(providers: dict[str, Any], virtual: dict[str, tuple[VirtualModelDefinition, str]]) -> None:
    """List the virtual models in ``providers`` (a registry's provider table): under an
    existing provider they hide a physical model of the same id; a provider id nobody
    uses gets a provider of its own that needs no credentials."""
    from .providers import ProviderState

    for definition, plugin in virtual.values():
        provider = providers.get(definition.provider)
        if provider is None:
            provider = providers[definition.provider] = ProviderState(
                name=definition.provider, source=plugin, needs_auth=False, api=VIRTUAL_MODEL_API
            )
        provider.models[definition.id] = virtual_entry(definition)


def direct_stream(registry: RoutingRegistry, model: Model, context: Any, options: Any) -> AssistantMessageStream:
    """A request of a virtual model made outside the agent loop (a compaction summary, a
    plugin's own request): routed with reason ``direct``, then sent to the physical
    model. A failed route ends the stream with an error naming the virtual model."""

    async def run(out: MessageBuilder) -> None:
        target, level, _ = await resolve_route(
            registry,
            model,
            list(context.messages),
            reason="direct",
            thinking_level=options.thinking_level or "off",
            signal=options.signal,
        )
        update: dict[str, Any] = {"thinking_level": level}
        if options.max_tokens and target.max_tokens > 0:
            update["max_tokens"] = min(options.max_tokens, target.max_tokens)
        if target.provider != model.provider:  # the caller's credentials were the virtual provider's
            update.update(api_key=None, headers={})
        inner = registry.stream(target, context, options.model_copy(update=update))
        async for event in inner:
            out.forward(event)
            if out.finished:
                break

    return AssistantMessageStream(model, run, options, label=model.provider)


__all__ = [
    "VirtualRouteError",
    "apply_virtual",
    "direct_stream",
    "is_virtual_model",
    "latest_response",
    "resolve_route",
    "virtual_entry",
]
