"""The ``pi`` command.

``main()`` answers ``--version`` before importing anything heavy. Subcommands
(``pi extensions``, ``pi models``, ``pi sessions``) are typer apps; everything else is
the agent command (:mod:`pi_core.cli.main`).
"""

from __future__ import annotations

import sys

SUBCOMMANDS = ("extensions", "models", "sessions")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-v"]):
        from .. import __version__

        print(f"pi {__version__}")
        return
    if args and args[0] in SUBCOMMANDS:
        from .app import run as run_subcommand

        run_subcommand(args)
        return
    from .main import run

    try:
        status = run(args)
    except KeyboardInterrupt:
        status = 130
    sys.exit(status)
