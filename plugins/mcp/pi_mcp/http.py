"""The HTTP client of streamable HTTP servers: headers, OAuth and retries.

Listing and connecting requests are retried after network errors and transient
statuses (408, 429, 5xx but 501); ``tools/call`` never is, since the server may already
have run the tool. Retrying below the MCP transport keeps the JSON-RPC exchange intact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import httpx2

if TYPE_CHECKING:
    from collections.abc import Sequence

TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 505, 506, 507, 508, 510, 511, 520, 521, 522, 523, 524})
RETRY_DELAYS: tuple[float, ...] = (0.25, 1.0)
"""Waits before the first and the second retry."""
RETRIES = {
    "initialize": 2,
    "notifications/initialized": 2,
    "tools/list": 2,
    "prompts/list": 2,
    "ping": 2,
    "resources/list": 1,
    "resources/templates/list": 1,
    "resources/read": 1,
}
"""Retries per JSON-RPC method; methods not listed (``tools/call`` …) are never retried."""


def is_transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUSES or (500 <= status < 600 and status != 501)


def _rpc_method(request: httpx2.Request) -> str | None:
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content or b"null")
    except (ValueError, httpx2.RequestNotRead):
        return None
    return body.get("method") if isinstance(body, dict) else None


class RetryingTransport(httpx2.AsyncBaseTransport):
    """Retries idempotent MCP requests and remembers the last HTTP error status."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, delays: Sequence[float] | None = None) -> None:
        self.inner = inner
        self.delays = tuple(delays) if delays is not None else None
        self.last_error: tuple[int, str | None] | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        method = _rpc_method(request)
        retries = RETRIES.get(method or "", 0)
        delays = self.delays if self.delays is not None else RETRY_DELAYS
        attempt = 0
        while True:
            try:
                response = await self.inner.handle_async_request(request)
            except httpx2.TransportError:
                if attempt >= retries:
                    raise
            else:
                status = response.status_code
                if not (is_transient_status(status) and attempt < retries):
                    if status >= 400:
                        self.last_error = (status, method)
                    return response
                await response.aclose()
            await anyio.sleep(delays[min(attempt, len(delays) - 1)] if delays else 0)
            attempt += 1

    async def aclose(self) -> None:
        await self.inner.aclose()


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY`` …)."""
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(url)
    proxy = getproxies().get(parts.scheme)
    if proxy and parts.hostname and proxy_bypass(parts.hostname):
        return None
    return proxy or None


def make_http_client(
    url: str,
    headers: Mapping[str, str],
    timeout: float,
    auth: Any = None,
) -> tuple[httpx2.AsyncClient, RetryingTransport]:
    """An HTTP client whose every request (proxied or not) goes through the retries."""
    transport = RetryingTransport(httpx2.AsyncHTTPTransport(proxy=_proxy_for(url)))
    client = httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(timeout, read=max(timeout, 300.0)),
        auth=auth,
        transport=transport,
        trust_env=False,
    )
    return client, transport
