"""The ``codemode`` description and how it presents the other tools (``prepare_loadout``).

The description is a fixed introduction plus the Python stubs of callable tools,
grouped by namespace, within ``codemode.inlineBudget`` estimated tokens (characters / 4).
Tools with ``deferred`` exposure are never listed (scripts find them with
``search_tools()``), so the description does not change while MCP servers connect.

``codemode.mode``:

* ``on`` (default): tools declared to the model stay declared, and their descriptions
  gain a line on calling them from scripts; the description lists the other callable
  tools (``codemode`` exposure).
* ``only``: the description lists every callable tool, and the declarations of active
  ``direct`` tools are hidden from requests — the model reaches them through scripts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pi_hookspecs import LoadoutResult, ToolDefinition, ToolLoadout, ToolNamespace
from pi_hookspecs.record import dataclass

from .catalog import CODEMODE_TOOL, CatalogCache, CatalogTool
from .models_api import DESCRIPTION as MODELS

__all__ = [
    "DEFAULT_INLINE_BUDGET",
    "INTRO",
    "CodemodeSettings",
    "build_description",
    "prepare_loadout",
]

DEFAULT_INLINE_BUDGET = 3000
CHARS_PER_TOKEN = 4
Mode = Literal["on", "only"]

INTRO = """Run a Python script that calls other tools; only what the script outputs reaches you. \
The input is raw Python source (not JSON, no markdown fence), run in a sandbox (Monty): no files, \
network, subprocesses or third-party modules; the outside world is reached only through tools.
- `tools.<name>(arg=...)` calls a tool and returns its result: a str, or the structured value its \
stub declares. Arguments are keyword-only. A failed, blocked or invalid call raises RuntimeError \
with the tool's error text (catch it with try/except); calls already made are not undone.
- Scripts are type-checked against the stubs before anything runs, so a wrong call is reported \
without side effects.
- Concurrency: `a, b = await asyncio.gather(async_tools.x(...), async_tools.y(...))` runs calls \
concurrently; `async_tools.<name>` is the awaitable twin of `tools.<name>`. gather() takes no \
keyword arguments (no return_exceptions): to keep partial results, await each call in an \
`async def` with try/except and gather those.
- Optional first line: `# @options: {"max_output_tokens": 10000, "timeout_ms": 60000}`"""

GLOBALS = """Globals:
- `text(value)`, `image(data_url_or_block)`, `print(...)` and a final expression add output \
(non-strings as JSON); `exit()` ends the script.
- `store(key, value)` / `load(key, default=None)` keep JSON values across codemode calls.
- `ALL_TOOLS`, `search_tools(query, limit=8, namespace=None)`, `describe_tool(name)`, \
`describe_namespace(name)` find tools not listed here, such as MCP tools; call them as \
`tools.<identifier>(...)`, or by name with `call_tool(name, **args)` (awaitable: `call_tool_async`).
- `asyncio` and `json` are imported.
- `models`: classifier and image models (see below)."""


@dataclass(frozen=True)
class CodemodeSettings:
    """The ``codemode.*`` settings and ``autoEnableCodemode``."""

    mode: Mode = "on"
    inline_budget: int = DEFAULT_INLINE_BUDGET
    auto_enable: bool = True

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> CodemodeSettings:
        section = settings.get("codemode")
        section = section if isinstance(section, dict) else {}
        mode = section.get("mode", "on")
        budget = section.get("inlineBudget", DEFAULT_INLINE_BUDGET)
        if isinstance(budget, bool) or not isinstance(budget, int | float) or budget < 0:
            budget = DEFAULT_INLINE_BUDGET
        return cls(
            mode="only" if mode == "only" else "on",
            inline_budget=int(budget),
            auto_enable=settings.get("autoEnableCodemode", True) is not False,
        )


@dataclass
class _Entry:
    """A tool's section of the description and what it costs (in characters)."""

    tool: CatalogTool
    section: str
    cost: int


@dataclass
class _Group:
    """The entries of one namespace (``None``: tools without one)."""

    namespace: ToolNamespace | None
    entries: list[_Entry]


def _section(tool: CatalogTool) -> str:
    label = f"# tool {tool.name!r}\n" if tool.ident != tool.name else ""
    return label + tool.section()


def _select(groups: Sequence[_Group], budget: int) -> set[str]:
    """Which tools fit the budget: each round, every group (tools without a namespace
    first, then namespaces by name) places its cheapest remaining tool; a group whose
    next tool does not fit stops. So every namespace shows some tools before any shows
    all of them."""
    queues = [sorted(group.entries, key=lambda e: e.cost) for group in groups]
    shown: set[str] = set()
    remaining = budget
    active = [q for q in queues if q]
    while active:
        still: list[list[_Entry]] = []
        for queue in active:
            entry = queue[0]
            if entry.cost > remaining:
                continue
            remaining -= entry.cost
            shown.add(entry.tool.name)
            queue.pop(0)
            if queue:
                still.append(queue)
        active = still
    return shown


def build_description(listed: Sequence[CatalogTool], budget: int, *, declared_note: bool = False) -> str:
    """The codemode description listing ``listed`` within ``budget`` tokens."""
    groups: dict[str, _Group] = {"": _Group(None, [])}
    for tool in listed:
        namespace = tool.namespace
        key = f"ns:{namespace.name}" if namespace is not None else ""
        group = groups.setdefault(key, _Group(namespace, []))
        section = _section(tool)
        group.entries.append(_Entry(tool, section, math.ceil(len(section) / CHARS_PER_TOKEN)))
    ordered = [
        groups[""],
        *sorted((g for k, g in groups.items() if k), key=lambda g: g.namespace.name if g.namespace else ""),
    ]
    shown = _select(ordered, budget)
    parts = [INTRO, GLOBALS, MODELS]
    if declared_note:
        parts.append("Tools declared to you directly can be called from scripts too, as `tools.<name>(...)`.")
    if not listed:
        return "\n\n".join(parts)
    lines = ["Tools (functions of the module `tools`):"]
    for group in ordered:
        visible = [e for e in group.entries if e.tool.name in shown]
        if group.namespace is not None:
            missing = len(group.entries) - len(visible)
            state = "" if not missing else " (tools not listed)" if not visible else " (some tools not listed)"
            description = (group.namespace.description or "").strip()
            lines.append(f"## {group.namespace.name}{state}" + (f"\n{description}" if description else ""))
        lines.extend(e.section for e in visible)
    hidden = len(listed) - len(shown)
    if hidden:
        lines.append(f"{hidden} more tool(s) are not listed: find them with search_tools() or ALL_TOOLS.")
    parts.append("\n\n".join(lines))
    return "\n\n".join(parts)


def _script_note(tool: CatalogTool) -> str:
    return (
        f"{tool.definition.description.strip()}\n\n"
        f"Codemode: scripts call it as `tools.{tool.ident}(...)`, which returns `{tool.stub.returns}`."
    )


def prepare_loadout(loadout: ToolLoadout, settings: CodemodeSettings, cache: CatalogCache) -> LoadoutResult:
    """Descriptions and hidden declarations while ``codemode`` is active (see the module
    docstring)."""
    definitions: dict[str, ToolDefinition] = {t.name: t for t in loadout.tools if isinstance(t, ToolDefinition)}
    callable_defs = [definitions[n] for n in loadout.callable if n in definitions and n != CODEMODE_TOOL]
    catalog = cache.get(callable_defs)
    declared = set(loadout.declared)
    descriptions: dict[str, str] = {}
    hidden: list[str] = []
    if settings.mode == "only":
        listed = [t for t in catalog.tools if t.definition.exposure != "deferred"]
        hidden = [t.name for t in catalog.tools if t.definition.exposure == "direct" and t.name in declared]
    else:
        listed = [t for t in catalog.tools if t.definition.exposure not in ("direct", "deferred")]
        for tool in catalog.tools:
            if tool.name in declared:
                descriptions[tool.name] = _script_note(tool)
    descriptions[CODEMODE_TOOL] = build_description(
        listed, settings.inline_budget, declared_note=settings.mode == "on" and bool(descriptions)
    )
    return LoadoutResult(descriptions=descriptions, hidden_declarations=hidden)
