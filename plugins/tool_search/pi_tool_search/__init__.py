"""pluggable-pi-tool-search: the ``tool_search`` tool, which finds tools that are not declared to
the model (``deferred`` and ``codemode`` exposure, e.g. MCP server tools) with BM25 and
activates the matches for the next model request.

Installed, it loads through the ``pi.extensions`` entry point ``tool_search``; in the
SDK, pass ``plugins=[ToolSearchPlugin]``. See ``docs/tool-search.md``.
"""

from __future__ import annotations

__version__ = "1.0.0"

from .plugin import ToolSearchPlugin
from .tool import DEFAULT_LIMIT, MAX_LIMIT, SEARCHABLE_EXPOSURES, TOOL_NAME

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "SEARCHABLE_EXPOSURES", "TOOL_NAME", "ToolSearchPlugin"]
