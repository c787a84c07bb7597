"""What the classifier and image APIs share: one JSON POST with pi's headers, hooks and
provider retries, and the usage a service reports, priced from the catalogue.

These APIs answer with one JSON body, not a stream. A failed request raises
(:class:`~pi_core.ai.apis._common.HttpStatusError` for an HTTP error status, a
:class:`~pi_core.ai.errors.ProviderError` for an answer pi cannot read);
:mod:`pi_core.ai.classify` turns that into the result's ``error_message``.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from pydantic_core import to_json

from pi_hookspecs import Model, StreamOptions, Usage

from ..errors import ProviderError
from ..models import calculate_cost
from ._common import (
    CONNECT_TIMEOUT,
    HttpStatusError,
    _client_for,
    _failure,
    _final_headers,
    _parse_body,
    apply_headers_hook,
    apply_payload_hook,
    base_headers,
    report_response,
    request_timeout,
    set_bearer_auth,
)


async def post_json(
    url: str,
    payload: dict[str, Any],
    *,
    model: Model,
    options: StreamOptions,
    headers: dict[str, str] | None = None,
    bearer: bool = True,
    no_retry_statuses: Collection[int] = (),
) -> Any:
    """POST ``payload`` as JSON to ``url`` and return the parsed JSON answer.

    Headers are pi's (the model's, ``headers``, the request's), with ``Authorization:
    Bearer <key>`` (required with ``bearer``, else sent only when there is a key); the
    ``options`` hooks see the headers, the payload and the response status as for the
    chat APIs. Statuses in ``no_retry_statuses`` fail at once; others are retried by
    pi's provider retry policy."""
    from pi_hookspecs.streaming import send_with_retries

    assembled = base_headers(model, options, **(headers or {}))
    assembled.setdefault("Content-Type", "application/json")
    if bearer:
        set_bearer_auth(model, options, assembled)
    elif options.api_key:
        assembled.setdefault("Authorization", f"Bearer {options.api_key}")
    assembled = await apply_headers_hook(options, assembled)
    sent_payload = await apply_payload_hook(options, payload)
    body = to_json(sent_payload)
    sent = _final_headers(assembled)
    timeout = request_timeout(options)
    connect = CONNECT_TIMEOUT if timeout is None else min(timeout, CONNECT_TIMEOUT)
    client = _client_for(url)

    async def send() -> tuple[int, dict[str, str], Any]:
        response = await client.post(url, body, sent, timeout=timeout, connect_timeout=connect)
        try:
            raw = await response.aread()
        finally:
            await response.aclose()
        found = dict(response.headers)
        if response.status_code >= 400:
            await report_response(options, response.status_code, found)
            raise HttpStatusError(response.status_code, _parse_body(raw), found)
        return response.status_code, found, _parse_body(raw)

    def failure(error: BaseException) -> tuple[int | None, float | None] | None:
        if isinstance(error, HttpStatusError) and error.status_code in no_retry_statuses:
            return None
        return _failure(error)

    status, answer_headers, parsed = await send_with_retries(send, options, failure)
    await report_response(options, status, answer_headers)
    if isinstance(parsed, str):
        raise ProviderError(f"the service answered {status} with a body that is not JSON: {parsed[:200]!r}")
    return parsed


def bool_meanings(question: Any, true: str, false: str) -> str:
    """A bool question's criteria as text to append to its instructions: after a blank
    line, ``<true> means: ...`` and ``<false> means: ...`` (each only when given); ``""``
    when neither is."""
    criteria = question.criteria
    meanings = [f"{word} means: {text}" for word, text in ((true, criteria.true), (false, criteria.false)) if text]
    return "\n\n" + "\n".join(meanings) if meanings else ""


def number(label: str, value: Any, what: str) -> float:
    """``value`` as a finite number, else a :class:`ProviderError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProviderError(f"{label} returned an invalid {what}")
    return float(value)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def classifier_usage(value: Any, model: Model) -> Usage | None:
    """Usage from ``{"input_tokens", "output_tokens"}``, priced at the model's catalogue
    price; ``None`` when the service reported no counts (a malformed usage object does
    not fail the result)."""
    if not isinstance(value, dict) or ("input_tokens" not in value and "output_tokens" not in value):
        return None
    usage = Usage(input=_count(value.get("input_tokens")), output=_count(value.get("output_tokens")))
    usage.total_tokens = usage.input + usage.output
    return calculate_cost(model, usage)


__all__ = ["classifier_usage", "number", "post_json"]
