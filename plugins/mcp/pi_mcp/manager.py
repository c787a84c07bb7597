"""The servers of one session runtime: connect, register their tools, wait, close.

Servers connect in the background from ``session_start`` on (stdio processes start
there; the SDK loads in a background thread; servers without ``direct`` tools wait for
the first request to go out before they load it, see :meth:`McpManager.request_sent`).
Each server's tools are registered at run time (``ctx.register_tool``) once it
connects and again after it announces a changed tool list; tools it no longer offers
are re-registered ``hidden``.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_hookspecs import StaleContextError, ToolDefinition

from .config import (
    LoadedConfig,
    ServerConfig,
    ServerEntry,
    agent_dir,
    load_config,
    normalized_server_name,
    parse_server,
)
from .log import LOG_FILE_NAME, McpLog
from .names import identifier, namespace_name, tool_exposure, tool_names

if TYPE_CHECKING:
    from .connection import McpConnection

DIRECT_WAIT_SECONDS = 10.0
SECTION = "mcp_servers"
CODEMODE = "codemode"
TOOL_SEARCH = "tool_search"
INDIRECT = ("codemode", "deferred")


def has_direct_tools(config: ServerConfig) -> bool:
    """The server may have tools with ``direct`` exposure (the first request declares them)."""
    return config.exposure == "direct" or "direct" in config.tool_exposure.values()


Registrations = dict[str, tuple[str, dict[str, Any], ServerEntry]]
"""What :func:`apply_registrations` put in place: server -> (plugin, its config, entry)."""


def apply_registrations(
    loaded: LoadedConfig, servers: Iterable[Any], previous: Registrations | None = None
) -> Registrations:
    """Put the servers plugins registered with pi (``register_mcp_servers``,
    ``ctx.register_mcp_server``: :class:`~pi_hookspecs.McpServerRegistration`) into
    ``loaded`` in place of the ones it held: a ``mcp.json`` server of the same name wins.
    A registration unchanged since ``previous`` keeps its entry (its connection stays). A
    config this plugin cannot use is an error line naming the plugin and the server."""
    previous = previous or {}
    for key, entry in list(loaded.servers.items()):
        if entry.scope == "plugin":
            del loaded.servers[key]
    loaded.shadowed = []
    loaded.errors = [error for error in loaded.errors if not error.startswith("plugin ")]
    current: Registrations = {}
    for registration in servers:
        name, plugin, raw = registration.name, registration.plugin, registration.config
        kept = previous.get(name)
        if kept is not None and kept[0] == plugin and kept[1] == raw:
            entry = kept[2]
        else:
            try:
                parsed = parse_server(name, raw)
            except ValueError as exc:
                loaded.errors.append(f'plugin {plugin}: MCP server "{name}": {exc}')
                continue
            entry = ServerEntry(name, parsed, f"plugin {plugin}", scope="plugin")
        current[name] = (plugin, raw, entry)
        existing = loaded.find(name)
        if existing is not None and existing.scope != "plugin":
            loaded.shadowed.append(entry)  # the mcp.json server wins
        else:
            loaded.servers[name] = entry
    return current


def registered_servers(loaded: LoadedConfig) -> list[dict[str, Any]]:
    """Every server plugins registered (in effect or shadowed by ``mcp.json``):
    ``name``, ``plugin``, ``config`` (the ``mcpServers`` entry as JSON), ``overridden``
    (a ``mcp.json`` server wins)."""
    out = []
    for entry, overridden in [
        *((e, False) for e in loaded.servers.values() if e.scope == "plugin"),
        *((e, True) for e in loaded.shadowed),
    ]:
        out.append(
            {
                "name": entry.name,
                "plugin": entry.source.removeprefix("plugin "),
                "config": entry.config.model_dump(mode="json", by_alias=True, exclude_none=True),
                "overridden": overridden,
            }
        )
    return out


def plugin_servers(ctx: Any) -> list[Any]:
    """The servers plugins registered with pi (``ctx.get_mcp_servers()``)."""
    get = getattr(ctx, "get_mcp_servers", None)
    return list(get()) if get is not None else []


async def load_session_config(ctx: Any, agent: Path | None = None) -> LoadedConfig:
    """``mcp.json`` files (the project's only when trusted)."""
    loaded = load_config(cwd=ctx.cwd, project_trusted=bool(ctx.is_project_trusted()), agent=agent)
    return loaded


class McpManager:
    def __init__(self, agent: Path | None = None) -> None:
        self.agent = agent if agent is not None else agent_dir()
        self.config = LoadedConfig()
        self.connections: dict[str, McpConnection] = {}
        self.registered: dict[str, dict[str, ToolDefinition]] = {}
        """Server -> the pi tools registered for it (pi name -> definition)."""
        self.exposures: dict[str, dict[str, str]] = {}
        """Server -> pi tool name -> configured exposure of its connected tools."""
        self.resource_exposure: str | None = None
        self.ctx: Any = None
        self.log = McpLog(self.agent / LOG_FILE_NAME)
        self._warned: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing: set[Any] = set()
        self._startup: list[asyncio.Future[Any]] = []
        self._closed = False
        self._owner: contextvars.Context | None = None
        self._switched_on: set[str] = set()
        self._deferred_pending = True
        self.bound = False
        self._registrations: Registrations = {}
        """Start-up read the registrations: later ones connect (or close) right away."""
        self._auth: Any = None

    # ------------------------------------------------------------------ start

    async def start(self, ctx: Any) -> None:
        """Read the configuration and connect every enabled server in the background."""
        self.ctx = ctx
        # Registrations made later (a server connecting in the background, a reconnect
        # during a tool call) run in the context of this session_start handler, so pi
        # attributes the tools to this plugin whichever task registers them.
        self._owner = contextvars.copy_context()
        self.config = await load_session_config(ctx, self.agent)
        self._registrations = apply_registrations(self.config, plugin_servers(ctx))
        self.bound = True
        for error in self.config.errors:
            self._notify(f"MCP config: {error}", "warning")
        enabled = [e for e in self.config.servers.values() if e.enabled]
        if not enabled:
            return
        from . import sdk

        for entry in enabled:
            self.connections[entry.name] = self._connection(entry)
        # Every stdio server starts now and starts up beside the rest of pi's startup. The
        # connection attempts (tasks) take the processes over and await the SDK, which loads
        # in a background thread: right away when a server may have direct tools (the first
        # prompt waits for those in before_agent_start), otherwise once the first request is
        # on its way (request_sent) or something waits for the servers.
        await asyncio.gather(*(c.prestart() for c in self.connections.values()))
        if any(not c.deferred for c in self.connections.values()):
            sdk.prefetch(http=any(e.config.transport == "http" for e in enabled))
        for connection in self.connections.values():
            self._startup.append(connection.start())
        # codemode / tool_search are on from the first request for the servers that need them
        self._ensure_orchestrators()
        self._spawn(self._after_startup())

    def _connection(self, entry: ServerEntry) -> McpConnection:
        from .connection import McpConnection
        from .oauth import OAuthFactory

        if self._auth is None:
            self._auth = OAuthFactory(self.agent)
        return McpConnection(
            entry,
            self.ctx.cwd,
            log=self.log,
            on_tools=self._on_tools,
            on_change=self._on_change,
            auth=self._auth,
            deferred=not has_direct_tools(entry.config),
        )

    # ------------------------------------------------------------------ registrations after start-up

    def registrations_changed(self, servers: Iterable[Any]) -> None:
        """Plugins registered or unregistered servers after start-up
        (``mcp_servers_change``): close what went away, connect what came."""
        if self._closed or self.ctx is None:
            return
        errors = list(self.config.errors)
        self._registrations = apply_registrations(self.config, servers, self._registrations)
        for error in self.config.errors:
            if error not in errors:
                self._notify(f"MCP config: {error}", "warning")
        self._spawn(self._reconcile())

    async def _reconcile(self) -> None:
        removed = [
            connection
            for name, connection in self.connections.items()
            if connection.entry.scope == "plugin" and self.config.servers.get(name) is not connection.entry
        ]
        for connection in removed:
            self._withdraw(connection.name)
            del self.connections[connection.name]
            self._closing.add(connection)  # until closed: close() waits for it too
        added = [entry for name, entry in self.config.servers.items() if entry.enabled and name not in self.connections]
        for entry in added:
            connection = self._connection(entry)
            self.connections[entry.name] = connection
        if removed:
            try:
                await asyncio.gather(*(c.close() for c in removed), return_exceptions=True)
            finally:
                self._closing.difference_update(removed)
            self._update_resource_tools()
        if added:
            from . import sdk

            sdk.prefetch(http=any(e.config.transport == "http" for e in added))
            await asyncio.gather(*(self.connections[e.name].prestart() for e in added))
            started = []
            for entry in added:
                connection = self.connections[entry.name]
                connection.want()
                started.append(connection.start())
            self._ensure_orchestrators()
            await asyncio.wait(started)
            self._ensure_orchestrators()

    def _withdraw(self, server: str) -> None:
        """Make a server's tools unreachable (tools cannot be unregistered)."""
        from .tools import withdrawn

        for definition in self.registered.pop(server, {}).values():
            self._register(withdrawn(definition))
        self.exposures.pop(server, None)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _after_startup(self) -> None:
        """Report servers that failed or need sign-in, once, after they all tried."""
        if self._startup:
            await asyncio.wait(self._startup)
        for connection in self.connections.values():
            if connection.state == "failed":
                first = (connection.error or "").splitlines()[0] if connection.error else ""
                self._notify(f'MCP server "{connection.name}" failed to connect: {first}', "warning")
            elif connection.state == "needs-auth":
                self._notify(connection.sign_in_message(), "warning")
        self._ensure_orchestrators()

    def _notify(self, message: str, level: str = "info") -> None:
        ctx = self.ctx
        if ctx is None or self._closed:
            return
        try:
            ctx.ui.notify(message, level)
        except StaleContextError:
            pass

    # ------------------------------------------------------------------ waiting

    def has_pending(self) -> bool:
        return any(c.pending for c in self.connections.values())

    async def wait_for(self, connections: Iterable[McpConnection], timeout: float | None = None) -> None:
        pending = [c for c in connections if c.pending]
        if not pending:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        for connection in pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            await connection.wait(left)

    async def wait_all(self, timeout: float | None = None) -> None:
        await self.wait_for(self.connections.values(), timeout)

    def may_have_direct_tools(self, connection: McpConnection) -> bool:
        return has_direct_tools(connection.entry.config)

    def request_sent(self) -> None:
        """A request is on its way to the model: deferred servers go on connecting."""
        if self._deferred_pending:
            self.want_all()

    def want_all(self) -> None:
        self._deferred_pending = False
        for connection in self.connections.values():
            connection.want()

    async def wait_direct(self, timeout: float | None = None) -> None:
        """The first prompt waits only for servers that may have ``direct`` tools: those
        must be declared in its request. Each attempt ends within its server's timeout
        (a server that has not answered by then has failed); the wait ends after
        ``timeout`` (:data:`DIRECT_WAIT_SECONDS`) at the latest."""
        if timeout is None:
            timeout = DIRECT_WAIT_SECONDS
        await self.wait_for([c for c in self.connections.values() if self.may_have_direct_tools(c)], timeout)

    def servers_named_by(self, words: Iterable[str]) -> list[McpConnection]:
        """The connections a call may reach, by the words of its input (``reachesTools``)."""
        words = [str(w) for w in words]
        out = []
        for connection in self.connections.values():
            names = {namespace_name(connection.name), connection.name, identifier(connection.name)}
            if any(name in word for word in words for name in names):
                out.append(connection)
        return out

    async def wait_for_call(self, tool_name: str, arguments: dict[str, Any]) -> None:
        """Before a call of a tool that reaches other tools (codemode, tool_search),
        finish connecting the servers it may reach."""
        if not self.has_pending() or self.ctx is None:
            return
        definition = next((d for d in self.ctx.get_all_tools() if d.name == tool_name), None)
        reaches = getattr(definition, "reaches_tools", None)
        if reaches is None:
            return
        value = reaches(arguments)
        if inspect.isawaitable(value):
            value = await value
        if value == "all":
            await self.wait_all()
        elif value:
            await self.wait_for(self.servers_named_by(value if not isinstance(value, str) else [value]))

    # ------------------------------------------------------------------ tools

    def _register(self, definition: ToolDefinition) -> bool:
        ctx = self.ctx
        if ctx is None or self._closed:
            return False
        try:
            self._as_owner(ctx.register_tool, definition)
        except StaleContextError:
            return False
        except ValueError as exc:
            key = f"conflict:{definition.name}"
            if key not in self._warned:
                self._warned.add(key)
                self._notify(f"MCP tool {definition.name} not registered: {exc}", "warning")
            return False
        return True

    def _as_owner(self, function: Callable[..., Any], *args: Any) -> Any:
        owner = self._owner
        return owner.copy().run(function, *args) if owner is not None else function(*args)

    def _on_change(self, connection: McpConnection) -> None:
        """A server failed, needs sign-in or closed: the resource tools may lose it."""
        if connection.state in ("failed", "needs-auth") and not self._closed:
            self._update_resource_tools()

    def _on_tools(self, connection: McpConnection) -> None:
        """The server connected or its tool list changed: (re-)register its tools."""
        from .tools import build_tool, namespace_for, withdrawn

        config = connection.entry.config
        names = tool_names(connection.name, [t.name for t in connection.tools])
        namespace = namespace_for(connection)
        previous = self.registered.get(connection.name, {})
        current: dict[str, ToolDefinition] = {}
        exposures: dict[str, str] = {}
        for tool in connection.tools:
            exposure = tool_exposure(config.exposure, config.tool_exposure, tool.name)
            definition = build_tool(connection, tool, names[tool.name], exposure, namespace)
            if self._register(definition):
                current[definition.name] = definition
                exposures[definition.name] = exposure
        for name, definition in previous.items():
            if name not in current:
                self._register(withdrawn(definition))
        self.registered[connection.name] = current
        self.exposures[connection.name] = exposures
        self._update_resource_tools()
        if not any(c.pending for c in self.connections.values()):
            self._ensure_orchestrators()

    def resource_servers(self) -> list[McpConnection]:
        return [
            c
            for c in self.connections.values()
            if c.has_resources and c.entry.config.exposure != "hidden" and c.state in ("connected", "disconnected")
        ]

    def _update_resource_tools(self) -> None:
        from .names import INTERNAL_EXPOSURE
        from .resources import resource_tools

        servers = self.resource_servers()
        if servers:
            exposures = {c.entry.config.exposure for c in servers}
            exposure = "direct" if "direct" in exposures else INTERNAL_EXPOSURE["deferred"]
        else:
            exposure = "hidden" if self.resource_exposure is not None else None  # type: ignore[assignment]
        if exposure is None or exposure == self.resource_exposure:
            return
        self.resource_exposure = exposure

        async def reachable() -> list[McpConnection]:
            await self.wait_all()
            return self.resource_servers()

        for definition in resource_tools(reachable, exposure):
            self._register(definition)

    def _ensure_orchestrators(self) -> None:
        """Activate ``codemode`` for servers with ``codemode`` tools and ``tool_search`` for
        ``deferred`` ones (configured exposures until a server connected; only tools of
        that name declaring ``reaches_tools``; never one the user deselected, never again
        once the user turned it off); warn once when indirect tools cannot be reached."""
        ctx = self.ctx
        if ctx is None or self._closed:
            return
        wanted: list[str] = []
        indirect = False
        for connection in self.connections.values():
            if connection.state in ("failed", "needs-auth", "closed"):
                continue
            values = self._exposure_values(connection)
            if "codemode" in values and self._auto_enable_codemode(ctx):
                wanted.append(CODEMODE)
            if "deferred" in values:
                wanted.append(TOOL_SEARCH)
            indirect = indirect or bool(values & set(INDIRECT))
        try:
            tools = {d.name: d for d in ctx.get_all_tools()}
            active = list(ctx.get_active_tools())
            deselected = getattr(ctx, "is_tool_deselected", None)
            add = [
                name
                for name in dict.fromkeys(wanted)
                if name in tools
                and name not in active
                and name not in self._switched_on
                and tools[name].reaches_tools is not None
                and tools[name].exposure != "hidden"
                and not (deselected is not None and deselected(name))
            ]
            if add:
                self._as_owner(ctx.set_active_tools, [*active, *add])
                active += add
            # switched on once per session: a user who turns it off afterwards keeps it off
            self._switched_on.update(name for name in wanted if name in active)
        except StaleContextError:
            return
        settled = not any(c.pending for c in self.connections.values())
        if (
            settled
            and indirect
            and CODEMODE not in active
            and TOOL_SEARCH not in active
            and "unreachable" not in self._warned
        ):
            self._warned.add("unreachable")
            self._notify(
                "MCP tools with codemode or deferred exposure cannot be called: neither codemode nor tool_search is "
                'active (install pluggable-pi-codemode / pluggable-pi-tool-search, or give the tools "direct" '
                "exposure)",
                "warning",
            )

    def _auto_enable_codemode(self, ctx: Any) -> bool:
        """``autoEnableCodemode: false`` beside ``mcpServers`` or in the settings turns
        the automatic activation off."""
        if not self.config.auto_enable_codemode:
            return False
        try:
            return ctx.get_settings().get("autoEnableCodemode") is not False
        except (StaleContextError, AttributeError):
            return True

    def _exposure_values(self, connection: McpConnection) -> set[str]:
        """The exposures of a server's tools; before it connected, the configured ones."""
        if connection.connects:
            return set(self.exposures.get(connection.name, {}).values())
        config = connection.entry.config
        return {config.exposure, *config.tool_exposure.values()}

    # ------------------------------------------------------------------ system prompt

    def render_section(self) -> str | None:
        """The ``mcp_servers`` section: servers whose tools are reached indirectly."""
        from .tools import server_summary

        lines = []
        for connection in self.connections.values():
            if connection.state in ("failed", "needs-auth", "closed"):
                continue
            values = self._exposure_values(connection)
            ways = []
            if "codemode" in values:
                ways.append("call them from codemode scripts")
            if "deferred" in values:
                ways.append("load them with tool_search")
            if not ways:
                continue
            summary = server_summary(connection) or "(no description)"
            lines.append(
                f"- {connection.name} ({namespace_name(connection.name)}): {summary} Tools: {'; '.join(ways)}."
            )
        if not lines:
            return None
        head = "These MCP servers' tools are not declared to you. Their tools are named mcp__<server>__<tool>."
        return "\n".join([head, *lines])

    # ------------------------------------------------------------------ control

    def find(self, name: str) -> McpConnection | None:
        wanted = normalized_server_name(name)
        return next((c for n, c in self.connections.items() if normalized_server_name(n) == wanted), None)

    def entry(self, name: str) -> ServerEntry | None:
        return self.config.find(name)

    async def close(self) -> None:
        """Close every server (idempotent)."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        # also the servers a plugin unregistered whose closing was under way: cancelling
        # that closing (with the tasks above) would leave their processes to the loop's end
        closing = [c.close() for c in [*self.connections.values(), *self._closing]]
        if closing:
            await asyncio.gather(*closing, return_exceptions=True)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def status_hint(agent: Path) -> str:
    return f" Add them to {agent / 'mcp.json'} or .pi/mcp.json (pi mcp add NAME -- COMMAND ARGS...)."
