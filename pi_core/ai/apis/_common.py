"""What the wire APIs share: headers and hook calls, one pooled HTTP client per
endpoint, and the streaming POST that turns a response into decoded SSE events.

The APIs speak HTTP (:mod:`._transport`, h11 on asyncio) and server-sent events
(:mod:`._sse`) themselves: the official provider SDKs cost one to one and a half seconds
to import (thousands of pydantic types), most of a ``pi -p`` run, and an HTTP library
another 20 to 55 ms. The SDKs remain the reference the conformance tests hold these
decoders to (tests/ai/conformance); httpx2 serves the requests only when a proxy is
configured.
"""

from __future__ import annotations

import asyncio
import json
import math
import operator
import os
import re
import sys
import time
import weakref
from bisect import bisect_right
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from pi_hookspecs import Model, StreamOptions
from pi_hookspecs.streaming import retry_after_seconds, send_with_retries

from ... import __version__ as _pi_version
from ..._async import maybe_await
from ..errors import NoApiKeyError, ProviderError, note_requested_delay
from ..message_stream import MessageBuilder

if TYPE_CHECKING:
    # Imported where a request needs it, not with this module: importing an API module
    # stays free of the HTTP client, which preload() brings in on a background thread
    # (tests/ai/test_ai_faux.py holds this).
    from ._transport import HttpClient, Response

USER_AGENT = f"pi-python/{_pi_version}"
DEFAULT_TIMEOUT = 600.0  # seconds without a byte before a request fails (the SDKs' default)
CONNECT_TIMEOUT = 30.0
DEFAULT_RESPONSE_DEADLINE = 1800.0
"""Seconds from sending a request to the end of its response, whatever arrives meanwhile
(``httpResponseDeadlineMs``): keep-alive comments forever cannot hold a turn open. Half
an hour: the longest real answers (128k output tokens at some 70 tokens a second) fit."""
OUTPUT_OVERRUN_FACTOR = 2
OUTPUT_OVERRUN_SLACK = 1024
"""A response is stopped once its output, estimated at four characters a token, passes
``OUTPUT_OVERRUN_FACTOR`` times the request's ``maxTokens`` plus this many tokens: a
server that streams past the limit it was given would otherwise stream forever. The
margin is wide because the estimate is rough (a legitimate answer at the limit would need
more than eight characters a token to reach it)."""
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


class HttpStatusError(ProviderError):
    """A provider answered with an HTTP error status, or sent an error event inside a
    successful stream (then ``status_code`` is the stream's, below 400).

    ``body`` is the parsed JSON body when it was JSON, else its text; ``headers`` are
    the response headers (lower-case names); :attr:`retry_after` is the delay the
    provider asked for, in seconds, when it gave one.
    """

    def __init__(self, status_code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.status_code = status_code
        self.body = body
        self.headers = headers or {}
        super().__init__(_body_text(body) or f"HTTP {status_code}")

    @property
    def message(self) -> str:
        return str(self)

    @property
    def retry_after(self) -> float | None:
        from_headers = requested_delay(self.headers, self.status_code)
        return from_headers if from_headers is not None else body_retry_delay(self.body)


_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)s\s*")


def body_retry_delay(body: Any) -> float | None:
    """The wait a Google error body asks for: the ``retryDelay`` of its
    ``google.rpc.RetryInfo`` detail (``{"error": {"details": [{"@type":
    "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}]}}``; a
    protobuf ``Duration`` as JSON, or as ``{"seconds": 13, "nanos": 0}``), in
    seconds; ``None`` when the body has none."""
    if isinstance(body, list) and body:
        body = body[0]
    details = field(body, "error", "details")
    if not isinstance(details, list):
        return None
    for detail in details:
        if not isinstance(detail, dict) or not str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            continue
        delay = detail.get("retryDelay")
        if isinstance(delay, str):
            match = _DURATION.fullmatch(delay)
            if match:
                return float(match.group(1))
        elif isinstance(delay, dict):
            seconds, nanos = delay.get("seconds", 0), delay.get("nanos", 0)
            if isinstance(seconds, str) and seconds.isdigit():
                seconds = int(seconds)
            if isinstance(seconds, int | float) and isinstance(nanos, int | float):
                return max(0.0, float(seconds) + float(nanos) / 1e9)
    return None


def requested_delay(headers: Any, status: int | None = None) -> float | None:
    """The seconds a failed response asks the client to wait before trying again:
    ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date) or
    ``x-ratelimit-reset-after``; on a 429 also the rate-limit reset headers
    (``x-ratelimit-reset-requests: 1s`` / ``6m0s`` as OpenAI sends them, Anthropic's
    ``anthropic-ratelimit-*-reset`` RFC 3339 times): of the limits the response says
    are used up (``…-remaining…: 0``), or whose remaining count it does not give, the
    latest reset; ``None`` when it asks for nothing readable."""
    lowered = {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}
    direct = retry_after_seconds(lowered)
    if direct is not None or status != 429:
        return direct
    exhausted: list[float] = []
    others: list[float] = []
    for name, value in lowered.items():
        kind = _reset_kind(name)
        if kind is None:
            continue
        seconds = _reset_seconds(value)
        if seconds is None:
            continue
        prefix, limit = kind
        remaining = lowered.get(
            f"{prefix}-remaining-{limit}" if prefix == "x-ratelimit" else f"{prefix}-{limit}-remaining"
        )
        (others if remaining not in (None, "0") else exhausted).append(seconds)
    if exhausted:
        return max(exhausted)
    return min(others) if others else None


_OPENAI_RESET = re.compile(r"(x-ratelimit)-reset-([a-z-]+)")
_ANTHROPIC_RESET = re.compile(r"(anthropic-ratelimit)-([a-z-]+)-reset")
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _reset_kind(name: str) -> tuple[str, str] | None:
    """``(prefix, limit)`` of a rate-limit reset header (``x-ratelimit-reset-tokens``
    -> ``("x-ratelimit", "tokens")``), else ``None``."""
    match = _OPENAI_RESET.fullmatch(name) or _ANTHROPIC_RESET.fullmatch(name)
    if match is None or match.group(2) == "after":  # x-ratelimit-reset-after: read as retry-after
        return None
    return match.group(1), match.group(2)


def _reset_seconds(value: str) -> float | None:
    """Seconds until a reset given as a duration (``1s``, ``6m0s``, ``250ms``, a plain
    number of seconds) or a point in time (RFC 3339, as Anthropic sends it)."""
    text = value.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    if _GO_DURATION.match(text) and not _GO_DURATION.sub("", text):
        return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _GO_DURATION.findall(text))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - time.time())


def _body_text(body: Any) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        return json.dumps(body)
    return str(body or "").strip()


# --------------------------------------------------------------------------- headers and hooks


COPILOT_PROVIDER = "github-copilot"
_LLM_ROLES = frozenset({"system", "user", "assistant", "toolResult"})


def copilot_headers(model: Model, messages: list[Any]) -> dict[str, str | None]:
    """The headers GitHub Copilot expects on every request, as pi 1.6.0 sends them
    (models of the ``github-copilot`` provider only; nothing for others):
    ``X-Initiator`` (``user`` when the last message is the user's, else ``agent``: a
    follow-up after tool results), ``Openai-Intent: conversation-edits``, and
    ``Copilot-Vision-Request: true`` when a user message or a tool result holds an
    image. They override the model's headers; the request's own override them."""
    if model.provider != COPILOT_PROVIDER:
        return {}
    messages = [m for m in messages if getattr(m, "role", None) in _LLM_ROLES]
    last = messages[-1] if messages else None
    headers: dict[str, str | None] = {
        "X-Initiator": "agent" if last is not None and getattr(last, "role", None) != "user" else "user",
        "Openai-Intent": "conversation-edits",
    }
    if any(
        getattr(message, "role", None) in ("user", "toolResult")
        and isinstance(message.content, list)
        and any(getattr(block, "type", None) == "image" for block in message.content)
        for message in messages
    ):
        headers["Copilot-Vision-Request"] = "true"
    return headers


CLOUDFLARE_ACCOUNT_ID = "CLOUDFLARE_ACCOUNT_ID"
CLOUDFLARE_GATEWAY_ID = "CLOUDFLARE_GATEWAY_ID"
CLOUDFLARE_GATEWAY_PROVIDER = "cloudflare-ai-gateway"
_CLOUDFLARE_PLACEHOLDERS = (CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_GATEWAY_ID)


class MissingEndpointSettingError(ProviderError):
    """A model's base URL names a setting (``{CLOUDFLARE_ACCOUNT_ID}``) that is not set."""


def fill_base_url(base_url: str, env: dict[str, str] | None = None) -> str:
    """``base_url`` with the Cloudflare placeholders pi 1.6.0 fills in
    (``{CLOUDFLARE_ACCOUNT_ID}``, ``{CLOUDFLARE_GATEWAY_ID}``) replaced by their
    values: from ``env`` first (a credential's ``env`` in auth.json), then the process
    environment. A placeholder neither sets is left as it is."""
    if "{" not in base_url:
        return base_url
    for name in _CLOUDFLARE_PLACEHOLDERS:
        token = "{" + name + "}"
        if token in base_url:
            value = (env or {}).get(name) or os.environ.get(name)
            if value:
                base_url = base_url.replace(token, value.strip())
    return base_url


def endpoint_base_url(model: Model, default: str) -> str:
    """The base URL a request goes to: the model's (its Cloudflare placeholders filled
    from the environment, see :func:`fill_base_url`), else ``default``. A placeholder
    still unset fails the request with one line naming the variable to set."""
    base_url = fill_base_url(model.base_url or default)
    for name in _CLOUDFLARE_PLACEHOLDERS:
        if "{" + name + "}" in base_url:
            raise MissingEndpointSettingError(
                f"{name} is not set: the {model.provider} endpoint needs it (export {name}=… "
                f"or put it in the credential's env in auth.json)"
            )
    return base_url


def cloudflare_gateway_auth(model: Model, options: StreamOptions, headers: dict[str, str | None]) -> bool:
    """Cloudflare AI Gateway takes pi's ``CLOUDFLARE_API_KEY`` as ``cf-aig-authorization:
    Bearer <key>`` (pi 1.6.0), leaving ``Authorization`` to the upstream provider (a
    header configured in models.json). True when it did so: the caller then sends no
    ``Authorization`` / ``x-api-key`` made from the key."""
    if model.provider != CLOUDFLARE_GATEWAY_PROVIDER or not options.api_key:
        return False
    set_default_header(headers, "cf-aig-authorization", f"Bearer {options.api_key}")
    return True


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


def set_default_header(headers: dict[str, str | None], name: str, value: str) -> None:
    """Set ``name`` unless a header of that name (any case) is already there, even
    as ``None`` (removed on purpose)."""
    wanted = name.lower()
    if not any(key.lower() == wanted for key in headers):
        headers[name] = value


async def apply_headers_hook(options: StreamOptions, headers: dict[str, str | None]) -> dict[str, str | None]:
    """Let ``options.on_headers`` mutate ``headers`` in place (``None`` removes one)."""
    if options.on_headers is not None:
        await maybe_await(options.on_headers(headers))
    return headers


async def apply_payload_hook(options: StreamOptions, payload: dict[str, Any]) -> Any:
    """``options.on_payload`` with a copy of ``payload``: its result (awaited)
    replaces the payload unless it is ``None`` (then the copy, as the hook left it)."""
    if options.on_payload is None:
        return payload
    # The hook may edit what it gets in place; the converted messages inside the
    # payload are shared with later requests (pi_core.ai._memo), so it gets a copy.
    editable = json.loads(json.dumps(payload))
    replaced = await maybe_await(options.on_payload(editable))
    return editable if replaced is None else replaced


async def report_response(options: StreamOptions, status: int, headers: Any) -> None:
    if options.on_response is not None:
        await maybe_await(options.on_response(status, {str(k): str(v) for k, v in dict(headers).items()}))


def require_api_key(model: Model, options: StreamOptions, headers: dict[str, str | None], *auth_headers: str) -> str:
    """The request's API key, or the placeholder ``"unused"`` when the headers carry
    the credential; raises :class:`NoApiKeyError` otherwise."""
    if options.api_key:
        return options.api_key
    if any(has_header(headers, name) for name in auth_headers):
        return "unused"
    raise NoApiKeyError(model.provider)


def set_bearer_auth(model: Model, options: StreamOptions, headers: dict[str, str | None]) -> None:
    """``Authorization: Bearer <API key>`` unless the headers carry the credential."""
    api_key = require_api_key(model, options, headers, "authorization")
    if api_key != "unused" and not cloudflare_gateway_auth(model, options, headers):
        set_default_header(headers, "Authorization", f"Bearer {api_key}")


def request_timeout(options: StreamOptions) -> float | None:
    """The idle timeout in seconds: ``options.extra["timeout"]`` (``None`` there turns
    it off), else :data:`DEFAULT_TIMEOUT`."""
    if "timeout" not in options.extra:
        return DEFAULT_TIMEOUT
    value = options.extra["timeout"]
    return float(value) if isinstance(value, int | float) and value > 0 else None


def response_deadline(options: StreamOptions) -> float | None:
    """The longest a response may take in seconds, from sending the request to its
    last byte: ``options.extra["response_deadline"]`` (``None`` or ``0`` there turns it
    off), else :data:`DEFAULT_RESPONSE_DEADLINE`."""
    if "response_deadline" not in options.extra:
        return DEFAULT_RESPONSE_DEADLINE
    value = options.extra["response_deadline"]
    return float(value) if isinstance(value, int | float) and value > 0 else None


class ResponseDeadlineError(ProviderError):
    """The response did not end within :func:`response_deadline`."""


class OutputOverrunError(ProviderError):
    """The response streamed far past the output limit the request gave it."""


def _seconds_text(seconds: float) -> str:
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _requested_max_tokens(payload: Any, options: StreamOptions, out: MessageBuilder) -> int | None:
    """The output limit the request gives the model: what the payload sends (any wire
    API's spelling), else the request's or the model's ``maxTokens``."""
    if isinstance(payload, dict):
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            value = payload.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        value = field(payload, "generationConfig", "maxOutputTokens")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    value = options.max_tokens or getattr(out.model, "max_tokens", None)
    return value if isinstance(value, int) and value > 0 else None


class _OutputMeter:
    """How much output a response has streamed (text, thinking, tool-call arguments),
    measured after each event at a cost of the blocks still open, not of the text."""

    __slots__ = ("_counted", "_done", "_max_chars", "_out", "limit")

    def __init__(self, out: MessageBuilder, limit: int) -> None:
        self._out = out
        self.limit = limit
        self._max_chars = 4 * (OUTPUT_OVERRUN_FACTOR * limit + OUTPUT_OVERRUN_SLACK)
        self._counted = 0  # the blocks before this index are ended and counted in _done
        self._done = 0

    def _length(self, index: int, block: Any) -> int:
        kind = getattr(block, "type", None)
        if kind == "text":
            return len(block.text)
        if kind == "thinking":
            return len(block.thinking)
        if kind == "toolCall":
            text = self._out.tool_arguments_text(index)
            return len(text) if text else len(to_json(block.arguments))
        return 0

    def check(self) -> None:
        """Raise :class:`OutputOverrunError` once the output passes the margin."""
        content = self._out.message.content
        open_blocks = self._out.open_blocks
        first_open = min(open_blocks) if open_blocks else len(content)
        while self._counted < first_open:
            self._done += self._length(self._counted, content[self._counted])
            self._counted += 1
        chars = self._done + sum(self._length(i, content[i]) for i in range(self._counted, len(content)))
        if chars > self._max_chars:
            estimate = math.ceil(chars / 4)
            raise OutputOverrunError(
                f"The response ran far past its output limit: about {estimate} tokens streamed where the "
                f"request allowed {self.limit} (maxTokens); pi stopped reading it"
            )


def _failure(error: BaseException) -> tuple[int | None, float | None] | None:
    """What the provider-level retries (:func:`~pi_hookspecs.streaming.send_with_retries`)
    need of a failed request: its status and the wait it asked for, ``(None, None)`` for
    a transport error, ``None`` for anything else (not retried)."""
    if isinstance(error, HttpStatusError):
        return error.status_code, error.retry_after
    return (None, None) if _is_transport_error(error) else None


def _is_transport_error(error: BaseException) -> bool:
    """Whether the exchange failed on the way (pi's client, or httpx2's with a proxy)."""
    from ._transport import TransportError

    if isinstance(error, TransportError):
        return True
    httpx2 = sys.modules.get("httpx2")  # only there when a proxied client was made
    return httpx2 is not None and isinstance(error, httpx2.TransportError)


class OpenBlock:
    """The one text or thinking block a stream writes into at a time, for the APIs
    whose chunks carry bare text and thinking pieces (Gemini parts, Mistral chunks):
    a piece of the other kind ends the open block and starts a new one."""

    def __init__(self, out: MessageBuilder) -> None:
        self.out = out
        self.index: int | None = None
        self.kind: str | None = None

    def switch(self, kind: str) -> int:
        """The content index of the open ``kind`` block (``"text"`` or ``"thinking"``)."""
        if self.index is None or self.kind != kind:
            self.close()
            self.index = self.out.text_start() if kind == "text" else self.out.thinking_start()
            self.kind = kind
        return self.index

    def close(self) -> None:
        if self.index is not None:
            if self.kind == "text":
                self.out.text_end(self.index)
            else:
                self.out.thinking_end(self.index)
            self.index = self.kind = None


def join_url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + "/" + path.lstrip("/")


# --------------------------------------------------------------------------- the HTTP client

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, HttpClient | _ProxiedClient]] = (
    weakref.WeakKeyDictionary()
)


def _client_for(url: str) -> HttpClient | _ProxiedClient:
    """One pooled client per scheme and event loop: connections are reused between
    requests and never shared across loops. Without a proxy the client is pi's own
    (:class:`~pi_core.ai.apis._transport.HttpClient`, HTTP/1.1 on asyncio streams);
    with a proxy configured, httpx2's (:class:`_ProxiedClient`). The certificate store
    is loaded at the first ``https`` request: a plain-``http`` endpoint (a local server)
    never pays for it."""
    scheme = "https" if url.startswith("https:") else "http"
    loop = asyncio.get_running_loop()
    per_loop = _clients.setdefault(loop, {})
    client = per_loop.get(scheme)
    if client is None:
        if any(os.environ.get(name) for name in _PROXY_VARIABLES):
            client = _ProxiedClient()
        else:
            from ._transport import HttpClient

            client = HttpClient()
        per_loop[scheme] = client
    return client


class _ProxiedClient:
    """httpx2's client and transport, for requests through a proxy (``HTTP(S)_PROXY``,
    ``ALL_PROXY``): the same :meth:`post` as pi's client; its responses have the same
    methods as :class:`~pi_core.ai.apis._transport.Response`."""

    def __init__(self) -> None:
        import httpx2

        self.client = httpx2.AsyncClient(
            verify=True,
            timeout=httpx2.Timeout(DEFAULT_TIMEOUT, connect=CONNECT_TIMEOUT),
            limits=httpx2.Limits(max_connections=64, max_keepalive_connections=16, keepalive_expiry=60.0),
        )

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], *, timeout: float | None, connect_timeout: float | None
    ) -> Any:
        import httpx2

        request = self.client.build_request(
            "POST", url, content=body, headers=headers, timeout=httpx2.Timeout(timeout, connect=connect_timeout)
        )
        return await self.client.send(request, stream=True)

    async def aclose(self) -> None:
        await self.client.aclose()


class InvalidHeaderError(ProviderError):
    """A request header (from models.json, the request options or a
    ``before_provider_headers`` handler) that cannot be sent; raised before the request."""


def _final_headers(headers: dict[str, str | None]) -> dict[str, str]:
    """Headers as sent: ``None`` values dropped, a later spelling of a name wins. A name
    or value that is not a string, or holds a line break or NUL (header injection), is
    refused with :class:`InvalidHeaderError` naming the header."""
    merged: dict[str, tuple[str, str]] = {}
    for key, value in headers.items():
        if not isinstance(key, str) or not key or any(c in key for c in "\r\n\0:"):
            raise InvalidHeaderError(f"invalid request header name {key!r}; the request was not sent")
        if value is None:
            merged.pop(key.lower(), None)
            continue
        if not isinstance(value, str):
            raise InvalidHeaderError(
                f"request header {key!r} must be a string, not {type(value).__name__}; the request was not sent"
            )
        if "\r" in value or "\n" in value or "\0" in value:
            raise InvalidHeaderError(
                f"request header {key!r} contains a line break (CR/LF) or NUL; the request was not sent"
            )
        if not (key.isascii() and value.isascii()):
            raise InvalidHeaderError(
                f"request header {key!r} holds a character that is not ASCII; the request was not sent"
            )
        merged[key.lower()] = (key, value)
    return dict(merged.values())


def _parse_body(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


SseHandler = Callable[[str, Any], Awaitable[None]]

_LIST_KEYS = ("messages", "input", "contents")


class _ListFragments:
    """The JSON of the message list of the last request, in runs of items: the next
    request of a conversation sends the same converted items first (pi_core.ai._memo),
    so only the items after them are encoded (in one call); the rest is reused."""

    __slots__ = ("ends", "items", "out")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.ends: list[int] = []
        """Where each run of items ends (the index after its last item)."""
        self.out: list[bytes | memoryview] = []
        """The runs' JSON (each without brackets: a view of a list's JSON, not a copy)
        with a comma between two runs."""

    def encode(self, items: list[Any]) -> bytes:
        return b"".join([b"[", *self.pieces(items), b"]"])

    def pieces(self, items: list[Any]) -> list[bytes | memoryview]:
        """The items' JSON joined with commas (the list without its brackets), as
        pieces for one ``join`` of the whole request body (megabytes for a long
        conversation: copied once). Not to be changed by the caller. Each call costs
        C loops over the list plus Python work for the new items only."""
        old = self.items
        same = min(len(old), len(items))
        if same and not all(map(operator.is_, old[:same], items[:same])):
            same = next(i for i, (a, b) in enumerate(zip(old, items, strict=False)) if a is not b)
        kept = bisect_right(self.ends, same)
        ends = self.ends[:kept]
        out = self.out[: 2 * kept - 1] if kept else []
        start = ends[-1] if ends else 0
        # the last items are the ones the next request may convert again (a user
        # message after the last assistant one): each is a run of its own, so that
        # changing one does not encode the long run before it again
        split = max(start, len(items) - _OWN_RUNS)
        new: list[tuple[int, bytes | memoryview]] = []
        if start < split:
            new.append((split, memoryview(to_json(items[start:split]))[1:-1]))
        new.extend((index + 1, to_json(items[index])) for index in range(split, len(items)))
        for end, run in new:
            if out:
                out.append(b",")
            out.append(run)
            ends.append(end)
        self.items, self.ends, self.out = list(items), ends, out
        return out


_OWN_RUNS = 8
"""The last items of a message list encoded one by one (see :class:`_ListFragments`)."""

_FRAGMENTS = _ListFragments()


def encode_payload(payload: Any) -> bytes:
    """``payload`` as compact JSON (UTF-8, not ASCII-escaped). The message list of a
    conversation is encoded incrementally (:class:`_ListFragments`)."""
    if not isinstance(payload, dict):
        return to_json(payload)
    # one join at the end: the message list of a long conversation is megabytes, and
    # every intermediate concatenation would copy it again
    pieces: list[bytes | memoryview] = [b"{"]
    for key, value in payload.items():
        if len(pieces) > 1:
            pieces.append(b",")
        pieces.append(to_json(str(key)))
        if key in _LIST_KEYS and isinstance(value, list):
            pieces.append(b":[")
            pieces += _FRAGMENTS.pieces(value)
            pieces.append(b"]")
        else:
            pieces += (b":", to_json(value))
    pieces.append(b"}")
    return b"".join(pieces)


async def post_sse(
    url: str,
    *,
    payload: Any,
    headers: dict[str, str | None],
    options: StreamOptions,
    out: MessageBuilder,
    on_event: SseHandler,
    error_events: Callable[[str, Any], BaseException | None] | None = None,
    forced: dict[str, Any] | None = None,
) -> None:
    """POST ``payload`` as JSON to ``url`` and stream the server-sent events back.

    ``headers`` and ``payload`` go through the ``options`` hooks first
    (:func:`apply_headers_hook`, :func:`apply_payload_hook`); ``forced`` fields are set
    on the payload the hook returned (what the API needs whatever the hook did). An
    HTTP error status raises :class:`HttpStatusError` (after ``options.on_response``
    saw its status and headers). Otherwise ``out`` starts and every event goes to
    ``on_event(event_name, data)`` with its data parsed as JSON (``[DONE]`` ends the
    stream). ``error_events(name, data)`` may turn an event into the exception that
    ends the stream, as the provider's error events do. ``options.on_raw_event`` sees
    every event's data first.
    """
    headers = await apply_headers_hook(options, headers)
    payload = await apply_payload_hook(options, payload)
    if forced and isinstance(payload, dict):
        payload.update(forced)
    client = _client_for(url)
    body = encode_payload(payload)
    sent = _final_headers(headers)
    sent.setdefault("Content-Type", "application/json")
    sent.setdefault("Accept", "text/event-stream")
    timeout = request_timeout(options)
    connect = CONNECT_TIMEOUT if timeout is None else min(timeout, CONNECT_TIMEOUT)
    deadline = response_deadline(options)
    limit = _requested_max_tokens(payload, options, out)
    meter = _OutputMeter(out, limit) if limit else None
    scope = asyncio.timeout(deadline)
    try:
        async with scope:
            await _exchange(url, body, sent, client, options, out, on_event, error_events, meter, timeout, connect)
    except TimeoutError as error:
        if not scope.expired():
            raise
        assert deadline is not None
        raise ResponseDeadlineError(
            f"The response did not end within {_seconds_text(deadline)} of the request "
            "(httpResponseDeadlineMs); pi stopped waiting for it"
        ) from error
    except HttpStatusError as error:
        wait = error.retry_after
        if wait is not None:
            note_requested_delay(out.message, wait)
        raise


async def _exchange(
    url: str,
    body: bytes,
    sent: dict[str, str],
    client: HttpClient | _ProxiedClient,
    options: StreamOptions,
    out: MessageBuilder,
    on_event: SseHandler,
    error_events: Callable[[str, Any], BaseException | None] | None,
    meter: _OutputMeter | None,
    timeout: float | None,
    connect: float | None,
) -> None:
    """The request (with the provider-level retries) and its events, for :func:`post_sse`."""

    async def send() -> Response:
        response = await client.post(url, body, sent, timeout=timeout, connect_timeout=connect)
        if response.status_code >= 400:
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
            await report_response(options, response.status_code, response.headers)
            raise HttpStatusError(response.status_code, _parse_body(raw), dict(response.headers))
        return response

    response = await send_with_retries(send, options, _failure)
    try:
        await report_response(options, response.status_code, response.headers)
        out.start()
        async for name, data in _events(response):
            if options.on_raw_event is not None:
                await maybe_await(options.on_raw_event(data))
            if error_events is not None:
                failure = error_events(name, data)
                if failure is not None:
                    raise failure
            await on_event(name, data)
            if meter is not None:
                meter.check()
    finally:
        await response.aclose()


async def _events(response: Response) -> AsyncIterator[tuple[str, Any]]:
    """The decoded events of an SSE response; ``[DONE]`` ends them (the body is still
    read to its end), comments and events without data are skipped. A body that is not an event stream (a JSON
    answer to a streaming request) is one event, its parsed body."""
    from ._sse import sse_events, stream_encoding

    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type and content_type != "text/event-stream":
        raw = await response.aread()
        parsed = _parse_body(raw)
        if isinstance(parsed, dict) and parsed.get("error"):
            raise HttpStatusError(response.status_code, parsed, dict(response.headers))
        raise ProviderError(f"Expected an event stream, got {content_type}: {str(parsed)[:200]}")
    finished = False
    encoding = stream_encoding(response.headers.get("content-type"))
    async for event, data in sse_events(response.aiter_bytes(), encoding=encoding):
        if not data or finished:
            continue  # after [DONE] the rest is read so that the connection is reused
        if data.startswith("[DONE]"):
            finished = True
            continue
        try:
            parsed = json.loads(data)
        except ValueError as error:
            raise ProviderError(f"Malformed event data from the provider: {data[:200]!r}") from error
        yield event, parsed


_last_instruction: list[Any] = [None, None]


def instruction_item(role: str, text: str) -> dict[str, Any]:
    """``{"role": role, "content": text}``, the same object while the prompt stays the
    same, so that a request's message list starts with the items of the last one."""
    key = (role, text)
    if _last_instruction[0] != key:
        _last_instruction[:] = [key, {"role": role, "content": text}]
    return _last_instruction[1]  # type: ignore[no-any-return]


def field(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]…`` where each level is a dict, else ``None``."""
    for name in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(name)
    return obj


async def stream_openai(
    model: Model,
    options: StreamOptions,
    out: MessageBuilder,
    *,
    payload: dict[str, Any],
    extra_headers: dict[str, str | None],
    base_url: str,
    path: str,
    on_event: SseHandler,
) -> None:
    """One streaming request of an OpenAI API: bearer authentication, the headers (with
    ``extra_headers``), then :func:`post_sse` to ``path``. An event whose data carries
    an ``error`` object ends the stream with that error, as the OpenAI SDK does."""
    headers = base_headers(model, options, **extra_headers)
    set_bearer_auth(model, options, headers)
    await post_sse(
        join_url(base_url, path),
        payload=payload,
        headers=headers,
        options=options,
        out=out,
        on_event=on_event,
        error_events=openai_error_event,
    )


def openai_error_event(name: str, data: Any) -> BaseException | None:
    """The error an OpenAI stream event reports in its ``error`` object, if any."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if not error:
        return None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return ProviderError(message)
