"""pi's built-in plugins, registered first through the same path as third-party ones.

Built-in behaviour is ``trylast``: plugins run before it and can replace it.
"""

from __future__ import annotations

from typing import Any


def builtin_plugins() -> list[tuple[str, Any]]:
    """``(name, plugin)`` pairs of the built-in plugins, in load order."""
    from .tools import BuiltinToolsPlugin

    return [("tools", BuiltinToolsPlugin)]
