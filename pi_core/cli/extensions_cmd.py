"""``pi extensions``: what plugins pi finds, loads and what they register."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import typer

extensions_app = typer.Typer(help="Inspect pi's plugins (extensions).", no_args_is_help=True)

SOURCE_LABELS = {
    "builtin": "built-in",
    "entrypoint": "entry point",
    "user": "user file",
    "settings": "settings",
    "project": "project file",
    "cli": "-e",
    "sdk": "sdk",
}


def collect(
    *,
    cwd: str,
    extensions: list[str],
    no_extensions: bool,
    approve: bool | None,
) -> dict[str, Any]:
    # the plugin host (about 0.1 s of imports) only when this command runs: every
    # subcommand's module is imported to build the one typer app of ``pi``'s subcommands
    from ..extensions import LoadOptions, PluginHost

    host = PluginHost(LoadOptions(cwd=cwd, cli_extensions=extensions, no_extensions=no_extensions))
    asyncio.run(host.load(project_trusted=approve))
    plugins = [record.to_json(host.registry) for record in host.records]
    for plugin in plugins:  # what each command says it does (a plugin may state its mode there)
        plugin["commandDescriptions"] = {
            name: reg.value.description
            for name, reg in host.registry.commands.items()
            if reg.plugin == plugin["name"] and reg.value.description
        }
    return {
        "plugins": plugins,
        "diagnostics": [
            *(d.to_json() for d in host.diagnostics),
            # a broken settings file changes what loads (disabledExtensions …): say so
            *({"level": e.level, "message": str(e), "source": "settings"} for e in host.settings.errors),
        ],
        "projectTrusted": host.project_trusted,
    }


def _render(data: dict[str, Any]) -> str:
    lines: list[str] = []
    if not data["plugins"]:
        lines.append("No plugins found.")
    for plugin in data["plugins"]:
        where = plugin.get("distribution") and f"{plugin['distribution']} {plugin.get('version') or ''}".strip()
        where = where or plugin.get("path") or plugin.get("origin")
        lines.append(f"{plugin['name']}  [{SOURCE_LABELS.get(plugin['source'], plugin['source'])}]  {plugin['status']}")
        lines.append(f"    from: {where}")
        described = plugin.get("commandDescriptions") or {}
        for key in ("hooks", "tools", "commands", "flags", "providers", "virtual_models", "apis"):
            if plugin.get(key):
                names = (
                    plugin[key]
                    if key != "commands"
                    else [f"{name} ({described[name]})" if described.get(name) else name for name in plugin[key]]
                )
                lines.append(f"    {key.replace('_', ' ')}: {', '.join(names)}")
        if plugin.get("error"):
            lines.append(f"    {plugin['error']}")
    unattached = [
        d
        for d in data["diagnostics"]
        if not any(d.get("plugin") == p["name"] and p.get("error") == d["message"] for p in data["plugins"])
    ]
    if unattached:
        lines.append("")
        lines.append("Diagnostics:")
        for d in unattached:
            who = f"{d['plugin']}: " if d.get("plugin") else ""
            path = f" ({d['path']})" if d.get("path") else ""
            lines.append(f"  {d['level']}: {who}{d['message']}{path}")
    return "\n".join(lines)


@extensions_app.command("list")
def list_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    extension: list[str] = typer.Option(
        [], "--extension", "-e", help="Also load this plugin (path, module or entry point name)."
    ),
    no_extensions: bool = typer.Option(False, "--no-extensions", "-ne", help="Load only built-in and -e plugins."),
    approve: bool | None = typer.Option(
        None, "--approve/--no-approve", help="Trust (or not) the project's own plugins for this run."
    ),
) -> None:
    """List every plugin: source, version or path, hooks, tools, commands and load errors."""
    data = collect(cwd=os.getcwd(), extensions=extension, no_extensions=no_extensions, approve=approve)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(_render(data))
