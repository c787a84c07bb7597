"""pluggable-pi-mcp: connect MCP servers (stdio and streamable HTTP) and expose their tools.

Servers come from ``<agent dir>/mcp.json``, the trusted project's ``.pi/mcp.json`` and
the servers plugins register with pi (``register_mcp_servers``,
``ctx.register_mcp_server``). They connect in the background when a session starts;
their tools are registered as ``mcp__<server>__<tool>`` with the configured exposure and
run through pi's tool pipeline, so ``tool_call`` / ``tool_result`` policies apply. See ``docs/mcp.md``.

``import pi_mcp`` never imports the ``mcp`` SDK (``import mcp`` costs about half a
second): it loads in a background thread once a server is configured, while the stdio
servers start up (:mod:`pi_mcp.sdk`). The first prompt waits only for servers that may
have ``direct`` tools; the others finish connecting once its request is on its way.
"""

from __future__ import annotations

__version__ = "1.0.0"

from typing import Any

from pi_hookspecs import CliCommandDefinition, CommandDefinition, FlagDefinition, hookimpl

from .config import LoadedConfig, ServerConfig, ServerEntry, load_config, parse_server

__all__ = ["LoadedConfig", "McpPlugin", "ServerConfig", "ServerEntry", "load_config", "parse_server"]

NO_MCP_FLAG = "no-mcp"


class McpPlugin:
    """The pi plugin (entry point ``mcp``): one instance per session runtime."""

    def __init__(self) -> None:
        self.manager: Any = None
        self.disabled: str | None = None

    # ------------------------------------------------------------------ registration

    # The registrations are this plugin's constants: passed as constructed definitions,
    # so a run does not build their validators.

    @hookimpl
    def register_flags(self, register: Any) -> None:
        register(
            FlagDefinition.model_construct(
                name=NO_MCP_FLAG, type="boolean", default=False, description="Disable MCP servers for this run"
            )
        )

    @hookimpl
    def register_commands(self, register: Any) -> None:
        register(
            CommandDefinition.model_construct(
                name="mcp",
                handler=self._command,
                description="MCP servers: status, reconnect NAME, login NAME, logout NAME",
                argument_hint="[reconnect|login|logout NAME]",
            )
        )

    @hookimpl
    def register_cli_commands(self, register: Any) -> None:
        from .cli import HELP, main

        register(CliCommandDefinition.model_construct(name="mcp", main=main, help=HELP))

    # ------------------------------------------------------------------ life cycle

    @hookimpl
    async def session_start(self, event: Any, ctx: Any) -> None:
        if ctx.get_flag(NO_MCP_FLAG):
            self.disabled = "MCP is disabled for this run (--no-mcp)."
            return
        from .manager import McpManager

        self.manager = McpManager()
        await self.manager.start(ctx)

    @hookimpl
    async def mcp_servers_change(self, event: Any) -> None:
        # implementing this hook also tells pi that this plugin connects the servers plugins register
        manager = self.manager
        if manager is not None and manager.bound:
            manager.registrations_changed(event.servers)

    @hookimpl
    async def before_agent_start(self, event: Any, ctx: Any) -> None:
        manager = self.manager
        if manager is None or not manager.connections:
            return
        from .manager import SECTION

        options = event.system_prompt_options
        before = set(ctx.get_active_tools())
        await manager.wait_direct()
        # tools that became active while waiting must be in the selection the prompt is built from
        for name in ctx.get_active_tools():
            if name not in before and name not in options.selected_tools:
                options.selected_tools.append(name)
        section = manager.render_section()
        sections = options.sections
        if section:
            sections[SECTION] = section
        else:
            sections.pop(SECTION, None)

    # Coroutines, so they run on pi's event loop: ``request_sent`` sets the connections'
    # asyncio events, which is not safe from a worker thread (and a plain handler would
    # cost a thread hop per message for nothing).

    @hookimpl
    async def after_provider_response(self, event: Any, ctx: Any) -> None:
        manager = self.manager
        if manager is not None:
            manager.request_sent()

    @hookimpl
    async def message_start(self, event: Any, ctx: Any) -> None:
        manager = self.manager
        if manager is not None and getattr(event.message, "role", None) == "assistant":
            manager.request_sent()  # for providers without after_provider_response

    @hookimpl
    async def tool_call(self, event: Any, ctx: Any) -> None:
        manager = self.manager
        if manager is not None and manager.has_pending():
            await manager.wait_for_call(event.tool_name, event.input)

    @hookimpl
    async def session_shutdown(self, event: Any, ctx: Any) -> None:
        manager, self.manager = self.manager, None
        if manager is not None:
            await manager.close()

    async def _command(self, args: str, ctx: Any) -> None:
        from .commands import run_command

        if self.manager is not None:
            self.manager.want_all()  # what /mcp shows or does concerns every server

        await run_command(self.manager, args, ctx, disabled=self.disabled)
