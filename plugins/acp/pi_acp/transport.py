"""Newline-delimited JSON-RPC over the process's stdio, for the ``acp`` SDK's
connection (its message-level ``Transport`` protocol).

Unlike the SDK's own stdio framing, a line that is not JSON, or JSON that is not a
JSON-RPC message, is answered with a JSON-RPC error (``-32700`` parse error, ``-32600``
invalid request) instead of being dropped in silence; the agent keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class StdioTransport:
    """Reads from ``in_fd`` (after the bytes ``pending`` the handshake read past its
    line) and writes to ``out_fd``."""

    def __init__(self, in_fd: int, out_fd: int, pending: bytes = b"") -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.pending = pending
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.closed = False

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        if self.pending:
            reader.feed_data(self.pending)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self.in_fd, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(self.out_fd, "wb", 0)
        )
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self.reader = reader

    async def send(self, message: dict[str, Any]) -> None:
        writer = self.writer
        if writer is None or self.closed or writer.is_closing():
            raise ConnectionError("the client's stdin is closed")
        writer.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
        await writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        reader = self.reader
        assert reader is not None
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError as exc:
                await reader.readexactly(exc.consumed)  # drop an oversized line
                await self._error(None, INVALID_REQUEST, "Invalid request", "message too large")
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                await self._error(None, PARSE_ERROR, "Parse error", str(exc))
                continue
            if not isinstance(message, dict) or not (
                isinstance(message.get("method"), str)
                or ("id" in message and ("result" in message or "error" in message))
            ):
                request_id = message.get("id") if isinstance(message, dict) else None
                await self._error(request_id, INVALID_REQUEST, "Invalid request", "not a JSON-RPC 2.0 request")
                continue
            return message

    async def _error(self, request_id: Any, code: int, text: str, details: str) -> None:
        try:
            await self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": code, "message": text, "data": {"details": details}},
                }
            )
        except ConnectionError:
            pass

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.writer is not None:
            self.writer.close()
