"""The session's tool registry bound to its sources and to the agent.

:class:`ToolBinding` keeps the :class:`~pi_core.runtime.tool_registry.ToolRegistry` in
step with the plugins' registrations and the SDK's tools, and publishes the active
tools to the agent after every change. :func:`tool_selection` turns ``--tools``,
``--exclude-tools``, ``--no-tools``, ``--no-builtin-tools`` and ``defaultTools`` into
the registry's :class:`~pi_core.runtime.tool_registry.ToolSelection`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pi_hookspecs import ToolDefinition

from ..agent import AgentState
from ..extensions import Registry
from ..resources.settings import Settings
from ..resources.tool_selection import removed_tools, resolve_default_tools
from .services import ServiceOptions
from .tool_registry import ToolRegistry, ToolSelection


def tool_selection(options: ServiceOptions, settings: Settings) -> ToolSelection:
    """The initial tool selection of the command line (or SDK) options and settings."""
    cli = list(options.tools) if options.tools is not None else None
    modifiers_only = cli is not None and all(e.startswith(("+", "-")) for e in cli)
    return ToolSelection(
        default_tools=resolve_default_tools(settings, cli if modifiers_only else None),
        allowlist=cli if cli is not None and not modifiers_only else None,
        exclude=list(options.exclude_tools),
        no_tools=options.no_tools,
        no_builtin_tools=options.no_builtin_tools,
        removed=removed_tools(settings, cli if modifiers_only else None),
    )


class ToolBinding:
    """Binds ``tools`` to its sources and to the agent.

    * ``registry`` - the plugins' registrations (built-in and extension tools);
    * ``sdk_tools`` - the embedding program's tools (they win over the others);
    * ``state`` - the agent state whose ``tools`` the model may call.
    """

    def __init__(
        self,
        tools: ToolRegistry,
        *,
        registry: Registry,
        sdk_tools: Sequence[ToolDefinition],
        state: AgentState,
    ) -> None:
        self.tools = tools
        self._registry = registry
        self._sdk_tools = sdk_tools
        self._state = state

    def publish(self) -> None:
        """Hand the active tools to the agent."""
        self._state.tools = self.tools.active_definitions()

    def rebuild(self, keep_active: Sequence[str] | None = None) -> None:
        """Merge built-in, plugin and SDK tools anew (``keep_active``: a reload keeps
        these active where they still exist)."""
        builtin: list[tuple[ToolDefinition, str | None]] = []
        extension: list[tuple[ToolDefinition, str | None]] = []
        for reg in self._registry.tools.values():
            if reg.source == "builtin":
                builtin.append((reg.value, reg.plugin))
            else:
                if reg.shadows is not None:
                    builtin.append((reg.shadows.value, reg.shadows.plugin))
                extension.append((reg.value, reg.plugin))
        self.tools.rebuild(builtin, extension, list(self._sdk_tools), keep_active=keep_active)
        self.publish()

    def restore(self, names: Iterable[str]) -> None:
        """Activate the tools a resumed transcript declared."""
        self.tools.restore(names)
        self.publish()

    def set_active(self, names: Sequence[str]) -> list[str]:
        active = self.tools.set_active(names)
        self.publish()
        return active

    def register(self, definition: ToolDefinition, plugin: str | None = None) -> bool:
        ok = self.tools.register(definition, "extension", plugin)
        self.publish()
        return ok


__all__ = ["ToolBinding", "tool_selection"]
