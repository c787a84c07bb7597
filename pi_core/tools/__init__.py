"""pi's built-in tools: ``read``, ``bash``, ``edit``, ``write`` (active by default) and
``grep``, ``find``, ``ls`` (registered, inactive until turned on).

They reach pi through :class:`BuiltinToolsPlugin`, a ``trylast`` built-in plugin loaded
through the same path as third-party plugins; registering a tool of the same name
replaces one. Plugins that change files should take part in the per-file mutation
queue (:func:`file_mutation_lock`, :func:`with_file_mutation_queue`), and may reuse the
truncation helpers to keep their output within the same limits.

The tools use only ``ctx.cwd``, ``ctx.signal``, ``ctx.update()`` and
``ctx.get_settings()`` of their context (plus ``ctx.model`` / ``ctx.session_manager``
when present).
"""

from __future__ import annotations

from ._common import ToolError, resolve_path
from .bash import create_bash_tool
from .edit import create_edit_tool
from .find import create_find_tool
from .grep import create_grep_tool
from .ls import create_ls_tool
from .mutation_queue import file_mutation_lock, mutation_queue_key, with_file_mutation_queue
from .plugin import DEFAULT_ACTIVE_TOOLS, BuiltinToolsPlugin, builtin_tools
from .read import create_read_tool
from .truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    GREP_MAX_LINE_LENGTH,
    TruncationResult,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)
from .write import create_write_tool

__all__ = [
    "DEFAULT_ACTIVE_TOOLS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "BuiltinToolsPlugin",
    "ToolError",
    "TruncationResult",
    "builtin_tools",
    "create_bash_tool",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_tool",
    "create_write_tool",
    "file_mutation_lock",
    "format_size",
    "mutation_queue_key",
    "resolve_path",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "with_file_mutation_queue",
]
