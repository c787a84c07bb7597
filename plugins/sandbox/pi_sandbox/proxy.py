"""A small filtering HTTP proxy (asyncio) for sandboxed commands.

It understands ``CONNECT host:port`` (HTTPS and any other TCP protocol a client
tunnels) and plain ``http://`` requests in absolute form, and lets through only hosts
of the allowlist, by the name the client asked for (it never sees inside TLS). A
refused request gets ``403`` with a one-line reason and is reported through
``on_denied(host, port)``. Each sandboxed command gets its own listening socket (on
the sandbox's loopback, or pi's), so every refusal is attributed to its command.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 30.0
HOP_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


def normalize_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def split_host_port(target: str, default_port: int) -> tuple[str, int]:
    """``host:port`` / ``[v6]:port`` / ``host`` -> ``(host, port)``; ``ValueError`` if invalid."""
    target = target.strip()
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest.removeprefix(":")
    elif target.count(":") == 1:
        host, port = target.split(":")
    else:
        host, port = target, ""
    if not host:
        raise ValueError(f"no host in {target!r}")
    number = int(port) if port else default_port
    if not 0 < number < 65536:
        raise ValueError(f"bad port in {target!r}")
    return normalize_host(host), number


class HostMatcher:
    """``example.com`` (that host), ``*.example.com`` (its subdomains), either with
    ``:port`` to allow one port only; ``*`` allows every host."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.rules: list[tuple[str, int | None]] = []
        for pattern in patterns:
            pattern = pattern.strip()
            if not pattern:
                continue
            if pattern == "*":
                self.rules.append(("*", None))
                continue
            host, port = pattern, None
            if pattern.startswith("["):
                host, _, rest = pattern[1:].partition("]")
                port = int(rest[1:]) if rest.startswith(":") else None
            elif pattern.count(":") == 1:
                host, text = pattern.split(":")
                port = int(text)
            self.rules.append((normalize_host(host), port))

    def allows(self, host: str, port: int) -> bool:
        host = normalize_host(host)
        for pattern, only in self.rules:
            if only is not None and only != port:
                continue
            if pattern == "*" or pattern == host:
                return True
            if pattern.startswith("*.") and host.endswith(pattern[1:]) and not _is_ip(host):
                return True
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class FilteringProxy:
    """One listening socket, one command: serve until :meth:`close`."""

    def __init__(self, allowed: HostMatcher, on_denied: Callable[[str, int], Any] | None = None) -> None:
        self.allowed = allowed
        self.on_denied = on_denied
        self.server: asyncio.base_events.Server | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.denied: list[tuple[str, int]] = []
        self.allowed_hits: list[tuple[str, int]] = []

    async def serve(self, sock: socket.socket) -> None:
        self.server = await asyncio.start_server(self._client, sock=sock, limit=HEAD_LIMIT)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for task in list(self.tasks):
            task.cancel()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        try:
            await self._serve_one(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            if task is not None:
                self.tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await _reply(writer, 400, "Bad Request", "pluggable-pi-sandbox proxy: malformed request line")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            try:
                host, port = split_host_port(target, 443)
            except ValueError as exc:
                await _reply(writer, 400, "Bad Request", f"pluggable-pi-sandbox proxy: {exc}")
                return
            if not await self._check(host, port, writer):
                return
            upstream = await self._connect(host, port, writer)
            if upstream is None:
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _pipe(reader, writer, *upstream)
            return
        url = urlsplit(target)
        if url.scheme.lower() != "http" or not url.hostname:
            await _reply(
                writer, 400, "Bad Request", "pluggable-pi-sandbox proxy: only CONNECT and http:// URLs are proxied"
            )
            return
        host, port = normalize_host(url.hostname), url.port or 80
        if not await self._check(host, port, writer):
            return
        upstream = await self._connect(host, port, writer)
        if upstream is None:
            return
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        headers = [line for line in lines[1:] if line and line.split(":", 1)[0].strip().lower() not in HOP_HEADERS]
        request = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
        up_reader, up_writer = upstream
        up_writer.write(request.encode("latin-1"))
        await up_writer.drain()
        await _pipe(reader, writer, up_reader, up_writer)

    async def _check(self, host: str, port: int, writer: asyncio.StreamWriter) -> bool:
        if self.allowed.allows(host, port):
            self.allowed_hits.append((host, port))
            return True
        self.denied.append((host, port))
        await _reply(
            writer,
            403,
            "Forbidden",
            f"pluggable-pi-sandbox: the network policy does not allow {host}:{port} (not in allowedHosts)",
        )
        if self.on_denied is not None:
            result = self.on_denied(host, port)
            if inspect.isawaitable(result):
                await result
        return False

    async def _connect(
        self, host: str, port: int, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            await _reply(
                writer, 502, "Bad Gateway", f"pluggable-pi-sandbox proxy: cannot connect to {host}:{port}: {exc}"
            )
            return None


async def _reply(writer: asyncio.StreamWriter, status: int, reason: str, text: str) -> None:
    body = (text + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except OSError:
            pass
        finally:
            with contextlib.suppress(Exception):
                if dst.can_write_eof():
                    dst.write_eof()

    try:
        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
    finally:
        with contextlib.suppress(Exception):
            up_writer.close()
