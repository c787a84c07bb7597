"""What the SDK-backed APIs share: headers and hook calls, SDK client reuse."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from pi_hookspecs import Model, StreamOptions

from ... import __version__ as _pi_version
from ..errors import NoApiKeyError
from ..stream import MessageBuilder, maybe_await

USER_AGENT = f"pi-python/{_pi_version}"


def base_headers(model: Model, options: StreamOptions, **extra: str | None) -> dict[str, str | None]:
    """The request headers pi assembles: its user agent, the model's headers, the
    API's own (``extra``), then the per-request ``options.headers`` (later wins)."""
    headers: dict[str, str | None] = {"User-Agent": USER_AGENT}
    headers.update(model.headers or {})
    headers.update({k: v for k, v in extra.items() if v is not None})
    headers.update(options.headers)
    return headers


def has_header(headers: dict[str, str | None], name: str) -> bool:
    wanted = name.lower()
    return any(key.lower() == wanted and value for key, value in headers.items())


async def apply_headers_hook(options: StreamOptions, headers: dict[str, str | None]) -> dict[str, str | None]:
    """Let ``options.on_headers`` mutate ``headers`` in place (``None`` removes one)."""
    if options.on_headers is not None:
        await maybe_await(options.on_headers(headers))
    return headers


def sdk_headers(headers: dict[str, str | None], omit: Any) -> dict[str, Any]:
    """``headers`` for an SDK's ``extra_headers``: a removed header becomes the SDK's
    ``omit`` sentinel, which also drops the SDK's own default of that name."""
    return {key: (omit if value is None else value) for key, value in headers.items()}


async def apply_payload_hook(options: StreamOptions, payload: dict[str, Any]) -> Any:
    """``options.on_payload(payload)``: its result (awaited) replaces the payload
    unless it is ``None``."""
    if options.on_payload is None:
        return payload
    replaced = await maybe_await(options.on_payload(payload))
    return payload if replaced is None else replaced


async def report_response(options: StreamOptions, status: int, headers: Any) -> None:
    if options.on_response is not None:
        await maybe_await(options.on_response(status, {str(k): str(v) for k, v in dict(headers).items()}))


async def report_raw_event(options: StreamOptions, event: Any) -> None:
    """``options.on_raw_event`` with the provider event as a plain dict."""
    if options.on_raw_event is None:
        return
    data = event.to_dict() if hasattr(event, "to_dict") else event
    await maybe_await(options.on_raw_event(data))


async def report_error_response(options: StreamOptions, error: BaseException) -> None:
    """For an HTTP error raised by an SDK: report its status and headers first."""
    response = getattr(error, "response", None)
    status = getattr(error, "status_code", None)
    if response is not None and isinstance(status, int):
        await report_response(options, status, response.headers)


def require_api_key(model: Model, options: StreamOptions, headers: dict[str, str | None], *auth_headers: str) -> str:
    """The request's API key, or the placeholder ``"unused"`` when the headers carry
    the credential; raises :class:`NoApiKeyError` otherwise."""
    if options.api_key:
        return options.api_key
    if any(has_header(headers, name) for name in auth_headers):
        return "unused"
    raise NoApiKeyError(model.provider)


def request_timeout(options: StreamOptions) -> float | None:
    value = options.extra.get("timeout")
    return float(value) if isinstance(value, int | float) else None


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def cached_client(key: tuple[Any, ...], factory: Callable[[], Any]) -> Any:
    """One SDK client per ``key`` and event loop: connections are reused between
    requests, and never shared across loops."""
    loop = asyncio.get_running_loop()
    per_loop = _clients.setdefault(loop, {})
    client = per_loop.get(key)
    if client is None:
        if len(per_loop) >= 32:
            per_loop.clear()
        client = factory()
        per_loop[key] = client
    return client


async def post_stream(
    client: Any,
    path: str,
    *,
    payload: Any,
    headers: dict[str, Any],
    options: StreamOptions,
    out: MessageBuilder,
    cast_to: Any,
    stream_cls: Any,
    status_error: type[BaseException],
    consume: Callable[[Any], Awaitable[None]],
) -> None:
    """POST ``payload`` to ``path`` as a stream with the SDK ``client`` (no retries,
    ``options``' timeout), report the response (or the ``status_error`` the SDK
    raises) through ``options``, start ``out`` and hand the stream to ``consume``;
    the stream is closed afterwards."""
    request_options: dict[str, Any] = {"headers": headers, "max_retries": 0}
    timeout = request_timeout(options)
    if timeout is not None:
        request_options["timeout"] = timeout
    try:
        events = await client.post(
            path,
            cast_to=cast_to,
            body=payload,
            options=request_options,
            stream=True,
            stream_cls=stream_cls,
        )
    except status_error as error:
        await report_error_response(options, error)
        raise
    try:
        await report_response(options, events.response.status_code, events.response.headers)
        out.start()
        await consume(events)
    finally:
        await events.close()


async def stream_openai(
    model: Model,
    options: StreamOptions,
    out: MessageBuilder,
    *,
    payload: dict[str, Any],
    extra_headers: dict[str, str | None],
    base_url: str,
    path: str,
    sdk_types: Callable[[], tuple[Any, Any]],
    consume: Callable[[Any], Awaitable[None]],
) -> None:
    """One streaming request of an OpenAI API through the ``openai`` SDK: the headers
    (with ``extra_headers``) and payload passed through the ``options`` hooks, then
    :func:`post_stream` to ``path``. ``sdk_types()`` imports and returns the SDK's
    response type and stream class of the API; the SDK is imported only here, once
    the request is known to have credentials."""
    headers = base_headers(model, options, **extra_headers)
    api_key = require_api_key(model, options, headers, "authorization")
    headers = await apply_headers_hook(options, headers)
    body = await apply_payload_hook(options, payload)

    import openai

    cast_to, stream_cls = sdk_types()
    client = cached_client(
        ("openai", base_url, api_key),
        lambda: openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0),
    )
    await post_stream(
        client,
        path,
        payload=body,
        headers=sdk_headers(headers, openai.omit),
        options=options,
        out=out,
        cast_to=cast_to,
        stream_cls=stream_cls,
        status_error=openai.APIStatusError,
        consume=consume,
    )
