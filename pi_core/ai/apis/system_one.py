"""The System One classifier protocol: TypeSafe's (``typesafe-system-one``, also spoken by
OpenRouter, Vercel's AI Gateway, OpenCode, GitHub Copilot and llama.cpp's decision
models) and Cloudflare Workers AI's envelope around it (``cloudflare-workers-ai-system-one``).

A request is ``{model, state, questions}`` (Workers AI: ``{model, input: {state,
questions}}``); a ``bool`` question travels as System One's ``noul`` type. The answer is
``{answers, usage}``: per question ``{type: "choice", choice, probabilities,
confidence}``, ``{type: "score", score, confidence}`` or ``{type: "noul", noul}`` (the
probability of true).

Images go as the service takes them, the provider's ``compat.imageInput``, else detected:

* ``assets`` (TypeSafe, Jev on Workers AI): an ``assets`` map of PNG and JPEG images named
  ``<image-N>``, each name placed before the state;
* ``images`` (Clef on Workers AI): an ``images`` list of data URLs (PNG, JPEG, WebP, at
  most four);
* ``state-image-urls`` (OpenRouter, which drops assets without a word): ``image_url``
  parts before the state.

TypeSafe's own API wants ``TypeSafe-Danger-Zone-Images: true`` with images
(``compat.sendImageOptInHeader``; on by default except towards OpenRouter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_hookspecs import ClassifierContext, ClassifierResult, Model, StreamOptions

from ..errors import ProviderError
from ._classifier import classifier_usage, number, post_json
from ._common import join_url

ASSET_FORMATS = {"image/png": "png", "image/jpeg": "jpeg"}
DATA_URL_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
MAX_DATA_URL_IMAGES = 4
IMAGE_OPT_IN_HEADER = "TypeSafe-Danger-Zone-Images"


@dataclass(frozen=True)
class _Service:
    label: str
    path: str
    envelope: bool
    """Workers AI: the request inside ``input``, the answer inside Cloudflare's envelope."""


TYPESAFE = _Service("System One API", "systemone", envelope=False)
CLOUDFLARE = _Service("Cloudflare Workers AI", "run", envelope=True)


def _is_openrouter(model: Model) -> bool:
    return model.provider == "openrouter" or "openrouter.ai" in (model.base_url or "")


def image_input(model: Model, service: _Service) -> tuple[str, bool]:
    """How ``model`` takes images and whether the opt-in header goes with them."""
    compat = model.compat or {}
    if service is CLOUDFLARE:
        detected = ("images" if model.id.startswith("@cf/cloudflare/clef") else "assets", False)
    elif _is_openrouter(model):
        detected = ("state-image-urls", False)
    else:
        detected = ("assets", True)
    form = compat.get("imageInput") if compat.get("imageInput") in ("assets", "images", "state-image-urls") else None
    header = compat.get("sendImageOptInHeader")
    return form or detected[0], header if isinstance(header, bool) else detected[1]


def wire_request(context: ClassifierContext) -> dict[str, Any]:
    questions: dict[str, Any] = {}
    for question_id, question in context.questions.items():
        data = question.model_dump(mode="json")
        if question.type == "bool":
            data["type"] = "noul"
        questions[question_id] = data
    return {"state": context.state, "questions": questions}


def add_images(service: _Service, model: Model, form: str, context: ClassifierContext, request: dict[str, Any]) -> None:
    images = context.images
    if form == "images":
        if len(images) > MAX_DATA_URL_IMAGES:
            raise ProviderError(
                f"{service.label} takes at most {MAX_DATA_URL_IMAGES} images for {model.id}, got {len(images)}"
            )
        for image in images:
            if image.mime_type not in DATA_URL_TYPES:
                raise ProviderError(
                    f"{service.label} takes PNG, JPEG and WebP images for {model.id}, got {image.mime_type}"
                )
        request["images"] = [f"data:{image.mime_type};base64,{image.data}" for image in images]
        return
    if form == "state-image-urls":
        parts: list[Any] = [
            {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
            for image in images
        ]
        request["state"] = [*parts, request["state"]]
        return
    assets: dict[str, Any] = {}
    for number_, image in enumerate(images, start=1):
        kind = ASSET_FORMATS.get(image.mime_type)
        if kind is None:
            raise ProviderError(f"{service.label} takes PNG and JPEG images for {model.id}, got {image.mime_type}")
        assets[f"<image-{number_}>"] = {"type": "image", "format": kind, "data_base64": image.data}
    request["assets"] = assets
    request["state"] = [*assets, request["state"]]  # every asset is named in the request


def _probabilities(label: str, value: Any, question_id: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ProviderError(f"{label} returned invalid probabilities for {question_id}")
    return {str(k): number(label, v, f"probability for {question_id}.{k}") for k, v in value.items()}


def parse_answers(label: str, value: Any, context: ClassifierContext) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProviderError(f"{label} returned an unexpected response")
    answers: dict[str, Any] = {}
    for question_id, question in context.questions.items():
        answer = value.get(question_id)
        if not isinstance(answer, dict):
            raise ProviderError(f"{label} did not return an answer for {question_id}")
        kind = answer.get("type")
        if question.type == "choice":
            if kind != "choice" or not isinstance(answer.get("choice"), str):
                raise ProviderError(f"{label} did not return a choice answer for {question_id}")
            answers[question_id] = {
                "type": "choice",
                "choice": answer["choice"],
                "probabilities": _probabilities(label, answer.get("probabilities"), question_id),
                "confidence": number(label, answer.get("confidence"), f"confidence for {question_id}"),
            }
        elif question.type == "score":
            if kind != "score":
                raise ProviderError(f"{label} did not return a score answer for {question_id}")
            answers[question_id] = {
                "type": "score",
                "score": number(label, answer.get("score"), f"score for {question_id}"),
                "confidence": number(label, answer.get("confidence"), f"confidence for {question_id}"),
            }
        else:
            if kind != "noul":
                raise ProviderError(f"{label} did not return a bool answer for {question_id}")
            answers[question_id] = {
                "type": "bool",
                "probability": number(label, answer.get("noul"), f"probability for {question_id}"),
            }
    return answers


def _cloudflare_output(body: Any) -> Any:
    label = CLOUDFLARE.label
    if not isinstance(body, dict):
        raise ProviderError(f"{label} returned an unexpected response")
    if body.get("success") is False:
        errors = body.get("errors")
        messages = [e["message"] for e in errors or [] if isinstance(e, dict) and isinstance(e.get("message"), str)]
        raise ProviderError(f"{label} error: {'; '.join(messages)}" if messages else f"{label} request failed")
    result = body.get("result")
    if not isinstance(result, dict):
        raise ProviderError(f"{label} returned an unexpected response")
    if "answers" in result:  # Cloudflare's own models answer directly
        return result
    if result.get("state") != "Completed":  # third-party models wrap a run record
        raise ProviderError(f"{label} run did not complete (state: {result.get('state')})")
    if not isinstance(result.get("result"), dict):
        raise ProviderError(f"{label} returned an unexpected response")
    return result["result"]


async def _classify(
    service: _Service, model: Model, context: ClassifierContext, options: StreamOptions
) -> ClassifierResult:
    request = wire_request(context)
    headers: dict[str, str] = {}
    if context.images:
        if "image" not in model.input:
            raise ProviderError(f"{service.label} does not take image input for {model.id}")
        form, opt_in = image_input(model, service)
        add_images(service, model, form, context, request)
        if opt_in:
            headers[IMAGE_OPT_IN_HEADER] = "true"
    payload = {"model": model.id, "input": request} if service.envelope else {"model": model.id, **request}
    body = await post_json(
        join_url(model.base_url or "", service.path), payload, model=model, options=options, headers=headers
    )
    output = _cloudflare_output(body) if service.envelope else body
    if not isinstance(output, dict):
        raise ProviderError(f"{service.label} returned an unexpected response")
    fields: dict[str, Any] = {"api": model.api, "provider": model.provider, "model": model.id}
    fields["usage"] = classifier_usage(output.get("usage"), model)  # billed even when the answers are malformed
    try:
        fields["answers"] = parse_answers(service.label, output.get("answers"), context)
    except ProviderError as error:
        fields.update(stop_reason="error", error_message=str(error))
    return ClassifierResult.model_validate(fields)


async def classify_typesafe(model: Model, context: ClassifierContext, options: StreamOptions) -> ClassifierResult:
    """``typesafe-system-one``: ``POST <baseUrl>/systemone``."""
    return await _classify(TYPESAFE, model, context, options)


async def classify_cloudflare(model: Model, context: ClassifierContext, options: StreamOptions) -> ClassifierResult:
    """``cloudflare-workers-ai-system-one``: ``POST <baseUrl>/run`` (``…/accounts/{id}/ai/run``)."""
    return await _classify(CLOUDFLARE, model, context, options)


__all__ = ["classify_cloudflare", "classify_typesafe", "image_input"]
