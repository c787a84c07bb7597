"""The built-in tools as a plugin, registered like any third-party one (``trylast``:
a plugin that registers a tool of the same name replaces the built-in)."""

from __future__ import annotations

from pi_hookspecs import RegisterTool, ToolDefinition, hookimpl

from .bash import create_bash_tool
from .edit import create_edit_tool
from .find import create_find_tool
from .grep import create_grep_tool
from .ls import create_ls_tool
from .read import create_read_tool
from .write import create_write_tool

DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")
"""Active unless settings ``defaultTools`` or ``--tools`` say otherwise; ``grep``,
``find`` and ``ls`` are registered inactive."""


def builtin_tools() -> list[ToolDefinition]:
    """Fresh definitions of the seven built-in tools, in the order they are listed."""
    return [
        create_read_tool(),
        create_bash_tool(),
        create_edit_tool(),
        create_write_tool(),
        create_grep_tool(),
        create_find_tool(),
        create_ls_tool(),
    ]


class BuiltinToolsPlugin:
    """read, bash, edit, write (active by default), grep, find, ls (inactive by default)."""

    @hookimpl(trylast=True)
    def register_tools(self, register: RegisterTool) -> None:
        for definition in builtin_tools():
            register(definition)
