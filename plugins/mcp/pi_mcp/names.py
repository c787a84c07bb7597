"""Tool names (``mcp__<server>__<tool>``) and per-tool exposure."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

PREFIX = "mcp__"
MAX_TOOL_NAME_LENGTH = 64
"""Providers accept at most 64 characters of ``[A-Za-z0-9_-]``."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")

INTERNAL_EXPOSURE = {"codemode": "deferred", "deferred": "deferred", "direct": "direct", "hidden": "hidden"}
"""Configured exposure -> the tool's :data:`pi_hookspecs.ToolExposure`. ``codemode`` maps to
``deferred``: callable from codemode scripts but not listed in the codemode tool's
description (a large server would otherwise bloat it); scripts find the tools with
``searchTools()`` / ``describeNamespace("mcp__<server>")``."""


def identifier(text: str) -> str:
    """Every character other than letters, digits and ``_`` becomes ``_``."""
    return _UNSAFE.sub("_", text)


def namespace_name(server: str) -> str:
    return f"{PREFIX}{identifier(server)}"


def _hash(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


def _with_hash(base: str, server: str, tool: str) -> str:
    suffix = _hash(server, tool)
    return f"{base[: MAX_TOOL_NAME_LENGTH - len(suffix) - 1]}_{suffix}"


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """Server tool name -> pi tool name. Tools whose cleaned names collide all get a
    short hash suffix; names over 64 characters are shortened with one."""
    by_base: dict[str, list[str]] = defaultdict(list)
    for tool in tools:
        by_base[f"{namespace_name(server)}__{identifier(tool)}"].append(tool)
    out: dict[str, str] = {}
    for base, members in by_base.items():
        for tool in members:
            if len(members) > 1 or len(base) > MAX_TOOL_NAME_LENGTH:
                out[tool] = _with_hash(base, server, tool)
            else:
                out[tool] = base
    return out


def _matches(pattern: str, name: str) -> bool:
    regex = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern))
    return re.fullmatch(regex, name, flags=re.DOTALL) is not None


def tool_exposure(server_exposure: str, overrides: Mapping[str, str], tool: str) -> str:
    """The configured exposure of one tool: an exact ``toolExposure`` key wins, then the
    first matching ``*`` pattern, then the server's exposure."""
    if tool in overrides:
        return overrides[tool]
    for pattern, exposure in overrides.items():
        if "*" in pattern and _matches(pattern, tool):
            return exposure
    return server_exposure
