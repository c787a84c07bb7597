"""Models, providers and the provider-neutral streaming protocol.

A provider's stream function turns an :class:`LlmContext` into a stream of
:data:`AssistantMessageEvent` values ending with ``done`` or ``error``. The core
implements the Anthropic, OpenAI and scripted ("faux") APIs on these types; a plugin
may add a provider of its own through the ``register_providers`` hook.
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ._base import PiModel
from .messages import AgentMessage, AssistantMessage, ToolCall, ToolDeclaration
from .signals import AbortSignal

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

KNOWN_APIS: tuple[str, ...] = (
    "anthropic-messages",
    "openai-responses",
    "openai-completions",
    "faux",
)


def _text_only() -> list[Literal["text", "image"]]:
    return ["text"]


class ModelCost(PiModel):
    """US dollars per million tokens."""

    _whole_numbers_as_int = True

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(PiModel):
    """One model of one provider, in the shape of a ``models.json`` model entry."""

    id: str
    name: str = ""
    provider: str = ""
    api: str = ""
    base_url: str | None = None
    reasoning: bool = False
    thinking_level_map: dict[str, Any] | None = None
    input: list[Literal["text", "image"]] = Field(default_factory=_text_only)
    cost: ModelCost = Field(default_factory=ModelCost.model_construct)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    input_limits: dict[str, Any] | None = None
    """Request limits (``maxRequestBytes``, ``images``…), as ``models.json`` gives them."""
    prompt_cache: dict[str, Any] | None = None
    """The provider's cache lifetime in seconds per retention tier (``{"short": 300}``)."""
    sampling_params: dict[str, Any] | None = None
    sampling_params_by_thinking_level: dict[str, dict[str, Any]] | None = None
    type: Literal["chat", "classifier", "image"] | None = None
    """What the model is for: ``chat`` (also when unset), ``classifier`` or ``image``
    (see :mod:`pi_hookspecs.model_types`); only chat models take part in conversations."""
    output: list[Literal["text", "image"]] | None = None
    """An image model's output modalities (always ``"image"``; ``"text"`` when it also writes text)."""

    @property
    def model_type(self) -> str:
        """``type``, ``chat`` when unset."""
        return self.type or "chat"

    @property
    def ref(self) -> str:
        """``provider/id``."""
        return f"{self.provider}/{self.id}"

    def same_model(self, other: "Model | None") -> bool:
        return other is not None and self.provider == other.provider and self.api == other.api and self.id == other.id


class LlmContext(PiModel):
    """What one model request is built from."""

    system_prompt: str | None = None
    messages: list[AgentMessage] = Field(default_factory=list)
    tools: list[ToolDeclaration] = Field(default_factory=list)


class StreamOptions(PiModel):
    """Per-request options of a stream function."""

    signal: AbortSignal | None = None
    thinking_level: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    session_id: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    # Hook points: the runtime binds them to the provider hooks of its plugins. A stream
    # function calls each at the stage it names (when its transport exposes that stage).
    on_headers: Callable[[dict[str, str | None]], Any] | None = Field(default=None, exclude=True)
    """Called with the assembled HTTP headers; mutate them in place (``None`` removes one)."""
    on_payload: Callable[[Any], Any] | None = Field(default=None, exclude=True)
    """Called with the provider payload; returns the payload to send (may be awaitable)."""
    on_response: Callable[[int, dict[str, str]], Any] | None = Field(default=None, exclude=True)
    """Called with the HTTP status and headers before the body is consumed."""
    on_raw_event: Callable[[Any], Any] | None = Field(default=None, exclude=True)
    """Called with each parsed provider stream event before it is normalised."""


# --------------------------------------------------------------------------- stream events


class _StreamEventBase(PiModel):
    partial: AssistantMessage | None = Field(default=None, exclude=True)
    """The message as accumulated when the event was emitted. pi's streams give each
    event its own shallow copy (stop reason and usage of that moment, content blocks
    shared); ``start`` carries the empty message, ``done``/``error`` the final one."""


class StartEvent(_StreamEventBase):
    type: Literal["start"] = "start"


class TextStartEvent(_StreamEventBase):
    type: Literal["text_start"] = "text_start"
    content_index: int


class TextDeltaEvent(_StreamEventBase):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str


class TextEndEvent(_StreamEventBase):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str


class ThinkingStartEvent(_StreamEventBase):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int


class ThinkingDeltaEvent(_StreamEventBase):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str


class ThinkingEndEvent(_StreamEventBase):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str


class ToolCallStartEvent(_StreamEventBase):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int
    id: str = ""
    tool_name: str = ""


class ToolCallDeltaEvent(_StreamEventBase):
    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str


class ToolCallEndEvent(_StreamEventBase):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall


class DoneEvent(_StreamEventBase):
    type: Literal["done"] = "done"
    reason: str
    message: AssistantMessage


class ErrorEvent(_StreamEventBase):
    type: Literal["error"] = "error"
    reason: str
    error: AssistantMessage


AssistantMessageEvent = Annotated[
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]

StreamFunction = Callable[[Model, LlmContext, StreamOptions], AsyncIterator[Any]]
"""``stream(model, context, options)`` -> async iterator of :data:`AssistantMessageEvent`."""


ApiStreamFunction = Callable[..., Awaitable[None]]
"""``async def stream(model, context, options, out) -> None``: one request of a wire API.

It sends the request for ``model`` (``context``, ``options``) and reports what
arrives through ``out``, a :class:`~pi_hookspecs.streaming.MessageBuilder`; it raises
on failure. pi turns its end, an exception or an abort into the stream's final
``done`` or ``error`` event."""


class TranscriptRules(PiModel):
    """Asks pi to make a conversation acceptable to the target model before a plugin's
    wire API sees it, by the rules pi applies to its own APIs:

    * system messages are replayed into ``LlmContext.system_prompt`` and ``tools`` (later
      ones folded into the leading prompt unless ``mid_conversation_system``);
    * a turn that ended in an error or was aborted is dropped;
    * from another model, thinking becomes text, signatures are removed and tool-call
      ids are made safe: characters outside ``[A-Za-z0-9_-]`` become ``_``, at most
      ``tool_call_id_max_length`` long (their results follow them);
    * a tool call without a result gets an error result, a result without a call is
      dropped;
    * images become a note for a model without image input.
    """

    tool_call_id_max_length: int = 64
    mid_conversation_system: bool = False


class ApiDefinition(PiModel):
    """A wire API a plugin registers through ``register_providers``: requests of every
    model whose ``api`` is ``name`` go to ``stream``. An API of classifier or image
    models gives ``classify`` or ``generate_images`` instead (see
    :mod:`pi_hookspecs.model_types`; ``"module:function"`` names are imported on the
    first call as for ``stream``).

    ``stream`` is an :data:`ApiStreamFunction`, or ``"package.module:function"`` naming
    one: the module is imported on the first request, so an API whose client library
    is heavy costs nothing until it is used. pi's own APIs (``anthropic-messages``,
    ``openai-completions``, …) are registered this way by its built-in provider plugin.
    With ``transcript`` set, the context ``stream`` receives has been prepared by pi's
    transcript rules (:class:`TranscriptRules`): the API only serialises it.
    """

    name: str
    stream: ApiStreamFunction | str | None = Field(default=None, exclude=True)
    transcript: TranscriptRules | None = None
    classify: Callable[..., Awaitable[Any]] | str | None = Field(default=None, exclude=True)
    """A :data:`~pi_hookspecs.model_types.ClassifyFunction` for the API's classifier models."""
    generate_images: Callable[..., Awaitable[Any]] | str | None = Field(default=None, exclude=True)
    """An :data:`~pi_hookspecs.model_types.ImagesFunction` for the API's image models."""

    @model_validator(mode="after")
    def _serves_something(self) -> "ApiDefinition":
        if self.stream is None and self.classify is None and self.generate_images is None:
            raise ValueError(f"API {self.name!r} needs stream, classify or generate_images")
        return self


class ProviderDefinition(PiModel):
    """A provider a plugin registers through ``register_providers``.

    The fields mirror a ``models.json`` provider. With ``stream`` set, requests to its
    models go through that function instead of one of the built-in APIs. With
    ``catalogue`` set to a provider id of pi's built-in model catalogue (``pi models
    --all`` lists them), the provider offers that catalogue's models (read when first
    asked for); ``models`` then add to them or replace some.

    With ``refresh_models`` set, the provider's catalogue is dynamic: pi calls
    ``refresh_models(refresh)`` with a :class:`~pi_hookspecs.CatalogueRefresh` offline
    when a session starts and online when catalogues are refreshed, and a list it
    returns replaces the provider's models (see :mod:`pi_hookspecs.catalogue`).
    """

    name: str
    display_name: str | None = None
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None
    headers: dict[str, str] | None = None
    auth_header: bool = False
    compat: dict[str, Any] | None = None
    models: list[Model] = Field(default_factory=list)
    catalogue: str | None = None
    stream: StreamFunction | None = Field(default=None, exclude=True)
    refresh_models: Callable[..., Any] | None = Field(default=None, exclude=True)
    """``refresh_models(refresh) -> list[Model | dict] | None`` (sync or async): a dynamic catalogue."""
