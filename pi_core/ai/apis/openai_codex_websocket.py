"""The WebSocket transport of ``openai-codex-responses``, as pi 1.6.0 uses it.

With the ``transport`` setting ``auto`` (the default), ``websocket`` or
``websocket-cached``, a Codex request first goes over a WebSocket to the responses
endpoint (``wss://…/codex/responses``): the upgrade request carries the HTTP
transport's headers except ``Accept`` and ``Content-Type``, with
``OpenAI-Beta: responses_websockets=2026-02-06`` and the session id (or a fresh id) as
``session-id`` and ``x-client-request-id``; the request is one text frame,
``{"type": "response.create", …the request body…}``, and every frame that comes back is
one Responses event, up to ``response.completed`` / ``response.done`` /
``response.incomplete``.

* A session keeps its socket open between requests (per ChatGPT account): idle for five
  minutes it is closed, and a new request opens a fresh one once the socket is 45
  minutes old (the server ends sockets after an hour, even mid-response).
* ``auto`` and ``websocket-cached`` continue from the previous response on that socket:
  when a request's body equals the last one apart from its input, and its input starts
  with the last input plus the items of the last answer, only the new items are sent,
  with ``previous_response_id``. The backend answering ``previous_response_not_found``
  gets the whole request once more; ``websocket_connection_limit_reached`` before
  anything arrived gets one new connection.
* A WebSocket that cannot be opened, or breaks before the first event, sends the request
  over HTTP and SSE instead, and the session stays on SSE from then on (the message
  records the failure in its ``diagnostics``); one that breaks after events arrived
  fails the request. An error the backend reports (an ``error`` event, a failed
  response) fails it over either transport.

With a proxy configured (``HTTPS_PROXY`` …) Codex requests use SSE only: the proxied
client speaks HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_hookspecs import Model, StreamOptions

from ..._async import maybe_await
from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..session_resources import on_session_released
from . import _common

if TYPE_CHECKING:
    from ._websocket import WebSocket

BETA_HEADER = "responses_websockets=2026-02-06"
DEFAULT_CONNECT_TIMEOUT = 15.0
IDLE_TTL = 5 * 60.0
MAX_AGE = 45 * 60.0
TRANSPORTS = ("auto", "sse", "websocket", "websocket-cached")
CONNECTION_LIMIT_CODE = "websocket_connection_limit_reached"
PREVIOUS_RESPONSE_NOT_FOUND = "previous_response_not_found"
_TERMINAL = frozenset({"response.completed", "response.done", "response.incomplete"})


class CodexApiError(ProviderError):
    """An error the Codex backend reported in its stream (never a transport failure)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class CodexProtocolError(ProviderError):
    """A frame that is not a JSON event."""


class _CallbackError(ProviderError):
    """A raw-event hook failed: reported as is, never a reason to change transport."""


@dataclass
class _Continuation:
    request: dict[str, Any]
    response_id: str
    response_items: list[dict[str, Any]]


@dataclass
class _Entry:
    socket: WebSocket
    created: float = field(default_factory=time.monotonic)
    busy: bool = False
    idle: asyncio.TimerHandle | None = None
    continuation: _Continuation | None = None


_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], _Entry]] = (
    weakref.WeakKeyDictionary()
)
_sse_sessions: set[str] = set()
"""Sessions whose WebSocket failed: they stay on SSE (for this process)."""


def transport_of(options: StreamOptions) -> str:
    value = options.extra.get("transport")
    return value if value in TRANSPORTS else "auto"


def websocket_enabled(options: StreamOptions, session: str | None) -> bool:
    """Whether this request tries the WebSocket first."""
    if transport_of(options) == "sse" or (session is not None and session in _sse_sessions):
        return False
    return not any(os.environ.get(name) for name in _common._PROXY_VARIABLES)


def websocket_url(http_url: str) -> str:
    if http_url.startswith("https:"):
        return "wss:" + http_url[len("https:") :]
    if http_url.startswith("http:"):
        return "ws:" + http_url[len("http:") :]
    return http_url


def websocket_headers(http_headers: dict[str, str | None], request_id: str) -> dict[str, str | None]:
    """The upgrade request's headers: the HTTP transport's, without ``Accept``,
    ``Content-Type`` and the HTTP beta flag, with the WebSocket beta flag and
    ``request_id`` as the session and request id."""
    dropped = {"accept", "content-type", "openai-beta", "session-id", "x-client-request-id"}
    headers = {name: value for name, value in http_headers.items() if name.lower() not in dropped}
    headers["OpenAI-Beta"] = BETA_HEADER
    headers["x-client-request-id"] = request_id
    headers["session-id"] = request_id
    return headers


def connect_timeout(options: StreamOptions) -> float | None:
    """``websocketConnectTimeoutMs`` in seconds (``options.extra["websocket_connect_timeout"]``;
    ``None`` or ``0`` there: no limit), else 15 s."""
    if "websocket_connect_timeout" not in options.extra:
        return DEFAULT_CONNECT_TIMEOUT
    value = options.extra["websocket_connect_timeout"]
    return float(value) if isinstance(value, int | float) and value > 0 else None


def reset_sessions() -> None:
    """Forget the sessions that fell back to SSE (and close the cached sockets of the
    running loop): for tests and ``/new``-like restarts."""
    _sse_sessions.clear()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for entry in _sessions.pop(loop, {}).values():
        _drop(entry)


def close_session(session_id: str) -> None:
    """Close the sockets kept for ``session_id`` (a disposed session's), whatever the
    account or the event loop, as pi 1.6.0 does rather than waiting for the idle timer."""
    key = session_id[:64]
    for table in list(_sessions.values()):
        for cached in [k for k in table if k[0] == key]:
            _drop(table.pop(cached))


on_session_released(close_session)


# --------------------------------------------------------------------------- sockets


def _drop(entry: _Entry) -> None:
    if entry.idle is not None:
        entry.idle.cancel()
    entry.socket.close_now(1000, "done")


async def _open(url: str, headers: dict[str, str], timeout: float | None) -> WebSocket:
    from ._websocket import connect

    return await connect(url, headers, timeout=timeout)


Release = Callable[[bool], None]


async def _acquire(
    url: str, headers: dict[str, str], session: str | None, account: str, timeout: float | None
) -> tuple[WebSocket, _Entry | None, Release]:
    """A socket for one request: the session's cached one when it is free and young,
    else a new one (cached for the session when the session has none in use)."""
    if session is None:
        socket = await _open(url, headers, timeout)
        return socket, None, lambda keep: socket.close_now(1000, "done")
    loop = asyncio.get_running_loop()
    table = _sessions.setdefault(loop, {})
    key = (session, account)
    cached = table.get(key)
    if cached is not None:
        if cached.idle is not None:
            cached.idle.cancel()
            cached.idle = None
        if not cached.busy and time.monotonic() - cached.created >= MAX_AGE:
            cached.socket.close_now(1000, "connection_age_limit")
            del table[key]
        elif not cached.busy and cached.socket.open:
            cached.busy = True
            return cached.socket, cached, _releaser(table, key, cached, loop)
        elif cached.busy:
            socket = await _open(url, headers, timeout)
            return socket, None, lambda keep: socket.close_now(1000, "done")
        else:
            cached.socket.close_now(1000, "done")
            del table[key]
    socket = await _open(url, headers, timeout)
    entry = _Entry(socket, busy=True)
    table[key] = entry
    return socket, entry, _releaser(table, key, entry, loop)


def _releaser(
    table: dict[tuple[str, str], _Entry], key: tuple[str, str], entry: _Entry, loop: asyncio.AbstractEventLoop
) -> Release:
    def release(keep: bool) -> None:
        if not keep or not entry.socket.open:
            entry.socket.close_now(1000, "done")
            if table.get(key) is entry:
                del table[key]
            return
        entry.busy = False

        def expire() -> None:
            if entry.busy:
                return
            entry.socket.close_now(1000, "idle_timeout")
            if table.get(key) is entry:
                del table[key]

        entry.idle = loop.call_later(IDLE_TTL, expire)

    return release


# --------------------------------------------------------------------------- continuation


def _without_input(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("input", "previous_response_id")}


def continued_body(entry: _Entry, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the continuation of the socket's last response when it is one (only
    the new input, with ``previous_response_id``), else ``body`` (and the socket's
    continuation is forgotten)."""
    last = entry.continuation
    if last is None:
        return body
    delta = _input_delta(body, last)
    if delta is None:
        entry.continuation = None
        return body
    return {**body, "previous_response_id": last.response_id, "input": delta}


def _input_delta(body: dict[str, Any], last: _Continuation) -> list[Any] | None:
    if _without_input(body) != _without_input(last.request):
        return None
    current = body.get("input") or []
    baseline = [*(last.request.get("input") or []), *last.response_items]
    if not isinstance(current, list) or len(current) < len(baseline) or current[: len(baseline)] != baseline:
        return None
    return current[len(baseline) :]


# --------------------------------------------------------------------------- one request


EventMapper = Callable[[Any], Any]
"""Turns a Codex event into the event the Responses decoder reads (raising for the
backend's errors)."""


@dataclass
class Request:
    """What one WebSocket request needs from the Codex client."""

    model: Model
    options: StreamOptions
    out: MessageBuilder
    url: str
    headers: dict[str, str | None]
    payload: dict[str, Any]
    session: str | None
    account: str
    map_event: EventMapper
    decoder: Callable[[str, Any], Awaitable[None]]
    response_items: Callable[[], list[dict[str, Any]]]
    """The items of the answer as the next request's input will hold them."""


async def send(request: Request) -> bool:
    """Send ``request`` over a WebSocket. ``True`` when it was answered; ``False`` when
    the WebSocket failed before anything arrived (the caller sends it over SSE);
    raises for the backend's errors and for a transport failure after events arrived."""
    options = request.options
    transport = transport_of(options)
    retried_limit = retried_missing = False
    started = False
    while True:
        started = False

        def on_start() -> None:
            nonlocal started
            started = True

        try:
            await _exchange(request, transport, on_start)
            return True
        except asyncio.CancelledError:
            raise
        except CodexApiError as error:
            if error.code == PREVIOUS_RESPONSE_NOT_FOUND and not retried_missing:
                retried_missing = True
                continue
            limit_before_start = error.code == CONNECTION_LIMIT_CODE and not started
            if limit_before_start and not retried_limit:
                retried_limit = True
                continue
            if not limit_before_start:
                raise
            # the connection limit again: the request goes over SSE
            failure: BaseException = error
        except (CodexProtocolError, _CallbackError, _common.ResponseDeadlineError, _common.OutputOverrunError):
            raise
        except Exception as error:
            if not _is_transport_failure(error):
                raise
            failure = error
        _record_failure(request, transport, failure, started)
        if started:
            raise failure
        return False


def _is_transport_failure(error: BaseException) -> bool:
    """A failure of the WebSocket itself (or no WebSocket support): SSE may still work."""
    if isinstance(error, ImportError | OSError):
        return True
    from ._transport import TransportError

    return isinstance(error, TransportError)


def _record_failure(request: Request, transport: str, error: BaseException, started: bool) -> None:
    if request.session is not None:
        _sse_sessions.add(request.session)
    details: dict[str, Any] = {
        "configuredTransport": transport,
        "eventsEmitted": started,
        "phase": "after_message_stream_start" if started else "before_message_stream_start",
        "requestBytes": len(_common.encode_payload(request.payload)),
    }
    if not started:
        details["fallbackTransport"] = "sse"
    diagnostic = {
        "type": "provider_transport_failure",
        "timestamp": int(time.time() * 1000),
        "error": {"name": type(error).__name__, "message": str(error) or type(error).__name__},
        "details": details,
    }
    message = request.out.message
    message.diagnostics = [*(message.diagnostics or []), diagnostic]


async def _exchange(request: Request, transport: str, on_start: Callable[[], None]) -> None:
    options, out = request.options, request.out
    request_id = request.session or str(uuid.uuid4())
    headers = await _common.apply_headers_hook(options, websocket_headers(request.headers, request_id))
    sent_headers = _common._final_headers(headers)
    socket, entry, release = await _acquire(
        websocket_url(request.url), sent_headers, request.session, request.account, connect_timeout(options)
    )
    use_cached = transport in ("auto", "websocket-cached")
    body = continued_body(entry, request.payload) if use_cached and entry is not None else request.payload
    keep = True
    limit = _common._requested_max_tokens(request.payload, options, out)
    meter = _common._OutputMeter(out, limit) if limit else None
    deadline = _common.response_deadline(options)
    scope = asyncio.timeout(deadline)
    try:
        async with scope:
            await socket.send(_common.encode_payload({"type": "response.create", **body}).decode("utf-8"))
            await _events(socket, request, on_start, meter)
        if use_cached and entry is not None and out.message.response_id:
            entry.continuation = _Continuation(request.payload, out.message.response_id, request.response_items())
    except TimeoutError as error:
        keep = False
        if entry is not None:
            entry.continuation = None
        if not scope.expired():
            raise
        raise _common.ResponseDeadlineError(
            f"The response did not end within {_common._seconds_text(deadline or 0)} of the request "
            "(httpResponseDeadlineMs); pi stopped waiting for it"
        ) from error
    except BaseException:
        keep = False
        if entry is not None:
            entry.continuation = None
        raise
    finally:
        release(keep)


async def _events(
    socket: WebSocket, request: Request, on_start: Callable[[], None], meter: _common._OutputMeter | None
) -> None:
    options, out = request.options, request.out
    idle = _common.request_timeout(options)
    started = False
    while True:
        text = await socket.receive(idle)
        try:
            event = json.loads(text)
        except ValueError as error:
            raise CodexProtocolError(f"Invalid Codex WebSocket JSON: {text[:200]!r}") from error
        if options.on_raw_event is not None:
            try:
                await maybe_await(options.on_raw_event(event))
            except Exception as error:
                raise _CallbackError(f"{type(error).__name__}: {error}") from error
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(kind, str):
            continue
        mapped = request.map_event(event)
        if not started:
            started = True
            on_start()
            out.start()
        await request.decoder(kind, mapped)
        if meter is not None:
            meter.check()
        if kind in _TERMINAL:
            return


__all__ = [
    "BETA_HEADER",
    "CodexApiError",
    "CodexProtocolError",
    "Request",
    "continued_body",
    "reset_sessions",
    "send",
    "websocket_enabled",
    "websocket_headers",
    "websocket_url",
]
