"""The ``openai-codex-responses`` API: the Responses endpoint of the ChatGPT backend
that a ChatGPT Plus/Pro subscription reaches through the Codex login
(``pi auth login openai-codex``), over HTTP and SSE.

The input items and the stream are OpenAI's (:mod:`.openai_responses`). What differs:

* the endpoint is ``<base>/codex/responses`` (base ``https://chatgpt.com/backend-api``);
* ``options.api_key`` is the login's OAuth access token, sent as a bearer token, and
  the ChatGPT account id read from that token (a JWT) goes in ``chatgpt-account-id``;
  ``originator: pi`` and ``OpenAI-Beta: responses=experimental`` go with every request;
* the body is never stored (``store: false``), always asks for the encrypted
  reasoning, lets the model call tools in parallel and keeps the system prompt in a
  leading developer item rather than ``instructions`` (as pi 1.6.0 does, so that the
  prompt cache keeps serving it); the session id is the ``prompt_cache_key``;
* ``response.done`` ends a stream like ``response.completed``; an ``error`` event or
  ``response.failed`` ends it with the backend's message; a usage limit is reported as
  such.

A request goes over a WebSocket first, as pi 1.6.0 sends it (the ``transport``
setting; :mod:`.openai_codex_websocket`), and over HTTP and SSE when that is off or
fails before the answer starts.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from typing import Any

from pi_hookspecs import LlmContext, Model, StreamOptions

from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..models import clamp_thinking_level, provider_thinking_value
from ..token_budget import clamp_max_tokens
from ..transform import PreparedContext, prepare_context, supports_mid_conversation_system
from . import _common
from . import openai_codex_websocket as websocket
from .openai_codex_websocket import CodexApiError
from .openai_responses import (
    CONFIGURATION_UPDATE_REQUEST_EFFORT,
    MIN_OUTPUT_TOKENS,
    ResponsesDecoder,
    convert_input,
    convert_tools,
    effort_update,
    leading_tools,
    tool_changes_in_place,
)
from .openai_responses import _assistant_items as assistant_items

DEFAULT_BASE_URL = "https://chatgpt.com/backend-api"
JWT_CLAIM = "https://api.openai.com/auth"
_STATUSES = frozenset({"completed", "incomplete", "failed", "cancelled", "queued", "in_progress"})


def _compat(model: Model, name: str, default: Any) -> Any:
    value = (model.compat or {}).get(name)
    return default if value is None else value


def resolve_url(base_url: str | None) -> str:
    """The Codex responses endpoint under ``base_url``."""
    raw = (base_url or "").strip() or DEFAULT_BASE_URL
    normalized = raw.rstrip("/")
    if normalized.endswith("/codex/responses"):
        return normalized
    if normalized.endswith("/codex"):
        return normalized + "/responses"
    return normalized + "/codex/responses"


def account_id(token: str) -> str:
    """The ChatGPT account id in the claims of an OAuth access token (a JWT)."""
    try:
        parts = token.split(".")
        if len(parts) != 3:
            raise ValueError("not a JWT")
        segment = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(segment.encode()))
        found = claims[JWT_CLAIM]["chatgpt_account_id"]
        if not isinstance(found, str) or not found:
            raise ValueError("no account id")
        return found
    except (ValueError, KeyError, TypeError) as error:
        raise ProviderError(
            "Failed to extract the ChatGPT account id from the access token: log in again with "
            "`pi auth login openai-codex`"
        ) from error


def cache_session_id(options: StreamOptions) -> str | None:
    retention = options.extra.get("cache_retention") or os.environ.get("PI_CACHE_RETENTION") or "short"
    if retention == "none" or not options.session_id:
        return None
    return options.session_id[:64]


def _prepare(model: Model, context: LlmContext) -> PreparedContext:
    return prepare_context(model, context, mid_conversation_system=supports_mid_conversation_system(model, False))


def codex_effort(model: Model, options: StreamOptions) -> tuple[str | None, str | None]:
    """``(reasoning effort, configuration_update effort)`` of a request: the thinking
    level as the backend names it (``none`` for off on a reasoning model; ``None`` when
    the model takes no reasoning field for it), and the effort sent in
    ``configuration_update`` items when the model takes them (``supportsMidConvoEffort``)."""
    level = clamp_thinking_level(model, options.thinking_level)
    if level == "off":
        if not model.reasoning:
            return None, None
        mapping = model.thinking_level_map or {}
        off = mapping["off"] if "off" in mapping else "none"
        return off, effort_update(model, "none")
    return provider_thinking_value(model, level), effort_update(model, level)


def build_codex_payload(
    model: Model, context: LlmContext, options: StreamOptions, prepared: PreparedContext | None = None
) -> dict[str, Any]:
    prepared = prepared or _prepare(model, context)
    effort, update = codex_effort(model, options)
    in_place = tool_changes_in_place(model)
    payload: dict[str, Any] = {
        "model": model.id,
        "store": False,
        "stream": True,
        "input": convert_input(
            model,
            prepared.system_prompt,
            prepared.messages,
            head_tools=leading_tools(context, prepared) if in_place else None,
            strict=None,
            strict_supported=_strict_supported(model),
            effort=update,
        ),
        "text": {"verbosity": options.extra.get("text_verbosity") or "low"},
        "include": ["reasoning.encrypted_content"],
    }
    session = cache_session_id(options)
    if session:
        payload["prompt_cache_key"] = session
    payload["tool_choice"] = options.extra.get("tool_choice") or "auto"
    payload["parallel_tool_calls"] = True
    if _compat(model, "supportsMaxOutputTokens", True):
        requested = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)  # as pi 1.6.0
        payload["max_output_tokens"] = max(requested, MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    service_tier = options.extra.get("service_tier")
    if service_tier:
        payload["service_tier"] = service_tier
    if prepared.tools and not in_place:
        payload["tools"] = convert_tools(prepared.tools, model, strict=None, strict_supported=_strict_supported(model))
    level = clamp_thinking_level(model, options.thinking_level)
    summary = options.extra.get("reasoning_summary") or "auto"
    if update is not None:
        payload["reasoning"] = {"effort": CONFIGURATION_UPDATE_REQUEST_EFFORT, "summary": summary}
    elif effort is not None:
        payload["reasoning"] = {"effort": effort} if level == "off" else {"effort": effort, "summary": summary}
    return payload


def _strict_supported(model: Model) -> bool:
    """The Codex backend takes strict tools unless the model says otherwise."""
    return _compat(model, "supportsStrictMode", True) is not False


def _force(headers: dict[str, str | None], name: str, value: str) -> None:
    """Set ``name`` to ``value``, replacing any spelling of it already there."""
    for key in [k for k in headers if k.lower() == name.lower()]:
        del headers[key]
    headers[name] = value


def build_headers(model: Model, options: StreamOptions, token: str, session: str | None) -> dict[str, str | None]:
    """pi's defaults, the model's and the request's headers, then the ones the backend
    needs (they always win)."""
    headers = _common.base_headers(model, options)
    headers = {"originator": "pi", **headers} if not _common.has_header(headers, "originator") else headers
    _force(headers, "Authorization", f"Bearer {token}")
    _force(headers, "chatgpt-account-id", account_id(token))
    _force(headers, "OpenAI-Beta", "responses=experimental")
    _force(headers, "Accept", "text/event-stream")
    _force(headers, "Content-Type", "application/json")
    if session:
        _force(headers, "session-id", session)
        _force(headers, "x-client-request-id", session)
    return headers


def usage_limit_message(error: _common.HttpStatusError) -> str | None:
    """The message for a usage limit (HTTP 429 or a usage/rate-limit code), else ``None``."""
    body = error.body
    details = body.get("error") if isinstance(body, dict) else None
    if not isinstance(details, dict):
        return None
    code = str(details.get("code") or details.get("type") or "")
    if error.status_code != 429 and not any(
        word in code.lower() for word in ("usage_limit_reached", "usage_not_included", "rate_limit_exceeded")
    ):
        return None
    plan = details.get("plan_type")
    text = "You have hit your ChatGPT usage limit" + (f" ({str(plan).lower()} plan)" if plan else "") + "."
    resets = details.get("resets_at")
    if isinstance(resets, int | float):
        minutes = max(0, round((resets - time.time()) / 60))
        text += f" Try again in ~{minutes} min."
    return text


def codex_event_mapper(out: MessageBuilder) -> Callable[[Any], Any]:
    """The Codex events as the Responses decoder reads them: ``error`` and
    ``response.failed`` raise the backend's message (:class:`CodexApiError`, with its
    code); ``response.done`` and ``response.incomplete`` become ``response.completed``
    (its ``end_turn`` recorded, an unknown status dropped)."""

    def map_event(event: Any) -> Any:
        if not isinstance(event, dict):
            return event
        kind = event.get("type")
        if kind == "error":
            nested = event["error"] if isinstance(event.get("error"), dict) else {}
            code = event.get("code") if isinstance(event.get("code"), str) else nested.get("code")
            message = event.get("message") or nested.get("message") or code
            raise CodexApiError(f"Codex error: {message or json.dumps(event)}", code if isinstance(code, str) else None)
        if kind == "response.failed":
            failure = _common.field(event, "response", "error") or {}
            code = failure.get("code")
            raise CodexApiError(
                str(failure.get("message") or "Codex response failed"), code if isinstance(code, str) else None
            )
        if kind in ("response.done", "response.completed", "response.incomplete"):
            response = dict(event.get("response") or {})
            if isinstance(response.get("end_turn"), bool):
                out.message.end_turn = response["end_turn"]
            status = response.get("status")
            response["status"] = status if status in _STATUSES else None
            return {**event, "type": "response.completed", "response": response}
        return event

    return map_event


async def stream_openai_codex_responses(
    model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder
) -> None:
    token = options.api_key
    if not token:
        raise ProviderError(f"No API key for provider: {model.provider}. Log in with `pi auth login openai-codex`")
    session = cache_session_id(options)
    headers = build_headers(model, options, token, session)
    prepared = _prepare(model, context)
    payload = build_codex_payload(model, context, options, prepared)
    out.message.provider_thinking_level = codex_effort(model, options)[1]
    decoder = ResponsesDecoder(out)
    map_event = codex_event_mapper(out)
    url = resolve_url(model.base_url)
    sse_options = options
    if websocket.websocket_enabled(options, session):
        # the payload hook runs once, whichever transport carries the request
        payload = await _common.apply_payload_hook(options, payload)
        sse_options = options.model_copy(update={"on_payload": None})
        position = len(prepared.messages)
        request = websocket.Request(
            model=model,
            options=options,
            out=out,
            url=url,
            headers=headers,
            payload=payload,
            session=session,
            account=account_id(token),
            map_event=map_event,
            decoder=decoder,
            response_items=lambda: assistant_items(out.message, model, position),
        )
        if await websocket.send(request):
            if not decoder.terminal:
                raise ProviderError("Codex stream ended without a stop reason")
            return

    async def on_event(name: str, event: Any) -> None:
        await decoder(name, map_event(event))

    try:
        await _common.post_sse(url, payload=payload, headers=headers, options=sse_options, out=out, on_event=on_event)
    except _common.HttpStatusError as error:
        friendly = usage_limit_message(error)
        if friendly is None:
            raise
        raise ProviderError(friendly) from error
    if not decoder.terminal:
        raise ProviderError("Codex stream ended without a stop reason")
