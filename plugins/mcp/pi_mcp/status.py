"""Text reports of servers: ``/mcp`` and ``pi mcp list``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .names import tool_exposure, tool_names

if TYPE_CHECKING:
    from .config import LoadedConfig, ServerEntry
    from .connection import McpConnection

STATE_ORDER = {"failed": 0, "needs-auth": 1, "disconnected": 2, "connecting": 3, "idle": 4, "connected": 5, "closed": 6}


def state_text(connection: McpConnection) -> str:
    if connection.state == "needs-auth":
        return f"needs sign-in (run /mcp login {connection.name} or pi mcp login {connection.name})"
    return connection.state


def tool_lines(connection: McpConnection) -> list[str]:
    config = connection.entry.config
    names = tool_names(connection.name, [t.name for t in connection.tools])
    lines = []
    for tool in connection.tools:
        exposure = tool_exposure(config.exposure, config.tool_exposure, tool.name)
        mark = f"  [{exposure}]" if exposure != config.exposure else ""
        lines.append(f"    {names[tool.name]}{mark}")
    return lines


def server_json(entry: ServerEntry, connection: McpConnection | None) -> dict[str, Any]:
    config = entry.config
    data: dict[str, Any] = {
        "name": entry.name,
        "source": entry.source,
        "transport": config.transport,
        "enabled": config.enabled,
        "exposure": config.exposure,
        "state": connection.state if connection is not None else "disabled",
    }
    if entry.overridden_by:
        data["overriddenBy"] = entry.overridden_by
    if connection is not None:
        names = tool_names(connection.name, [t.name for t in connection.tools])
        data["tools"] = [
            {
                "name": names[t.name],
                "serverTool": t.name,
                "exposure": tool_exposure(config.exposure, config.tool_exposure, t.name),
            }
            for t in connection.tools
        ]
        data["resources"] = connection.has_resources
        if connection.error:
            data["error"] = connection.error
    return data


def format_status(
    config: LoadedConfig,
    connections: dict[str, McpConnection],
    *,
    tools: bool = False,
    empty_hint: str = "",
) -> str:
    """Servers needing attention first; each with state, tool count, exposure and source."""
    entries = list(config.servers.values())
    if not entries and not config.errors:
        # a project's servers that are not read (untrusted) are still mentioned
        return "\n".join([f"No MCP servers configured.{empty_hint}", *(f"note: {note}" for note in config.notes)])
    lines: list[str] = []

    def order(entry: ServerEntry) -> int:
        connection = connections.get(entry.name)
        return STATE_ORDER.get(connection.state, 9) if connection is not None else 8

    for entry in sorted(entries, key=order):
        connection = connections.get(entry.name)
        config_ = entry.config
        source = entry.source + (f" (overridden by {entry.overridden_by})" if entry.overridden_by else "")
        if connection is None:
            lines.append(f"{entry.name}: disabled ({config_.exposure}) {source}")
            continue
        count = f", {len(connection.tools)} tools" if connection.state == "connected" else ""
        resources = ", resources" if connection.has_resources and connection.state == "connected" else ""
        lines.append(f"{entry.name}: {state_text(connection)}{count}{resources} ({config_.exposure}) {source}")
        if connection.error:
            lines.extend(f"    {line}" for line in connection.error.splitlines())
        if tools and connection.state == "connected":
            lines.extend(tool_lines(connection))
    for shadowed in config.shadowed:
        lines.append(
            f"{shadowed.name}: registered by {shadowed.source.removeprefix('plugin ')}, overridden by mcp.json"
        )
    for note in config.notes:
        lines.append(f"note: {note}")
    for error in config.errors:
        lines.append(f"config error: {error}")
    return "\n".join(lines)
