"""The tools a script may call, as the sandbox and the discovery helpers see them.

A :class:`Catalog` is built from the callable tool definitions (``ctx.tools``) and
cached by their identity, so a session whose tools do not change builds it once. Its
:attr:`Catalog.key` names everything the sandbox session depends on (the stub modules
and ``ALL_TOOLS``): a prepared sandbox session is reused only for the same key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pi_hookspecs import ToolDefinition, ToolNamespace
from pi_hookspecs.record import dataclass

if TYPE_CHECKING:
    from .stubs import ToolStub

# naming and stubs are imported when a catalog is built (codemode active in a run), not
# when the plugin loads

__all__ = ["Catalog", "CatalogCache", "CatalogTool", "description_with_guidelines"]

CODEMODE_TOOL = "codemode"


def description_with_guidelines(tool: ToolDefinition) -> str:
    """A tool's description followed by its prompt guidelines (the system prompt only
    carries guidelines of declared tools, so scripts get them here)."""
    bullets = [f"- {g.strip()}" for g in tool.prompt_guidelines if g.strip()]
    text = tool.description.strip()
    return f"{text}\n\n" + "\n".join(bullets) if bullets else text


@dataclass(frozen=True)
class CatalogTool:
    """A tool of the catalogue: its definition and the stub scripts call it by."""

    definition: ToolDefinition
    stub: ToolStub

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def ident(self) -> str:
        return self.stub.ident

    @property
    def structured(self) -> bool:
        from .stubs import returns_structured

        return returns_structured(self.definition)

    @property
    def namespace(self) -> ToolNamespace | None:
        return self.definition.namespace

    def section(self) -> str:
        """The tool as the model reads it: its stub with a docstring."""
        return self.stub.document(self.definition.description, self.definition.prompt_guidelines)

    def summary(self) -> dict[str, Any]:
        """The tool as ``ALL_TOOLS`` and ``search_tools()`` list it."""
        namespace = self.namespace
        return {
            "name": self.name,
            "identifier": self.ident,
            "description": description_with_guidelines(self.definition),
            "namespace": namespace.name if namespace is not None else None,
        }


class Catalog:
    """The callable tools of one script run, by name and by identifier."""

    def __init__(self, tools: Sequence[CatalogTool]) -> None:
        from .naming import identifier_key

        self.tools = list(tools)
        self.by_name = {t.name: t for t in self.tools}
        self.by_ident = {t.ident: t for t in self.tools}
        self._by_key: dict[str, CatalogTool] = {}
        for tool in self.tools:
            self._by_key.setdefault(identifier_key(tool.name), tool)
        self.tools_stubs = "from typing import Any, Literal\n\n" + "".join(t.stub.declaration() for t in self.tools)
        self.async_stubs = "from typing import Any, Literal\n\n" + "".join(
            t.stub.declaration(is_async=True) for t in self.tools
        )
        self.all_tools = [t.summary() for t in self.tools]
        digest = hashlib.sha256()
        for part in (self.tools_stubs, json.dumps(self.all_tools, sort_keys=True)):
            digest.update(part.encode())
        self.key = digest.hexdigest()

    def resolve(self, name: str) -> CatalogTool | None:
        """A tool by name, by identifier, or by either spelled with ``-`` or ``_``."""
        from .naming import identifier_key

        return self.by_name.get(name) or self.by_ident.get(name) or self._by_key.get(identifier_key(name))

    def namespaces(self) -> list[ToolNamespace]:
        seen: dict[str, ToolNamespace] = {}
        for tool in self.tools:
            namespace = tool.namespace
            if namespace is not None:
                seen.setdefault(namespace.name, namespace)
        return list(seen.values())


class CatalogCache:
    """Builds catalogs, reusing the last one while the tool definitions are the same
    objects (a definition is replaced, never mutated, when a tool re-registers)."""

    def __init__(self) -> None:
        self._tools: list[ToolDefinition] = []
        self._catalog: Catalog | None = None
        self._stubs: dict[int, tuple[ToolDefinition, ToolStub]] = {}

    def get(self, definitions: Sequence[ToolDefinition]) -> Catalog:
        tools = [d for d in definitions if d.name != CODEMODE_TOOL]
        if (
            self._catalog is not None
            and len(tools) == len(self._tools)
            and all(a is b for a, b in zip(tools, self._tools, strict=True))
        ):
            return self._catalog
        from .naming import assign_identifiers
        from .stubs import build_stub

        idents = assign_identifiers(d.name for d in tools)
        stubs: dict[int, tuple[ToolDefinition, ToolStub]] = {}
        entries = []
        for definition in tools:
            ident = idents[definition.name]
            cached = self._stubs.get(id(definition))
            if cached is not None and cached[0] is definition and cached[1].ident == ident:
                stub = cached[1]
            else:
                stub = build_stub(definition, ident)
            stubs[id(definition)] = (definition, stub)
            entries.append(CatalogTool(definition, stub))
        self._stubs = stubs
        self._tools = tools
        self._catalog = Catalog(entries)
        return self._catalog
