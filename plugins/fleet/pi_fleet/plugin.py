"""The pi plugin (entry point ``fleet``): it registers the ``pi fleet`` subcommand."""

from __future__ import annotations

from pi_hookspecs import RegisterCliCommand, hookimpl

from .cli import HELP, main


class FleetPlugin:
    """Adds ``pi fleet``. (The same ``main`` is declared in the ``pi.cli_commands``
    entry-point group, so ``pi fleet`` starts without loading any plugin first.)"""

    @hookimpl
    def register_cli_commands(self, register: RegisterCliCommand) -> None:
        register("fleet", main, help=HELP)
