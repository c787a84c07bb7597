"""The session's tools: which are registered, active (declared to the model), callable
(by other tools, e.g. codemode scripts) and executable (when the model calls them).

Sources, by precedence for one name: SDK tools > plugin tools > built-in tools.

* ``direct``      active when registered (unless ``default_active=False``); callable while active
* ``model-only``  active when registered; never callable by other tools
* ``codemode``    callable whenever registered; declared only once activated
* ``deferred``    like ``codemode``; found and activated by ``tool_search``
* ``hidden``      unreachable (re-register with it to withdraw a tool)

The initial selection follows the TypeScript pi: built-in tools per ``defaultTools`` /
``--tools`` ``+name``/``-name``; ``--tools`` plain names (with ``*`` patterns) form an
allowlist over every tool (MCP tools — names starting ``mcp__`` — are kept unless an
entry starts with ``mcp__``); ``--exclude-tools`` removes tools after everything else,
MCP tools included; ``--no-tools`` starts with nothing active; ``--no-builtin-tools``
drops the built-in defaults only.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Any, Literal

from pi_hookspecs import ToolDefinition
from pi_hookspecs.record import dataclass

Source = Literal["builtin", "extension", "sdk"]
MCP_PREFIX = "mcp__"
DECLARABLE = ("direct", "model-only")
CALLABLE_WHEN_REGISTERED = ("codemode", "deferred")


@dataclass
class ToolEntry:
    """A tool definition with where it came from."""

    definition: ToolDefinition
    source: Source
    plugin: str | None = None

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def exposure(self) -> str:
        return self.definition.exposure


@dataclass
class ToolSelection:
    """What decides which tools are active at startup and on reload."""

    default_tools: list[str] = field(default_factory=lambda: ["read", "bash", "edit", "write"])
    """The resolved built-in selection (``defaultTools`` with ``--tools +x,-y`` applied);
    may also name extension tools registered inactive (``codemode``, ``tool_search``)."""
    allowlist: list[str] | None = None
    """``--tools`` plain names / patterns: the whole selection."""
    exclude: list[str] = field(default_factory=list)
    no_tools: bool = False
    no_builtin_tools: bool = False
    removed: list[str] = field(default_factory=list)
    """``-name`` entries of ``defaultTools`` / ``--tools`` (names or patterns)."""

    def excluded(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.exclude)

    def deselected(self, name: str) -> bool:
        """Whether the user's selection turned ``name`` off: ``--no-tools``,
        ``--exclude-tools``, a ``--tools`` allowlist without it, or a ``-name`` entry
        not undone later. Plugins that switch tools on by themselves respect this."""
        if self.no_tools or self.excluded(name) or self.allowed(name) is False:
            return True
        if name in self.default_tools:
            return False
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.removed)

    def allowed(self, name: str) -> bool | None:
        """``True``/``False`` when the allowlist decides, ``None`` when it does not."""
        if self.allowlist is None:
            return None
        filters_mcp = any(p.startswith(MCP_PREFIX) for p in self.allowlist)
        if name.startswith(MCP_PREFIX) and not filters_mcp:
            return None
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.allowlist)


def _is_builtin_default(entry: ToolEntry, selection: ToolSelection) -> bool:
    return not selection.no_builtin_tools and entry.name in selection.default_tools


class ToolRegistry:
    def __init__(self, selection: ToolSelection | None = None) -> None:
        self.selection = selection or ToolSelection()
        self.entries: dict[str, ToolEntry] = {}
        self._active: list[str] = []
        self._hidden_declarations: set[str] = set()
        self._last_defaults: list[str] = []
        self._known: set[str] = set()
        self._restore: set[str] = set()
        self._descriptions: dict[str, str] = {}
        self._loadout_version = -1
        self.errors: list[str] = []
        """Problems of ``prepare_loadout`` hooks (reported by the session)."""
        self.version = 0
        """Bumped on every change; the runtime compares it to redo the tool loadout."""

    # ------------------------------------------------------------------ building

    def rebuild(
        self,
        builtin: Iterable[tuple[ToolDefinition, str | None]],
        extension: Iterable[tuple[ToolDefinition, str | None]],
        sdk: Iterable[ToolDefinition],
        *,
        keep_active: Sequence[str] | None = None,
    ) -> None:
        """Merge the three sources (later wins) and compute the active set.

        With ``keep_active`` (a reload) the still valid active names stay active, tools
        newly named in ``default_tools`` are added, and tools that did not exist before
        are activated by the usual rules; tools the user turned off stay off."""
        entries: dict[str, ToolEntry] = {}
        for definition, plugin in builtin:
            entries[definition.name] = ToolEntry(definition, "builtin", plugin)
        for definition, plugin in extension:
            entries[definition.name] = ToolEntry(definition, "extension", plugin)
        for definition in sdk:
            entries[definition.name] = ToolEntry(definition, "sdk", None)
        self.entries = entries
        if keep_active is None:
            active = [name for name, entry in entries.items() if self._initially_active(entry)]
        else:
            previous_defaults = set(self._last_defaults)
            active = [n for n in keep_active if n in entries and self._can_activate(entries[n])]
            for name in self.selection.default_tools:
                if name not in previous_defaults and name in entries and name not in active:
                    if self._can_activate(entries[name]):
                        active.append(name)
            for name, entry in entries.items():
                if name not in self._known and name not in active and self._initially_active(entry):
                    active.append(name)
        self._active = active
        self._last_defaults = list(self.selection.default_tools)
        self._known = set(entries)
        self.version += 1

    def _can_activate(self, entry: ToolEntry) -> bool:
        return entry.exposure != "hidden" and not self.selection.excluded(entry.name)

    def _initially_active(self, entry: ToolEntry) -> bool:
        sel = self.selection
        if sel.no_tools or not self._can_activate(entry):
            return False
        decided = sel.allowed(entry.name)
        if decided is not None:
            return decided
        if entry.source == "builtin":
            return _is_builtin_default(entry, sel)
        if entry.name in sel.default_tools:
            return True
        return entry.exposure in DECLARABLE and entry.definition.default_active

    def register(self, definition: ToolDefinition, source: Source = "extension", plugin: str | None = None) -> bool:
        """Add or replace one tool at run time. A plugin may only replace its own tools
        (or a built-in); returns False for a conflict."""
        existing = self.entries.get(definition.name)
        if (
            existing is not None
            and existing.source == "extension"
            and source == "extension"
            and existing.plugin != plugin
        ):
            return False
        if existing is not None and existing.source == "sdk" and source != "sdk":
            return False
        entry = ToolEntry(definition, source, plugin)
        self.entries[definition.name] = entry
        self._known.add(definition.name)
        name = definition.name
        if not self._can_activate(entry):
            if name in self._active:
                self._active.remove(name)
        elif name not in self._active and (
            name in self._restore
            or ((existing is None or existing.exposure == "hidden") and self._initially_active(entry))
        ):
            self._active.append(name)
        self._restore.discard(name)
        self.version += 1
        return True

    # ------------------------------------------------------------------ activation

    @property
    def active_names(self) -> list[str]:
        return list(self._active)

    def set_active(self, names: Iterable[str]) -> list[str]:
        """Make exactly ``names`` active; unknown, hidden and excluded names are ignored.
        Returns the new active list."""
        wanted: list[str] = []
        for name in names:
            entry = self.entries.get(name)
            if entry is None or not self._can_activate(entry) or name in wanted:
                continue
            wanted.append(name)
        if wanted != self._active:
            self._active = wanted
            self.version += 1
        return list(self._active)

    def activate(self, names: Iterable[str]) -> list[str]:
        """Add ``names`` to the active set (``tool_search``)."""
        return self.set_active([*self._active, *names])

    def restore(self, names: Iterable[str]) -> None:
        """Activate tools a resumed transcript declared (e.g. ones ``tool_search``
        loaded); tools not registered yet (an MCP server still connecting) are activated
        when they register."""
        for name in names:
            entry = self.entries.get(name)
            if entry is None:
                self._restore.add(name)
            elif name not in self._active and self._can_activate(entry):
                self._active.append(name)
                self.version += 1

    def _apply_loadout(self) -> None:
        """Run the ``prepare_loadout`` hooks of active tools (once per change)."""
        if self._loadout_version == self.version:
            return
        hidden: set[str] = set()
        descriptions: dict[str, str] = {}
        self.errors = []
        active = self.active_definitions()
        hooks = [d for d in active if d.prepare_loadout is not None]
        if hooks:
            from pi_hookspecs import LoadoutResult, ToolLoadout

            loadout = ToolLoadout(
                declared=[d.name for d in active], callable=self.callable_names(), tools=self.all_definitions()
            )
            for definition in hooks:
                try:
                    result = definition.prepare_loadout(loadout)  # type: ignore[misc]
                    if result is None:
                        continue
                    if isinstance(result, dict):
                        result = LoadoutResult.model_validate(result)
                    descriptions.update(result.descriptions)
                    hidden.update(result.hidden_declarations)
                except Exception as exc:  # a broken orchestrator must not break every request
                    self.errors.append(
                        f"prepare_loadout of tool {definition.name!r} failed: {type(exc).__name__}: {exc}"
                    )
        self._hidden_declarations = hidden
        self._descriptions = descriptions
        self._loadout_version = self.version

    # ------------------------------------------------------------------ views

    def owner(self, name: str) -> str | None:
        """The plugin that registered ``name`` (``None`` for SDK tools and unknown names)."""
        entry = self.entries.get(name)
        return entry.plugin if entry is not None and entry.source != "sdk" else None

    def get(self, name: str) -> ToolDefinition | None:
        entry = self.entries.get(name)
        return entry.definition if entry is not None else None

    def all_definitions(self) -> list[ToolDefinition]:
        """Every registered tool (what ``ctx.get_all_tools()`` reports)."""
        return [e.definition for e in self.entries.values()]

    def active_definitions(self) -> list[ToolDefinition]:
        """Active tools: the model may call them."""
        return [self.entries[n].definition for n in self._active if n in self.entries]

    def declared_definitions(self) -> list[ToolDefinition]:
        """Active tools whose declarations are sent to the model (descriptions as their
        orchestrating tool's ``prepare_loadout`` replaced them)."""
        self._apply_loadout()
        out = []
        for definition in self.active_definitions():
            if definition.name in self._hidden_declarations:
                continue
            description = self._descriptions.get(definition.name)
            if description is not None and description != definition.description:
                definition = definition.model_copy(update={"description": description})
            out.append(definition)
        return out

    @property
    def hidden_declarations(self) -> set[str]:
        self._apply_loadout()
        return set(self._hidden_declarations)

    def callable_names(self) -> list[str]:
        """Tools other tools may call (``ctx.tools`` / ``ctx.execute_tool``)."""
        out = []
        for name, entry in self.entries.items():
            if self.selection.excluded(name):
                continue
            exposure = entry.exposure
            if exposure in CALLABLE_WHEN_REGISTERED or (exposure == "direct" and name in self._active):
                out.append(name)
        return out

    def describe(self) -> list[dict[str, Any]]:
        """For ``/tools`` and RPC: name, source, exposure, active."""
        return [
            {
                "name": name,
                "source": entry.source,
                "plugin": entry.plugin,
                "exposure": entry.exposure,
                "active": name in self._active,
                "description": entry.definition.description,
            }
            for name, entry in self.entries.items()
        ]
