"""HTTP/1.1 for the provider clients: h11 over asyncio streams, without an HTTP library.

The wire APIs need one streamed POST at a time, over TCP or TLS. httpx2 (with its
default transport, httpcore2 and anyio) cost about 55 ms of CPU of a ``pi -p`` run to
import — 35 ms the transport (measured 2026-12, replaced by h11 on asyncio), then 20 ms
the client package itself (measured 2026-12, replaced by this module). What a request
needs is here, and nothing else:

* HTTP/1.1 only (``h11`` reads and writes the messages), over ``asyncio`` streams;
* TLS with the certificate store httpx2 would use (:func:`default_ssl_context`);
* keep-alive connections per origin, reused while the server keeps them open. A pooled
  connection is checked just before the request is written to it: one the server has
  closed (or written to) meanwhile is dropped and the request goes out on a new one —
  nothing of it was sent, so nothing can have been charged. Once a byte of the request
  was written, a failure is never resent here (the server may have read the whole
  request and be working on it): it is raised, for the visible retry policy to decide
  (``pi_core.runtime.retry``), as Go's net/http and httpcore do for a POST;
* timeouts for connecting, sending and each read, and errors named as httpx2 names them
  (:class:`ConnectError`, :class:`ReadTimeout`, :class:`RemoteProtocolError` …; all
  :class:`TransportError`, which the provider retries treat as transient);
* response bodies decoded from ``gzip`` and ``deflate`` (what a request accepts).

With a proxy configured (``HTTP(S)_PROXY``, ``ALL_PROXY``) the clients use httpx2's own
client and transport instead (see ``_common._client_for``), whose responses have the
same methods as :class:`Response`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import select
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import h11

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "DecodingError",
    "Headers",
    "HttpClient",
    "HttpError",
    "LocalProtocolError",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "TransportError",
    "UnsupportedProtocol",
    "WriteError",
    "WriteTimeout",
    "default_ssl_context",
]

_READ_SIZE = 64 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}


# --------------------------------------------------------------------------- errors


class HttpError(Exception):
    """What :class:`HttpClient` raises."""


class TransportError(HttpError):
    """The exchange failed on the way (connecting, sending, reading): transient."""


class TimeoutException(TransportError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class NetworkError(TransportError):
    pass


class ConnectError(NetworkError):
    pass


class ReadError(NetworkError):
    pass


class WriteError(NetworkError):
    pass


class ProtocolError(TransportError):
    pass


class LocalProtocolError(ProtocolError):
    pass


class RemoteProtocolError(ProtocolError):
    pass


class UnsupportedProtocol(TransportError):
    pass


class DecodingError(HttpError):
    """A response body that its ``Content-Encoding`` does not decode."""


# --------------------------------------------------------------------------- TLS


_CA_FILE_CANDIDATES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Arch, Gentoo
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",  # openSUSE
    "/etc/pki/tls/cacert.pem",  # OpenELEC
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # CentOS, RHEL 7
    "/etc/ssl/cert.pem",  # Alpine, macOS
)


def default_ssl_context() -> ssl.SSLContext:
    """The certificate store httpx2 verifies against: ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` when set; the system's store through ``truststore`` on Windows and
    macOS; else OpenSSL's compiled-in locations, or the usual CA bundle of the
    distribution when those are missing."""
    cafile = os.environ.get("SSL_CERT_FILE")
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    capath = os.environ.get("SSL_CERT_DIR")
    if capath:
        return ssl.create_default_context(capath=capath)
    if platform.system() in ("Windows", "Darwin"):  # pragma: no cover - platform dependent
        import truststore

        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    paths = ssl.get_default_verify_paths()  # compiled in (set_default_verify_paths reads SSL_CERT_*)
    found_file = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    found_path = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if found_path and not found_file and not _hashed_certificates(found_path):  # pragma: no cover
        found_path = None
    if not found_file and not found_path:  # pragma: no cover - depends on the distribution
        found_file = next(filter(os.path.isfile, _CA_FILE_CANDIDATES), None)
    if found_file or found_path:
        context.load_verify_locations(found_file, found_path)
    return context


def _hashed_certificates(folder: str) -> bool:  # pragma: no cover - depends on the distribution
    """Whether ``folder`` holds OpenSSL's hashed certificate links (``1a2b3c4d.0``)."""
    for name in os.listdir(folder):
        stem, _, suffix = name.partition(".")
        if len(stem) == 8 and suffix.isdigit() and all(c in "0123456789abcdefABCDEF" for c in stem):
            return True
    return False


# --------------------------------------------------------------------------- messages


class Headers(Mapping[str, str]):
    """Response headers: looked up by any spelling of the name, listed with lower-case
    names (a repeated header once, its values joined with ``", "``); ``raw`` keeps them
    as received."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        joined: dict[str, str] = {}
        for name, value in raw:
            key = name.decode("latin-1").lower()
            try:  # UTF-8 when the value is (as httpx2 reads it), else one byte per character
                text = value.decode("utf-8")
            except UnicodeDecodeError:
                text = value.decode("latin-1")
            joined[key] = f"{joined[key]}, {text}" if key in joined else text
        self._joined = joined

    def __getitem__(self, name: str) -> str:
        return self._joined[name.lower()]

    def get(self, name: str, default: Any = None) -> Any:
        return self._joined.get(name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._joined

    def __iter__(self) -> Iterator[str]:
        return iter(self._joined)

    def __len__(self) -> int:
        return len(self._joined)

    def __repr__(self) -> str:
        return f"Headers({self._joined!r})"


class Response:
    """A response whose body is read as the caller iterates :meth:`aiter_bytes` (decoded
    from its ``Content-Encoding``); :meth:`aclose` gives up the rest (the connection is
    then not reused)."""

    def __init__(self, status_code: int, reason: str, headers: Headers, body: _Body) -> None:
        self.status_code = status_code
        self.reason_phrase = reason
        self.headers = headers
        self._body = body
        self._content: bytes | None = None

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        if self._content is not None:
            if self._content:
                yield self._content
            return
        decoders = _decoders(self.headers.get("content-encoding", ""))
        async for chunk in self._body:
            for decoder in decoders:
                chunk = _decode(decoder, chunk)
            if chunk:
                yield chunk
        for index, decoder in enumerate(decoders):
            tail = _flush(decoder)
            for later in decoders[index + 1 :]:
                tail = _decode(later, tail)
            if tail:
                yield tail

    async def aread(self) -> bytes:
        """The whole (decoded) body."""
        if self._content is None:
            self._content = b"".join([chunk async for chunk in self.aiter_bytes()])
        return self._content

    async def aclose(self) -> None:
        await self._body.aclose()

    def __repr__(self) -> str:
        return f"<Response [{self.status_code} {self.reason_phrase}]>"


def _decoders(encoding: str) -> list[Any]:
    """One zlib decompressor per coding, in the order they are undone (``gzip`` and
    ``deflate``, the codings a request accepts; ``identity`` and unknown ones pass)."""
    decoders: list[Any] = []
    for coding in reversed([part.strip().lower() for part in encoding.split(",") if part.strip()]):
        if coding in ("gzip", "x-gzip"):
            decoders.append(zlib.decompressobj(zlib.MAX_WBITS | 16))
        elif coding == "deflate":
            decoders.append(_Deflate())
    return decoders


class _Deflate:
    """``deflate`` as servers send it: a zlib stream, or (as some do) a raw one."""

    def __init__(self) -> None:
        self._decoder = zlib.decompressobj()
        self._first = True

    def decompress(self, data: bytes) -> bytes:
        if self._first and data:
            self._first = False
            try:
                return self._decoder.decompress(data)
            except zlib.error:
                self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._decoder.decompress(data)

    def flush(self) -> bytes:
        return self._decoder.flush()


def _decode(decoder: Any, data: bytes) -> bytes:
    try:
        return decoder.decompress(data)  # type: ignore[no-any-return]
    except zlib.error as exc:
        raise DecodingError(f"the response body could not be decoded: {exc}") from exc


def _flush(decoder: Any) -> bytes:
    try:
        return decoder.flush()  # type: ignore[no-any-return]
    except zlib.error as exc:
        raise DecodingError(f"the response body could not be decoded: {exc}") from exc


# --------------------------------------------------------------------------- the client


class _Connection:
    """One TCP (or TLS) connection and its HTTP/1.1 state."""

    __slots__ = ("expires", "h11", "origin", "reader", "writer")

    def __init__(
        self, origin: tuple[str, str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.expires = 0.0

    def usable(self) -> bool:
        """Idle, not expired, and not closed or written to by the server meanwhile: also
        what the socket holds and the event loop has not read yet (a FIN or RST that
        arrived a moment ago) counts, so that a request is written only to a connection
        the server had not given up when the request started."""
        return (
            self.h11.our_state is h11.IDLE
            and time.monotonic() < self.expires
            and not self.writer.is_closing()
            and not self.reader.at_eof()
            and not _has_pending_input(self.writer)
        )

    async def send(self, event: Any, timeout: float | None) -> None:
        try:
            data = self.h11.send(event)
        except h11.LocalProtocolError as exc:
            raise LocalProtocolError(str(exc)) from exc
        await write_out(self.writer, data, timeout)

    async def next_event(self, timeout: float | None) -> Any:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                async with asyncio.timeout(timeout):
                    data = await self.reader.read(_READ_SIZE)
            except TimeoutError as exc:
                raise ReadTimeout("timed out waiting for the response") from exc
            except OSError as exc:
                raise ReadError(str(exc) or type(exc).__name__) from exc
            if not data and self.h11.their_state is h11.SEND_RESPONSE:
                raise RemoteProtocolError("Server disconnected without sending a response.")
            self.h11.receive_data(data)

    def close(self) -> None:
        self.writer.close()


async def write_out(
    writer: asyncio.StreamWriter,
    data: bytes,
    timeout: float | None,
    *,
    timed_out: type[TransportError] = WriteTimeout,
    failed: type[TransportError] = WriteError,
    what: str = "the request",
) -> None:
    """Write ``data`` (nothing when empty) and wait until it is sent: ``timed_out`` after
    ``timeout`` seconds ("timed out sending ``what``"), ``failed`` when the connection broke."""
    if not data:
        return
    try:
        writer.write(data)
        async with asyncio.timeout(timeout):
            await writer.drain()
    except TimeoutError as exc:
        raise timed_out(f"timed out sending {what}") from exc
    except OSError as exc:
        raise failed(str(exc) or type(exc).__name__) from exc


def _has_pending_input(writer: asyncio.StreamWriter) -> bool:
    """Whether the connection's socket is readable now: an idle HTTP/1.1 connection has
    nothing to read, so input means the server closed it (end of file, a reset) or sent
    something unasked — either way it is not to be reused (urllib3's check)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return False
    try:
        fd = sock.fileno()
        if fd < 0:
            return True
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover - Windows
    except (OSError, ValueError):
        return True


class _Body:
    """A response body, read from its connection as the caller iterates; the connection
    goes back to the pool once the body was read to its end."""

    def __init__(self, client: HttpClient, connection: _Connection, timeout: float | None) -> None:
        self._client = client
        self._connection: _Connection | None = connection
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        try:
            while True:
                event = await connection.next_event(self._timeout)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
        except BaseException:
            self._connection = None
            connection.close()
            raise
        self._connection = None
        self._client._release(connection)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:  # not read to its end: the connection cannot be reused
            connection.close()


class HttpClient:
    """See the module docstring. ``ssl_context`` is used for ``https`` URLs (``None``:
    :func:`default_ssl_context`, made when the first ``https`` request is sent)."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, max_keepalive: int = 16, keepalive_expiry: float = 60.0
    ) -> None:
        self._ssl_context = ssl_context
        self._max_keepalive = max_keepalive
        self._keepalive_expiry = keepalive_expiry
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    async def post(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: float | None,
        connect_timeout: float | None,
    ) -> Response:
        """POST ``body`` to ``url`` and return the response once its head arrived
        (its body is read from :meth:`Response.aiter_bytes`). ``timeout`` bounds sending
        and each read, ``connect_timeout`` connecting (``None``: no limit)."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.")
        host = parts.hostname or ""
        try:
            port = parts.port or _DEFAULT_PORTS[scheme]
        except ValueError as exc:
            raise UnsupportedProtocol(f"Request URL has an invalid port: {url!r}") from exc
        if not host:
            raise UnsupportedProtocol(f"Request URL has no host: {url!r}")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if not target.isascii():
            target = quote(target, safe=_PRINTABLE_ASCII)  # percent-encoded, as a URL must be sent
        host_header = host if ":" not in host else f"[{host}]"
        if port != _DEFAULT_PORTS[scheme]:
            host_header += f":{port}"
        try:
            message = h11.Request(method="POST", target=target, headers=_request_head(host_header, headers, len(body)))
        except h11.LocalProtocolError as exc:
            raise LocalProtocolError(str(exc)) from exc
        origin = (scheme, host, port)
        # A pooled connection is checked right before the request is written to it (no
        # suspension in between): a failure after that is raised, never resent here.
        connection = self._take_idle(origin)
        if connection is None:
            connection = await self._connect(origin, connect_timeout)
        return await self._exchange(connection, message, body, timeout)

    async def _exchange(
        self, connection: _Connection, message: h11.Request, body: bytes, timeout: float | None
    ) -> Response:
        try:
            await connection.send(message, timeout)
            if body:
                await connection.send(h11.Data(data=body), timeout)
            await connection.send(h11.EndOfMessage(), timeout)
            while True:
                event = await connection.next_event(timeout)
                if isinstance(event, h11.Response):
                    break  # an informational (1xx) response is skipped
        except BaseException:
            connection.close()
            raise
        return Response(
            event.status_code,
            event.reason.decode("latin-1"),
            Headers(list(event.headers.raw_items())),
            _Body(self, connection, timeout),
        )

    async def _connect(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
        scheme, host, port = origin
        context = self._tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context is not None else None, limit=_READ_SIZE
                )
        except TimeoutError as exc:
            raise ConnectTimeout(f"timed out connecting to {host}:{port}") from exc
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(str(exc) or type(exc).__name__) from exc
        return _Connection(origin, reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            context = default_ssl_context()
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


_ACCEPTED_CODINGS = b"gzip, deflate"
_PRINTABLE_ASCII = "".join(chr(code) for code in range(33, 127))


def _request_head(host: str, headers: Mapping[str, str], length: int) -> list[tuple[bytes, bytes]]:
    """The request's header lines: ``Host`` first, the caller's, then what HTTP needs
    and the caller left out (``Content-Length``, ``Accept-Encoding``, ``Connection``)."""
    head = [(b"Host", host.encode("idna") if not host.isascii() else host.encode("ascii"))]
    given: set[str] = set()
    for name, value in headers.items():
        lower = name.lower()
        if lower in ("host", "content-length", "transfer-encoding"):
            continue  # what this request holds decides them
        given.add(lower)
        try:
            head.append((name.encode("ascii"), value.encode("ascii")))
        except UnicodeEncodeError as exc:
            raise LocalProtocolError(f"request header {name!r} is not ASCII text") from exc
    head.append((b"Content-Length", str(length).encode("ascii")))
    if "accept-encoding" not in given:
        head.append((b"Accept-Encoding", _ACCEPTED_CODINGS))
    if "connection" not in given:
        head.append((b"Connection", b"keep-alive"))
    return head
