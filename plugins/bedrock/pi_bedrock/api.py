"""The ``bedrock-converse-stream`` API: Bedrock's ConverseStream over HTTP.

One request is ``POST <endpoint>/model/<model id>/converse-stream`` with the JSON body
of :func:`pi_bedrock.convert.build_request`, signed with AWS Signature Version 4
(service ``bedrock``) by botocore, or sent with a Bedrock API key as a bearer token.
The answer is an AWS event stream (binary frames with CRC checks, decoded by
botocore's parser): ``messageStart``, ``contentBlockStart/Delta/Stop``, ``messageStop``
and ``metadata`` events, or an exception frame that ends the stream. The HTTP itself
goes through ``httpx2``, so an abort cancels the request at once.

Where a request goes and how it is authorised, as pi 1.6.0 decides it:

* **credentials**: ``options.api_key`` or ``AWS_BEARER_TOKEN_BEDROCK`` is a Bedrock API
  key (bearer token); otherwise SigV4 with ``options.extra["profile"]`` if given, else
  ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``), else the
  standard chain (``AWS_PROFILE`` and the shared files, SSO, ``credential_process``,
  container and instance roles). ``AWS_BEDROCK_SKIP_AUTH=1`` signs with dummy keys (a
  proxy that authenticates by itself);
* **region**: the one in an inference-profile ARN, else ``options.extra["region"]``,
  ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the region of a standard endpoint given as
  the model's ``baseUrl``, the profile's region, else ``us-east-1``;
* **endpoint**: ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` or ``AWS_ENDPOINT_URL`` (as the
  AWS SDKs read them), else the model's ``baseUrl`` when it is not a standard Bedrock
  endpoint (a VPC endpoint or a proxy) or when no region or profile is configured,
  else ``https://bedrock-runtime.<region>.amazonaws.com``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from pi_hookspecs import LlmContext, Model, StreamOptions, ThinkingContent
from pi_hookspecs.aio import maybe_await
from pi_hookspecs.streaming import MessageBuilder, retry_after_seconds, send_with_retries

from .convert import build_request

if TYPE_CHECKING:
    import httpx2
    from botocore.credentials import ReadOnlyCredentials

SERVICE = "bedrock"
DEFAULT_REGION = "us-east-1"
DEFAULT_TIMEOUT = 600.0
CONNECT_TIMEOUT = 30.0
USER_AGENT = "pluggable-pi-bedrock"
REDACTED_THINKING = "[Reasoning redacted]"
DATA_RETENTION_DOCS = "https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html"

_ARN_REGION = re.compile(r"^arn:aws(?:-[a-z0-9-]+)?:bedrock:([a-z0-9-]+):")
_STANDARD_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
_RESERVED_HEADERS = frozenset({"authorization", "host"})

ERROR_PREFIXES = {
    "InternalServerException": "Internal server error",
    "ModelStreamErrorException": "Model stream error",
    "ValidationException": "Validation error",
    "ThrottlingException": "Throttling error",
    "ServiceUnavailableException": "Service unavailable",
}
"""How pi names Bedrock's exceptions in an error message (its retry and overflow
rules look for these words)."""


class BedrockError(Exception):
    """A Bedrock request failed: an HTTP error, an exception frame mid-stream, missing
    credentials or a broken stream. ``code`` is the AWS exception name when known."""

    def __init__(
        self, message: str, *, code: str | None = None, status: int | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.headers = headers or {}

    @property
    def retry_after(self) -> float | None:
        """The delay the service asked for, in seconds (``retry-after``), if any."""
        return retry_after_seconds(self.headers)


def error_message(code: str | None, message: str) -> str:
    """``"Throttling error: Too many requests"``: pi 1.6.0's wording."""
    text = message.strip() or "no message"
    if re.search(r"data retention mode", text, re.IGNORECASE):
        text += f" See {DATA_RETENTION_DOCS} for supported data retention modes."
    if not code:
        return text
    return f"{ERROR_PREFIXES.get(code, code)}: {text}"


# --------------------------------------------------------------------------- where and how


@dataclass
class Target:
    """Where a request goes and how it is authorised."""

    endpoint: str
    region: str
    bearer_token: str | None = None
    skip_auth: bool = False
    profile: str | None = None
    keys: tuple[str, str, str | None] | None = None
    """Access key, secret and session token given in the environment."""


def _env(name: str, options: StreamOptions | None = None) -> str | None:
    """``name`` from the ``env`` stored with the provider's ``auth.json`` entry (lent by
    :func:`pi_bedrock.lend_credentials` as ``options.extra["aws_env"]``), else from the
    process environment."""
    stored = options.extra.get("aws_env") if options is not None else None
    if isinstance(stored, dict) and stored.get(name):
        return str(stored[name]).strip() or None
    return (os.environ.get(name) or "").strip() or None


def configured_region(options: StreamOptions) -> str | None:
    region = options.extra.get("region")
    if isinstance(region, str) and region.strip():
        return region.strip()
    return _env("AWS_REGION", options) or _env("AWS_DEFAULT_REGION", options)


def standard_endpoint_region(url: str | None) -> str | None:
    """The region of a standard ``bedrock-runtime.<region>.amazonaws.com`` URL."""
    if not url:
        return None
    match = _STANDARD_HOST.match((urlsplit(url).hostname or "").lower())
    return match.group(1) if match else None


def default_endpoint(region: str) -> str:
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://bedrock-runtime.{region}.{suffix}"


def endpoint_override() -> str | None:
    if (_env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") or "").lower() == "true":
        return None
    return _env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or _env("AWS_ENDPOINT_URL")


def resolve_target(model: Model, options: StreamOptions) -> Target:
    profile = options.extra.get("profile")
    profile = profile.strip() if isinstance(profile, str) and profile.strip() else None
    stored = options.extra.get("aws_env")
    if profile is None and isinstance(stored, dict) and stored.get("AWS_PROFILE"):
        profile = str(stored["AWS_PROFILE"]).strip() or None  # chosen at `pi auth login amazon-bedrock`
    region_setting = configured_region(options)
    # a profile (chosen for pi or in AWS_PROFILE) brings its own region
    any_profile = profile or _env("AWS_PROFILE")
    base = (model.base_url or "").strip().rstrip("/")
    base_region = standard_endpoint_region(base)
    explicit = bool(base) and (base_region is None or (region_setting is None and any_profile is None))
    arn = _ARN_REGION.match(model.id)
    if arn:
        region = arn.group(1)
    elif region_setting:
        region = region_setting
    elif base_region and explicit:
        region = base_region
    elif any_profile:
        region = _profile_region(profile) or DEFAULT_REGION
    else:
        region = DEFAULT_REGION
    endpoint = endpoint_override() or (base if explicit else default_endpoint(region))
    skip_auth = _env("AWS_BEDROCK_SKIP_AUTH", options) == "1"
    token = options.api_key or _env("AWS_BEARER_TOKEN_BEDROCK", options)
    keys = None
    if profile is None:
        key, secret = _env("AWS_ACCESS_KEY_ID", options), _env("AWS_SECRET_ACCESS_KEY", options)
        if key and secret:
            keys = (key, secret, _env("AWS_SESSION_TOKEN", options))
    return Target(endpoint.rstrip("/"), region, None if skip_auth else token, skip_auth, profile, keys)


def request_url(target: Target, model_id: str) -> str:
    return f"{target.endpoint}/model/{quote(model_id, safe='')}/converse-stream"


# --------------------------------------------------------------------------- credentials and signing

_sessions: dict[str | None, Any] = {}


def _botocore_session(profile: str | None) -> Any:
    """One botocore session per profile for the process: credentials it resolved
    (temporary ones included) are reused and refreshed by botocore."""
    session = _sessions.get(profile)
    if session is None:
        from botocore.session import Session

        session = Session(profile=profile) if profile else Session()
        _sessions[profile] = session
    return session


def _profile_region(profile: str | None) -> str | None:
    from botocore.exceptions import BotoCoreError

    try:
        region = _botocore_session(profile).get_config_variable("region")
    except BotoCoreError:
        return None
    return region if isinstance(region, str) and region else None


def load_credentials(target: Target) -> ReadOnlyCredentials:
    """The credentials to sign with (may read files or call a metadata service: run it
    off the event loop)."""
    from botocore.credentials import ReadOnlyCredentials
    from botocore.exceptions import BotoCoreError

    if target.skip_auth:
        return ReadOnlyCredentials("dummy-access-key", "dummy-secret-key", None)
    if target.keys is not None:
        return ReadOnlyCredentials(*target.keys)
    try:
        credentials = _botocore_session(target.profile).get_credentials()
        frozen = credentials.get_frozen_credentials() if credentials is not None else None
    except BotoCoreError as error:
        raise BedrockError(f"AWS credentials for Amazon Bedrock could not be loaded: {error}") from error
    if frozen is None or not frozen.access_key:
        raise BedrockError(
            "No AWS credentials for Amazon Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE "
            "or AWS_BEARER_TOKEN_BEDROCK (or configure the AWS credential chain)"
        )
    return frozen


def sign(
    credentials: ReadOnlyCredentials, region: str, url: str, body: bytes, headers: dict[str, str]
) -> dict[str, str]:
    """``headers`` plus ``X-Amz-Date``, ``X-Amz-Security-Token`` (temporary credentials)
    and the SigV4 ``Authorization`` of a POST of ``body`` to ``url``."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    SigV4Auth(credentials, SERVICE, region).add_auth(request)
    return {str(name): str(value) for name, value in request.headers.items()}


async def authorize(target: Target, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
    if target.bearer_token:
        return {**headers, "Authorization": f"Bearer {target.bearer_token}"}
    credentials = await asyncio.to_thread(load_credentials, target)
    return sign(credentials, target.region, url, body, headers)


# --------------------------------------------------------------------------- HTTP

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = weakref.WeakKeyDictionary()


def _client() -> httpx2.AsyncClient:
    import httpx2

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(DEFAULT_TIMEOUT, connect=CONNECT_TIMEOUT),
            limits=httpx2.Limits(max_connections=32, max_keepalive_connections=8, keepalive_expiry=60.0),
        )
        _clients[loop] = client
    return client


def _timeout(options: StreamOptions) -> float | None:
    if "timeout" not in options.extra:
        return DEFAULT_TIMEOUT
    value = options.extra["timeout"]
    return float(value) if isinstance(value, int | float) and value > 0 else None


def http_error(status: int, raw: bytes, headers: dict[str, str]) -> BedrockError:
    """The error of an HTTP error response (AWS JSON protocol: the exception name in
    ``x-amzn-errortype`` or ``__type``, the text in ``message``)."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    code = (headers.get("x-amzn-errortype") or "").split(":", 1)[0] or None
    message = None
    if isinstance(body, dict):
        code = code or (str(body.get("__type") or "").rsplit("#", 1)[-1] or None)
        found = body.get("message") or body.get("Message")
        message = str(found) if found else None
    if message is None:
        message = f"{status}: {text[:2000]}" if text else f"HTTP {status}"
    elif code not in ERROR_PREFIXES:
        message = f"{message} (HTTP {status})"
    return BedrockError(error_message(code, message), code=code, status=status, headers=headers)


def _failure(error: BaseException) -> tuple[int | None, float | None] | None:
    """What pi's provider-level retries need of a failed request
    (:func:`~pi_hookspecs.streaming.send_with_retries`): the status and the wait it asked
    for, ``(None, None)`` for a transport error, ``None`` for anything else."""
    import httpx2

    if isinstance(error, BedrockError):
        return error.status, error.retry_after
    return (None, None) if isinstance(error, httpx2.TransportError) else None


def _request_headers(model: Model, options: StreamOptions) -> dict[str, str | None]:
    headers: dict[str, str | None] = {
        "Content-Type": "application/json",
        "Accept": "application/vnd.amazon.eventstream",
        "User-Agent": USER_AGENT,
    }
    headers.update(model.headers or {})
    headers.update(options.headers)
    return headers


def _sendable(headers: dict[str, str | None]) -> dict[str, str]:
    """Headers as sent: ``None`` removes one; the signature's own headers (``host``,
    ``authorization``, ``x-amz-*``) cannot be set from outside."""
    result: dict[str, tuple[str, str]] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in _RESERVED_HEADERS or lower.startswith("x-amz-"):
            continue
        if value is None:
            result.pop(lower, None)
        else:
            result[lower] = (name, value)
    return dict(result.values())


# --------------------------------------------------------------------------- the stream


async def stream(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """One ConverseStream request of ``model``, reported through ``out``."""
    target = resolve_target(model, options)
    payload: Any = build_request(model, context, options)
    if options.on_payload is not None:
        editable = json.loads(json.dumps(payload))
        replaced = await maybe_await(options.on_payload(editable))
        payload = editable if replaced is None else replaced
    model_id = str(payload.pop("modelId", None) or model.id) if isinstance(payload, dict) else model.id
    url = request_url(target, model_id)
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    headers = _request_headers(model, options)
    if options.on_headers is not None:
        await maybe_await(options.on_headers(headers))
    plain = _sendable(headers)

    import httpx2

    client = _client()
    timeout = _timeout(options)
    connect = CONNECT_TIMEOUT if timeout is None else min(timeout, CONNECT_TIMEOUT)

    async def send() -> httpx2.Response:
        signed = await authorize(target, url, body, plain)  # signed anew for each attempt
        request = client.build_request(
            "POST", url, content=body, headers=signed, timeout=httpx2.Timeout(timeout, connect=connect)
        )
        response = await client.send(request, stream=True)
        if response.status_code >= 400:
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
            response_headers = {k.lower(): v for k, v in response.headers.items()}
            await _report(options, response.status_code, response_headers)
            raise http_error(response.status_code, raw, response_headers)
        return response

    response = await send_with_retries(send, options, _failure)
    try:
        await _report(options, response.status_code, {k.lower(): v for k, v in response.headers.items()})
        await _decode(response, model, options, out)
    finally:
        await response.aclose()


async def _report(options: StreamOptions, status: int, headers: dict[str, str]) -> None:
    if options.on_response is not None:
        await maybe_await(options.on_response(status, headers))


async def _decode(response: httpx2.Response, model: Model, options: StreamOptions, out: MessageBuilder) -> None:
    from botocore.eventstream import EventStreamBuffer, ParserError

    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type and content_type != "application/vnd.amazon.eventstream":
        raw = await response.aread()
        raise BedrockError(f"Expected an AWS event stream, got {content_type}: {raw[:200].decode('utf-8', 'replace')}")
    decoder = _Decoder(out)
    buffer = EventStreamBuffer()
    try:
        async for chunk in response.aiter_bytes():
            buffer.add_data(chunk)
            for message in buffer:
                event = _event(message.headers, message.payload)
                if event is None:
                    continue
                if options.on_raw_event is not None:
                    await maybe_await(options.on_raw_event(event))
                decoder.handle(event)
    except ParserError as error:
        raise BedrockError(f"Malformed AWS event stream from Bedrock: {error}") from error
    decoder.finish()


def _event(headers: dict[str, Any], payload: bytes) -> dict[str, Any] | None:
    """``{event type: data}`` (the SDKs' shape) for an event frame; raises for an
    exception or error frame."""
    kind = headers.get(":message-type")
    if kind == "error":
        code = str(headers.get(":error-code") or "UnknownError")
        raise BedrockError(error_message(code, str(headers.get(":error-message") or "")), code=code)
    try:
        data = json.loads(payload) if payload else {}
    except ValueError as error:
        raise BedrockError(f"Malformed event data from Bedrock: {payload[:200]!r}") from error
    if kind == "exception":
        name = str(headers.get(":exception-type") or "UnknownException")
        code = name[:1].upper() + name[1:]
        message = data.get("message") or data.get("Message") if isinstance(data, dict) else None
        raise BedrockError(error_message(code, str(message or "")), code=code)
    event_type = headers.get(":event-type")
    if kind != "event" or not isinstance(event_type, str):
        return None
    return {event_type: data}


@dataclass
class _Block:
    index: int
    kind: str
    redacted: list[bytes] | None = None


class _Decoder:
    """ConverseStream events into ``out``: Bedrock numbers content blocks itself
    (``contentBlockIndex``); a text or reasoning block starts with its first delta."""

    def __init__(self, out: MessageBuilder) -> None:
        self.out = out
        self.blocks: dict[Any, _Block] = {}

    def handle(self, event: dict[str, Any]) -> None:
        ((kind, data),) = event.items()
        if not isinstance(data, dict):
            return
        if kind == "messageStart":
            if data.get("role", "assistant") != "assistant":
                raise BedrockError(f"Bedrock started a {data.get('role')} message instead of an assistant message")
            self.out.start()
        elif kind == "contentBlockStart":
            tool = (data.get("start") or {}).get("toolUse")
            if isinstance(tool, dict):
                index = self.out.tool_start(str(tool.get("toolUseId") or ""), str(tool.get("name") or ""))
                self.blocks[data.get("contentBlockIndex")] = _Block(index, "toolCall")
        elif kind == "contentBlockDelta":
            self._delta(data.get("contentBlockIndex"), data.get("delta") or {})
        elif kind == "contentBlockStop":
            block = self.blocks.pop(data.get("contentBlockIndex"), None)
            if block is not None:
                self._end(block)
        elif kind == "messageStop":
            self._stop(data.get("stopReason"))
        elif kind == "metadata":
            self._usage(data.get("usage"))

    def _delta(self, position: Any, delta: dict[str, Any]) -> None:
        out = self.out
        block = self.blocks.get(position)
        if "text" in delta:
            if block is None:
                block = self.blocks[position] = _Block(out.text_start(), "text")
            if block.kind == "text":
                out.text_delta(block.index, str(delta["text"] or ""))
        elif isinstance(delta.get("toolUse"), dict):
            if block is not None and block.kind == "toolCall":
                out.tool_delta(block.index, str(delta["toolUse"].get("input") or ""))
        elif isinstance(delta.get("reasoningContent"), dict):
            reasoning = delta["reasoningContent"]
            if block is None:
                block = self.blocks[position] = _Block(out.thinking_start(), "thinking")
            if block.kind != "thinking":
                return
            if reasoning.get("text"):
                out.thinking_delta(block.index, str(reasoning["text"]))
            if reasoning.get("signature") and block.redacted is None:
                out.thinking_signature(block.index, str(reasoning["signature"]), append=True)
            if reasoning.get("redactedContent"):
                if block.redacted is None:
                    block.redacted = []
                    thinking = out.message.content[block.index]
                    assert isinstance(thinking, ThinkingContent)
                    thinking.redacted = True
                    thinking.thinking_signature = ""
                    out.thinking_delta(block.index, REDACTED_THINKING)
                block.redacted.append(base64.b64decode(str(reasoning["redactedContent"])))

    def _end(self, block: _Block) -> None:
        out = self.out
        if block.kind == "text":
            out.text_end(block.index)
        elif block.kind == "thinking":
            if block.redacted is not None:
                out.thinking_end(block.index, signature=base64.b64encode(b"".join(block.redacted)).decode())
            else:
                out.thinking_end(block.index)
        else:
            out.tool_end(block.index)

    def _stop(self, reason: Any) -> None:
        raw = str(reason) if reason else None
        if reason in ("end_turn", "stop_sequence"):
            self.out.stop("stop", raw=raw)
        elif reason in ("max_tokens", "model_context_window_exceeded"):
            self.out.stop("length", raw=raw)
        elif reason == "tool_use":
            self.out.stop("toolUse", raw=raw)
        else:
            self.out.stop("error", raw=raw, error_message=f"Provider stopped with: {reason}" if reason else None)

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        inputs = int(usage.get("inputTokens") or 0)
        outputs = int(usage.get("outputTokens") or 0)
        long_writes = sum(
            int(detail.get("inputTokens") or 0)
            for detail in usage.get("cacheDetails") or []
            if isinstance(detail, dict) and detail.get("ttl") == "1h"
        )
        self.out.set_usage(
            input=inputs,
            output=outputs,
            cache_read=int(usage.get("cacheReadInputTokens") or 0),
            cache_write=int(usage.get("cacheWriteInputTokens") or 0),
            cache_write_1h=long_writes or None,
            total_tokens=int(usage.get("totalTokens") or 0) or inputs + outputs,
        )

    def finish(self) -> None:
        for block in list(self.blocks.values()):
            if block.redacted is not None:
                self.out.thinking_signature(block.index, base64.b64encode(b"".join(block.redacted)).decode())
        self.blocks.clear()
        if self.out.message.stop_reason == "pending":
            raise BedrockError("Bedrock stream ended without a stop reason")
