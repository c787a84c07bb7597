"""``pi completion bash|zsh|fish`` and the completions the shell then asks for.

The script is argcomplete's (``argcomplete.shellcode``). On Tab the shell runs ``pi``
with ``_ARGCOMPLETE``, ``COMP_LINE`` and ``COMP_POINT`` in its environment;
:func:`pi_core.cli.main` then calls :func:`complete`, which builds an argparse parser
for what has been typed and lets ``argcomplete.autocomplete`` answer and end the
process:

* the first word: pi's commands (:data:`pi_core.cli.COMMANDS`) and the plugins'
  subcommands, or, after ``-``, the agent command's options;
* after one of pi's commands: that command's options, arguments and subcommands, read
  from its typer (click) definition (``pi help`` and ``pi completion``: their arguments);
* otherwise the agent command's options (:func:`.options.build_parser`), with the flags
  plugins register; its prompts complete as file names.

Without ``_ARGCOMPLETE`` nothing here is imported: a normal run pays nothing for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from . import COMMANDS, PACKAGE_COMMANDS

SHELLS = ("bash", "zsh", "fish")

USAGE = """usage: pi completion bash|zsh|fish

Print the shell code that completes pi's commands, options and plugin commands:
  bash  eval "$(pi completion bash)"   in ~/.bashrc
  zsh   eval "$(pi completion zsh)"    in ~/.zshrc, after compinit
  fish  pi completion fish | source    in ~/.config/fish/config.fish (or save it as
                                       ~/.config/fish/completions/pi.fish)"""


def completion_command(args: list[str]) -> int:
    """``pi completion SHELL``: print the script; a missing or unknown shell is a usage
    error (status 2)."""
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(args) != 1 or args[0] not in SHELLS:
        what = "name a shell" if not args else f"unknown shell {args[0]!r}" if len(args) == 1 else "takes one shell"
        print(f'pi completion: {what}: bash, zsh or fish (e.g. eval "$(pi completion bash)")', file=sys.stderr)
        return 2
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["pi"], shell=args[0]))
    return 0


def complete() -> NoReturn:
    """Answer the shell's completion request (``_ARGCOMPLETE`` is set) and exit."""
    from argcomplete.finders import CompletionFinder
    from argcomplete.lexers import split_line

    from .._entrypoints import prepare

    prepare()
    line = os.environ.get("COMP_LINE", "")
    try:
        point = int(os.environ.get("COMP_POINT", len(line)))
        start = max(int(os.environ.get("_ARGCOMPLETE", "1")) - 1, 0)
        _, prefix, _, words, _ = split_line(line, point)
    except Exception:  # an unbalanced quote, a bad number: argcomplete answers as it can
        start, prefix, words = 0, "", []
    # argcomplete.autocomplete is such a finder; options are offered once a "-" is typed
    CompletionFinder()(completion_parser(words[start + 1 :], prefix), always_complete_options=False)
    sys.exit(0)  # not reached: autocomplete writes the answer and ends the process


def completion_parser(typed: list[str], prefix: str) -> argparse.ArgumentParser:
    """The parser ``argcomplete`` completes ``prefix`` with, after the words ``typed``
    (the command line's complete words after ``pi``)."""
    first = typed[0] if typed else None
    if first is not None and any(first == name for name, _, _ in COMMANDS):
        return _command_parser(first)
    flags, plugin_commands = _plugin_registrations()
    if first is None and not prefix.startswith("-"):
        parser = _bare_parser()
        commands = parser.add_subparsers(dest="command")
        for name, _, description in COMMANDS:
            commands.add_parser(name, help=" ".join(description.split("\n")))
        for name, help_text in plugin_commands.items():
            commands.add_parser(name, help=help_text)
        return parser
    if first in plugin_commands:  # it parses its own arguments: offer nothing but files
        parser = _bare_parser()
        parser.add_subparsers(dest="command").add_parser(first).add_argument("args", nargs=argparse.REMAINDER)
        return parser
    from .options import build_parser

    return build_parser(flags)


def _bare_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="pi", add_help=False)


def _plugin_registrations() -> tuple[list[Any], dict[str, str]]:
    """The flags and the subcommands (name: help) of the plugins, from one load."""
    from .main import plugin_flag_definitions

    commands: dict[str, str] = {}
    flags = plugin_flag_definitions(argparse.Namespace(extension=[], no_extensions=False), commands)
    return flags, commands


def _command_parser(name: str) -> argparse.ArgumentParser:
    """A parser for ``pi NAME ...``, NAME one of pi's own commands."""
    parser = _bare_parser()
    commands = parser.add_subparsers(dest="command")
    if name == "help":
        _, plugin_commands = _plugin_registrations()
        names = [command for command, _, _ in COMMANDS] + list(plugin_commands)
        commands.add_parser(name).add_argument("name", nargs="?", choices=names)
    elif name == "completion":
        commands.add_parser(name).add_argument("shell", nargs="?", choices=SHELLS)
    else:
        import typer.main

        if name in PACKAGE_COMMANDS:
            from .packages import packages_app as app

            name_there = "remove" if name == "uninstall" else name
        else:
            from .app import app

            name_there = name
        group: Any = typer.main.get_command(app)
        _add_click_command(commands, name, group.commands[name_there])
    return parser


def _add_click_command(commands: Any, name: str, command: Any) -> None:
    """``command`` (a typer/click command or group) as the subparser ``name``."""
    parser = commands.add_parser(name, help=command.get_short_help_str(80), conflict_handler="resolve")
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "option":
            options = [*param.opts, *param.secondary_opts]
            if param.is_flag or param.count:
                parser.add_argument(*options, action="store_true", help=param.help)
            else:
                parser.add_argument(*options, metavar="VALUE", help=param.help)
        elif param.param_type_name == "argument":
            nargs = "*" if param.nargs == -1 else "?" if param.nargs == 1 else param.nargs
            parser.add_argument(param.name, nargs=nargs)
    children = getattr(command, "commands", None)
    if children:
        inner = parser.add_subparsers(dest=f"{name}_command")
        for child_name, child in children.items():
            if not child.hidden:
                _add_click_command(inner, child_name, child)
