"""Virtual models: selectable models that pick a physical model for every request.

A plugin registers one through the ``register_virtual_models`` hook with a
:class:`VirtualModelDefinition`. The user selects it like any model (``--model
router/auto``, ``/model``, settings); before each request pi calls its ``route``
with a :class:`RouteRequest` and sends the request to the physical model and thinking
level the returned :class:`Route` names.

What the session records (as pi 1.6.0 does): the selection in ``model_change`` and
``thinking_level_change`` entries, the dispatch in each assistant message (``provider``,
``api``, ``model``, ``thinkingLevel`` of the physical model), and router state in
``custom`` entries of type :data:`VIRTUAL_MODEL_STATE_ENTRY`.
"""

from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field, field_validator

from ._base import PiModel
from .llm import THINKING_LEVELS, Model
from .messages import AgentMessage, AssistantMessage
from .signals import AbortSignal

VIRTUAL_MODEL_API = "pi-virtual"
"""The ``api`` of a virtual model's catalogue entry; no provider serves it."""

VIRTUAL_MODEL_STATE_ENTRY = "pi.virtual-model-state"
"""``customType`` of the entries that keep router state on a session branch; their
``data`` is ``{"provider", "modelId", "state"}``."""

RouteReason = Literal["user", "continuation", "retry", "direct"]
"""Why a request is made: ``user`` (the first request after a message the user wrote),
``continuation`` (after tool results or plugin messages), ``retry`` (an automatic retry,
also after compacting for a context overflow), ``direct`` (outside the agent loop: a
compaction summary, a plugin's own request)."""


def is_virtual_model(model: Any) -> bool:
    """Whether ``model`` (a :class:`~pi_hookspecs.Model` or an assistant message) names a
    virtual model."""
    return getattr(model, "api", None) == VIRTUAL_MODEL_API


def _default_levels() -> list[str]:
    return ["off"]


def _default_input() -> list[Literal["text", "image"]]:
    return ["text", "image"]


class VirtualModelDefinition(PiModel):
    """A virtual model a plugin registers through ``register_virtual_models``.

    * ``provider`` / ``id`` - where it is listed (``provider/id``). Any provider id: on a
      provider with physical models it is available when that provider has credentials;
      under an id no provider uses it is always available. ``id`` must not be the id of
      one of the provider's physical models (a catalogue refresh that adds one later is
      hidden by the virtual model).
    * ``thinking_levels`` - the levels offered for selection (default ``["off"]``); what
      they mean is up to the router.
    * ``context_window`` / ``max_tokens`` - shown before the first response (unset:
      unknown); afterwards the limits of the physical model that answered last apply.
    * ``input`` - input types offered (default text and images; a physical model without
      image input gets placeholders).
    * ``route(request)`` or ``route(request, ctx)`` - called before every request made
      with the virtual model (sync or async); returns a :class:`Route` (or a dict of its
      fields).
    """

    model_config = ConfigDict(extra="forbid")

    provider: str
    id: str
    name: str = ""
    thinking_levels: list[str] = Field(default_factory=_default_levels)
    context_window: int | None = None
    max_tokens: int | None = None
    input: list[Literal["text", "image"]] = Field(default_factory=_default_input)
    route: Callable[..., Any] = Field(exclude=True)

    @field_validator("provider", "id")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be empty")
        return value

    @field_validator("thinking_levels")
    @classmethod
    def _known_levels(cls, levels: list[str]) -> list[str]:
        unknown = [level for level in levels if level not in THINKING_LEVELS]
        if unknown:
            raise ValueError(f"unknown thinking level(s) {unknown}; known: {', '.join(THINKING_LEVELS)}")
        return levels or ["off"]

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"


class RoutedModel(PiModel):
    """A physical model and the thinking level a request used with it."""

    model: Model
    thinking_level: str | None = None


class FailedRequest(RoutedModel):
    """The request an automatic retry repeats: its physical model, thinking level and
    failed assistant ``message`` (with ``stop_reason`` and ``error_message``), which the
    request's ``messages`` no longer contain."""

    message: AssistantMessage


class ModelLookup(Protocol):
    """The models a router may pick from (pi's model registry, read-only)."""

    def get(self, provider: str, model_id: str) -> Model | None:
        """The model ``provider/model_id`` of the catalogue, ``None`` when unknown."""
        ...

    def available(self) -> list[Model]:
        """The models whose provider has credentials."""
        ...

    def has_auth(self, provider: str) -> bool:
        """Whether ``provider`` has credentials."""
        ...


class RouteRequest(PiModel):
    """What ``route`` gets for one request.

    ``model`` / ``thinking_level`` are the selected virtual model and level; ``previous``
    the physical model and level of the latest successful response in ``messages``;
    ``failed`` (``retry`` only) the request being retried; ``state`` the router state
    last returned on this session branch (``None`` for ``direct`` requests);
    ``messages`` the conversation of this request; ``models`` the catalogue to pick a
    physical model from (``request.models.get("anthropic", "claude-haiku-4-5")``);
    ``signal`` the request's abort signal. Returning ``previous`` for a
    ``continuation`` and ``failed`` for a ``retry`` keeps prompt caches valid.
    """

    model: Model
    thinking_level: str = "off"
    reason: RouteReason
    previous: RoutedModel | None = None
    failed: FailedRequest | None = None
    state: Any = None
    messages: list[AgentMessage] = Field(default_factory=list)
    models: Any = Field(default=None, exclude=True)
    """A :class:`ModelLookup`."""
    signal: AbortSignal | None = Field(default=None, exclude=True)


class Route(PiModel):
    """Where ``route`` sends a request: a physical ``model`` of the catalogue whose
    provider has credentials (a :class:`~pi_hookspecs.Model` or ``"provider/id"``) and a
    ``thinking_level`` (``None``: the selected level; pi clamps it to the model).

    ``state`` (JSON-serialisable) is stored on the session branch before the request is
    sent and comes back as ``request.state`` on later requests; ``None`` or
    ``request.state`` itself keeps the current state. Return a new object only when the
    state changes: every other object is stored as new state. ``direct`` requests have
    no state, and a state they return is ignored.
    """

    model: Model | str
    thinking_level: str | None = None
    state: Any = None


__all__ = [
    "VIRTUAL_MODEL_API",
    "VIRTUAL_MODEL_STATE_ENTRY",
    "FailedRequest",
    "ModelLookup",
    "Route",
    "RouteReason",
    "RouteRequest",
    "RoutedModel",
    "VirtualModelDefinition",
    "is_virtual_model",
]
