"""A WebSocket client (RFC 6455) on asyncio streams, for the providers that stream over
one (the Codex backend): ``wsproto`` frames the messages and makes the opening
handshake (it is h11's sibling: sans-IO, no event loop of its own); this module moves
the bytes, with pi's own TLS settings (:func:`._transport.default_ssl_context`).

Only what a request needs: text messages (fragmented ones joined), ``permessage-deflate``
when the server offers it, pings answered, the closing handshake. It is imported when a
WebSocket is opened, never on the way to a plain run.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from ._transport import TransportError, default_ssl_context, write_out

_READ_SIZE = 64 * 1024
_DEFAULT_PORTS = {"ws": 80, "wss": 443}
_HANDSHAKE_HEADERS = frozenset(
    {"host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"}
)


class WebSocketError(TransportError):
    """The WebSocket could not be opened or broke: a transport failure."""


class WebSocketRejected(WebSocketError):
    """The server answered the opening handshake with an HTTP status, not an upgrade."""

    def __init__(self, status_code: int, body: bytes) -> None:
        self.status_code = status_code
        self.body = body
        text = " ".join(body.decode("utf-8", "replace").split())
        super().__init__(f"WebSocket upgrade refused: HTTP {status_code}" + (f": {text[:200]}" if text else ""))


class WebSocketClosed(WebSocketError):
    """The connection closed (``code`` is the close frame's, ``None`` without one)."""

    def __init__(self, code: int | None, reason: str = "") -> None:
        self.code = code
        self.reason = reason
        detail = f" {code}" if code is not None else ""
        if reason:
            detail += f" {reason}"
        elif code == 1009:
            detail += " message too big"
        super().__init__(f"WebSocket closed{detail}")


class WebSocketTimeout(WebSocketError):
    pass


_tls: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    global _tls
    if _tls is None:
        _tls = default_ssl_context()
        _tls.set_alpn_protocols(["http/1.1"])
    return _tls


class WebSocket:
    """One open connection. :meth:`receive` returns the next text message; a message
    arrives whole (its fragments joined)."""

    def __init__(self, protocol: WSConnection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._protocol = protocol
        self._reader = reader
        self._writer = writer
        self._parts: list[str] = []
        self._pending: list[str] = []
        self.closed: WebSocketClosed | None = None
        """Why the connection ended, once it did."""

    @property
    def open(self) -> bool:
        return self.closed is None and not self._writer.is_closing() and not self._reader.at_eof()

    async def _write(self, data: bytes, timeout: float | None) -> None:
        await write_out(
            self._writer, data, timeout, timed_out=WebSocketTimeout, failed=WebSocketError, what="on the WebSocket"
        )

    async def send(self, text: str, timeout: float | None = None) -> None:
        if self.closed is not None:
            raise self.closed
        try:
            data = self._protocol.send(TextMessage(data=text))
        except LocalProtocolError as exc:
            raise WebSocketError(str(exc)) from exc
        await self._write(data, timeout)

    async def receive(self, timeout: float | None = None) -> str:
        """The next text message; raises :class:`WebSocketClosed` once the connection
        ended and :class:`WebSocketTimeout` when nothing arrived for ``timeout`` seconds."""
        while not self._pending:
            if self.closed is not None:
                raise self.closed
            try:
                async with asyncio.timeout(timeout):
                    data = await self._reader.read(_READ_SIZE)
            except TimeoutError as exc:
                raise WebSocketTimeout(f"WebSocket idle timeout after {timeout:g} s") from exc
            except OSError as exc:
                self._abandon()
                raise WebSocketError(str(exc) or type(exc).__name__) from exc
            if not data:
                self.closed = self.closed or WebSocketClosed(1006, "connection lost")
                self._abandon()
                continue
            await self._feed(data)
        return self._pending.pop(0)

    async def _feed(self, data: bytes) -> None:
        try:
            self._protocol.receive_data(data)
        except RemoteProtocolError as exc:
            self.closed = WebSocketClosed(1002, str(exc))
            self._abandon()
            return
        await self._drain()

    async def _drain(self) -> None:
        """Handle the events the bytes received so far make."""
        try:
            for event in self._protocol.events():
                if isinstance(event, TextMessage):
                    self._parts.append(event.data)
                    if event.message_finished:
                        self._pending.append("".join(self._parts))
                        self._parts.clear()
                elif isinstance(event, BytesMessage):
                    self._parts.append(bytes(event.data).decode("utf-8", "replace"))
                    if event.message_finished:
                        self._pending.append("".join(self._parts))
                        self._parts.clear()
                elif isinstance(event, Ping):
                    await self._write(self._protocol.send(event.response()), None)
                elif isinstance(event, CloseConnection):
                    self.closed = WebSocketClosed(event.code, event.reason or "")
                    try:
                        await self._write(self._protocol.send(event.response()), 5.0)
                    except WebSocketError:
                        pass
                    self._abandon()
        except RemoteProtocolError as exc:
            self.closed = WebSocketClosed(1002, str(exc))
            self._abandon()

    async def close(self, code: int = 1000, reason: str = "done") -> None:
        """Close politely (a close frame, without waiting for the answer)."""
        if self.closed is None:
            self.closed = WebSocketClosed(code, reason)
            try:
                await self._write(self._protocol.send(CloseConnection(code=code, reason=reason)), 5.0)
            except (WebSocketError, LocalProtocolError):
                pass
        self._abandon()

    def close_now(self, code: int = 1000, reason: str = "done") -> None:
        """Close without waiting: the close frame is queued and the connection closed
        once it is written (usable where nothing may be awaited, as after a cancel)."""
        if self.closed is None:
            self.closed = WebSocketClosed(code, reason)
            try:
                if not self._writer.is_closing():
                    self._writer.write(self._protocol.send(CloseConnection(code=code, reason=reason)))
            except (LocalProtocolError, OSError, RuntimeError):
                pass
        self._abandon()

    def _abandon(self) -> None:
        self._writer.close()


async def connect(url: str, headers: Mapping[str, str], *, timeout: float | None) -> WebSocket:
    """Open a WebSocket to ``url`` (``ws://`` or ``wss://``) with ``headers`` on the
    upgrade request; ``timeout`` bounds connecting and the handshake."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise WebSocketError(f"WebSocket URL has an unsupported protocol '{scheme}://'")
    host = parts.hostname or ""
    port = parts.port or _DEFAULT_PORTS[scheme]
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host_header = host if ":" not in host else f"[{host}]"
    if port != _DEFAULT_PORTS[scheme]:
        host_header += f":{port}"
    context = _tls_context() if scheme == "wss" else None
    protocol = WSConnection(ConnectionType.CLIENT)
    extra = [
        (name.encode("ascii"), value.encode("ascii"))
        for name, value in headers.items()
        if name.lower() not in _HANDSHAKE_HEADERS
    ]
    try:
        async with asyncio.timeout(timeout):
            try:
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context else None, limit=_READ_SIZE
                )
            except (OSError, ssl.SSLError) as exc:
                raise WebSocketError(f"cannot connect to {host}:{port}: {exc or type(exc).__name__}") from exc
            socket = WebSocket(protocol, reader, writer)
            try:
                request = Request(
                    host=host_header, target=target, extra_headers=extra, extensions=[PerMessageDeflate()]
                )
                await socket._write(protocol.send(request), None)
                await _handshake(socket, protocol, reader)
            except BaseException:
                writer.close()
                raise
    except TimeoutError as exc:
        raise WebSocketTimeout(f"WebSocket connect timeout after {timeout:g} s") from exc
    return socket


async def _handshake(socket: WebSocket, protocol: WSConnection, reader: asyncio.StreamReader) -> None:
    status: int | None = None
    body: list[bytes] = []
    while True:
        try:
            data = await reader.read(_READ_SIZE)
        except OSError as exc:
            raise WebSocketError(str(exc) or type(exc).__name__) from exc
        try:
            protocol.receive_data(data or None)
            for event in protocol.events():
                if isinstance(event, AcceptConnection):
                    await socket._drain()  # what came with the answer (a first message, a ping)
                    return
                if isinstance(event, RejectConnection):
                    status = event.status_code
                    if not event.has_body:
                        raise WebSocketRejected(status, b"")
                elif isinstance(event, RejectData):
                    body.append(bytes(event.data))
                    if event.body_finished:
                        raise WebSocketRejected(status or 0, b"".join(body))
        except RemoteProtocolError as exc:
            raise WebSocketError(f"WebSocket handshake failed: {exc}") from exc
        if not data:
            if status is not None:
                raise WebSocketRejected(status, b"".join(body))
            raise WebSocketError("the server closed the connection during the WebSocket handshake")
