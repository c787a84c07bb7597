"""pi's built-in plugins, registered first through the same path as third-party ones.

Built-in behaviour is ``trylast``: plugins run before it and can replace it.
"""

from __future__ import annotations

from typing import Any

from .tools import BuiltinToolsPlugin


def builtin_plugins() -> list[tuple[str, Any]]:
    """``(name, plugin)`` pairs of the built-in plugins, in load order: pi's providers
    (the wire APIs, the model catalogue and the logins) and its tools."""
    from .ai import builtin as providers  # the LLM layer: imported by the runs that load plugins

    return [(providers.NAME, providers), ("tools", BuiltinToolsPlugin)]
