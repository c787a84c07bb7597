"""pi_core.ai.apis._transport.HttpClient against real local servers (plain TCP and
TLS): keep-alive, a server closing idle connections, body framings, compression, the
request head, timeouts and errors; and the proxy fallback to httpx2's own client."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pi_core.ai.apis import _common, _transport
from pi_core.ai.apis._transport import HttpClient, Response

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


class Client:
    """An :class:`HttpClient` with the calls these tests make."""

    def __init__(self, http: HttpClient | None = None, timeout: float = 5.0) -> None:
        self.http = http or HttpClient()
        self.timeout = timeout

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def stream(self, url: str, content: bytes, headers: dict[str, str] | None = None) -> Response:
        return await self.http.post(url, content, headers or {}, timeout=self.timeout, connect_timeout=self.timeout)

    async def post(self, url: str, content: bytes, headers: dict[str, str] | None = None) -> Reply:
        response = await self.stream(url, content, headers)
        return Reply(response, (await response.aread()).decode())


class Reply:
    def __init__(self, response: Response, text: str) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self.text = text


def client(timeout: float = 5.0) -> Client:
    return Client(timeout=timeout)


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
            assert dict(chunked.headers) == {"transfer-encoding": "chunked", "x-kind": "Chunked"}
            assert (await http.post(server.url("/gzip"), content=b"x")).text == "zipped"
            assert (await http.post(server.url("/close"), content=b"x")).text == "until close"

    asyncio.run(main())


def test_a_streamed_body_left_unread_is_not_reused() -> None:
    async def main() -> None:
        async with Server(keep_alive_echo) as server, client() as http:
            response = await http.stream(server.url(), b"a")
            assert response.status_code == 200  # body never read
            await response.aclose()
            assert (await http.post(server.url(), content=b"b")).text == "echo:b"
            assert server.connections == 2

    asyncio.run(main())


def test_timeouts_and_failures_are_transport_errors_named_as_httpx2_names_them() -> None:
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
            async with client(timeout=0.2) as http:
                with pytest.raises(_transport.ReadTimeout):
                    await http.post(server.url(), content=b"x")
        async with Server(hang_up) as server, client() as http:
            with pytest.raises(_transport.RemoteProtocolError, match="disconnected"):
                await http.post(server.url(), content=b"x")
        async with Server(garbage) as server, client() as http:
            with pytest.raises(_transport.RemoteProtocolError):
                await http.post(server.url(), content=b"x")
        async with client() as http:
            with pytest.raises(_transport.ConnectError):
                await http.post("http://127.0.0.1:1/v1", content=b"x")
            with pytest.raises(_transport.UnsupportedProtocol):
                await http.post("ftp://127.0.0.1:1/v1", content=b"x")
        for error in (_transport.ReadTimeout, _transport.RemoteProtocolError, _transport.ConnectError):
            assert issubclass(error, _transport.TransportError)  # what the provider retries treat as transient

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
            async with Client(HttpClient(ssl_context=trusted)) as http:
                assert (await http.post(server.url(), content=b"tls")).text == "echo:tls"
                assert (await http.post(server.url(), content=b"again")).text == "echo:again"
            assert server.connections == 1
            async with client() as http:  # the system store: refused
                with pytest.raises(_transport.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                    await http.post(server.url(), content=b"x")

    asyncio.run(main())


def test_with_a_proxy_configured_the_clients_use_httpx2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")

    async def make() -> Any:
        return _common._client_for("https://api.example.invalid/v1")

    client_ = asyncio.run(make())
    assert isinstance(client_, _common._ProxiedClient)


def test_the_request_head_carries_what_http_needs_and_the_callers_headers() -> None:
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, body = await read_request(reader)
        seen.append(head + body)
        writer.write(respond(b"ok"))
        await writer.drain()

    async def main() -> None:
        async with Server(record) as server, client() as http:
            port = server.url().split(":")[2].split("/")[0]
            sent = {"X-Api-Key": "k", "content-length": "999", "Host": "elsewhere"}
            await http.post(server.url("/v1/ünï?q=a b"), b"{}", sent)
            head = seen[0].decode("latin-1")
            request_line, *lines = head.split("\r\n\r\n")[0].split("\r\n")
            assert request_line == "POST /v1/%C3%BCn%C3%AF?q=a%20b HTTP/1.1"
            fields = [tuple(line.split(": ", 1)) for line in lines]
            assert fields[0] == ("Host", f"127.0.0.1:{port}")  # the URL's, not the caller's
            assert ("X-Api-Key", "k") in fields and ("Content-Length", "2") in fields
            assert ("Accept-Encoding", "gzip, deflate") in fields and ("Connection", "keep-alive") in fields
            assert [name for name, _ in fields].count("Content-Length") == 1
            with pytest.raises(_transport.LocalProtocolError, match="X-Name"):
                await http.post(server.url(), b"x", {"X-Name": "naïve"})
            with pytest.raises(_transport.UnsupportedProtocol):
                await http.post("http://:80/v1", b"x")

    asyncio.run(main())


def test_deflate_in_both_forms_repeated_headers_and_a_body_that_does_not_decode() -> None:
    import zlib

    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_body = raw_deflate.compress(b"raw deflate") + raw_deflate.flush()

    async def varied(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head, _ = await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            line = head.split(b"\r\n", 1)[0]
            if b"/zlib" in line:
                writer.write(
                    respond(
                        zlib.compress(b"zlib deflate"), "Content-Encoding: deflate", "Set-Cookie: a", "Set-Cookie: b"
                    )
                )
            elif b"/raw" in line:
                writer.write(respond(raw_body, "Content-Encoding: deflate"))
            else:
                writer.write(respond(b"not gzip at all", "Content-Encoding: gzip"))
            await writer.drain()

    async def main() -> None:
        async with Server(varied) as server, client() as http:
            zipped = await http.post(server.url("/zlib"), b"x")
            assert zipped.text == "zlib deflate" and zipped.headers["set-cookie"] == "a, b"
            assert (await http.post(server.url("/raw"), b"x")).text == "raw deflate"
            with pytest.raises(_transport.DecodingError):
                await http.post(server.url("/broken"), b"x")
            assert not issubclass(_transport.DecodingError, _transport.TransportError)  # not retried

    asyncio.run(main())


def test_the_proxied_client_answers_as_pis_own() -> None:
    """With a proxy configured the requests go through httpx2; its responses must serve
    post_sse as pi's own do (here without a proxy variable set: straight to the server)."""

    async def main() -> None:
        async with Server(keep_alive_echo) as server:
            proxied = _common._ProxiedClient()
            try:
                response = await proxied.post(
                    server.url(), b"via httpx2", {"X-A": "1"}, timeout=5.0, connect_timeout=5.0
                )
                assert response.status_code == 200 and dict(response.headers)["content-length"] == "15"
                assert b"".join([chunk async for chunk in response.aiter_bytes()]) == b"echo:via httpx2"
                await response.aclose()
            finally:
                await proxied.aclose()

    asyncio.run(main())
