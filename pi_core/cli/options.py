"""Command-line options of ``pi [options] [messages...]``.

The agent command uses argparse rather than typer: it must accept the TypeScript pi's
multi-letter short forms (``-ne``, ``-nt``, ``-xt`` …) and flags that plugins register
at run time (``register_flags``), which are listed in ``--help`` with the plugins'
subcommands. Subcommands (``pi extensions``, ``pi models``, ``pi sessions`` …) are typer
apps (:mod:`pi_core.cli`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pi_hookspecs import FlagDefinition

from .. import __version__
from ..extensions import Registered
from . import COMMANDS

#: where the descriptions of the command list begin
COLUMN = 32

EXAMPLES = """examples:
  pi                                    interactive session in this folder
  pi -p "summarise README.md"           print the answer and exit
  git diff | pi -p "review this"        piped stdin is prepended to the prompt
  pi --mode json "list the files"       every event as one JSON line
  pi --mode rpc --no-session            JSONL commands on stdin, events on stdout
  pi -c                                 continue the most recent session
  pi --model anthropic/claude-sonnet-4-5:high
"""


def _rows(left: str, description: str) -> list[str]:
    """``left`` and its description in two columns (a long ``left`` on a line of its own)."""
    lines = description.split("\n")
    first = f"  {left}"
    if len(first) >= COLUMN - 1:
        return [first, *(" " * COLUMN + line for line in lines)]
    return [first.ljust(COLUMN) + lines[0], *(" " * COLUMN + line for line in lines[1:])]


def epilog(plugin_commands: Mapping[str, str] | None = None) -> str:
    """The text after the options in ``pi --help``: pi's commands (from the one table,
    :data:`pi_core.cli.COMMANDS`), the plugins' subcommands when known (name: one line of
    help), examples."""
    lines = ["commands:"]
    for name, usage, description in COMMANDS:
        if description:
            lines += _rows(f"pi {name} {usage}".rstrip(), description)
    lines += _rows(
        "pi --export SESSION.jsonl [OUT.html]",
        "the session as one self-contained HTML page\n(default: pi-session-<name>.html here), then exit",
    )
    if plugin_commands:
        lines += ["", "plugin commands:"]
        for name, help_text in plugin_commands.items():
            lines.append((f"  pi {name}".ljust(COLUMN - 2) + f"  {help_text}").rstrip())
    return "\n".join(lines) + "\n\n" + EXAMPLES


def _list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` tells it (``COLUMNS``, else
    the terminal of stdout, else 80)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, given the terminal's width: argparse makes one for every
    argument it adds, and without a width each imports ``shutil`` to ask (with the
    compression modules ``shutil`` imports: about 1 ms of every start)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


def build_parser(
    plugin_flags: Sequence[Registered[FlagDefinition]] | None = None,
    plugin_commands: Mapping[str, str] | None = None,
) -> argparse.ArgumentParser:
    """The agent command's parser, with the flags plugins register; ``plugin_commands``
    (name: one line of help) are listed in its help."""
    parser = argparse.ArgumentParser(
        prog="pi",
        description="pi: a pluggable coding agent. Runs interactively when stdin and stdout are terminals, "
        "otherwise prints the answer.",
        epilog=epilog(plugin_commands),
        formatter_class=_HelpFormatter,
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("messages", nargs="*", help="prompts (each one a prompt; @path includes a file)")
    add("-v", "--version", action="version", version=f"pi {__version__}")

    mode = parser.add_argument_group("modes")
    mode.add_argument("-p", "--print", action="store_true", help="run the prompts, print the final answer, exit")
    mode.add_argument("--mode", choices=("text", "json", "rpc"), default="text", help="output interface")

    models = parser.add_argument_group("models")
    models.add_argument("--provider", help="restrict --model lookup to this provider")
    models.add_argument("--model", help="provider/id, id or fuzzy name, optional :thinking suffix")
    models.add_argument("--api-key", help="API key for this run (not saved)")
    models.add_argument(
        "--thinking",
        metavar="LEVEL",
        help="thinking level: off, minimal, low, medium, high, xhigh or max (another value is ignored with a warning)",
    )
    models.add_argument("--models", type=_list, help="comma-separated model patterns for cycling")
    models.add_argument("--list-models", nargs="?", const="", metavar="SEARCH", help="list models and exit")

    sessions = parser.add_argument_group("sessions")
    sessions.add_argument("-c", "--continue", dest="continue_", action="store_true", help="continue the latest session")
    sessions.add_argument("-r", "--resume", action="store_true", help="pick a session to resume")
    sessions.add_argument("--session", help="open a session by file path or (partial) id")
    sessions.add_argument("--session-id", help="use or create the session with this id")
    sessions.add_argument("--fork", help="fork a session (path or id) into a new one")
    sessions.add_argument("--session-dir", help="where sessions are stored and looked up")
    sessions.add_argument("--no-session", action="store_true", help="keep the session in memory only")
    sessions.add_argument("-n", "--name", help="session display name")
    sessions.add_argument(
        "--export",
        metavar="SESSION.jsonl",
        help="write the session file as an HTML page and exit; the first argument after it names the page "
        "(default pi-session-<file name>.html in this folder)",
    )

    tools = parser.add_argument_group("tools")
    tools.add_argument("-t", "--tools", type=_list, help="allowlist (names, * patterns) or +name/-name changes")
    tools.add_argument("-xt", "--exclude-tools", type=_list, default=[], help="disable these tools (patterns)")
    tools.add_argument("-nbt", "--no-builtin-tools", action="store_true", help="disable the built-in default tools")
    tools.add_argument("-nt", "--no-tools", action="store_true", help="start with every tool disabled")

    resources = parser.add_argument_group("resources")
    resources.add_argument("-e", "--extension", action="append", default=[], help="load a plugin: path, module or name")
    resources.add_argument("-ne", "--no-extensions", action="store_true", help="only built-in and -e plugins")
    resources.add_argument("--skill", action="append", default=[], help="load a skill file or directory")
    resources.add_argument("-ns", "--no-skills", action="store_true", help="no discovered or configured skills")
    resources.add_argument("--prompt-template", action="append", default=[], help="load a prompt template")
    resources.add_argument("-np", "--no-prompt-templates", action="store_true", help="no discovered templates")
    resources.add_argument("-nc", "--no-context-files", action="store_true", help="no AGENTS.md / CLAUDE.md")
    resources.add_argument(
        "--theme",
        action="append",
        default=[],
        metavar="PATH",
        help="load a theme file or folder (repeatable); --use-theme or /settings picks one",
    )
    resources.add_argument(
        "--use-theme",
        metavar="NAME[/NAME]",
        help="interactive theme for this run, not saved: dark, light, system, a loaded theme's name, or light/dark",
    )
    resources.add_argument(
        "--no-themes", action="store_true", help="no discovered or configured themes (--theme paths still load)"
    )

    prompts = parser.add_argument_group("prompts and process")
    prompts.add_argument("--system-prompt", help="replace the system prompt (text or file)")
    prompts.add_argument("--append-system-prompt", action="append", default=[], help="append text or a file")
    prompts.add_argument("-a", "--approve", dest="approve", action="store_const", const=True, help="trust the project")
    prompts.add_argument(
        "-na",
        "--no-approve",
        dest="approve",
        action="store_const",
        const=False,
        help="ignore trust-gated project files",
    )
    prompts.add_argument("--offline", action="store_true", help="no automatic network activity (PI_OFFLINE=1)")
    prompts.add_argument("--verbose", action="store_true", help="show startup details and diagnostics")
    prompts.add_argument(
        "--tui-mode",
        choices=("regular", "fullscreen"),
        help="terminal UI mode (default: the tuiMode setting, else regular): fullscreen keeps the "
        "transcript on the alternate screen and scrolls it itself",
    )

    if plugin_flags:
        group = parser.add_argument_group("plugin flags")
        for reg in plugin_flags:
            flag = reg.value
            help_text = f"{flag.description} (plugin {reg.plugin})".strip()
            dest = "plugin_flag__" + flag.name.replace("-", "_")
            if flag.type == "boolean":
                group.add_argument(f"--{flag.name}", dest=dest, action="store_true", default=None, help=help_text)
            else:
                group.add_argument(f"--{flag.name}", dest=dest, default=None, help=help_text, metavar="VALUE")
    return parser


def plugin_flag_values(args: argparse.Namespace) -> dict[str, Any]:
    return {
        key.removeprefix("plugin_flag__").replace("_", "-"): value
        for key, value in vars(args).items()
        if key.startswith("plugin_flag__") and value is not None
    }
