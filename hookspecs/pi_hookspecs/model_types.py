"""Models that do not chat: classifiers and image generators.

A catalogue entry's ``type`` says what it is for: ``chat`` (the default; ``/model``,
``--model`` and every conversation), ``classifier`` (answers typed questions about JSON
state, :meth:`ModelRegistryView.classify <pi_hookspecs.context.ModelRegistryView.classify>`)
or ``image`` (makes images from a prompt,
:meth:`~pi_hookspecs.context.ModelRegistryView.generate_images`). Classifier and image
models never appear among the chat models; plugins reach them through
``ctx.model_registry`` and scripts through codemode's ``models``.

A wire API for them is registered like a chat API, with
``register(ApiDefinition(name=..., classify=...))`` or ``generate_images=...`` in
``register_providers``: a :data:`ClassifyFunction` or :data:`ImagesFunction` (or
``"module:function"``, imported on the first call).
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import PiModel, now_ms
from .messages import ImageContent, TextContent, Usage

ModelType = Literal["chat", "classifier", "image"]
MODEL_TYPES: tuple[str, ...] = ("chat", "classifier", "image")

KNOWN_CLASSIFIER_APIS: tuple[str, ...] = (
    "typesafe-system-one",
    "cloudflare-workers-ai-system-one",
    "openai-decisions",
    "llama-cpp-classify",
)
KNOWN_IMAGE_APIS: tuple[str, ...] = ("openrouter-images",)


# --------------------------------------------------------------------------- questions


class ClassifierChoiceQuestion(PiModel):
    """Pick one label: ``criteria`` maps each label to what it means."""

    type: Literal["choice"] = "choice"
    instructions: str
    criteria: dict[str, str]


class ClassifierScoreQuestion(PiModel):
    """A level on an ordered scale: ``criteria`` describes each level, lowest first."""

    type: Literal["score"] = "score"
    instructions: str
    criteria: list[str]


class BoolCriteria(PiModel):
    true: str = ""
    false: str = ""


class ClassifierBoolQuestion(PiModel):
    """Yes or no: ``criteria`` says what ``true`` and ``false`` mean."""

    type: Literal["bool"] = "bool"
    instructions: str
    criteria: BoolCriteria = Field(default_factory=BoolCriteria)


ClassifierQuestion = Annotated[
    ClassifierChoiceQuestion | ClassifierScoreQuestion | ClassifierBoolQuestion, Field(discriminator="type")
]


class ClassifierContext(PiModel):
    """What one classifier call judges: ``state`` (JSON), optional ``images`` (only
    models whose ``input`` includes ``"image"`` take them) and the ``questions`` by id,
    all answered by the one call."""

    state: dict[str, Any]
    images: list[ImageContent] = Field(default_factory=list)
    questions: dict[str, ClassifierQuestion]


# --------------------------------------------------------------------------- answers


class ClassifierChoiceAnswer(PiModel):
    type: Literal["choice"] = "choice"
    choice: str
    probabilities: dict[str, float]
    confidence: float


class ClassifierScoreAnswer(PiModel):
    """``score`` is the expected level index, from 0 to ``len(criteria) - 1``."""

    type: Literal["score"] = "score"
    score: float
    confidence: float


class ClassifierBoolAnswer(PiModel):
    """``probability`` is the probability of ``true``."""

    type: Literal["bool"] = "bool"
    probability: float


ClassifierAnswer = Annotated[
    ClassifierChoiceAnswer | ClassifierScoreAnswer | ClassifierBoolAnswer, Field(discriminator="type")
]

ResultStopReason = Literal["stop", "error", "aborted"]


class ClassifierResult(PiModel):
    """The answers of one classifier call. A failed call is a result too: ``stop_reason``
    ``error`` (or ``aborted``) with ``error_message``, and no answers. ``usage`` carries
    the token counts the service reported, priced at the model's catalogue price."""

    api: str = ""
    provider: str = ""
    model: str = ""
    answers: dict[str, ClassifierAnswer] = Field(default_factory=dict)
    usage: Usage | None = None
    stop_reason: ResultStopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)


# --------------------------------------------------------------------------- images


ImagesContent = Annotated[TextContent | ImageContent, Field(discriminator="type")]


class ImagesContext(PiModel):
    """The prompt as text blocks, plus image blocks to edit or use as references."""

    input: list[ImagesContent]


class ImagesResult(PiModel):
    """What an image model made: image blocks (base64), and text blocks for models that
    also write text. A failed call has ``stop_reason`` ``error`` and ``error_message``."""

    api: str = ""
    provider: str = ""
    model: str = ""
    output: list[ImagesContent] = Field(default_factory=list)
    response_id: str | None = None
    usage: Usage | None = None
    stop_reason: ResultStopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)


ClassifyFunction = Callable[..., Awaitable[Any]]
"""``async def classify(model, context, options) -> ClassifierResult``: one call of a
classifier API. ``model`` is the classifier :class:`~pi_hookspecs.llm.Model`, ``context``
a :class:`ClassifierContext`, ``options`` the request's
:class:`~pi_hookspecs.llm.StreamOptions` (credentials resolved, ``signal``,
``temperature``). Return the result (or a dict of its fields); raise on failure — pi
turns the exception into an error result naming the provider."""

ImagesFunction = Callable[..., Awaitable[Any]]
"""``async def generate_images(model, context, options) -> ImagesResult``: one call of an
image API (``context`` an :class:`ImagesContext`); raise on failure, as for
:data:`ClassifyFunction`."""


__all__ = [
    "KNOWN_CLASSIFIER_APIS",
    "KNOWN_IMAGE_APIS",
    "MODEL_TYPES",
    "BoolCriteria",
    "ClassifierAnswer",
    "ClassifierBoolAnswer",
    "ClassifierBoolQuestion",
    "ClassifierChoiceAnswer",
    "ClassifierChoiceQuestion",
    "ClassifierContext",
    "ClassifierQuestion",
    "ClassifierResult",
    "ClassifierScoreAnswer",
    "ClassifierScoreQuestion",
    "ClassifyFunction",
    "ImagesContent",
    "ImagesContext",
    "ImagesFunction",
    "ImagesResult",
    "ModelType",
    "ResultStopReason",
]
