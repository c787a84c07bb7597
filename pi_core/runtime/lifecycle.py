"""The session's lifecycle hooks: ``session_start`` then ``resources_discover`` when it
starts, ``session_shutdown`` when it ends."""

from __future__ import annotations

from typing import Any, cast, get_args

from pi_hookspecs import ResourcesDiscoverEvent, SessionShutdownEvent, SessionStartEvent

from ..extensions import EventRunner
from ..resources.loader import Resources

_START_REASONS = frozenset(get_args(SessionStartEvent.model_fields["reason"].annotation))
_SHUTDOWN_REASONS = frozenset(get_args(SessionShutdownEvent.model_fields["reason"].annotation))
"""The reasons of ``session_start`` / ``session_shutdown`` (their events are constructed
for these; anything else is validated, which names it)."""


async def announce_start(
    runner: EventRunner, resources: Resources, cwd: str, reason: str, previous_session_file: str | None
) -> list[str]:
    """``session_start`` then ``resources_discover``; the skills and prompts the plugins
    point to join ``resources``. Returns one message per resource that could not be used."""
    if runner.has_handlers("session_start"):
        if reason in _START_REASONS:  # the host's own reasons: constructed
            start = SessionStartEvent.model_construct(
                reason=cast(Any, reason), previous_session_file=previous_session_file
            )
        else:  # validation names the unknown reason
            start = SessionStartEvent(reason=reason, previous_session_file=previous_session_file)
        await runner.emit("session_start", start)
    if not runner.has_handlers("resources_discover"):
        return []
    results = await runner.emit(
        "resources_discover",
        ResourcesDiscoverEvent(cwd=cwd, reason="reload" if reason == "reload" else "startup"),
    )
    skills = [p for r in results for p in r.skill_paths]
    prompts = [p for r in results for p in r.prompt_paths]
    return [str(diagnostic) for diagnostic in resources.extend(skill_paths=skills, prompt_paths=prompts)]


def watch_mcp_servers(runner: EventRunner, registry: Any, spawn: Any) -> None:
    """MCP servers plugins register reach the plugin that connects them: from now on each
    change fires ``mcp_servers_change``. Without such a plugin (pluggable-pi-mcp disabled or
    replaced) every registration is reported as an error naming its plugin."""

    reported: set[tuple[str, str, int]] = set()

    def report_unconnected() -> None:
        for registered in registry.mcp_servers.values():
            key = (registered.plugin, registered.value.name, id(registered))
            if key in reported:
                continue
            reported.add(key)
            runner.report(
                registered.plugin,
                "register_mcp_servers",
                f'MCP server "{registered.value.name}" is not connected: no loaded plugin connects MCP servers '
                "(is pluggable-pi-mcp disabled?)",
            )

    def changed() -> None:
        if runner.has_handlers("mcp_servers_change"):
            from pi_hookspecs import McpServersChangeEvent

            spawn(runner.emit("mcp_servers_change", McpServersChangeEvent(servers=registry.mcp_server_list())))
        else:
            report_unconnected()

    if registry.mcp_servers and not runner.has_handlers("mcp_servers_change"):
        report_unconnected()
    registry.on_mcp_change = changed


async def announce_shutdown(runner: EventRunner, reason: str, target_session_file: str | None) -> None:
    if runner.has_handlers("session_shutdown"):
        if reason in _SHUTDOWN_REASONS:
            shutdown = SessionShutdownEvent.model_construct(
                reason=cast(Any, reason), target_session_file=target_session_file
            )
        else:
            shutdown = SessionShutdownEvent(reason=reason, target_session_file=target_session_file)
        await runner.emit("session_shutdown", shutdown)


__all__ = ["announce_shutdown", "announce_start", "watch_mcp_servers"]
