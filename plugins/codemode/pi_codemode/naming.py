"""Tool and parameter names as Python identifiers.

A tool name is 1-128 characters of letters, digits, ``_`` and ``-``; a script calls it
as ``tools.<identifier>``. The identifier is the name with every character that cannot
appear in a Python identifier replaced by ``_`` (``mcp__dev-radius__search`` ->
``mcp__dev_radius__search``). A name that would start with a digit or ``_`` gets a
``t`` in front (the sandbox hides module attributes that start with ``_``), a Python
keyword gets a trailing ``_`` (``import`` -> ``import_``), and when two names map to the
same identifier the later one (in registration order) gets ``_2``, ``_3`` ….
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

__all__ = ["assign_identifiers", "identifier_key", "to_identifier"]

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


def to_identifier(name: str, *, prefix: str = "t") -> str:
    """``name`` as a Python identifier (see the module docstring)."""
    ident = _NOT_IDENTIFIER.sub("_", name)
    if not ident or ident[0].isdigit() or ident[0] == "_":
        ident = prefix + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


def identifier_key(name: str) -> str:
    """How names are compared when a script looks a tool or namespace up by name:
    lowercase, every non-identifier character as ``_``."""
    return _NOT_IDENTIFIER.sub("_", name.strip()).lower()


def assign_identifiers(names: Iterable[str], *, prefix: str = "t", taken: Iterable[str] = ()) -> dict[str, str]:
    """A unique identifier for each name, in order; ``taken`` identifiers are avoided."""
    used = set(taken)
    out: dict[str, str] = {}
    for name in names:
        base = to_identifier(name, prefix=prefix)
        ident = base
        n = 2
        while ident in used:
            ident = f"{base}_{n}"
            n += 1
        used.add(ident)
        out[name] = ident
    return out
