"""``pi NAME ...`` subcommands that plugins register (``register_cli_commands``).

Finding them loads every plugin that is not the project's own (a few hundred
milliseconds). A command whose start-up time matters (``pi acp``: an editor waits for
its handshake) may also be declared in the entry-point group ``pi.cli_commands``
(``NAME = "module:main"``, the same ``main`` it registers): ``pi NAME`` then imports
that module and calls it without loading any plugin first."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any


def load_cli_commands() -> dict[str, Any]:
    """Plugin subcommands by name (plugins that are not the project's own)."""
    from ..extensions import LoadOptions, PluginHost

    host = PluginHost(LoadOptions(cwd=os.getcwd()))
    host.load_phase_one()
    for diagnostic in asyncio.run(host.run_registration("register_cli_commands")):
        if diagnostic.level == "error":
            print(f"pi: {diagnostic.format()}", file=sys.stderr)
    return {name: reg.value for name, reg in host.registry.cli_commands.items()}


def command_help(registered: Mapping[str, Any]) -> dict[str, str]:
    """Every plugin subcommand with the first line of its help: those ``registered``
    (name: definition, as :func:`load_cli_commands` returns them) in registration order,
    then those only declared in :data:`FAST_GROUP` (no help)."""
    found = {
        name: (getattr(definition, "help", "") or "").strip().partition("\n")[0]
        for name, definition in registered.items()
    }
    for name in fast_command_names():
        found.setdefault(name, "")
    return found


def fast_command_names() -> list[str]:
    """The names declared in :data:`FAST_GROUP` (nothing is imported)."""
    from .._entrypoints import entry_points

    return [entry.name for entry in entry_points(FAST_GROUP)]


FAST_GROUP = "pi.cli_commands"
"""Entry points of plugin subcommands that start without loading the plugins."""


def fast_cli_command(name: str) -> Any:
    """The command ``name`` declared in :data:`FAST_GROUP`, as a definition
    :func:`run_cli_command` takes, or ``None`` (not declared, or its import failed:
    then the plugins are loaded and asked as usual)."""
    from .._entrypoints import entry_points

    for entry in (ep for ep in entry_points(FAST_GROUP) if ep.name == name):
        try:
            main = entry.load()
        except Exception as exc:
            print(
                f"pi: entry point {entry.value!r} ({FAST_GROUP}) failed to load: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return None
        from types import SimpleNamespace

        return SimpleNamespace(name=name, main=main)
    return None


def run_cli_command(command: Any, args: list[str]) -> int:
    try:
        result = command.main(args)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        print(f"pi {command.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0 if result is None else int(result)


async def _await(value: Any) -> Any:
    return await value
