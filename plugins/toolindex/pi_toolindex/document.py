"""What the index knows about a tool: a :class:`ToolDocument` of weighted text fields."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from pi_hookspecs import ToolDefinition, ToolNamespace

__all__ = ["FIELD_WEIGHTS", "ToolDocument", "document_for", "namespace_key", "namespace_keys", "namespace_matches"]

FIELD_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "name": 3.0,
        "description": 1.0,
        "parameters": 0.5,
        "namespace": 0.3,
    }
)
"""How much one occurrence of a term counts in each field: a word of the tool's name
counts as much as three in its description; parameter text and the namespace (server)
text, which every tool of a server shares, count less. Read-only."""

_NAME, _DESCRIPTION, _PARAMETERS, _NAMESPACE = (
    FIELD_WEIGHTS["name"],
    FIELD_WEIGHTS["description"],
    FIELD_WEIGHTS["parameters"],
    FIELD_WEIGHTS["namespace"],
)
_MAX_SCHEMA_DEPTH = 8


class ToolDocument(NamedTuple):
    """The searchable text of one tool, by field (see :data:`FIELD_WEIGHTS`).

    ``namespaces`` are the names the ``namespace=`` filter of
    :meth:`~pi_toolindex.ToolIndex.search` selects the tool by (its namespace's name and
    aliases, compared as :func:`namespace_keys` does); they are not searched as text
    unless they also appear in ``namespace``.
    """

    name: str = ""
    description: str = ""
    parameters: str = ""
    namespace: str = ""
    namespaces: tuple[str, ...] = ()

    def fields(self) -> tuple[tuple[str, float], ...]:
        """``(text, weight)`` of the four text fields."""
        return (
            (self.name, _NAME),
            (self.description, _DESCRIPTION),
            (self.parameters, _PARAMETERS),
            (self.namespace, _NAMESPACE),
        )


_NESTED = frozenset(("enum", "properties", "items", "anyOf", "oneOf", "allOf"))


def _schema_text(schema: dict[str, Any], parts: list[str], depth: int = 0) -> None:
    """Property names, descriptions and string enum values of a JSON Schema, recursively."""
    description = schema.get("description")
    if isinstance(description, str):
        parts.append(description)
    if _NESTED.isdisjoint(schema.keys()) or depth > _MAX_SCHEMA_DEPTH:
        return
    enum = schema.get("enum")
    if isinstance(enum, list):
        parts.extend(value for value in enum if isinstance(value, str))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, value in properties.items():
            parts.append(str(key))
            if isinstance(value, dict):
                _schema_text(value, parts, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        _schema_text(items, parts, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        variants = schema.get(key)
        if isinstance(variants, list):
            for variant in variants:
                if isinstance(variant, dict):
                    _schema_text(variant, parts, depth + 1)


def namespace_key(name: str) -> str:
    """The form namespace names are compared in: lowercase, ``-`` as ``_``, so
    ``mcp__dev-radius`` and ``MCP__dev_radius`` are the same namespace."""
    return name.strip().lower().replace("-", "_")


def namespace_keys(names: Iterable[str]) -> tuple[str, ...]:
    """Every key a namespace can be selected by, in :func:`namespace_key` form: each of
    ``names`` (a namespace's name and aliases) and, for a ``prefix__server`` name, the
    part after the last ``__`` (``mcp__github`` -> ``github``)."""
    keys: list[str] = []
    for name in names:
        key = namespace_key(name)
        for candidate in (key, key.rsplit("__", 1)[-1]):
            if candidate and candidate not in keys:
                keys.append(candidate)
    return tuple(keys)


def namespace_matches(namespace: ToolNamespace | None, query: str) -> bool:
    """Whether ``query`` names ``namespace``: ``mcp__dev-radius``, ``mcp__dev_radius``,
    ``dev-radius`` and ``dev_radius`` all name the namespace ``mcp__dev-radius``, and so
    does any of its aliases."""
    if namespace is None:
        return False
    return namespace_key(query) in namespace_keys((namespace.name, *namespace.aliases))


def document_for(tool: ToolDefinition) -> ToolDocument:
    """The document of a registered tool: its name, its description, its parameters'
    names, descriptions and enum values, and its namespace's name, aliases and
    description."""
    parts: list[str] = []
    if isinstance(tool.parameters, dict):
        _schema_text(tool.parameters, parts)
    namespace = tool.namespace
    namespace_text = ""
    if namespace is not None:
        namespace_text = " ".join([namespace.name, *namespace.aliases, namespace.description or ""])
    return ToolDocument(
        name=tool.name,
        description=tool.description,
        parameters=" ".join(parts),
        namespace=namespace_text,
        namespaces=(namespace.name, *namespace.aliases) if namespace is not None else (),
    )
