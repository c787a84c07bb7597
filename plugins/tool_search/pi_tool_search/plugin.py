"""``ToolSearchPlugin``: registers ``tool_search``, keeps its index in step with the
registered tools and activates it once deferred tools exist."""

from __future__ import annotations

from typing import Any

from pi_toolindex import ToolIndex

from pi_hookspecs import ToolDefinition, ToolResult, hookimpl

from .tool import (
    SEARCHABLE_EXPOSURES,
    TOOL_NAME,
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

    ``tool_search`` is registered inactive and activated automatically as soon as a
    ``deferred`` tool is registered (at session start, when a prompt starts, or at the
    end of a turn, e.g. once an MCP server has connected). It is never deactivated
    automatically. One instance serves one session runtime.
    """

    def __init__(self) -> None:
        self.index = ToolIndex()
        """The BM25 index of the searchable tools (kept in step before every search)."""
        self.definition = build_definition(self._execute)
        self._auto_activated = False

    # ------------------------------------------------------------------ hooks

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(self.definition)

    @hookimpl
    def session_start(self, ctx: Any) -> None:
        self._refresh(ctx)

    @hookimpl(trylast=True)
    def before_agent_start(self, event: Any, ctx: Any) -> None:
        # trylast: plugins that register tools when a prompt starts (MCP) run first.
        # The core applies ``selected_tools`` after this hook, so an activation must
        # show there too (with the tool's prompt lines, which the options already hold
        # for the tools that were active).
        tools = ctx.get_all_tools()
        self._sync(tools)
        options = event.system_prompt_options
        if TOOL_NAME not in options.selected_tools and self._activate(ctx, tools):
            registered = next(tool for tool in tools if tool.name == TOOL_NAME)
            options.selected_tools.append(TOOL_NAME)
            if registered.prompt_snippet:
                options.tool_snippets[TOOL_NAME] = registered.prompt_snippet
            if registered.prompt_guidelines:
                options.tool_guidelines[TOOL_NAME] = list(registered.prompt_guidelines)

    @hookimpl
    def turn_end(self, ctx: Any) -> None:
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

    def _activate(self, ctx: Any, tools: list[ToolDefinition]) -> bool:
        """Activate ``tool_search`` once deferred tools exist; True when this call did.
        Only once per session runtime: a user who turns it off keeps it off."""
        if self._auto_activated:
            return False
        # ours, or a replacement that declares which tools it reaches (as pi-mcp requires)
        if not any(tool.name == TOOL_NAME and tool.reaches_tools is not None for tool in tools):
            return False
        if not any(tool.exposure == "deferred" for tool in tools):
            return False
        active = ctx.get_active_tools()
        if TOOL_NAME in active:  # the user's selection has it already: nothing left to do
            self._auto_activated = True
            return False
        if ctx.is_tool_deselected(TOOL_NAME):  # --tools without it, -tool_search, --no-tools, excluded
            self._auto_activated = True
            return False
        ctx.set_active_tools([*active, TOOL_NAME])
        self._auto_activated = TOOL_NAME in ctx.get_active_tools()
        return self._auto_activated

    def _refresh(self, ctx: Any) -> None:
        tools = ctx.get_all_tools()
        self._sync(tools)
        self._activate(ctx, tools)


def _searchable(tool: ToolDefinition) -> bool:
    return tool.exposure in SEARCHABLE_EXPOSURES
