"""The ``pi`` command.

``main()`` answers ``--version`` before importing anything heavy. Subcommands
(``pi extensions``, ``pi models``, ``pi sessions`` …) are typer apps, ``pi help`` and
``pi completion`` are answered here (:mod:`.commands`, :mod:`.completion`), a plugin's
subcommand is looked up by name (:mod:`.plugin_commands`); everything else is the agent
command (:mod:`pi_core.cli.main`), unless its first word looks like a mistyped command
(:mod:`.typos`). As the process's entry point (the ``pi`` script, ``python -m pi_core``)
it also tunes the garbage collector during start-up and lets print and json mode exit
without interpreter teardown (:mod:`pi_core.cli.process`).
"""

from __future__ import annotations

import gc
import os
import sys

from .. import __version__

#: pi's own subcommands in the order ``pi --help`` lists them: name, arguments, what it
#: does (a "\n" goes on below it; "" keeps an alias out of the help). The one table read
#: by the dispatch below, the command list of ``pi --help`` (options.py), ``pi help``,
#: shell completion (completion.py) and the check for a mistyped command (typos.py).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("extensions", "list [--json]", "plugins: source, version, hooks, tools, commands, errors"),
    (
        "install",
        "SPEC [-l] [-U]",
        "install a plugin package into pi's environment (and record it):\n"
        "a name[==version], a git+URL, a folder; -e PATH: editable",
    ),
    ("remove", "SPEC [-l]", "uninstall it, by name or source (alias: pi uninstall)"),
    ("uninstall", "SPEC [-l]", ""),
    (
        "update",
        "[SPEC|self] [--self|--extensions|--models|--all] [--force]",
        "upgrade recorded packages, showing their versions;\n--self / --all: pi itself too (--force: reinstall it)",
    ),
    ("list", "", "recorded packages, installed versions and their extensions"),
    ("models", "[SEARCH]", "models and whether their provider has a key"),
    ("sessions", "[--all]", "saved sessions of this folder"),
    ("auth", "COMMAND", "provider credentials: login, logout, status, check,\nprint-api-key, print-bearer-token"),
    (
        "config",
        "[-l] [--list]",
        "choose which plugins, skills and prompt templates load\n(a screen in a terminal; --list prints them)",
    ),
    ("help", "[COMMAND]", "this help, or a command's (as pi COMMAND --help)"),
    (
        "completion",
        "bash|zsh|fish",
        "print the shell code that completes pi's commands and options\n(pi help completion: where to put it)",
    ),
)
#: the commands of the typer app (app.py)
SUBCOMMANDS = ("extensions", "models", "sessions", "auth", "config")
#: the commands of pi's plugin packages (packages.py)
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
    if argv is None and "_ARGCOMPLETE" in os.environ:
        # the shell asks for completions (the script of ``pi completion SHELL``)
        from .completion import complete

        complete()
    asked_help = False  # ``pi help NAME``
    if args and args[0] == "help":
        from .commands import help_args

        args = help_args(args[1:])  # ``pi --help``, ``pi NAME --help``, or it ends here
        asked_help = args != ["--help"]
    if args and args[0] == "completion":
        from .completion import completion_command

        sys.exit(completion_command(args[1:]))
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
        # Not a command. A word one slip away from one is not sent to the model as a
        # prompt (a paid turn): the plugins' commands are known by now at no extra cost.
        from .commands import refuse_mistyped_command

        refuse_mistyped_command(args, commands, asked_help=asked_help)
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
