"""pi_core.ai.apis._transport.AsyncioTransport against real local servers (plain TCP
and TLS): keep-alive, a server closing idle connections, body framings, compression,
timeouts and httpx2's exceptions; and the proxy fallback to httpx2's own transport."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pi_core.ai.apis import _common
from pi_core.ai.apis._transport import AsyncioTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """A TCP server running ``handler`` per connection; counts connections."""

    def __init__(self, handler: Handler, context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.context = context
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=self.context)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    def url(self, path: str = "/v1/x") -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"{'https' if self.context else 'http'}://127.0.0.1:{port}{path}"


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The request head and body (by Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


def respond(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def keep_alive_echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        try:
            _head, body = await read_request(reader)
        except asyncio.IncompleteReadError:
            return
        writer.write(respond(b"echo:" + body))
        await writer.drain()


def client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=AsyncioTransport(), timeout=httpx2.Timeout(5.0))


def test_requests_reuse_a_kept_alive_connection() -> None:
    async def main() -> None:
        async with Server(keep_alive_echo) as server, client() as http:
            for i in range(3):
                response = await http.post(server.url(), content=f"n{i}".encode())
                assert (response.status_code, response.text) == (200, f"echo:n{i}")
            assert server.connections == 1

    asyncio.run(main())


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    async def one_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(respond(b"ok"))  # keep-alive announced, then closed after the response
        await writer.drain()

    async def main() -> None:
        async with Server(one_then_close) as server, client() as http:
            assert (await http.post(server.url(), content=b"a")).text == "ok"
            await asyncio.sleep(0.05)
            assert (await http.post(server.url(), content=b"b")).text == "ok"
            assert server.connections == 2

    asyncio.run(main())


def test_chunked_close_delimited_and_compressed_bodies_and_headers() -> None:
    async def varied(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await read_request(reader)
        line = head.split(b"\r\n", 1)[0]  # the request line (headers mention gzip too)
        if b"chunked" in line:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Kind: Chunked\r\n\r\n")
            writer.write(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        elif b"gzip" in line:
            writer.write(respond(gzip.compress(b"zipped"), "Content-Encoding: gzip"))
        else:  # HTTP/1.0 style: the body ends when the server closes
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close")
            await writer.drain()
            return
        await writer.drain()

    async def main() -> None:
        async with Server(varied) as server, client() as http:
            chunked = await http.post(server.url("/chunked"), content=b"x")
            assert chunked.text == "hello world" and chunked.headers["x-kind"] == "Chunked"
            assert ("X-Kind", "Chunked") in [(k.decode(), v.decode()) for k, v in chunked.headers.raw]
            assert (await http.post(server.url("/gzip"), content=b"x")).text == "zipped"
            assert (await http.post(server.url("/close"), content=b"x")).text == "until close"

    asyncio.run(main())


def test_a_streamed_body_left_unread_is_not_reused() -> None:
    async def main() -> None:
        async with Server(keep_alive_echo) as server, client() as http:
            async with http.stream("POST", server.url(), content=b"a") as response:
                assert response.status_code == 200  # body never read
            assert (await http.post(server.url(), content=b"b")).text == "echo:b"
            assert server.connections == 2

    asyncio.run(main())


def test_timeouts_and_failures_are_httpx2s_exceptions() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()

    async def main() -> None:
        async with Server(silent) as server:
            async with httpx2.AsyncClient(transport=AsyncioTransport(), timeout=httpx2.Timeout(0.2)) as http:
                with pytest.raises(httpx2.ReadTimeout):
                    await http.post(server.url(), content=b"x")
        async with Server(hang_up) as server, client() as http:
            with pytest.raises(httpx2.RemoteProtocolError, match="disconnected"):
                await http.post(server.url(), content=b"x")
        async with Server(garbage) as server, client() as http:
            with pytest.raises(httpx2.RemoteProtocolError):
                await http.post(server.url(), content=b"x")
        async with client() as http:
            with pytest.raises(httpx2.ConnectError):
                await http.post("http://127.0.0.1:1/v1", content=b"x")
            with pytest.raises(httpx2.UnsupportedProtocol):
                await http.post("ftp://127.0.0.1:1/v1", content=b"x")

    asyncio.run(main())


def _self_signed(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context trusting it) for ``127.0.0.1``."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    server.set_alpn_protocols(["http/1.1"])
    trusted = ssl.create_default_context(cafile=str(cert_file))
    return server, trusted


def test_tls_with_a_trusted_certificate_and_a_refused_one(tmp_path: Path) -> None:
    server_context, trusted = _self_signed(tmp_path)

    async def main() -> None:
        async with Server(keep_alive_echo, server_context) as server:
            async with httpx2.AsyncClient(transport=AsyncioTransport(ssl_context=trusted)) as http:
                assert (await http.post(server.url(), content=b"tls")).text == "echo:tls"
                assert (await http.post(server.url(), content=b"again")).text == "echo:again"
            assert server.connections == 1
            async with httpx2.AsyncClient(transport=AsyncioTransport()) as http:  # the system store: refused
                with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                    await http.post(server.url(), content=b"x")

    asyncio.run(main())


def test_with_a_proxy_configured_the_clients_use_httpx2s_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")

    async def make() -> Any:
        return _common._client_for("https://api.example.invalid/v1")

    client_ = asyncio.run(make())
    assert not isinstance(client_._transport, AsyncioTransport)
