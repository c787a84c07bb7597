"""The pi plugin (entry point ``acp``): it registers the ``pi acp`` subcommand."""

from __future__ import annotations

from pi_hookspecs import RegisterCliCommand, hookimpl

from .cli import HELP, main


class AcpPlugin:
    """Adds ``pi acp``. (The same ``main`` is declared in the ``pi.cli_commands``
    entry-point group, so ``pi acp`` starts without loading any plugin first.)"""

    @hookimpl
    def register_cli_commands(self, register: RegisterCliCommand) -> None:
        register("acp", main, help=HELP)
