"""The transport's no-resend rule and the server-requested wait, at the level of the
HTTP client and the retry policy (the end-to-end runs of the real ``pi`` are in
tests/reliability/test_reliability_transport.py)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from test_ai_transport import Server, client, read_request, respond

from pi_core.ai.apis import _transport
from pi_core.ai.apis._common import HttpStatusError, requested_delay
from pi_core.ai.errors import is_retryable_error, note_requested_delay, requested_retry_delay
from pi_core.resources.settings import ProviderRetrySettings, RetrySettings
from pi_core.runtime.retry import retry_delay
from pi_hookspecs import AssistantMessage


def test_a_request_written_to_a_pooled_connection_is_never_resent() -> None:
    """The server answers the first request, then reads the second whole and closes:
    the client raises (for the visible retry policy) instead of sending it again."""
    seen: list[bytes] = []

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _head, body = await read_request(reader)
        seen.append(body)
        writer.write(respond(b"ok"))
        await writer.drain()
        _head, body = await read_request(reader)
        seen.append(body)  # read whole, then the connection is closed without an answer

    async def main() -> None:
        async with Server(answer_once) as server, client() as http:
            assert (await http.post(server.url(), content=b"first")).text == "ok"
            with pytest.raises(_transport.RemoteProtocolError, match="disconnected"):
                await http.post(server.url(), content=b"second")
            assert seen == [b"first", b"second"] and server.connections == 1

    asyncio.run(main())


def test_a_pooled_connection_closed_before_the_write_is_replaced_even_unnoticed_by_the_loop() -> None:
    """The server (a thread) closes the idle connection while the client's event loop is
    not running, so the stream reader has not seen the end of file: the socket itself is
    checked before the request is written, and the request goes out once, on a new
    connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    close_now = threading.Event()
    requests: list[bytes] = []

    def serve() -> None:
        for _ in range(2):
            connection, _address = listener.accept()
            with connection:
                data = b""
                while not data.endswith(b"a") and not data.endswith(b"b"):
                    data += connection.recv(65536)
                requests.append(data[-1:])
                connection.sendall(respond(b"ok"))
                close_now.wait(5)
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def main() -> None:
        async with client() as http:
            url = f"http://127.0.0.1:{port}/v1/x"
            assert (await http.post(url, content=b"a")).text == "ok"
            close_now.set()
            time.sleep(0.2)  # the server closes; this loop does not run meanwhile
            assert (await http.post(url, content=b"b")).text == "ok"

    asyncio.run(main())
    thread.join(5)
    assert requests == [b"a", b"b"]


def test_a_refused_connection_reads_as_retryable() -> None:
    async def main() -> str:
        async with client() as http:
            with pytest.raises(_transport.ConnectError) as caught:
                await http.post("http://127.0.0.1:1/v1", content=b"x")
        return str(caught.value)

    text = asyncio.run(main())
    assert is_retryable_error(f"ConnectError: {text}")
    assert not is_retryable_error("ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")


def test_the_wait_a_failed_response_asks_for() -> None:
    assert requested_delay({"retry-after": "10"}, 429) == 10.0
    assert requested_delay({"Retry-After-Ms": "250"}, 503) == 0.25
    assert (
        requested_delay(
            {
                "x-ratelimit-reset-requests": "1s",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-tokens": "6m0s",
                "x-ratelimit-remaining-tokens": "100",
            },
            429,
        )
        == 1.0
    )
    assert (
        requested_delay(
            {
                "x-ratelimit-reset-tokens": "6m0s",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-requests": "1s",
            },
            429,
        )
        == 360.0
    )
    assert requested_delay({"x-ratelimit-reset-requests": "1m30.5s"}, 429) == 90.5
    assert requested_delay({"x-ratelimit-reset-requests": "250ms"}, 429) == 0.25
    later = (datetime.now(UTC) + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    wait = requested_delay(
        {"anthropic-ratelimit-tokens-reset": later, "anthropic-ratelimit-tokens-remaining": "0"}, 429
    )
    assert wait is not None and 28 <= wait <= 30
    assert requested_delay({"x-ratelimit-reset-requests": "1s"}, 500) is None  # reset headers: a 429's only
    assert requested_delay({"x-ratelimit-reset-requests": "soon"}, 429) is None
    assert requested_delay({}, 429) is None
    assert HttpStatusError(429, {}, {"x-ratelimit-reset-requests": "2s"}).retry_after == 2.0


def _failed(error: str = "local API error (429): Rate limit reached") -> AssistantMessage:
    return AssistantMessage(provider="p", model="m", stop_reason="error", error_message=error)


def test_the_retry_policy_waits_what_the_server_asked_up_to_the_limit() -> None:
    settings = RetrySettings(base_delay_ms=2000, provider=ProviderRetrySettings(max_retry_delay_ms=60000))
    plain = _failed()
    assert requested_retry_delay(plain) is None and retry_delay(settings, 2, plain) == (4000, "")
    asked = _failed()
    asked.timestamp = plain.timestamp + 1
    note_requested_delay(asked, 10)
    copy = asked.model_copy()  # what the session keeps may be a copy
    assert retry_delay(settings, 2, copy) == (10000, " (the server asked to retry after 10 s)")
    too_long = _failed()
    too_long.timestamp = plain.timestamp + 2
    note_requested_delay(too_long, 120)
    delay, note = retry_delay(settings, 1, too_long)
    assert delay is None and "retry after 120 s" in note and "maxRetryDelayMs allows: 60 s" in note
    zero = _failed()
    zero.timestamp = plain.timestamp + 3
    note_requested_delay(zero, 0)
    assert retry_delay(settings, 1, zero) == (2000, "")  # retry-after: 0 is the backoff, as the SDKs read it
    unlimited = RetrySettings(provider=ProviderRetrySettings(max_retry_delay_ms=0))
    assert retry_delay(unlimited, 1, too_long)[0] == 120000
