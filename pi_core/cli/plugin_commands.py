"""``pi NAME ...`` subcommands that plugins register (``register_cli_commands``)."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
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
