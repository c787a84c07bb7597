"""The provider transport against servers that misbehave on purpose: raw asyncio
servers on loopback, the real ``pi`` in a subprocess.

* A request is never sent twice behind the retry policy's back: a POST the server read
  and then dropped (the connection closed, no answer) comes back as an error that goes
  through the visible retries (``auto_retry_start``, counted in ``retry.maxRetries``);
  only a pooled connection the server had closed *before* the request was written to
  it is replaced silently. The server counts the POSTs: 1 + the visible retries.
* A refused connection is retried through the same visible policy.
* A 429 or 503 that says how long to wait (``retry-after`` in seconds or as a date,
  ``retry-after-ms``, ``x-ratelimit-reset-*``, ``anthropic-ratelimit-*-reset``) is
  retried after that wait, and ``auto_retry_start`` says so; a wait longer than
  ``retry.provider.maxRetryDelayMs`` is not retried, and ``auto_retry_end`` says why.
* A response that never ends (keep-alive comments forever) ends at
  ``httpResponseDeadlineMs``; one that streams text far past ``maxTokens`` is stopped.
  Either way the turn ends with an error saying so.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import agent_dir, configure_local_endpoint, jsonl, run_pi, text_reply
from wire_server import Canned, chat_chunks


@dataclass
class Request:
    connection: int
    """Which connection it came on (1, 2 …)."""
    index: int
    """Its place among the requests of that connection (1 for the first)."""
    at: float
    body: bytes


Handler = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]
"""Answers one request; returns whether the connection stays open for another."""


@dataclass
class RawServer:
    """An HTTP/1.1 server on its own event loop thread that reads each request whole
    (head and ``Content-Length`` body), records it, and lets ``handler`` answer — or not."""

    handler: Handler
    requests: list[Request] = field(default_factory=list)
    connections: int = 0

    def __post_init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.ready.set()
        self.loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        index = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                index += 1
                request = Request(number, index, time.monotonic(), body)
                self.requests.append(request)
                if not await self.handler(request, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    @property
    def url(self) -> str:
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def serve(handler: Handler) -> Iterator[RawServer]:
    server = RawServer(handler)
    try:
        yield server
    finally:
        server.close()


async def answer(
    writer: asyncio.StreamWriter,
    pieces: list[bytes],
    *,
    status: str = "200 OK",
    content_type: str = "text/event-stream",
    headers: dict[str, str] | None = None,
) -> None:
    """A whole response with a ``Content-Length`` body; the connection stays usable."""
    body = b"".join(pieces)
    lines = [
        f"HTTP/1.1 {status}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: keep-alive",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()


def settings(data: dict[str, Any]) -> None:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def run_json(model: str, cwd: Path, prompt: str = "go", timeout: float = 60) -> tuple[int, list[dict[str, Any]], str]:
    out = run_pi("--mode", "json", "--no-session", "--model", model, prompt, cwd=cwd, timeout=timeout)
    return out.returncode, jsonl(out.stdout), out.stderr


def of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [record for record in records if record.get("type") == kind]


def final_assistant(records: list[dict[str, Any]]) -> dict[str, Any]:
    ends: list[dict[str, Any]] = [
        r["message"] for r in of(records, "message_end") if r["message"].get("role") == "assistant"
    ]
    assert ends, records
    return ends[-1]


def tool_reply(name: str, args: dict[str, Any]) -> Canned:
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ]
            }
        ],
        finish_reason="tool_calls",
    )


RATE_LIMITED = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}).encode()
FAST_RETRIES = {"retry": {"maxRetries": 2, "baseDelayMs": 1}}


# --------------------------------------------------------------------------- no silent resend


def test_a_request_the_server_read_and_dropped_is_retried_visibly_never_resent(tmp_path: Path) -> None:
    """Turn 1 is answered with a tool call on a kept-alive connection; every later request
    is read whole and its connection closed without an answer. The second model request
    goes out on the pooled connection: the server has it, so pi must not send it again
    on its own — only through the retry policy, which says so and counts it."""

    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.connection == 1 and request.index == 1:
            await answer(writer, tool_reply("bash", {"command": "true"}).body)
            return True
        return False  # read, then dropped: no answer

    for server in serve(handler):
        settings(FAST_RETRIES)
        _status, records, stderr = run_json(configure_local_endpoint(server.url), tmp_path)
        retries = of(records, "auto_retry_start")
        assert final_assistant(records)["stopReason"] == "error", stderr
        assert len(retries) == 2 and of(records, "auto_retry_end")[-1]["success"] is False
        assert "disconnected" in retries[0]["errorMessage"]
        # turn 1, then the first attempt of turn 2 and one POST per visible retry
        assert len(server.requests) == 2 + len(retries), [(r.connection, r.index) for r in server.requests]
        assert server.requests[1].connection == 1  # the pooled connection was used


def test_the_visible_retry_of_a_dropped_request_succeeds_on_a_new_connection(tmp_path: Path) -> None:
    """Every connection answers its first request and drops the second after reading it."""

    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        if request.index > 1:
            return False
        reply = tool_reply("bash", {"command": "true"}) if request.connection == 1 else text_reply("done")
        await answer(writer, reply.body)
        return True

    for server in serve(handler):
        settings(FAST_RETRIES)
        status, records, stderr = run_json(configure_local_endpoint(server.url), tmp_path)
        assert status == 0, stderr
        retries = of(records, "auto_retry_start")
        assert len(retries) == 1 and of(records, "auto_retry_end") == [
            {"type": "auto_retry_end", "success": True, "attempt": 1}
        ]
        assert len(server.requests) == 2 + len(retries) == 3
        assert final_assistant(records)["content"][0]["text"] == "done"


def test_a_connection_closed_while_idle_is_replaced_silently(tmp_path: Path) -> None:
    """A server that announces keep-alive but closes each connection after its answer:
    the next request finds the pooled connection closed before writing a byte to it, so
    it goes out once, on a new connection, with no retry."""

    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        reply = tool_reply("bash", {"command": "true"}) if len(server.requests) == 1 else text_reply("done")
        await answer(writer, reply.body)
        return False

    for server in serve(handler):
        settings(FAST_RETRIES)
        status, records, stderr = run_json(configure_local_endpoint(server.url), tmp_path)
        assert status == 0, stderr
        assert of(records, "auto_retry_start") == []
        assert [(r.connection, r.index) for r in server.requests] == [(1, 1), (2, 1)]


def test_a_refused_connection_is_retried_through_the_visible_policy(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings(FAST_RETRIES)
    _status, records, _stderr = run_json(configure_local_endpoint(f"http://127.0.0.1:{port}"), tmp_path)
    retries = of(records, "auto_retry_start")
    assert [r["attempt"] for r in retries] == [1, 2] and all("ConnectError" in r["errorMessage"] for r in retries)
    assert of(records, "auto_retry_end")[-1]["success"] is False
    assert "ConnectError" in final_assistant(records)["errorMessage"]


# --------------------------------------------------------------------------- the wait the server asks for


def _http_date(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


def _rfc3339(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("status", "headers", "low", "high"),
    [
        ("429 Too Many Requests", lambda: {"retry-after": "1"}, 1000, 1000),
        ("503 Service Unavailable", lambda: {"retry-after": _http_date(2)}, 500, 2000),
        ("429 Too Many Requests", lambda: {"retry-after-ms": "700"}, 700, 700),
        (
            "429 Too Many Requests",
            lambda: {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1s",
                "x-ratelimit-remaining-tokens": "9000",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            1000,
            1000,
        ),
        (
            "429 Too Many Requests",
            lambda: {
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": _rfc3339(1.5),
            },
            500,
            1500,
        ),
    ],
    ids=["retry-after", "http-date", "retry-after-ms", "x-ratelimit-reset", "anthropic-reset"],
)
def test_a_rate_limit_is_retried_after_the_wait_the_server_asked_for(
    tmp_path: Path, status: str, headers: Callable[[], dict[str, str]], low: int, high: int
) -> None:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        if len(server.requests) == 1:
            await answer(writer, [RATE_LIMITED], status=status, content_type="application/json", headers=headers())
        else:
            await answer(writer, text_reply("after the wait").body)
        return True

    for server in serve(handler):
        settings(FAST_RETRIES)  # a backoff of 1 ms: any longer wait is the server's
        status_code, records, stderr = run_json(configure_local_endpoint(server.url), tmp_path)
        assert status_code == 0, stderr
        (retry,) = of(records, "auto_retry_start")
        assert low <= retry["delayMs"] <= high, retry
        assert f"the server asked to retry after {retry['delayMs'] / 1000:g} s" in retry["errorMessage"], retry
        first, second = server.requests
        assert second.at - first.at >= retry["delayMs"] / 1000 - 0.05
        assert final_assistant(records)["content"][0]["text"] == "after the wait"


def test_a_wait_longer_than_max_retry_delay_is_not_retried_and_says_why(tmp_path: Path) -> None:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        await answer(
            writer,
            [RATE_LIMITED],
            status="429 Too Many Requests",
            content_type="application/json",
            headers={"retry-after": "120"},
        )
        return True

    for server in serve(handler):
        settings({"retry": {"maxRetries": 3, "baseDelayMs": 1, "provider": {"maxRetryDelayMs": 5000}}})
        started = time.monotonic()
        _status, records, _stderr = run_json(configure_local_endpoint(server.url), tmp_path)
        assert time.monotonic() - started < 30
        assert len(server.requests) == 1 and of(records, "auto_retry_start") == []
        (end,) = of(records, "auto_retry_end")
        assert end["success"] is False and "Rate limit reached" in end["finalError"]
        assert "retry after 120 s" in end["finalError"] and "maxRetryDelayMs" in end["finalError"], end
        assert of(records, "agent_end")[-1]["willRetry"] is False


# --------------------------------------------------------------------------- responses that never end


def test_a_response_of_endless_keep_alive_comments_ends_at_the_deadline(tmp_path: Path) -> None:
    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:  # a comment every 50 ms, forever: the idle timeout never fires
            writer.write(b"9\r\n: ping\n\n\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.05)

    for server in serve(handler):
        settings({**FAST_RETRIES, "httpResponseDeadlineMs": 1500})
        started = time.monotonic()
        _status, records, stderr = run_json(configure_local_endpoint(server.url), tmp_path, timeout=60)
        elapsed = time.monotonic() - started
        assert 1.5 <= elapsed < 20, (elapsed, stderr)
        message = final_assistant(records)
        assert message["stopReason"] == "error"
        assert "did not end within 1.5 s" in message["errorMessage"], message
        assert "httpResponseDeadlineMs" in message["errorMessage"]
        assert of(records, "auto_retry_start") == [] and len(server.requests) == 1  # not retried


def test_text_streamed_far_past_max_tokens_is_stopped(tmp_path: Path) -> None:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local-model",
        "choices": [{"index": 0, "delta": {"content": "blah " * 100}, "finish_reason": None}],
    }
    event = f"data: {json.dumps(chunk)}\n\n".encode()

    async def handler(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:  # text forever, never a finish_reason
            writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0.001)

    for server in serve(handler):
        settings(FAST_RETRIES)
        started = time.monotonic()
        _status, records, stderr = run_json(configure_local_endpoint(server.url), tmp_path)  # maxTokens 1024
        assert time.monotonic() - started < 30, stderr
        message = final_assistant(records)
        assert message["stopReason"] == "error"
        assert "ran far past its output limit" in message["errorMessage"] and "1024" in message["errorMessage"]
        text = message["content"][0]["text"]
        assert 2 * 1024 * 4 < len(text) < 4 * (2 * 1024 + 1024) + len("blah " * 100)  # stopped at the margin
        assert of(records, "auto_retry_start") == [] and len(server.requests) == 1
