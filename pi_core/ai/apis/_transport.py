"""HTTP/1.1 for the provider clients: h11 over asyncio streams, behind httpx2's client.

httpx2's default transport (httpcore2) imports its synchronous half, and on the first
request anyio's asyncio backend: about 35 ms of CPU, a tenth of a ``pi -p`` run
(measured, 2026-12). The wire APIs need much less: one POST at a time per request, over
TCP or TLS, with the response body streamed. This transport does that, and nothing else:

* HTTP/1.1 only (``h11`` reads and writes the messages), over ``asyncio`` streams;
* TLS with the same certificate store httpx2 uses (``httpx2.create_ssl_context``);
* keep-alive connections per origin, reused while the server keeps them open; a request
  that fails on a reused connection before any response byte arrived is sent once more
  on a new one (the server closed the idle connection);
* httpx2's timeouts (``connect``, ``read``, ``write``) and exceptions (``ConnectError``,
  ``ReadTimeout``, ``RemoteProtocolError`` …), so retries and error messages are as with
  httpx2's own transport.

With a proxy configured (``HTTP(S)_PROXY``, ``ALL_PROXY``, the ``httpProxy`` setting) the
clients use httpx2's default transport instead (see ``_common._client_for``).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpx2

__all__ = ["AsyncioTransport"]

_READ_SIZE = 64 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Connection:
    """One TCP (or TLS) connection and its HTTP/1.1 state."""

    __slots__ = ("expires", "h11", "origin", "reader", "writer")

    def __init__(self, origin: tuple[str, str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.expires = 0.0

    def usable(self) -> bool:
        """Idle, not expired, and not closed or written to by the server meanwhile."""
        return (
            self.h11.our_state is h11.IDLE
            and time.monotonic() < self.expires
            and not self.writer.is_closing()
            and not self.reader.at_eof()
        )

    async def send(self, event: Any, timeout: float | None, request: httpx2.Request) -> None:
        try:
            data = self.h11.send(event)
        except h11.LocalProtocolError as exc:
            raise httpx2.LocalProtocolError(str(exc), request=request) from exc
        if not data:
            return
        try:
            self.writer.write(data)
            async with asyncio.timeout(timeout):
                await self.writer.drain()
        except TimeoutError as exc:
            raise httpx2.WriteTimeout("timed out sending the request", request=request) from exc
        except OSError as exc:
            raise httpx2.WriteError(str(exc) or type(exc).__name__, request=request) from exc

    async def next_event(self, timeout: float | None, request: httpx2.Request) -> Any:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx2.RemoteProtocolError(str(exc), request=request) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                async with asyncio.timeout(timeout):
                    data = await self.reader.read(_READ_SIZE)
            except TimeoutError as exc:
                raise httpx2.ReadTimeout("timed out waiting for the response", request=request) from exc
            except OSError as exc:
                raise httpx2.ReadError(str(exc) or type(exc).__name__, request=request) from exc
            if not data and self.h11.their_state is h11.SEND_RESPONSE:
                raise httpx2.RemoteProtocolError("Server disconnected without sending a response.", request=request)
            self.h11.receive_data(data)

    def close(self) -> None:
        self.writer.close()


class _Body(httpx2.AsyncByteStream):
    """A response body, read from its connection as the caller iterates; the connection
    goes back to the pool once the body was read to its end."""

    def __init__(self, transport: AsyncioTransport, connection: _Connection, timeout: float | None, request: httpx2.Request) -> None:
        self._transport = transport
        self._connection: _Connection | None = connection
        self._timeout = timeout
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        try:
            while True:
                event = await connection.next_event(self._timeout, self._request)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
        except BaseException:
            self._connection = None
            connection.close()
            raise
        self._connection = None
        self._transport._release(connection)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:  # not read to its end: the connection cannot be reused
            connection.close()


class AsyncioTransport(httpx2.AsyncBaseTransport):
    """See the module docstring. ``ssl_context`` is used for ``https`` URLs (``None``:
    httpx2's default context, made when the first ``https`` request is sent)."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, max_keepalive: int = 16, keepalive_expiry: float = 60.0
    ) -> None:
        self._ssl_context = ssl_context
        self._max_keepalive = max_keepalive
        self._keepalive_expiry = keepalive_expiry
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx2.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.", request=request)
        origin = (scheme, url.host, url.port or _DEFAULT_PORTS[scheme])
        timeouts: dict[str, float | None] = request.extensions.get("timeout") or {}
        body = await _request_body(request)
        connection = self._take_idle(origin)
        if connection is not None:
            try:
                return await self._exchange(connection, request, body, timeouts)
            except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError):
                # the server closed the idle connection as this request went out: once more
                # on a new connection (nothing of the response had arrived)
                pass
        connection = await self._connect(origin, timeouts.get("connect"), request)
        return await self._exchange(connection, request, body, timeouts)

    async def _exchange(
        self, connection: _Connection, request: httpx2.Request, body: bytes, timeouts: dict[str, float | None]
    ) -> httpx2.Response:
        try:
            target = request.url.raw_path
            headers = [(name, value) for name, value in request.headers.raw]
            await connection.send(h11.Request(method=request.method, target=target, headers=headers), timeouts.get("write"), request)
            if body:
                await connection.send(h11.Data(data=body), timeouts.get("write"), request)
            await connection.send(h11.EndOfMessage(), timeouts.get("write"), request)
            while True:
                event = await connection.next_event(timeouts.get("read"), request)
                if isinstance(event, h11.Response):
                    break  # an informational (1xx) response is skipped
        except BaseException:
            connection.close()
            raise
        return httpx2.Response(
            status_code=event.status_code,
            headers=list(event.headers.raw_items()),
            stream=_Body(self, connection, timeouts.get("read"), request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": bytes(event.reason)},
            request=request,
        )

    async def _connect(self, origin: tuple[str, str, int], timeout: float | None, request: httpx2.Request) -> _Connection:
        scheme, host, port = origin
        context = self._tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context is not None else None, limit=_READ_SIZE
                )
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"timed out connecting to {host}:{port}", request=request) from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return _Connection(origin, reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            context = httpx2.create_ssl_context(verify=True)
            context.set_alpn_protocols(["http/1.1"])
            self._ssl_context = context
        return self._ssl_context

    def _take_idle(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection) -> None:
        state = connection.h11
        if self._closed or state.our_state is not h11.DONE or state.their_state is not h11.DONE:
            connection.close()
            return
        state.start_next_cycle()
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) >= self._max_keepalive:
            connection.close()
            return
        connection.expires = time.monotonic() + self._keepalive_expiry
        idle.append(connection)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


async def _request_body(request: httpx2.Request) -> bytes:
    """The request's body, read whole (the wire APIs send JSON they already hold as
    bytes): it can then be sent again on a new connection."""
    return await request.aread()
