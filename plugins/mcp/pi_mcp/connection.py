"""One MCP server: connect (bounded by its timeout), list, call, reconnect, close.

Each connection attempt runs in an *owner* task that enters the transport and the
``ClientSession`` and keeps them open until the connection is closed or drops: the
``mcp`` SDK (anyio) requires a context to be left by the task that entered it. Calls
come from any task. A dropped connection (the stdio server exited, the HTTP transport
failed) shows as ``disconnected``; the next call reconnects.

Stdio servers start in their own session (process group). Closing one closes its
stdin, waits briefly, then sends SIGTERM and finally SIGKILL to the whole group, so
servers started through ``npx`` or ``uvx`` leave no orphans (:mod:`pi_mcp.stdio`).
The protocol is the initialize handshake (the SDK's legacy mode), whose
``notifications/tools/list_changed`` arrive through the session's message handler.

This module does not import the ``mcp`` SDK: a connection awaits
:func:`pi_mcp.sdk.ready` (the SDK imported in a background thread) only once it needs
it, after a stdio server's process has started.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc

from . import __version__, sdk
from .config import ConfigValueError, ServerEntry, expand_home, expand_mapping
from .errors import McpTimeoutError, McpUnavailableError, SignInRequiredError, describe, find
from .log import McpLog
from .stdio import discard_process, spawn_process, stdio_transport

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.shared.exceptions import MCPError

    from .http import RetryingTransport

# The SDK logs failures it also raises (an OAuth flow that needs a sign-in, a dropped
# stream); without a handler of the application's they would reach stderr through
# logging's last resort. The errors reach the user through the server state instead.
logging.getLogger("mcp").addHandler(logging.NullHandler())

State = Literal["idle", "connecting", "connected", "disconnected", "needs-auth", "failed", "closed"]
STDERR_TAIL_CHARS = 2000
MAX_PAGES = 1000
CLIENT_NAME = "pi"
CLIENT_VERSION = __version__
"""The version pi reports to MCP servers (``clientInfo``): pluggable-pi-mcp's own."""

AuthFactory = Callable[["McpConnection"], Any]
"""Returns the ``httpx2.Auth`` (OAuth provider) for an HTTP server, or ``None``."""


class _EofWatch:
    """A read stream that reports its end (the server closed the connection)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_eof()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except (StopAsyncIteration, anyio.ClosedResourceError):
            self._on_eof()
            raise

    async def __aenter__(self) -> _EofWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class McpConnection:
    """A configured server and its (re)connections."""

    def __init__(
        self,
        entry: ServerEntry,
        cwd: str,
        *,
        log: McpLog | None = None,
        on_change: Callable[[McpConnection], None] | None = None,
        on_tools: Callable[[McpConnection], None] | None = None,
        auth: AuthFactory | None = None,
        deferred: bool = False,
    ) -> None:
        self.entry = entry
        self.cwd = cwd
        self.log = log
        self.on_change = on_change
        self.on_tools = on_tools
        self.auth_factory = auth
        self.state: State = "idle"
        self.error: str | None = None
        self.tools: list[types.Tool] = []
        self.instructions: str | None = None
        self.server_name: str | None = None
        self.has_resources = False
        self.connects = 0
        """Successful connections so far (a reconnect makes it 2)."""
        self._session: ClientSession | None = None
        self._opening: asyncio.Future[ClientSession] | None = None
        self._owners: set[asyncio.Task[Any]] = set()
        self._stops: set[asyncio.Event] = set()
        self._scopes: set[anyio.CancelScope] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._stderr: IO[str] | None = None
        self._http: RetryingTransport | None = None
        self.pid: int | None = None
        """The process id (and process group) of the stdio server last started."""
        self._wanted = asyncio.Event()
        """Set once the connection attempt may load the SDK and connect (see :meth:`want`)."""
        if not deferred:
            self._wanted.set()
        self._early: anyio.abc.Process | Exception | None = None
        """A stdio server process started by :meth:`prestart` (or why it could not be
        started), not yet taken over by a connection attempt."""

    # ------------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def timeout(self) -> float:
        return float(self.entry.config.timeout)

    @property
    def connected(self) -> bool:
        return self._session is not None

    @property
    def pending(self) -> bool:
        """A connection attempt is under way."""
        return self._opening is not None and not self._opening.done()

    @property
    def deferred(self) -> bool:
        """The connection attempt waits to be wanted before it loads the SDK and connects."""
        return not self._wanted.is_set()

    def want(self) -> None:
        """Let a deferred connection attempt go on. Servers whose tools the first request
        does not need are deferred until the request is on its way, so that loading the
        SDK does not compete with pi for the interpreter while pi prepares it; waiting for
        the connection (:meth:`wait`, :meth:`session`) wants it too."""
        self._wanted.set()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def _set(self, state: State, error: str | None = None) -> None:
        self.state = state
        self.error = error
        self._changed()

    # ------------------------------------------------------------------ connecting

    def start(self) -> asyncio.Future[ClientSession]:
        """Begin connecting (once; concurrent callers share the attempt)."""
        if self._closed:
            future: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            future.set_exception(McpUnavailableError(f'MCP server "{self.name}" is shut down'))
            future.exception()
            return future
        if self._opening is None:
            self.state = "connecting"
            task = asyncio.ensure_future(self._open())
            self._opening = task
            task.add_done_callback(self._opened)
        return self._opening

    def _opened(self, task: asyncio.Future[ClientSession]) -> None:
        if self._opening is task:
            self._opening = None
        if not task.cancelled():
            task.exception()  # retrieved: failures are reported through the state

    async def session(self) -> ClientSession:
        """The live session, connecting first when needed."""
        session = self._session
        if session is not None:
            return session
        if self._closed:
            raise McpUnavailableError(f'MCP server "{self.name}" is shut down')
        self.want()
        return await asyncio.shield(self.start())

    async def wait(self, timeout: float | None) -> None:
        """Wait until a connection attempt under way has finished (never raises)."""
        self.want()
        opening = self._opening
        if opening is not None and not opening.done():
            await asyncio.wait([opening], timeout=timeout)

    async def reconnect(self) -> ClientSession:
        """Drop the current connection and connect again (after a sign-in, ``/mcp reconnect``)."""
        if self._opening is not None:
            await asyncio.wait([self._opening])
        self._drop()
        return await self.session()

    def _drop(self) -> None:
        self._session = None
        for stop in list(self._stops):
            stop.set()

    def signed_out(self) -> None:
        """The stored credentials were removed: disconnect and show that sign-in is needed."""
        self._drop()
        if not self._closed:
            self._set("needs-auth")

    async def _open(self) -> ClientSession:
        self._set("connecting")
        retried = False
        while True:
            try:
                session = await self._attempt()
                break
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    raise
                if self._closed:
                    self._set("closed")
                    raise McpUnavailableError(f'MCP server "{self.name}" is shut down') from None
                if find(exc, SignInRequiredError) is not None:
                    rejected = getattr(self.auth_factory, "rejected", None)
                    if not retried and rejected is not None and rejected(self):
                        retried = True  # the stored token was refused: refresh it once
                        continue
                    self._set("needs-auth", None)
                    raise McpUnavailableError(self.sign_in_message()) from None
                self._set("failed", self._with_stderr(self._describe_failure(exc)))
                raise McpUnavailableError(f'MCP server "{self.name}" failed to connect: {self.error}') from None
        signed_in = getattr(self.auth_factory, "signed_in", None)
        if signed_in is not None:
            signed_in(self)
        self.connects += 1
        self._set("connected")
        if self.on_tools is not None:
            self.on_tools(self)
        return session

    async def _attempt(self) -> ClientSession:
        """One connection attempt in a new owner task."""
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        owner = asyncio.ensure_future(self._run(ready, stop))
        self._owners.add(owner)
        self._stops.add(stop)
        owner.add_done_callback(self._owners.discard)
        try:
            return await asyncio.shield(ready)
        except asyncio.CancelledError:
            stop.set()
            raise
        except BaseException:
            await asyncio.wait([owner])
            raise

    def _describe_failure(self, exc: BaseException) -> str:
        message = describe(exc) + self.http_error()
        if self.entry.config.transport == "http":
            import httpx2

            if find(exc, httpx2.TransportError) is not None:
                return f"cannot reach {self.entry.config.url}: {message}"
        return message

    def sign_in_message(self) -> str:
        return f'MCP server "{self.name}" requires sign-in: run /mcp login {self.name} or pi mcp login {self.name}'

    async def _run(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        """The owner task of one connection attempt."""
        if self._closed:  # closed before this task ran: nothing to cancel it
            ready.set_exception(McpUnavailableError(f'MCP server "{self.name}" is shut down'))
            return
        session: ClientSession | None = None
        scope = anyio.CancelScope()  # its deadline (the timeout) starts once the attempt is wanted
        self._scopes.add(scope)

        def eof() -> None:
            stop.set()
            if session is not None and self._session is session and not self._closed:
                self._session = None
                self._set("disconnected", self._with_stderr("Connection closed"))

        try:
            with scope:
                if not self._wanted.is_set():
                    await self._wanted.wait()
                if self._closed:
                    raise McpUnavailableError(f'MCP server "{self.name}" is shut down')
                scope.deadline = anyio.current_time() + self.timeout
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport())
                    await sdk.ready()  # the transport awaited it already
                    import mcp_types as types
                    from mcp.client.session import ClientSession

                    session = await stack.enter_async_context(
                        ClientSession(
                            _EofWatch(read, eof),
                            write,
                            read_timeout_seconds=self.timeout,
                            logging_callback=self._on_log,
                            message_handler=self._on_message,
                            client_info=types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
                        )
                    )
                    init = await session.initialize()
                    tools = await self._list_tools(session) if init.capabilities.tools is not None else []
                    self.tools = tools
                    self.instructions = (init.instructions or "").strip() or None
                    self.server_name = init.server_info.name if init.server_info else None
                    self.has_resources = init.capabilities.resources is not None
                    scope.deadline = math.inf
                    self._session = session
                    ready.set_result(session)
                    if not stop.is_set():
                        await stop.wait()
            if scope.cancelled_caught and not ready.done():
                ready.set_exception(TimeoutError(f"did not finish starting within {self.timeout:g}s"))
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif session is not None and self._session is session and not self._closed:
                self._session = None
                self._set("disconnected", self._with_stderr(f"Connection closed: {describe(exc)}"))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._scopes.discard(scope)
            self._stops.discard(stop)
            if not ready.done():
                ready.set_exception(McpUnavailableError(f'MCP server "{self.name}" is shut down'))
            if session is not None and self._session is session:
                self._session = None
                if not self._closed:
                    self._set("disconnected", self._with_stderr("Connection closed"))

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        config = self.entry.config
        if config.transport == "stdio":
            return self._stdio()
        return self._streamable_http()

    async def _start_process(self) -> anyio.abc.Process:
        """Start the stdio server's process (its stderr goes to a fresh temporary file)."""
        config = self.entry.config
        env = expand_mapping(config.env, lambda key: f'MCP server "{self.name}" env "{key}"')
        cwd = Path(self.cwd)
        if config.cwd:
            cwd = (cwd / expand_home(config.cwd)).resolve()
            if not cwd.is_dir():
                raise ConfigValueError(f'MCP server "{self.name}": cwd {str(cwd)!r} is not a directory')
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        process = await spawn_process(
            expand_home(config.command or ""),
            [expand_home(arg) for arg in config.args],
            env=env,
            cwd=str(cwd),
            errlog=self._stderr,
        )
        self.pid = process.pid
        return process

    async def prestart(self) -> None:
        """Start a stdio server's process right away, before the SDK is loaded and before
        the connection attempt (a task) runs, so that the server starts up beside pi. The
        first attempt takes the process over, or reports why it could not be started."""
        if self.entry.config.transport != "stdio" or self._closed or self._early is not None:
            return
        try:
            process: anyio.abc.Process | Exception = await self._start_process()
        except Exception as exc:
            process = exc
        if self._closed and not isinstance(process, Exception):
            await discard_process(process)
        elif not self._closed:
            self._early = process

    @asynccontextmanager
    async def _stdio(self) -> Any:
        early, self._early = self._early, None
        if isinstance(early, Exception):
            raise early
        process = early if early is not None else await self._start_process()
        async with stdio_transport(process, before_streams=sdk.ready, on_fault=self._on_fault) as streams:
            yield streams

    def _on_fault(self, text: str) -> None:
        """A protocol fault of the stdio server (the waiting requests already failed)."""
        if self.log is not None:
            self.log.write(self.name, "error", "pi", text)

    @asynccontextmanager
    async def _streamable_http(self) -> Any:
        await sdk.ready(http=True)
        from mcp.client.streamable_http import streamable_http_client

        from .http import make_http_client

        config = self.entry.config
        headers = expand_mapping(config.headers, lambda key: f'MCP server "{self.name}" header "{key}"')
        auth = self.auth_factory(self) if self.auth_factory is not None and config.uses_oauth() else None
        client, self._http = make_http_client(config.url or "", headers, self.timeout, auth)
        async with client, streamable_http_client(config.url or "", http_client=client) as streams:
            yield streams

    def _with_stderr(self, message: str) -> str:
        tail = self.stderr_tail()
        return f"{message}\n{tail}" if tail else message

    def stderr_tail(self) -> str:
        """The end of what the stdio server wrote to stderr (its last start)."""
        handle = self._stderr
        if handle is None or handle.closed:
            return ""
        try:
            handle.flush()
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - STDERR_TAIL_CHARS * 4))
            return handle.read()[-STDERR_TAIL_CHARS:].strip()
        except (OSError, ValueError):
            return ""

    def http_error(self) -> str:
        """`` (HTTP 503 on tools/list)`` for the last HTTP error status, if any."""
        last = self._http.last_error if self._http is not None else None
        if not last:
            return ""
        return f" (HTTP {last[0]} on {last[1]})" if last[1] else f" (HTTP {last[0]})"

    # ------------------------------------------------------------------ notifications

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.log is not None:
            self.log.write(self.name, str(params.level), params.logger, params.data)

    async def _on_message(self, message: Any) -> None:
        import mcp_types as types

        notification = getattr(message, "root", message)
        if isinstance(notification, types.ToolListChangedNotification):
            self._spawn(self._refresh_tools())
        elif isinstance(notification, types.ResourceListChangedNotification):
            self.has_resources = True
            self._changed()

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refresh_tools(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            tools = await self._list_tools(session)
        except Exception as exc:
            self.error = f"Failed to refresh tools: {describe(exc)}"
            self._changed()
            return
        if self._session is session and not self._closed:
            self.tools = tools
            if self.on_tools is not None:
                self.on_tools(self)

    async def refresh_tools(self) -> None:
        """List the tools again (the server announced a change)."""
        await self._refresh_tools()

    # ------------------------------------------------------------------ requests

    async def _list_tools(self, session: ClientSession) -> list[types.Tool]:
        import mcp_types as types

        tools: list[types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or cursor in seen:
                break
            seen.add(cursor)
        return tools

    async def _request(self, call: Callable[[ClientSession], Awaitable[Any]], *, expired_retry: bool = True) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        session = await self.session()
        try:
            return await call(session)
        except McpTimeoutError:
            self._restart_after_timeout(session)
            raise
        except MCPError as exc:
            if exc.error.code == types.REQUEST_TIMEOUT:
                self._restart_after_timeout(session)
            if expired_retry and self._session_expired(exc):
                # The HTTP server no longer knows the session (it restarted), so it did not
                # run the request: connect again and send it once more.
                if self._session is session:
                    self._drop()
                return await self._request(call, expired_retry=False)
            if exc.error.code == types.CONNECTION_CLOSED:
                detail = self._with_stderr(f"{exc.error.message}{self.http_error()}")
                if self._session is session:
                    self._drop()
                    if not self._closed:
                        self._set("disconnected", detail)
                raise McpUnavailableError(f'MCP server "{self.name}" disconnected: {detail}') from None
            if exc.error.code == types.INTERNAL_ERROR and self._http is not None and self.http_error():
                raise McpUnavailableError(f'MCP server "{self.name}": {exc.error.message}{self.http_error()}') from None
            raise

    def _restart_after_timeout(self, session: ClientSession) -> None:
        """A stdio server that let a request time out may be stuck: stop it; the next
        request starts it again."""
        if self.entry.config.transport != "stdio" or self._session is not session or self._closed:
            return
        if self.log is not None:
            self.log.write(
                self.name, "warning", "pi", "a request timed out: the server is restarted before the next one"
            )
        self._drop()
        self._set("disconnected", "a request timed out; the server starts again with the next request")

    def _session_expired(self, exc: MCPError) -> bool:
        """An HTTP 404 for the session: the server restarted (or expired the session)."""
        import mcp_types as types

        if self.entry.config.transport != "http" or exc.error.code != types.INVALID_REQUEST:
            return False
        last = self._http.last_error if self._http is not None else None
        return exc.error.message in ("Session terminated", "Session not found") or bool(last and last[0] == 404)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> types.CallToolResult:
        """Call a tool (never retried: the server may already have run it)."""

        import mcp_types as types

        timeout = self.timeout
        report = progress

        async def call(session: ClientSession) -> types.CallToolResult:
            # the timeout starts again with every progress notification of the call
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    scope.deadline = anyio.current_time() + timeout
                    if report is not None:
                        await report(progress, total, message)

                result = await session.call_tool(
                    name, arguments, read_timeout_seconds=math.inf, progress_callback=on_progress
                )
            if scope.cancelled_caught:
                raise McpTimeoutError(
                    f'MCP tool "{self.name}/{name}" did not answer within {timeout:g}s (without progress)'
                )
            assert isinstance(result, types.CallToolResult)
            return result

        return await self._request(call)  # type: ignore[no-any-return]

    async def list_resources_page(self, cursor: str | None) -> types.ListResourcesResult:
        import mcp_types as types

        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        return await self._request(lambda s: s.list_resources(params=params))  # type: ignore[no-any-return]

    async def list_templates_page(self, cursor: str | None) -> types.ListResourceTemplatesResult:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None

        async def call(session: ClientSession) -> types.ListResourceTemplatesResult:
            try:
                return await session.list_resource_templates(params=params)
            except MCPError as exc:
                if exc.error.code == types.METHOD_NOT_FOUND:
                    return types.ListResourceTemplatesResult(resource_templates=[])
                raise

        return await self._request(call)  # type: ignore[no-any-return]

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._request(lambda s: s.read_resource(uri))  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Close every transport of this server, also one still connecting."""
        self._closed = True
        self._session = None
        self._wanted.set()  # a deferred attempt wakes up and ends
        early, self._early = self._early, None
        for scope in list(self._scopes):
            if scope.deadline != math.inf:  # still connecting: cancel the attempt
                scope.cancel()
        for stop in list(self._stops):
            stop.set()
        pending: list[asyncio.Future[Any]] = [*self._owners, *self._tasks]
        if early is not None and not isinstance(early, Exception):  # started by prestart, never taken over
            pending.append(asyncio.ensure_future(discard_process(early)))
        if self._opening is not None:
            pending.append(self._opening)
        if pending:
            await asyncio.wait(pending)
        if self.state != "closed":
            self._set("closed", self.error)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
