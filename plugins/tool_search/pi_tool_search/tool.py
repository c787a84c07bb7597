"""The ``tool_search`` tool: its declaration, argument checks and result text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pi_toolindex import Hit

from pi_hookspecs import ToolDefinition, ToolResult

TOOL_NAME = "tool_search"
DEFAULT_LIMIT = 5
MAX_LIMIT = 10
SEARCHABLE_EXPOSURES = ("deferred", "codemode")
"""Exposures ``tool_search`` can load: tools that are registered but not declared."""

DESCRIPTION = (
    "Find tools that are not loaded yet, such as the tools of MCP servers, and load the best "
    "matches so you can call them directly from your next step. Describe the capability you need "
    'in a few words (for example "create a GitHub issue" or "merge pull request"). Returns the '
    "names and descriptions of the tools it loaded."
)
PROMPT_SNIPPET = "Find and load tools that are not loaded yet (for example MCP server tools)"
PROMPT_GUIDELINES = [
    f"When a task needs a capability that none of your tools offers, call {TOOL_NAME} with a few "
    "words describing it before concluding that it cannot be done.",
    f"Tools that {TOOL_NAME} loads can be called directly from your next step; do not search "
    "again for a tool it already loaded.",
]
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": 'What you need to do, in a few words, e.g. "list open issues" or "assign a ticket".',
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": f"How many tools to load at most (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}).",
        },
    },
    "required": ["query"],
}
_SUMMARY_CHARS = 200


class ArgumentError(ValueError):
    """Arguments the JSON Schema let through but the search cannot use."""


def _reaches_all(args: dict[str, Any]) -> str:
    return "all"


def build_definition(execute: Callable[[dict[str, Any], Any], Any]) -> ToolDefinition:
    """The ``tool_search`` definition: ``model-only`` (scripts never call it), inactive
    until deferred tools exist, reaching every tool."""
    # pi's own constants (and the plugin's execute function): nothing to validate.
    return ToolDefinition.model_construct(
        name=TOOL_NAME,
        label="Tool search",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
        prompt_guidelines=list(PROMPT_GUIDELINES),
        exposure="model-only",
        default_active=False,
        reaches_tools=_reaches_all,
    )


def parse_arguments(args: dict[str, Any]) -> tuple[str, int]:
    """``(query, limit)``; :class:`ArgumentError` for an empty query or a bad limit."""
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ArgumentError('query must name what you need, e.g. "create a GitHub issue"')
    limit = args.get("limit", DEFAULT_LIMIT)
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ArgumentError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    return query.strip(), limit


def summary(description: str) -> str:
    """The first non-empty line of a description, at most 200 characters."""
    line = next((part.strip() for part in description.splitlines() if part.strip()), "")
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1].rstrip() + "…"


def loaded_result(query: str, loaded: Sequence[ToolDefinition], hits: Sequence[Hit]) -> ToolResult:
    count = len(loaded)
    lines = [
        f"Loaded {count} tool{'s' if count != 1 else ''}; call {'them' if count != 1 else 'it'} "
        "directly from your next step:"
    ]
    lines += [f"- {tool.name}: {summary(tool.description)}" for tool in loaded]
    return ToolResult.text(
        "\n".join(lines),
        details={
            "query": query,
            "loaded": [tool.name for tool in loaded],
            "matches": [{"name": hit.name, "score": round(hit.score, 4)} for hit in hits],
        },
    )


def empty_result(query: str, searchable: int) -> ToolResult:
    if searchable == 0:
        text = (
            "There are no tools left to load: every tool that search can load is loaded already, or "
            "none is registered yet (an MCP server may still be connecting)."
        )
    else:
        text = (
            f'No tool matches "{query}" among the {searchable} tools that are not loaded yet. Try other '
            "words: what the tool does, the thing it works on, or the service it belongs to."
        )
    return ToolResult.text(text, details={"query": query, "loaded": [], "matches": [], "searchable": searchable})
