"""The hook pluggable-pi-mcp publishes (through ``add_hookspecs``) so other plugins can add servers."""

from __future__ import annotations

from typing import Any

from pi_hookspecs import hookspec


@hookspec
def register_mcp_servers(register: Any, unregister: Any) -> None:
    """Contribute MCP servers to the current session.

    **Fires** once per session runtime, at ``session_start``, when pluggable-pi-mcp reads its
    configuration (only when the pluggable-pi-mcp plugin is loaded). Take the arguments you use:
    ``register``, ``unregister`` or both.

    **Call** ``register(name, config)`` with a server name (letters, digits, ``_`` and
    ``-``) and a dict shaped like an ``mcpServers`` entry of ``mcp.json`` (``command``,
    ``args``, ``env``, ``cwd`` or ``url``, ``headers``, ``oauth``, plus ``exposure``,
    ``toolExposure``, ``description``, ``enabled``, ``timeout``). Registering the same
    name again replaces your earlier registration. Registrations are not saved: register
    on every load. A server of the same name in ``mcp.json`` takes precedence.
    ``unregister(name)`` removes your own server (``False`` when you have none of that
    name). Servers registered here connect with the ``mcp.json`` ones; keep the two
    callables to change your servers later in the session: a server registered then
    connects right away, an unregistered one is closed and its tools become unreachable,
    and ``mcp_servers_change`` tells the other plugins.

    **Errors**: ``register`` raises ``ValueError`` for an invalid name, an invalid
    config or a name another plugin registered. An exception escaping the
    implementation is reported (naming the plugin) and the other plugins' servers
    still connect.
    """


@hookspec
def mcp_servers_change(servers: list[dict[str, Any]]) -> None:
    """Plugins registered or unregistered MCP servers after the session started.

    **Fires** after each such change (pluggable-pi-mcp then connects new servers and closes
    removed ones). ``servers`` lists every server plugins registered, after the change:
    ``name``, ``plugin``, ``config`` (the ``mcpServers`` entry as JSON) and
    ``overridden`` (``True`` when a ``mcp.json`` server of that name wins). A plugin that
    connects MCP servers itself follows the registrations here.

    **Returns** nothing. **Errors**: reported as a warning; pluggable-pi-mcp goes on.
    """
