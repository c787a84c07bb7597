"""``search_tools()``, ``describe_tool()`` and ``describe_namespace()``: how scripts
find tools the description does not list (deferred tools, MCP servers …)."""

from __future__ import annotations

from typing import Any

from pi_toolindex import DEFAULT_LIMIT, ToolIndex, namespace_matches

from .catalog import Catalog

__all__ = ["Discovery"]

MAX_LIMIT = 100


class Discovery:
    """Answers the discovery helpers for one catalog; ``index`` is the session's BM25
    index (pluggable-pi-toolindex), synced to the catalog's tools before each search."""

    def __init__(self, catalog: Catalog, index: ToolIndex) -> None:
        self.catalog = catalog
        self.index = index

    def search_tools(
        self, query: str, limit: int = DEFAULT_LIMIT, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        if not isinstance(query, str):
            raise TypeError("search_tools() query must be a string")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError("search_tools() limit must be a positive integer")
        if namespace is not None and not isinstance(namespace, str):
            raise TypeError("search_tools() namespace must be a string or None")
        self.index.sync(t.definition for t in self.catalog.tools)
        hits = self.index.search(query, limit=min(limit, MAX_LIMIT), namespace=namespace)
        return [self.catalog.by_name[hit.name].summary() for hit in hits if hit.name in self.catalog.by_name]

    def describe_tool(self, name: str) -> str | None:
        if not isinstance(name, str):
            raise TypeError("describe_tool() name must be a string")
        tool = self.catalog.resolve(name)
        if tool is None:
            return None
        call = f"# tools.{tool.ident}" + (f"  (tool {tool.name!r})" if tool.ident != tool.name else "")
        return f"{call}\n{tool.section()}"

    def describe_namespace(self, name: str) -> dict[str, Any] | None:
        if not isinstance(name, str):
            raise TypeError("describe_namespace() name must be a string")
        for namespace in self.catalog.namespaces():
            if namespace_matches(namespace, name):
                members = [
                    t for t in self.catalog.tools if t.namespace is not None and t.namespace.name == namespace.name
                ]
                return {
                    "name": namespace.name,
                    "aliases": list(namespace.aliases),
                    "description": namespace.description,
                    "instructions": namespace.instructions,
                    "tools": [{"name": t.name, "identifier": t.ident} for t in members],
                }
        return None
