"""Python stubs of tools: what scripts are type-checked against and what the model reads.

A tool becomes a function with keyword-only parameters, one per property of its JSON
Schema ``parameters``::

    def read(*, path: str, offset: int | None = None, limit: int | None = None) -> str: ...

Required properties have no default, optional ones default to ``None`` (the tool's own
default applies). The return type is ``str`` (the tool's text output), the type of its
``output_schema`` when it has one, or ``Any`` for MCP tools (their structured result).
A schema that names no properties at all (a free-form object) gives ``**kwargs: Any``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pi_hookspecs import ToolDefinition

from .naming import assign_identifiers

__all__ = ["Param", "ToolStub", "annotation", "build_stub", "returns_structured"]

_MAX_DEPTH = 6
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_LITERALS = (str, int, bool)


def _union(parts: list[str]) -> str:
    seen: list[str] = []
    for part in parts:
        for piece in part.split(" | "):
            if piece not in seen:
                seen.append(piece)
    if "Any" in seen:
        return "Any"
    if "None" in seen:  # keep `X | None` readable
        seen.remove("None")
        seen.append("None")
    return " | ".join(seen) if seen else "Any"


def _literal(values: list[Any]) -> str:
    """``Literal[...]`` for an enum of strings, ints and bools (plus ``None``)."""
    simple = [v for v in values if isinstance(v, _LITERALS)]
    has_null = any(v is None for v in values)
    if not simple or len(simple) + sum(v is None for v in values) != len(values):
        return "None" if has_null and not simple and len(values) == 1 else "Any"
    literal = f"Literal[{', '.join(repr(v) for v in simple)}]"
    return f"{literal} | None" if has_null else literal


def annotation(schema: Any, depth: int = 0) -> str:
    """A Python type annotation for a JSON Schema (``Any`` where it cannot say more)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return "Any"
    if "const" in schema:
        return _literal([schema["const"]])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _literal(enum)
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if isinstance(variants, list) and variants:
            return _union([annotation(v, depth + 1) for v in variants])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([annotation({**schema, "type": k}, depth + 1) for k in kind])
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{annotation(items, depth + 1)}]" if isinstance(items, dict) else "list[Any]"
    if kind == "object" or "properties" in schema:
        extra = schema.get("additionalProperties")
        value = annotation(extra, depth + 1) if isinstance(extra, dict) else "Any"
        return f"dict[str, {value}]"
    return "Any"


def _allows_null(schema: Any) -> bool:
    return "None" in annotation(schema).split(" | ")


@dataclass(frozen=True)
class Param:
    ident: str
    """The keyword a script passes."""
    key: str
    """The property name in the tool's arguments."""
    type: str
    required: bool
    description: str = ""
    nullable: bool = False
    default: str | None = None
    """The schema's default as Python source, when it is a plain literal."""


@dataclass(frozen=True)
class ToolStub:
    """A tool as scripts see it."""

    ident: str
    params: tuple[Param, ...] = ()
    var_kwargs: bool = False
    returns: str = "str"
    keys: dict[str, Param] = field(default_factory=dict)
    """Params by identifier."""

    def signature(self, *, is_async: bool = False) -> str:
        parts: list[str] = []
        ordered = sorted(self.params, key=lambda p: not p.required)
        if ordered:
            parts.append("*")
        for param in ordered:
            if param.required:
                parts.append(f"{param.ident}: {param.type}")
            elif param.default is not None and param.default != "None":
                parts.append(f"{param.ident}: {param.type} = {param.default}")
            else:
                kind = param.type if param.type.endswith("None") or param.type == "Any" else f"{param.type} | None"
                parts.append(f"{param.ident}: {kind} = None")
        if self.var_kwargs:
            parts.append("**kwargs: Any")
        prefix = "async def" if is_async else "def"
        return f"{prefix} {self.ident}({', '.join(parts)}) -> {self.returns}:"

    def declaration(self, *, is_async: bool = False) -> str:
        """The one-line stub for a ``.pyi`` module."""
        return f"{self.signature(is_async=is_async)} ...\n"

    def document(self, description: str, guidelines: list[str] | tuple[str, ...] = ()) -> str:
        """The stub with a docstring: the tool's description, its parameters and its
        prompt guidelines (what the model reads)."""
        lines = [line.rstrip() for line in description.strip().splitlines()]
        documented = [p for p in self.params if p.description]
        if documented:
            lines += ["", "Args:"]
            lines += [f"    {p.ident}: {_one_line(p.description)}" for p in documented]
        bullets = [g.strip() for g in guidelines if g.strip()]
        if bullets:
            lines += ["", *(f"- {b}" for b in bullets)]
        body = "\n".join(f"    {line}" if line else "" for line in lines).replace('"""', '\\"\\"\\"').lstrip()
        if "\n" not in body:
            return f'{self.signature()}\n    """{body}"""'
        return f'{self.signature()}\n    """{body}\n    """'

    def to_arguments(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The tool's arguments from a script's keyword arguments: identifiers back to
        property names; ``None`` for an optional parameter that does not accept null
        means "not given"."""
        out: dict[str, Any] = {}
        for name, value in kwargs.items():
            param = self.keys.get(name)
            if param is None:
                if not self.var_kwargs:
                    raise TypeError(f"tools.{self.ident}() got an unexpected keyword argument {name!r}")
                out[name] = value
                continue
            if value is None and not param.required and not param.nullable:
                continue
            out[param.key] = value
        return out


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def shape(schema: Any, depth: int = 0) -> str | None:
    """The keys of an object schema (or of an array's items), which ``dict[str, Any]``
    does not show: ``{oldText: str, newText: str, note?: str}``."""
    if not isinstance(schema, dict) or depth > 2:
        return None
    if schema.get("type") == "array":
        inner = shape(schema.get("items"), depth + 1)
        return f"[{inner}, ...]" if inner else None
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    required = set(schema.get("required") or ())
    fields = []
    for key, value in properties.items():
        kind = shape(value, depth + 1) or annotation(value)
        fields.append(f"{key}{'' if key in required else '?'}: {kind}")
    return "{" + ", ".join(fields) + "}"


def _describe(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    text = str(schema.get("description") or "").strip()
    keys = shape(schema)
    return f"{text} Shape: {keys}".strip() if keys else text


def _fits(value: Any, kind: str) -> bool:
    pieces = kind.split(" | ")
    if "Any" in pieces:
        return True
    if isinstance(value, bool):
        return "bool" in pieces or any(p.startswith("Literal[") and repr(value) in p for p in pieces)
    if isinstance(value, int):
        return (
            "int" in pieces or "float" in pieces or any(p.startswith("Literal[") and repr(value) in p for p in pieces)
        )
    if isinstance(value, float):
        return "float" in pieces
    if isinstance(value, str):
        return "str" in pieces or any(p.startswith("Literal[") and repr(value) in p for p in pieces)
    return False


def _default(schema: Any, kind: str) -> str | None:
    """A schema default that reads well in a signature (a short str, a number, a bool)
    and fits the parameter's type."""
    if not isinstance(schema, dict) or "default" not in schema:
        return None
    value = schema["default"]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, str) and len(value) > 40:
        return None
    return repr(value) if _fits(value, kind) else None


def returns_structured(tool: ToolDefinition) -> bool:
    """Whether a call resolves to the tool's ``structured_content``: tools with an
    output schema and MCP tools (named ``mcp__…``)."""
    return tool.output_schema is not None or tool.name.startswith("mcp__")


def _return_type(tool: ToolDefinition) -> str:
    if tool.output_schema is not None:
        return annotation(tool.output_schema)
    if tool.name.startswith("mcp__"):
        return "Any"
    return "str"


def build_stub(tool: ToolDefinition, ident: str) -> ToolStub:
    """The stub of ``tool`` called ``ident`` in scripts."""
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = set(schema.get("required") or ())
    extra = schema.get("additionalProperties", True)
    idents = assign_identifiers(properties, prefix="p", taken=("kwargs",))
    params = tuple(
        Param(
            ident=idents[key],
            key=key,
            type=annotation(prop),
            required=key in required,
            description=_describe(prop),
            nullable=_allows_null(prop),
            default=_default(prop, annotation(prop)),
        )
        for key, prop in properties.items()
    )
    return ToolStub(
        ident=ident,
        params=params,
        var_kwargs=not isinstance(schema.get("properties"), dict) and extra is not False,
        returns=_return_type(tool),
        keys={p.ident: p for p in params},
    )
