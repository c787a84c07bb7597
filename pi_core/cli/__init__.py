"""The ``pi`` command.

``main()`` answers ``--version`` before importing anything heavy; everything else is
built with typer in :mod:`pi_core.cli.app`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-v"], ["-V"]):
        from .. import __version__

        print(f"pi {__version__}")
        return
    from .app import run

    run(args)
