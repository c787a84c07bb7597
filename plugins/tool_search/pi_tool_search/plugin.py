"""``ToolSearchPlugin``: registers ``tool_search`` (inactive) and keeps its index in step
with the registered tools. It never switches ``tool_search`` on by itself."""

from __future__ import annotations

from typing import Any

from pi_toolindex import ToolIndex

from pi_hookspecs import ToolDefinition, ToolResult, hookimpl

from .tool import (
    SEARCHABLE_EXPOSURES,
    ArgumentError,
    build_definition,
    empty_result,
    loaded_result,
    parse_arguments,
)


class ToolSearchPlugin:
    """The ``tool_search`` tool: BM25 search over the tools with ``deferred`` or
    ``codemode`` exposure that are not active; the matches are activated, so the next
    model request of the same run declares them (the core records that in the
    transcript, so resume and fork keep them on that branch).

    ``tool_search`` is registered inactive, and this plugin leaves its activation to
    others: the user selects it (``"defaultTools": ["+tool_search"]``, ``--tools
    +tool_search``), or a plugin that registers ``deferred`` tools switches it on with
    ``ctx.set_active_tools`` unless ``ctx.is_tool_deselected("tool_search")`` (pluggable-pi-mcp
    does so for servers with ``deferred`` exposure). Registering ``deferred`` tools alone
    does not activate it. One instance serves one session runtime.
    """

    def __init__(self) -> None:
        self.index = ToolIndex()
        """The BM25 index of the searchable tools (kept in step before every search)."""
        self.definition = build_definition(self._execute)

    # ------------------------------------------------------------------ hooks

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(self.definition)

    # The refreshes are coroutines: they run on pi's event loop, where reading the tools
    # needs no hop from a worker thread (syncing the index is an identity check per tool
    # unless tools changed).

    @hookimpl
    async def session_start(self, ctx: Any) -> None:
        self._refresh(ctx)

    @hookimpl(trylast=True)
    async def before_agent_start(self, ctx: Any) -> None:
        # trylast: plugins that register tools when a prompt starts (MCP) run first.
        self._refresh(ctx)

    @hookimpl
    async def turn_end(self, ctx: Any) -> None:
        self._refresh(ctx)

    # ------------------------------------------------------------------ the tool

    def _execute(self, args: dict[str, Any], ctx: Any) -> ToolResult:
        # Synchronous on purpose: reading and changing the active tools happens without
        # an await in between, so parallel calls cannot lose each other's activations.
        try:
            query, limit = parse_arguments(args)
        except ArgumentError as exc:
            return ToolResult.error(str(exc))
        tools = ctx.get_all_tools()
        self._sync(tools)
        active = set(ctx.get_active_tools())
        reachable = set(ctx.tools)

        def loadable(name: str) -> bool:
            return name not in active and name in reachable

        hits = self.index.search(query, limit=limit, include=loadable)
        if not hits:
            return empty_result(query, sum(1 for name in self.index.names() if loadable(name)))
        ctx.set_active_tools([*ctx.get_active_tools(), *(hit.name for hit in hits)])
        now_active = set(ctx.get_active_tools())
        by_name = {tool.name: tool for tool in tools}
        loaded = [by_name[hit.name] for hit in hits if hit.name in now_active]
        if not loaded:  # the core refused them all (not expected: they are callable)
            return empty_result(query, 0)
        return loaded_result(query, loaded, hits)

    # ------------------------------------------------------------------ internals

    def _sync(self, tools: list[ToolDefinition]) -> None:
        self.index.sync(tools, keep=_searchable)

    def _refresh(self, ctx: Any) -> None:
        self._sync(ctx.get_all_tools())


def _searchable(tool: ToolDefinition) -> bool:
    return tool.exposure in SEARCHABLE_EXPOSURES
