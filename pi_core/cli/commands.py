"""``pi help [COMMAND]`` and the refusal of a mistyped command (``pi instal foo``).

Both read the table of pi's own commands (:data:`pi_core.cli.COMMANDS`) and the plugins'
subcommands (:mod:`.plugin_commands`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, NoReturn

from . import COMMANDS, _could_be_plugin_command

HELP_USAGE = """usage: pi help [COMMAND]

Show pi's help (as pi --help), or the help of one of its commands or of a plugin's
command (as pi COMMAND --help)."""


def _fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    sys.exit(2)


def help_args(rest: list[str]) -> list[str]:
    """The arguments ``pi help REST`` stands for: ``--help``, or ``NAME --help``. ``pi
    help help`` is answered here; anything but one command name is a usage error."""
    if not rest:
        return ["--help"]
    if len(rest) > 1 or (rest[0].startswith("-") and rest[0] not in ("-h", "--help")):
        _fail(
            "pi help: takes one command name (pi --help lists them); to send the words as a prompt: "
            f"{_as_prompt(['help', *rest])}"
        )
    name = rest[0]
    if name in ("help", "-h", "--help"):
        print(HELP_USAGE)
        sys.exit(0)
    if any(name == command for command, _, _ in COMMANDS) or _could_be_plugin_command(name):
        return [name, "--help"]  # a plugin's command is looked up by the dispatch, as for ``pi NAME``
    _fail(f"pi help: no command {name!r} (pi --help lists them)")


def refuse_mistyped_command(args: list[str], plugin_commands: Mapping[str, Any], *, asked_help: bool = False) -> None:
    """End with status 2 when ``args[0]`` (a bare word that is no command) looks like the
    name of a command, pi's or a plugin's: ``pi instal foo`` would otherwise be a prompt.
    After ``pi help NAME`` (``asked_help``), a NAME that is no command always ends it."""
    from .plugin_commands import fast_command_names
    from .typos import closest

    word = args[0]
    names = [name for name, _, _ in COMMANDS] + list(plugin_commands) + fast_command_names()
    near = closest(word, names)
    if asked_help:
        hint = f": did you mean {near!r}?" if near else " (pi --help lists them)"
        _fail(f"pi help: no command {word!r}{hint}")
    if near is not None:
        _fail(f"pi: {word!r} is not a command: did you mean 'pi {near}'? To send it as a prompt: {_as_prompt(args)}")


def _as_prompt(args: list[str]) -> str:
    """The command line that sends ``args`` to the model as they are."""
    import shlex

    return shlex.join(["pi", "--", *args])
