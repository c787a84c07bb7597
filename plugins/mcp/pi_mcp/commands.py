"""``/mcp`` in a session: status, ``reconnect NAME``, ``login NAME``, ``logout NAME``."""

from __future__ import annotations

import webbrowser
from typing import TYPE_CHECKING, Any

from .errors import McpUnavailableError
from .status import format_status

if TYPE_CHECKING:
    from .manager import McpManager

USAGE = "Usage: /mcp [status] | /mcp reconnect NAME | /mcp login NAME | /mcp logout NAME"


def open_browser(url: str) -> None:
    try:
        webbrowser.open(url)
    except Exception:
        pass  # the URL is shown as well


async def run_command(manager: McpManager | None, args: str, ctx: Any, *, disabled: str | None = None) -> None:
    notify = ctx.ui.notify
    if manager is None:
        notify(disabled or "MCP is not running in this session.", "info")
        return
    words = args.split()
    action = words[0] if words else "status"
    if action == "status":
        from .manager import status_hint

        notify(
            format_status(manager.config, manager.connections, tools=True, empty_hint=status_hint(manager.agent)),
            "info",
        )
        return
    if action not in ("reconnect", "login", "logout") or len(words) != 2:
        notify(USAGE, "error")
        return
    name = words[1]
    entry = manager.entry(name)
    if entry is None:
        notify(f'No MCP server named "{name}".', "error")
        return
    connection = manager.find(name)
    if action == "reconnect":
        if connection is None:
            notify(f'MCP server "{entry.name}" is disabled.', "error")
            return
        try:
            await connection.reconnect()
        except McpUnavailableError as exc:
            notify(str(exc), "error")
            return
        notify(f'Reconnected to MCP server "{entry.name}" ({len(connection.tools)} tools).', "info")
        return
    if not entry.config.uses_oauth():
        notify(
            f'MCP server "{entry.name}" does not use OAuth: only HTTP servers without an Authorization header do.',
            "error",
        )
        return
    from .oauth import sign_in, sign_out

    if action == "logout":
        removed = sign_out(entry, manager.agent)
        if connection is not None:
            connection.signed_out()
        notify(
            f'Signed out of MCP server "{entry.name}".'
            if removed
            else f'No stored credentials for MCP server "{entry.name}".',
            "info",
        )
        return
    if not ctx.has_ui:
        notify(f'Signing in to MCP server "{entry.name}" needs a terminal: run pi mcp login {entry.name}', "error")
        return

    def show(url: str) -> None:
        notify(f'Sign in to MCP server "{entry.name}" in your browser:\n{url}', "info")
        open_browser(url)

    try:
        count = await sign_in(entry, manager.agent, ctx.cwd, on_url=show)
    except Exception as exc:
        notify(f'Sign-in to MCP server "{entry.name}" failed: {exc}', "error")
        return
    if connection is not None:
        try:
            await connection.reconnect()
            count = len(connection.tools)
        except McpUnavailableError as exc:
            notify(f"Signed in, but {exc}", "error")
            return
    notify(f'Signed in to MCP server "{entry.name}" ({count} tools).', "info")
