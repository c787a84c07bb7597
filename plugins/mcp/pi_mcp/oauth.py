"""OAuth for streamable HTTP servers, on the ``mcp`` SDK's ``OAuthClientProvider``.

Connections never start a browser flow on their own: they send the stored access
token, refresh it when it is about to expire (or once after the server rejected it),
and otherwise end in the ``needs-auth`` state. ``pi mcp login NAME`` (or ``/mcp login
NAME``) runs the authorization code flow with PKCE against a loopback callback
(``http://127.0.0.1:<port>/callback``), registering a client dynamically unless
``oauth.clientId`` names a pre-registered one.

Credentials live in ``<agent dir>/mcp-auth.json`` (mode 0600), keyed by
``mcp__<server>|<url>``: servers with the same URL under different names sign in
separately.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from filelock import FileLock

from .config import OAuthConfig, ServerEntry, expand_value
from .errors import SignInRequiredError
from .names import namespace_name

if TYPE_CHECKING:
    from .connection import McpConnection

AUTH_FILE_NAME = "mcp-auth.json"
CALLBACK_HOST = "127.0.0.1"
CALLBACK_PATH = "/callback"
CLIENT_NAME = "pi"
CLIENT_METADATA_URL = "https://pi.dev/oauth/client.json"
REFRESH_SKEW_SECONDS = 30.0
FALLBACK_REDIRECT = f"http://{CALLBACK_HOST}{CALLBACK_PATH}"


# --------------------------------------------------------------------------- the credential file


class CredentialStore:
    """``mcp-auth.json``: ``{"mcp__<server>|<url>": {"tokens", "tokensExpireAt", "clientInformation"}}``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def key(name: str, url: str) -> str:
        return f"{namespace_name(name)}|{url}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The store's cross-process lock (``<file>.lock``, any platform)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path.with_name(self.path.name + ".lock"), mode=0o600):
            yield

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def load(self, name: str, url: str) -> dict[str, Any]:
        with self._locked():
            state = self._read().get(self.key(name, url))
        return dict(state) if isinstance(state, dict) else {}

    def update(self, name: str, url: str, change: Callable[[dict[str, Any]], None]) -> None:
        key = self.key(name, url)
        with self._locked():
            data = self._read()
            state = dict(data.get(key) or {})
            change(state)
            if state:
                data[key] = state
            else:
                data.pop(key, None)
            self._write(data)

    def remove(self, name: str, url: str) -> bool:
        """Delete the server's credentials; whether there were any."""
        key = self.key(name, url)
        with self._locked():
            data = self._read()
            if key not in data:
                return False
            del data[key]
            self._write(data)
        return True


class ServerTokenStorage:
    """The SDK's ``TokenStorage`` for one server, backed by :class:`CredentialStore`."""

    def __init__(self, store: CredentialStore, entry: ServerEntry, client: Any = None) -> None:
        self.store = store
        self.name = entry.name
        self.url = entry.config.url or ""
        self.client = client
        """A pre-registered client (``oauth.clientId``), never stored."""

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.store.load(self.name, self.url).get("tokens")
        return OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None

    async def set_tokens(self, tokens: Any) -> None:
        data = tokens.model_dump(mode="json", exclude_none=True)
        expires = time.time() + tokens.expires_in if tokens.expires_in else None

        def change(state: dict[str, Any]) -> None:
            state["tokens"] = data
            if expires is None:
                state.pop("tokensExpireAt", None)
            else:
                state["tokensExpireAt"] = int(expires * 1000)

        self.store.update(self.name, self.url, change)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.client is not None:
            return self.client
        info = self.store.load(self.name, self.url).get("clientInformation")
        return OAuthClientInformationFull.model_validate(info) if isinstance(info, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        if self.client is not None:
            return
        data = client_info.model_dump(mode="json", exclude_none=True)
        self.store.update(self.name, self.url, lambda state: state.__setitem__("clientInformation", data))

    def expires_at(self) -> float | None:
        value = self.store.load(self.name, self.url).get("tokensExpireAt")
        return value / 1000 if isinstance(value, int | float) else None

    def expire(self) -> bool:
        """Mark the access token expired so the next request refreshes it; whether a
        refresh token exists."""
        state = self.store.load(self.name, self.url)
        if not (state.get("tokens") or {}).get("refresh_token"):
            return False
        self.store.update(self.name, self.url, lambda s: s.__setitem__("tokensExpireAt", 0))
        return True


# --------------------------------------------------------------------------- the provider


def _provider_class() -> Any:
    from mcp.client.auth import OAuthClientProvider

    class PiOAuthProvider(OAuthClientProvider):
        """Knows when the stored access token expires (the SDK only knows that for tokens it
        obtained in this process), so an expired token is refreshed before it is sent."""

        pi_storage: ServerTokenStorage
        pi_issuer: str | None = None

        def _select_authorization_server(self, advertised: list[str]) -> str:
            # oauth.authServerMetadataUrl: the configured authorization server wins
            return self.pi_issuer or str(super()._select_authorization_server(advertised))

        async def _initialize(self) -> None:
            await super()._initialize()
            expires = self.pi_storage.expires_at()
            if expires is not None and self.context.current_tokens is not None:
                self.context.token_expiry_time = expires - REFRESH_SKEW_SECONDS

    return PiOAuthProvider


def _settings(entry: ServerEntry) -> OAuthConfig:
    return entry.config.oauth or OAuthConfig()


def _client(entry: ServerEntry, redirect: str) -> Any:
    """The pre-registered client of ``oauth.clientId``, if configured."""
    from mcp.shared.auth import OAuthClientInformationFull

    settings = _settings(entry)
    if not settings.client_id:
        return None
    secret = (
        expand_value(settings.client_secret, f'MCP server "{entry.name}" oauth.clientSecret')
        if settings.client_secret
        else None
    )
    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=secret,
        redirect_uris=[redirect],
        token_endpoint_auth_method="client_secret_post" if secret else "none",
    )


def make_provider(
    entry: ServerEntry,
    store: CredentialStore,
    redirect: str,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[Any]],
) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    settings = _settings(entry)
    client = _client(entry, redirect)
    storage = ServerTokenStorage(store, entry, client)
    metadata = OAuthClientMetadata(
        client_name=settings.client_name or CLIENT_NAME,
        redirect_uris=[redirect],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method=client.token_endpoint_auth_method if client is not None else "none",
        scope=settings.scope,
    )
    provider = _provider_class()(
        server_url=entry.config.url or "",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=CLIENT_METADATA_URL if settings.client_registration == "cimd" else None,
    )
    provider.pi_storage = storage
    if settings.auth_server_metadata_url:
        provider.pi_issuer = issuer_of(settings.auth_server_metadata_url)
    return provider


def issuer_of(metadata_url: str) -> str:
    """The issuer a metadata document URL belongs to (RFC 8414 / OpenID discovery paths)."""
    parts = urlsplit(metadata_url)
    path = parts.path
    for marker in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        if path.startswith(marker):
            path = path[len(marker) :]
            break
        if path.endswith(marker):
            path = path[: -len(marker)]
            break
    return f"{parts.scheme}://{parts.netloc}{path}".rstrip("/")


def _fixed_redirect(settings: OAuthConfig) -> str | None:
    """The exact redirect URI when the port is fixed (``callbackUrl`` with a port, or ``callbackPort``)."""
    if settings.callback_url:
        parts = urlsplit(settings.callback_url)
        if parts.port:
            return settings.callback_url
        if settings.callback_port:
            host = parts.netloc.rsplit(":", 1)[0] if parts.netloc.count(":") == 1 else parts.netloc
            return f"{parts.scheme}://{host}:{settings.callback_port}{parts.path or CALLBACK_PATH}"
        return None
    if settings.callback_port:
        return f"http://{CALLBACK_HOST}:{settings.callback_port}{CALLBACK_PATH}"
    return None


class OAuthFactory:
    """Creates the non-interactive OAuth provider of each HTTP connection attempt."""

    def __init__(self, agent: Path) -> None:
        self.store = CredentialStore(agent / AUTH_FILE_NAME)
        self._refreshed: set[str] = set()

    def __call__(self, connection: McpConnection) -> Any:
        entry = connection.entry
        stored = self.store.load(entry.name, entry.config.url or "").get("clientInformation") or {}
        redirects = stored.get("redirect_uris") or []
        redirect = _fixed_redirect(_settings(entry)) or (redirects[0] if redirects else FALLBACK_REDIRECT)

        async def needs_sign_in(*_: Any) -> Any:
            raise SignInRequiredError(connection.sign_in_message())

        return make_provider(entry, self.store, redirect, needs_sign_in, needs_sign_in)

    def rejected(self, connection: McpConnection) -> bool:
        """The server rejected the stored access token: refresh once if possible."""
        key = connection.name
        if key in self._refreshed:
            return False
        self._refreshed.add(key)
        storage = ServerTokenStorage(self.store, connection.entry)
        return storage.expire()

    def signed_in(self, connection: McpConnection) -> None:
        self._refreshed.discard(connection.name)


# --------------------------------------------------------------------------- signing in


_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>pi</title></head>"
    "<body style='font-family:sans-serif'><h2>{title}</h2><p>{text}</p></body></html>"
)


class CallbackServer:
    """The loopback HTTP server the browser is redirected to after approving."""

    def __init__(self, host: str = CALLBACK_HOST, port: int = 0, path: str = CALLBACK_PATH) -> None:
        self.host = host
        self.port = port
        self.path = path
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    async def __aenter__(self) -> CallbackServer:
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._handle, self.host, self.port)
        except OSError as exc:
            raise RuntimeError(
                f"cannot listen on {self.host}:{self.port} for the sign-in callback: {exc.strerror or exc}"
            ) from None
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        line = request.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
        if parts[0] != "GET" or target.path != self.path:
            await self._respond(writer, 404, "Not found", "This is pi's sign-in callback.")
            return
        params = {k: v[0] for k, v in parse_qs(target.query).items()}
        if "error" in params:
            text = params.get("error_description") or params["error"]
            await self._respond(writer, 400, "Sign-in failed", text)
        elif "code" in params:
            await self._respond(writer, 200, "Signed in", "You can close this window and return to pi.")
        else:
            await self._respond(writer, 400, "Sign-in failed", "The redirect carried no authorization code.")
            return
        if self._result is not None and not self._result.done():
            self._result.set_result(params)

    async def _respond(self, writer: asyncio.StreamWriter, status: int, title: str, text: str) -> None:
        import html

        body = _PAGE.format(title=html.escape(title), text=html.escape(text)).encode()
        head = (
            f"HTTP/1.1 {status} {title}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    async def wait(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._result is not None
        params = await self._result
        if "error" in params:
            raise RuntimeError(
                f"the authorization server refused: {params.get('error_description') or params['error']}"
            )
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


def _callback_binding(settings: OAuthConfig) -> tuple[str, int, str, str | None]:
    """Listen host, port (0: any free one), path and the exact redirect URI when fixed."""
    fixed = _fixed_redirect(settings)
    url = urlsplit(settings.callback_url or FALLBACK_REDIRECT)
    host = (url.hostname or CALLBACK_HOST).strip("[]")
    listen = CALLBACK_HOST if host == "localhost" else host
    port = urlsplit(fixed).port if fixed else 0
    return listen, port or 0, url.path or CALLBACK_PATH, fixed


async def sign_in(
    entry: ServerEntry,
    agent: Path,
    cwd: str,
    *,
    on_url: Callable[[str], Awaitable[None] | None],
    timeout: float = 300.0,
) -> int:
    """Run the authorization code flow for ``entry`` and store the tokens. Returns the
    number of tools the server offers once signed in."""
    from . import sdk
    from .connection import McpConnection

    if entry.config.transport != "http":
        raise ValueError(f'MCP server "{entry.name}" is a stdio server: only HTTP servers sign in with OAuth')
    if not entry.config.uses_oauth():
        raise ValueError(
            f'MCP server "{entry.name}" does not use OAuth: it sets an Authorization header (or auth) in {entry.source}'
        )
    await sdk.ready()  # the SDK's modules are not imported here while its background import runs
    settings = _settings(entry)
    store = CredentialStore(agent / AUTH_FILE_NAME)
    url = entry.config.url or ""
    listen, port, path, fixed = _callback_binding(settings)
    async with CallbackServer(listen, port, path) as callback:
        redirect = fixed or callback.redirect_uri

        def forget(state: dict[str, Any]) -> None:
            state.pop("tokens", None)
            state.pop("tokensExpireAt", None)
            registered = (state.get("clientInformation") or {}).get("redirect_uris") or []
            if registered and redirect not in registered:
                state.pop("clientInformation", None)  # registered for another redirect URI

        store.update(entry.name, url, forget)

        async def show(authorization_url: str) -> None:
            shown = on_url(authorization_url)
            if shown is not None:
                await shown

        provider = make_provider(entry, store, redirect, show, callback.wait)
        signed = {"flow": False}
        original = provider.context.redirect_handler

        async def redirect_handler(authorization_url: str) -> None:
            signed["flow"] = True
            await original(authorization_url)

        provider.context.redirect_handler = redirect_handler
        # the whole sign-in (the user approving in a browser) runs inside the connect
        waiting = dataclasses.replace(
            entry, config=entry.config.model_copy(update={"timeout": max(timeout, entry.config.timeout)})
        )
        connection = McpConnection(waiting, cwd, auth=lambda _c: provider)
        try:
            await asyncio.wait_for(connection.session(), timeout)
        except TimeoutError:
            raise RuntimeError(f'sign-in to MCP server "{entry.name}" did not finish within {timeout:g}s') from None
        finally:
            await connection.close()
        if not signed["flow"]:
            stored = store.load(entry.name, url)
            if not stored.get("tokens"):
                raise RuntimeError(f'MCP server "{entry.name}" did not ask for sign-in; nothing was stored')
        return len(connection.tools)


def sign_out(entry: ServerEntry, agent: Path) -> bool:
    """Delete the stored credentials of ``entry``; whether there were any."""
    return CredentialStore(agent / AUTH_FILE_NAME).remove(entry.name, entry.config.url or "")
