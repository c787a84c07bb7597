"""OpenAI's Decisions API (``openai-decisions``): ``POST <baseUrl>/decisions`` with
``{model, input, questions}``.

``input`` is the state as JSON text; with images, one user message holding the state as
``input_text`` and each image as an ``input_image`` data URL (at most 128). Questions are
a list: ``choice`` with ``choices`` (``{value, description}``), ``score`` with ``levels``
(``{label}``), and ``bool`` as a ``predicate``, which has no criteria, so the meanings of
true and false follow its instructions. Answers come back by ``name``; a ``refusal``
fails the call. Only API keys work: a ChatGPT account's token is refused on this route.

A 504 is not retried: Cloudflare in front of the API answers it when a request runs past
about five seconds, which very large inputs do every time.
"""

from __future__ import annotations

import json
from typing import Any

from pi_hookspecs import ClassifierContext, ClassifierResult, Model, StreamOptions

from ..errors import ProviderError
from ._classifier import bool_meanings, classifier_usage, number, post_json
from ._common import HttpStatusError, join_url

LABEL = "OpenAI Decisions"
MAX_IMAGES = 128


def wire_question(name: str, question: Any) -> dict[str, Any]:
    if question.type == "choice":
        choices = [
            {"value": value, "description": description} if description else {"value": value}
            for value, description in question.criteria.items()
        ]
        return {"type": "choice", "name": name, "instructions": question.instructions, "choices": choices}
    if question.type == "score":
        levels = [{"label": label} for label in question.criteria]
        return {"type": "score", "name": name, "instructions": question.instructions, "levels": levels}
    instructions = question.instructions + bool_meanings(question, "True", "False")
    return {"type": "predicate", "name": name, "instructions": instructions}


def wire_input(context: ClassifierContext) -> Any:
    state = json.dumps(context.state, separators=(",", ":"), ensure_ascii=False)
    if not context.images:
        return state
    if len(context.images) > MAX_IMAGES:
        raise ProviderError(f"{LABEL} takes at most {MAX_IMAGES} images, got {len(context.images)}")
    content: list[dict[str, Any]] = [{"type": "input_text", "text": state}]
    content += [
        {"type": "input_image", "image_url": f"data:{image.mime_type};base64,{image.data}"} for image in context.images
    ]
    return [{"role": "user", "content": content}]


def _answer(question_id: str, question: Any, answer: dict[str, Any]) -> dict[str, Any]:
    kind = answer.get("type")
    if kind == "refusal":
        raise ProviderError(f"{LABEL} refused to answer {question_id}")
    if question.type == "choice":
        if kind != "choice" or not isinstance(answer.get("choice"), str):
            raise ProviderError(f"{LABEL} did not return a choice answer for {question_id}")
        listed = answer.get("probabilities")
        if not isinstance(listed, list):
            raise ProviderError(f"{LABEL} returned invalid probabilities for {question_id}")
        probabilities: dict[str, float] = {}
        for entry in listed:
            if not isinstance(entry, dict) or not isinstance(entry.get("value"), str):
                raise ProviderError(f"{LABEL} returned invalid probabilities for {question_id}")
            probabilities[entry["value"]] = number(
                LABEL, entry.get("probability"), f"probability for {question_id}.{entry['value']}"
            )
        return {
            "type": "choice",
            "choice": answer["choice"],
            "probabilities": probabilities,
            "confidence": number(LABEL, answer.get("confidence"), f"confidence for {question_id}"),
        }
    if question.type == "score":
        if kind != "score":
            raise ProviderError(f"{LABEL} did not return a score answer for {question_id}")
        return {
            "type": "score",
            "score": number(LABEL, answer.get("score"), f"score for {question_id}"),
            "confidence": number(LABEL, answer.get("confidence"), f"confidence for {question_id}"),
        }
    if kind != "predicate":
        raise ProviderError(f"{LABEL} did not return a predicate answer for {question_id}")
    return {"type": "bool", "probability": number(LABEL, answer.get("probability"), f"probability for {question_id}")}


def parse_answers(value: Any, context: ClassifierContext) -> dict[str, Any]:
    if not isinstance(value, list):
        raise ProviderError(f"{LABEL} returned an unexpected response")
    by_name = {a["name"]: a for a in value if isinstance(a, dict) and isinstance(a.get("name"), str)}
    answers: dict[str, Any] = {}
    for question_id, question in context.questions.items():
        answer = by_name.get(question_id)
        if answer is None:
            raise ProviderError(f"{LABEL} did not return an answer for {question_id}")
        answers[question_id] = _answer(question_id, question, answer)
    return answers


class GatewayTimeoutError(ProviderError):
    pass


async def classify_openai_decisions(
    model: Model, context: ClassifierContext, options: StreamOptions
) -> ClassifierResult:
    payload = {
        "model": model.id,
        "input": wire_input(context),
        "questions": [wire_question(question_id, q) for question_id, q in context.questions.items()],
    }
    try:
        body = await post_json(
            join_url(model.base_url or "", "decisions"), payload, model=model, options=options, no_retry_statuses=(504,)
        )
    except HttpStatusError as error:
        if error.status_code == 504:
            raise GatewayTimeoutError(
                f"{LABEL} error (504): the request timed out at the gateway. Very large inputs "
                "(above roughly 600K tokens) currently exceed its time limit."
            ) from error
        raise
    if not isinstance(body, dict):
        raise ProviderError(f"{LABEL} returned an unexpected response")
    fields: dict[str, Any] = {"api": model.api, "provider": model.provider, "model": model.id}
    fields["usage"] = classifier_usage(body.get("usage"), model)  # billed even when refused or malformed
    try:
        fields["answers"] = parse_answers(body.get("answers"), context)
    except ProviderError as error:
        fields.update(stop_reason="error", error_message=str(error))
    return ClassifierResult.model_validate(fields)


__all__ = ["classify_openai_decisions", "parse_answers", "wire_input", "wire_question"]
