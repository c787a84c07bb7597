"""The HTTP layer the wire APIs share: provider-level retries with the delay the
server asks for, the idle timeout, error bodies, and one pooled client per loop."""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest
from wire_server import Canned, WireServer, chat_chunks, json_error, use_server

from pi_core.ai import classify_error, stream
from pi_core.ai.apis._common import HttpStatusError, retry_after_seconds
from pi_hookspecs import LlmContext, Model, StreamOptions, UserMessage


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def model_for(server: WireServer) -> Model:
    return Model(
        id="m",
        provider="local",
        api="openai-completions",
        base_url=f"{server.url}/v1",
        context_window=32_000,
        max_tokens=1_000,
    )


def ask() -> LlmContext:
    return LlmContext(messages=[UserMessage(content="hi")])


def options(**extra: object) -> StreamOptions:
    return StreamOptions(api_key="k", extra=extra)


RATE_LIMITED = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}


async def test_no_provider_retries_by_default(wire: WireServer) -> None:
    wire.enqueue(json_error(429, RATE_LIMITED, headers={"retry-after": "0"}), chat_chunks([{"content": "ok"}]))
    message = await stream(model_for(wire), ask(), options()).result()
    assert message.stop_reason == "error" and message.error_message.startswith("local API error (429): Rate limit")
    assert classify_error(message) == "retryable"
    assert len(wire.requests) == 1


async def test_provider_retries_wait_the_delay_the_server_asks_for(wire: WireServer) -> None:
    wire.enqueue(
        json_error(429, RATE_LIMITED, headers={"retry-after-ms": "300"}),
        json_error(503, {"error": {"message": "overloaded"}}, headers={"retry-after": "0"}),
        chat_chunks([{"content": "third time lucky"}]),
    )
    seen: list[int] = []
    started = time.monotonic()
    message = await stream(
        model_for(wire),
        ask(),
        options(max_retries=2).model_copy(update={"on_response": lambda status, _headers: seen.append(status)}),
    ).result()
    assert message.text() == "third time lucky"
    assert time.monotonic() - started >= 0.3
    assert len(wire.requests) == 3
    assert seen == [429, 503, 200]  # every response is reported, the failed ones too


async def test_a_longer_delay_than_accepted_fails_at_once(wire: WireServer) -> None:
    wire.enqueue(json_error(429, RATE_LIMITED, headers={"retry-after": "120"}), chat_chunks([{"content": "late"}]))
    message = await stream(model_for(wire), ask(), options(max_retries=3, max_retry_delay=60)).result()
    assert message.stop_reason == "error" and "Rate limit reached" in message.error_message
    assert len(wire.requests) == 1


async def test_client_errors_are_not_retried(wire: WireServer) -> None:
    wire.enqueue(json_error(400, {"error": {"message": "unknown field"}}), chat_chunks([{"content": "never"}]))
    message = await stream(model_for(wire), ask(), options(max_retries=3)).result()
    assert message.error_message == "local API error (400): unknown field"
    assert len(wire.requests) == 1


async def test_idle_timeout_ends_a_silent_stream(wire: WireServer) -> None:
    wire.enqueue(Canned(body=[b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"slo"}}]}\n\n'], hold=True))
    started = time.monotonic()
    message = await stream(model_for(wire), ask(), options(timeout=0.3)).result()
    assert time.monotonic() - started < 5
    assert message.stop_reason == "error" and "ReadTimeout" in message.error_message
    assert message.text() == "slo"
    assert classify_error(message) == "retryable"


async def test_a_json_error_inside_a_200_answer(wire: WireServer) -> None:
    wire.enqueue(Canned(content_type="application/json", body=[b'{"error":{"message":"model is loading"}}']))
    message = await stream(model_for(wire), ask(), options()).result()
    assert message.stop_reason == "error" and "model is loading" in message.error_message


async def test_malformed_event_data_is_an_error_naming_it(wire: WireServer) -> None:
    wire.enqueue(Canned(body=[b"data: {not json\n\n"]))
    message = await stream(model_for(wire), ask(), options()).result()
    assert message.stop_reason == "error"
    assert message.error_message == "Malformed event data from the provider: '{not json'"


async def test_connections_are_reused_within_a_loop(wire: WireServer) -> None:
    from pi_core.ai.apis import _common

    wire.enqueue(chat_chunks([{"content": "one"}]), chat_chunks([{"content": "two"}]))
    first = await stream(model_for(wire), ask(), options()).result()
    client = _common._client_for(wire.url)
    second = await stream(model_for(wire), ask(), options()).result()
    assert (first.text(), second.text()) == ("one", "two")
    assert _common._client_for(wire.url) is client


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After-Ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= (retry_after_seconds({"retry-after": later}) or 0) <= 31
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    error = HttpStatusError(429, {"error": {"message": "slow down"}}, {"retry-after": "2"})
    assert (str(error), error.retry_after, error.status_code) == ("slow down", 2.0, 429)


def test_plain_http_endpoints_load_no_certificate_store() -> None:
    """Loading the CA bundle costs tens of milliseconds: a loopback ``http://``
    endpoint gets a client that never needs it; an ``https://`` one loads it when it
    first connects."""
    from pi_core.ai.apis import _common
    from pi_core.ai.apis._transport import HttpClient

    async def make() -> tuple[object, object]:
        return _common._client_for("http://127.0.0.1:1/v1"), _common._client_for("https://example.invalid/v1")

    plain, secure = asyncio.run(make())
    assert isinstance(plain, HttpClient) and isinstance(secure, HttpClient)
    assert plain._ssl_context is None and secure._ssl_context is None  # nothing loaded yet
    assert secure._tls_context().cert_store_stats()["x509_ca"] > 0


def test_the_certificate_store_is_the_one_httpx2_would_use(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """pi's client verifies TLS against what httpx2 (httpcore2) would: SSL_CERT_FILE /
    SSL_CERT_DIR when set, else the system's store."""
    import httpcore2

    from pi_core.ai.apis._transport import default_ssl_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    ours, theirs = default_ssl_context(), httpcore2.default_ssl_context()
    assert ours.cert_store_stats() == theirs.cert_store_stats() and ours.cert_store_stats()["x509_ca"] > 0
    assert ours.verify_mode == theirs.verify_mode and ours.check_hostname == theirs.check_hostname
    bundle = ssl.get_default_verify_paths().openssl_cafile
    if not os.path.isfile(bundle):
        pytest.skip("no CA bundle file to point SSL_CERT_FILE at")
    single = tmp_path / "one.pem"
    single.write_text(open(bundle).read().split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(single))
    assert (
        default_ssl_context().cert_store_stats()["x509_ca"]
        == 1
        == httpcore2.default_ssl_context().cert_store_stats()["x509_ca"]
    )
