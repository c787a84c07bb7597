"""Interactive mode (``pi`` in a terminal). The implementation lives in
:mod:`pi_core.cli.tui`; prompt_toolkit and rich are imported only here, when the mode
starts, so ``pi --version`` and ``pi --help`` stay fast. See ``docs/interactive.md``."""

from __future__ import annotations

import argparse


def run_interactive(args: argparse.Namespace) -> int:
    """Run the interactive session the options describe; returns the exit status."""
    from .tui.app import run_app  # prompt_toolkit and rich: only when this mode starts

    return run_app(args)
