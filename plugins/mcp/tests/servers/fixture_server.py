"""A real MCP server for pluggable-pi-mcp's tests, built on the SDK's ``MCPServer``.

    python fixture_server.py [--name N] [--page-size K] [--instructions TEXT]
                             [--pidfile FILE] [--child] [--hang]
                             [--start-delay S] [--wait-for FILE]
                             [--http] [--fail-list N]

stdio by default; ``--http`` serves streamable HTTP on 127.0.0.1 (a free port, printed
as ``PORT <n>`` on stdout). ``--hang`` never answers (it only reads stdin until EOF).
``--pidfile`` appends this process's pid (and with ``--child`` a helper child's pid).
``--start-delay S`` sleeps S seconds before serving; ``--wait-for FILE`` serves only
once FILE exists (a slow start that the test ends).
``--fail-list N`` answers the first N ``tools/list`` requests with HTTP 503.
``--oauth`` (with ``--http``) protects the server with OAuth: the same server is the
authorization server, approves every authorization at once, issues tokens valid for
``--token-ttl`` seconds and counts refreshes; ``POST /test/expire-access`` forgets every
access token (refresh tokens stay valid).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ListResourcesResult, ListToolsResult, ToolAnnotations
from pydantic import BaseModel

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Paged(MCPServer):
    """Lists tools and resources ``page_size`` at a time (cursors are offsets)."""

    page_size = 0

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        tools = await self.list_tools()
        if not self.page_size:
            return ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def _handle_list_resources(self, ctx: Any, params: Any) -> ListResourcesResult:
        resources = await self.list_resources()
        if not self.page_size:
            return ListResourcesResult(resources=resources)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return ListResourcesResult(
            resources=resources[start:end], next_cursor=str(end) if end < len(resources) else None
        )


class Total(BaseModel):
    total: int


def build(name: str, instructions: str | None, page_size: int) -> Paged:
    server = Paged(name, instructions=instructions)
    server.page_size = page_size
    build_tools(server)
    return server


def build_tools(server: Paged) -> None:
    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def add(a: int, b: int) -> Total:
        """Add two numbers (structured result)."""
        return Total(total=a + b)

    @server.tool()
    def picture() -> Image:
        """Return a tiny PNG image."""
        return Image(data=PNG, format="png")

    @server.tool()
    def fail(reason: str = "it went wrong") -> str:
        """Fail with isError."""
        raise ToolError(reason)

    @server.tool()
    def big(size: int) -> str:
        """Return ``size`` characters: HEAD, filler, TAIL."""
        return "HEAD" + "x" * (size - 8) + "TAIL"

    @server.tool()
    def crash() -> str:
        """Exit the server in the middle of the call."""
        sys.stderr.write("fixture server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    async def grow(tool: str, ctx: Context) -> str:
        """Add a tool named ``tool`` and announce the changed tool list."""

        def added() -> str:
            return f"I am {tool}"

        server.add_tool(added, name=tool, description=f"Added at run time: {tool}")
        await ctx.session.send_tool_list_changed()
        return f"added {tool}"

    @server.tool()
    async def shrink(tool: str, ctx: Context) -> str:
        """Remove the tool named ``tool`` and announce the changed tool list."""
        server.remove_tool(tool)
        await ctx.session.send_tool_list_changed()
        return f"removed {tool}"

    @server.tool()
    async def log(message: str, ctx: Context) -> str:
        """Send a log notification."""
        await ctx.session.send_log_message(level="warning", data=message, logger="fixture")
        return "logged"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False), title="Look up")
    def lookup(key: str) -> str:
        """Read-only lookup."""
        return f"value of {key}"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool()
    async def progress(ctx: Context) -> str:
        """Report progress twice."""
        await ctx.report_progress(1, 2, "half way")
        await ctx.report_progress(2, 2, "done")
        return "progressed"

    @server.tool()
    async def ticker(steps: int, seconds: float, ctx: Context) -> str:
        """Report progress ``steps`` times, ``seconds`` apart."""
        for step in range(steps):
            await asyncio.sleep(seconds)
            await ctx.report_progress(step + 1, steps)
        return "ticked"

    @server.tool()
    def env(variable: str) -> str:
        """The value of an environment variable of the server."""
        return os.environ.get(variable, "<unset>")

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP request header (streamable HTTP only)."""
        return (ctx.headers or {}).get(name.lower(), "<none>")

    @server.tool()
    def where() -> str:
        """The server's working directory."""
        return os.getcwd()

    @server.tool(name="weird.name")
    def weird() -> str:
        """A tool whose name needs cleaning."""
        return "weird"

    @server.resource("file:///notes.txt", name="notes", mime_type="text/plain")
    def notes() -> str:
        return "alpha\nbeta"

    @server.resource("file:///pixel.png", name="pixel", mime_type="image/png")
    def pixel() -> bytes:
        return PNG

    @server.resource("file:///data.bin", name="data", mime_type="application/octet-stream")
    def data() -> bytes:
        return b"\x00\x01\x02binary"

    @server.resource("ui://widget", name="widget", mime_type="text/html;profile=mcp-app")
    def widget() -> str:
        return "<html></html>"

    @server.resource("file:///items/{item}", name="item", mime_type="text/plain")
    def item(item: str) -> str:
        return f"item {item}"


def hang() -> None:
    for _ in sys.stdin:
        pass


class FailList:
    """ASGI middleware: HTTP 503 for the first ``count`` tools/list requests."""

    def __init__(self, app: Any, count: int) -> None:
        self.app = app
        self.count = count

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.count <= 0:
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except ValueError:
            method = None
        if method == "tools/list":
            self.count -= 1
            await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"try again"})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class MemoryAuthorizationServer:
    """An OAuth authorization server in memory that approves every request at once."""

    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        self.clients: dict[str, Any] = {}
        self.codes: dict[str, Any] = {}
        self.access: dict[str, Any] = {}
        self.refresh: dict[str, Any] = {}
        self.refreshes = 0

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, client_info: Any) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: Any, params: Any) -> str:
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        code = secrets.token_hex(20)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> Any:
        from mcp.server.auth.provider import AccessToken, RefreshToken
        from mcp.shared.auth import OAuthToken

        access, refresh = f"at-{secrets.token_hex(8)}", f"rt-{secrets.token_hex(8)}"
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + self.ttl, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, expires_in=self.ttl, refresh_token=refresh, scope=" ".join(scopes) or None
        )

    async def exchange_authorization_code(self, client: Any, authorization_code: Any) -> Any:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: Any, refresh_token: Any, scopes: list[str]) -> Any:
        self.refresh.pop(refresh_token.token, None)
        self.refreshes += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> Any:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def oauth_server(args: argparse.Namespace, port: int) -> Paged:
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    base = f"http://127.0.0.1:{port}"
    provider = MemoryAuthorizationServer(args.token_ttl)
    server = Paged(
        args.name,
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=False,
        ),
    )
    build_tools(server)

    @server.custom_route("/test/expire-access", methods=["POST"])
    async def expire(request: Request) -> JSONResponse:
        provider.access.clear()
        return JSONResponse({"ok": True})

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request) -> JSONResponse:
        return JSONResponse({"refreshes": provider.refreshes, "clients": len(provider.clients)})

    return server


def serve_http(args: argparse.Namespace) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = oauth_server(args, port) if args.oauth else build(args.name, args.instructions, args.page_size)
    app: Any = server.streamable_http_app()
    if args.fail_list:
        app = FailList(app, args.fail_list)
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="fixture")
    parser.add_argument("--instructions")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--pidfile")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--fail-list", type=int, default=0)
    parser.add_argument("--oauth", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--wait-for")
    args = parser.parse_args()
    if args.pidfile:
        pids = [os.getpid()]
        if args.child:
            helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.DEVNULL)
            pids.append(helper.pid)
        with open(args.pidfile, "a", encoding="utf-8") as handle:
            handle.write("".join(f"{pid}\n" for pid in pids))
    if args.hang:
        hang()
        return
    if args.start_delay:
        time.sleep(args.start_delay)
    while args.wait_for and not os.path.exists(args.wait_for):
        time.sleep(0.01)
    if args.http:
        serve_http(args)
    else:
        build(args.name, args.instructions, args.page_size).run()


if __name__ == "__main__":
    main()
