"""A local HTTP server speaking the providers' streaming wire protocols.

Tests queue :class:`Canned` responses (status, headers, SSE body pieces; optionally
cut mid-body or held open until released) and read back the requests it received.
The real ``anthropic`` / ``openai`` SDK clients talk to it over loopback.
"""

from __future__ import annotations

import atexit
import functools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Canned:
    status: int = 200
    body: list[bytes] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    cut: bool = False
    """Close the connection in the middle of the body (an incomplete chunk)."""
    hold: bool = False
    """After the body pieces, keep the response open until the server is released."""
    delay: float = 0.0
    """Seconds the server waits before it answers (a model that takes its time)."""


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes = b""
    """The body's bytes as received."""

    @functools.cached_property
    def body(self) -> Any:
        """The body parsed as JSON (its text when it is not JSON), when first read: the
        server does not parse every request while it answers, which would add its own
        time, growing with the conversation, to what the benchmarks measure of pi."""
        if not self.raw:
            return None
        try:
            return json.loads(self.raw)
        except ValueError:
            return self.raw.decode("utf-8", "replace")


class WireServer:
    def __init__(self) -> None:
        self.queue: deque[Canned] = deque()
        self.requests: list[Recorded] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                server.requests.append(
                    Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                )
                canned = server.queue.popleft() if server.queue else _no_response()
                self._send(canned)

            def _send(self, canned: Canned) -> None:
                if canned.delay:
                    time.sleep(canned.delay)
                self.send_response(canned.status)
                self.send_header("Content-Type", canned.content_type)
                for name, value in canned.headers.items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for piece in canned.body:
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                    if canned.cut:
                        self.wfile.write(b"40\r\nevent: content_block_del")
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    if canned.hold:
                        release = server.release
                        release.wait(timeout=30)
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reset(self) -> None:
        """Forget queued responses and recorded requests; release held responses."""
        self.release.set()
        self.release = threading.Event()
        self.queue.clear()
        self.requests.clear()

    def enqueue(self, *responses: Canned) -> None:
        self.queue.extend(responses)

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _no_response() -> Canned:
    return Canned(
        status=500,
        content_type="application/json",
        body=[json.dumps({"error": {"message": "the test queued no response", "type": "test_error"}}).encode()],
    )


# --------------------------------------------------------------------------- bodies


def sse(events: list[tuple[str | None, Any]]) -> list[bytes]:
    """One body piece per event (``(event name or None, data)``)."""
    pieces = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        pieces.append(f"{head}data: {text}\n\n".encode())
    return pieces


def json_error(status: int, body: Any, headers: dict[str, str] | None = None) -> Canned:
    return Canned(
        status=status, content_type="application/json", body=[json.dumps(body).encode()], headers=headers or {}
    )


def anthropic_stream(events: list[dict[str, Any]], **options: Any) -> Canned:
    return Canned(body=sse([(event["type"], event) for event in events]), **options)


def anthropic_message(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    message_id: str = "msg_01",
    model: str = "claude-test",
) -> list[dict[str, Any]]:
    """Anthropic events for ``blocks`` (``{"type": "text", "text": ...}``,
    ``{"type": "thinking", "thinking": ..., "signature": ...}``,
    ``{"type": "redacted_thinking", "data": ...}``,
    ``{"type": "tool_use", "id": ..., "name": ..., "json": [pieces]}``)."""
    usage = usage or {"input_tokens": 100, "output_tokens": 20}
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": usage.get("input_tokens", 0),
                    "output_tokens": 1,
                    "cache_read_input_tokens": usage.get("cache_read_input_tokens", 0),
                    "cache_creation_input_tokens": usage.get("cache_creation_input_tokens", 0),
                },
            },
        }
    ]
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            for piece in _split(block["text"]):
                events.append(
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                )
        elif kind == "thinking":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            )
            for piece in _split(block["thinking"]):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    }
                )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
            )
        elif kind == "redacted_thinking":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "redacted_thinking", "data": block["data"]},
                }
            )
        elif kind == "tool_use":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                }
            )
            for piece in block["json"]:
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        }
    )
    events.append({"type": "message_stop"})
    return events


def chat_chunks(
    deltas: list[dict[str, Any]],
    *,
    finish_reason: str | None = "stop",
    usage: dict[str, Any] | None = None,
    chunk_id: str = "chatcmpl-1",
    model: str = "local-model",
    done: bool = True,
) -> Canned:
    """A Chat Completions stream: one chunk per delta, then the finish and usage chunks."""

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, with_usage: Any = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if with_usage is not None:
            body["usage"] = with_usage
        return body

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", **d})) for d in deltas]
    if finish_reason is not None:
        events.append((None, chunk({}, finish_reason)))
    if usage is not None:
        events.append((None, chunk(None, with_usage=usage)))
    if done:
        events.append((None, "[DONE]"))
    return Canned(body=sse(events))


def responses_stream(events: list[dict[str, Any]], **options: Any) -> Canned:
    numbered = [{**event, "sequence_number": n} for n, event in enumerate(events)]
    return Canned(body=sse([(event["type"], event) for event in numbered]), **options)


def responses_events(
    items: list[dict[str, Any]],
    *,
    response_id: str = "resp_1",
    status: str = "completed",
    usage: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
) -> list[dict[str, Any]]:
    """Responses events for output ``items``: ``{"type": "reasoning", "summary": [..],
    "encrypted_content": ..}``, ``{"type": "message", "text": ..}``,
    ``{"type": "function_call", "call_id", "name", "json": [pieces]}``."""
    base = {
        "id": response_id,
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "output": [],
        "status": "in_progress",
    }
    events: list[dict[str, Any]] = [{"type": "response.created", "response": base}]
    done_items = []
    for position, item in enumerate(items):
        kind = item["type"]
        if kind == "reasoning":
            full = {
                "type": "reasoning",
                "id": f"rs_{position}",
                "summary": [],
                "encrypted_content": item.get("encrypted_content"),
            }
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": position,
                    "item": {**full, "encrypted_content": None},
                }
            )
            for part_index, text in enumerate(item["summary"]):
                events.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        "output_index": position,
                        "item_id": full["id"],
                        "summary_index": part_index,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                for piece in _split(text):
                    events.append(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "output_index": position,
                            "item_id": full["id"],
                            "summary_index": part_index,
                            "delta": piece,
                        }
                    )
            full["summary"] = [{"type": "summary_text", "text": t} for t in item["summary"]]
            events.append({"type": "response.output_item.done", "output_index": position, "item": full})
        elif kind == "message":
            item_id = f"msg_{position}"
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": position,
                    "item": {
                        "type": "message",
                        "id": item_id,
                        "role": "assistant",
                        "status": "in_progress",
                        "content": [],
                    },
                }
            )
            for piece in _split(item["text"]):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "output_index": position,
                        "item_id": item_id,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            full = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": item["text"], "annotations": []}],
            }
            events.append({"type": "response.output_item.done", "output_index": position, "item": full})
        elif kind == "function_call":
            item_id = f"fc_{position}"
            added = {
                "type": "function_call",
                "id": item_id,
                "call_id": item["call_id"],
                "name": item["name"],
                "arguments": "",
                "status": "in_progress",
            }
            events.append({"type": "response.output_item.added", "output_index": position, "item": added})
            for piece in item["json"]:
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "output_index": position,
                        "item_id": item_id,
                        "delta": piece,
                    }
                )
            arguments = "".join(item["json"])
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "output_index": position,
                    "item_id": item_id,
                    "arguments": arguments,
                }
            )
            full = {**added, "arguments": arguments, "status": "completed"}
            events.append({"type": "response.output_item.done", "output_index": position, "item": full})
        done_items.append(item)
    final = {
        **base,
        "status": status,
        "output": [],
        "usage": usage
        or {
            "input_tokens": 50,
            "output_tokens": 10,
            "total_tokens": 60,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    if incomplete_reason:
        final["incomplete_details"] = {"reason": incomplete_reason}
    terminal = "response.incomplete" if status == "incomplete" else "response.completed"
    events.append({"type": terminal, "response": final})
    return events


# --------------------------------------------------------------------------- AWS event streams


def event_stream_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of the AWS event-stream framing (application/vnd.amazon.eventstream):
    total and header lengths, the prelude's CRC32, string-typed headers, the payload,
    and the CRC32 of everything before it."""
    import struct
    import zlib

    encoded = b""
    for name, value in headers.items():
        key, data = name.encode(), value.encode()
        encoded += struct.pack(">B", len(key)) + key + struct.pack(">BH", 7, len(data)) + data
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return head + struct.pack(">I", zlib.crc32(head))


def aws_event(event_type: str, data: dict[str, Any]) -> bytes:
    """An event frame (``:event-type``) with ``data`` as its JSON payload."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return event_stream_frame(headers, json.dumps(data).encode())


def aws_exception(exception_type: str, message: str) -> bytes:
    """An exception frame, as a service sends when a stream fails after it started."""
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return event_stream_frame(headers, json.dumps({"message": message}).encode())


def aws_event_stream(frames: list[bytes], **options: Any) -> Canned:
    return Canned(body=frames, content_type="application/vnd.amazon.eventstream", **options)


def _split(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


_shared: WireServer | None = None


def shared_server() -> WireServer:
    """One server for the whole test process (closed at exit)."""
    global _shared
    if _shared is None:
        _shared = WireServer()
        atexit.register(_shared.close)
    return _shared


def use_server() -> Iterator[WireServer]:
    """For a fixture: the shared server, emptied before and after the test.

    @pytest.fixture
    def wire() -> Iterator[WireServer]:
        yield from use_server()
    """
    server = shared_server()
    server.reset()
    try:
        yield server
    finally:
        server.reset()


# --------------------------------------------------------------------------- test helpers


async def collect(stream: Any) -> list[Any]:
    """Every event of a stream."""
    return [event async for event in stream]
