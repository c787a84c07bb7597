"""The pi plugin: registers ``codemode`` and turns it on when tools need it."""

from __future__ import annotations

import json
from typing import Any

from pi_hookspecs import hookimpl, toolkit

from .catalog import CODEMODE_TOOL
from .description import CodemodeSettings
from .tool import CodemodeTool

__all__ = ["CodemodePlugin"]


class CodemodePlugin:
    """The ``codemode`` tool (inactive until ``defaultTools: ["+codemode"]``,
    ``--tools +codemode``, or a tool with ``codemode`` exposure — an MCP server's, say —
    is registered while ``autoEnableCodemode`` is not ``false``).

    One instance per session runtime: the settings, the catalog cache and the search
    index are per session; the sandbox worker pool is per process.
    """

    def __init__(self) -> None:
        self.tool = CodemodeTool()
        self._auto_seen: set[str] = set()

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(self.tool.definition())

    # The hooks are coroutines: they run on pi's event loop, where reading and changing the
    # active tools needs no hop from a worker thread.

    @hookimpl
    async def session_start(self, ctx: Any) -> None:
        settings = CodemodeSettings.from_settings(ctx.get_settings())
        if settings.auto_enable and _mcp_json_auto_enable(ctx) is False:
            settings = CodemodeSettings(settings.mode, settings.inline_budget, auto_enable=False)
        self.tool.settings = settings
        self._auto_enable(ctx)

    @hookimpl
    async def before_agent_start(self, ctx: Any) -> None:
        self._auto_enable(ctx)

    @hookimpl
    async def turn_start(self, ctx: Any) -> None:
        self._auto_enable(ctx)

    def _auto_enable(self, ctx: Any) -> None:
        """Activate ``codemode`` when a tool with ``codemode`` exposure appears (once per
        such tool: a user who turns codemode off afterwards keeps it off)."""
        if not self.tool.settings.auto_enable:
            return
        names = {t.name for t in ctx.get_all_tools() if t.exposure == "codemode"}
        if not names - self._auto_seen:
            return
        self._auto_seen |= names
        active = ctx.get_active_tools()
        if CODEMODE_TOOL not in active:
            ctx.set_active_tools([*active, CODEMODE_TOOL])


def _mcp_json_auto_enable(ctx: Any) -> bool | None:
    """``autoEnableCodemode`` beside ``mcpServers`` in ``mcp.json`` (the trusted
    project's file overrides the user's), where the MCP docs put it."""
    files = [toolkit.agent_dir() / "mcp.json"]
    try:
        if ctx.is_project_trusted():
            files.append(toolkit.project_dir(ctx.cwd) / "mcp.json")
    except Exception:
        pass
    value: bool | None = None
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("autoEnableCodemode"), bool):
            value = data["autoEnableCodemode"]
    return value
