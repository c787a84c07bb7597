"""pluggable-pi-acp: ``pi acp``, an Agent Client Protocol agent, so editors run pi.

Zed, JetBrains IDEs, Emacs (agent-shell), Neovim (CodeCompanion) and other ACP clients
start ``pi acp`` and speak JSON-RPC with it over stdio. Every session is a real pi
session (pluggable-pi's SDK, :func:`pi_core.runtime.create_agent_session`) with the user's
plugins, settings and trust rules; the editor's file system and terminal, its
permission prompts and the MCP servers it passes reach pi through pi's hooks
(``file_access``, ``bash_spawn``, ``ctx.ui.confirm``, pi's
``register_mcp_servers``). See ``docs/editors.md``.

Importing this package is free: ``pi acp`` answers the editor's ``initialize`` before
anything heavy (pi's plugin contract, the ``acp`` SDK, the runtime) is imported.
"""

from __future__ import annotations

__version__ = "1.0.0"

from typing import Any

__all__ = ["AcpPlugin", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "AcpPlugin":
        from .plugin import AcpPlugin

        return AcpPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
