"""The hook pi-mcp publishes (through ``add_hookspecs``) so other plugins can add servers."""

from __future__ import annotations

from typing import Any

from pi_hookspecs import hookspec


@hookspec
def register_mcp_servers(register: Any) -> None:
    """Contribute MCP servers to the current session.

    **Fires** once per session runtime, at ``session_start``, when pi-mcp reads its
    configuration (only when the pi-mcp plugin is loaded).

    **Call** ``register(name, config)`` with a server name (letters, digits, ``_`` and
    ``-``) and a dict shaped like an ``mcpServers`` entry of ``mcp.json`` (``command``,
    ``args``, ``env``, ``cwd`` or ``url``, ``headers``, ``oauth``, plus ``exposure``,
    ``toolExposure``, ``description``, ``enabled``, ``timeout``). Registering the same
    name again replaces your earlier registration. Registrations are not saved: register
    on every load. A server of the same name in ``mcp.json`` takes precedence.

    **Errors**: ``register`` raises ``ValueError`` for an invalid name, an invalid
    config or a name another plugin registered. An exception escaping the
    implementation is reported (naming the plugin) and the other plugins' servers
    still connect.
    """
