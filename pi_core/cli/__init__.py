"""The ``pi`` command.

``main()`` answers ``--version`` before importing anything heavy. Subcommands
(``pi extensions``, ``pi models``, ``pi sessions``) are typer apps; everything else is
the agent command (:mod:`pi_core.cli.main`). As the process's entry point (the ``pi``
script, ``python -m pi_core``) it also tunes the garbage collector during start-up and
lets print and json mode exit without interpreter teardown (:mod:`pi_core.cli.process`).
"""

from __future__ import annotations

import gc
import sys

from .. import __version__

SUBCOMMANDS = ("extensions", "models", "sessions", "auth", "config")
PACKAGE_COMMANDS = ("install", "remove", "uninstall", "update", "list")


def _could_be_plugin_command(word: str) -> bool:
    """A bare lowercase word may name a plugin's subcommand (``pi mcp list``)."""
    return bool(word) and word[0].isalpha() and all(c.isalnum() or c == "-" for c in word) and word.islower()


def _is_process_entry() -> bool:
    """Whether ``main`` runs as the process's entry point: ``python -m pi_core``, or the
    console script (whose ``__main__`` module imported this very ``main``)."""
    entry = sys.modules.get("__main__")
    spec = getattr(entry, "__spec__", None)
    if spec is not None and spec.name == "pi_core.__main__":
        return True
    return getattr(entry, "main", None) is cli_main


def main(argv: list[str] | None = None) -> None:
    """Run ``pi``. With ``argv`` (or when not the process's entry point) it ends with
    ``SystemExit`` like any library call; as the entry point, print and json mode end the
    process with ``os._exit`` once their work is done and flushed."""
    entry = argv is None and _is_process_entry()
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-v"]):
        print(f"pi {__version__}")
        return
    # The imports below are local on purpose: this function dispatches, and each branch
    # loads only what it runs (``pi --version`` nothing, subcommands typer, the agent
    # command argparse and, per mode, the runtime or the terminal UI).
    if args and args[0] in PACKAGE_COMMANDS:
        from .packages import packages_app

        packages_app(args=["remove" if args[0] == "uninstall" else args[0], *args[1:]], prog_name="pi")
        return
    if args and args[0] in SUBCOMMANDS:
        from .app import run as run_subcommand

        run_subcommand(args)
        return
    # As the entry point of the agent command, the collector is off from here until the
    # runtime is open (process.startup_done): start-up makes hundreds of thousands of
    # objects and no garbage cycles, and about 30 young-generation collections during
    # these imports found nothing to free (4 ms of a ``pi -p``).
    paused = entry and gc.isenabled()
    if paused:
        gc.disable()
    from .._entrypoints import prepare

    prepare()  # one walk of the installed distributions answers every lookup below
    if args and _could_be_plugin_command(args[0]):
        from .plugin_commands import fast_cli_command, load_cli_commands, run_cli_command

        fast = fast_cli_command(args[0])
        commands = {} if fast is not None else load_cli_commands()
        if fast is not None or args[0] in commands:
            if paused:
                gc.enable()  # a plugin's command may run for long: the collector as usual
            sys.exit(run_cli_command(fast if fast is not None else commands[args[0]], args[1:]))
    from . import process

    if entry:
        process.enter(gc_paused=paused)
    from .main import run

    try:
        status = run(args)
    except KeyboardInterrupt:
        status = 130
    if entry:
        process.exit_process(status)
    sys.exit(status)


#: ``main`` under a name that stays the function: importing the submodule
#: ``pi_core.cli.main`` rebinds the package attribute ``main`` to that module.
cli_main = main
