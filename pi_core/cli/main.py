"""``pi [options] [messages...]``: pick the mode, open the runtime, run it."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from pi_hookspecs import FlagDefinition

from ..extensions import LoadOptions, PluginHost, Registered
from .options import build_parser
from .process import STOP_SIGNALS, allow_fast_exit, install_stop_signals, run_main, signal_status


def _wants_plugin_flags(argv: list[str], known: argparse.ArgumentParser) -> bool:
    if any(a in ("-h", "--help") for a in argv):
        return True
    _, rest = known.parse_known_args(argv)
    return any(a.startswith("--") and a != "--" for a in rest)


def plugin_flag_definitions(
    pre: argparse.Namespace, cli_commands: dict[str, str] | None = None
) -> list[Registered[FlagDefinition]]:
    """The flags plugins register (``register_flags``): loads the plugins that are not
    the project's own, without starting a session. Given ``cli_commands`` (``pi
    --help``), the same load fills it with their subcommands (name: first line of help)."""
    host = PluginHost(LoadOptions(cwd=os.getcwd(), cli_extensions=list(pre.extension), no_extensions=pre.no_extensions))
    host.load_phase_one()
    hooks = ("register_flags",) if cli_commands is None else ("register_flags", "register_cli_commands")
    for hook in hooks:
        for diagnostic in asyncio.run(host.run_registration(hook)):
            if diagnostic.level == "error":
                print(f"pi: {diagnostic.format()}", file=sys.stderr)
    if cli_commands is not None:
        from .plugin_commands import command_help

        cli_commands.update(command_help({name: reg.value for name, reg in host.registry.cli_commands.items()}))
    return list(host.registry.flags.values())


def parse_args(argv: list[str]) -> argparse.Namespace:
    base = build_parser()
    flags: list[Registered[FlagDefinition]] = []
    commands: dict[str, str] | None = None
    if _wants_plugin_flags(argv, base):
        pre, _ = base.parse_known_args([a for a in argv if a not in ("-h", "--help")])
        commands = {} if any(a in ("-h", "--help") for a in argv) else None  # listed by --help
        flags = plugin_flag_definitions(pre, commands)
    # without plugin flags or subcommands to add, the parser built above is the one
    parser = build_parser(flags, commands) if flags or commands is not None else base
    return parser.parse_intermixed_args(argv)


def run(argv: list[str]) -> int:
    args = parse_args(argv)
    # Each mode imports its own stack when chosen: ``pi --help`` parses the options
    # without the runtime, and only the interactive mode loads prompt_toolkit and rich.
    if args.list_models is not None:
        from .listing import print_models

        return print_models(args.list_models, extensions=list(args.extension), no_extensions=args.no_extensions)
    if args.export is not None:
        return _export(args.export, args.messages, args)
    mode = args.mode
    interactive = mode == "text" and not args.print and sys.stdin.isatty() and sys.stdout.isatty()
    if interactive:
        from .interactive import run_interactive

        return run_interactive(args)
    if mode == "rpc":
        if any(m.startswith("@") for m in args.messages):
            print("pi: RPC mode takes prompts through the prompt command, not @file arguments", file=sys.stderr)
            return 1
        from .rpc import run_rpc

        return run_rpc(args)
    if args.resume:
        print(
            "pi: --resume needs an interactive terminal; open a session with --session PATH|ID or -c", file=sys.stderr
        )
        return 1
    stdin_text = None
    if not sys.stdin.isatty():
        stdin_text = sys.stdin.read() or None
    if mode == "json":
        from .print_mode import protocol_stdout

        # stdout carries the event stream alone: plugins' prints, writes to descriptor 1
        # and child processes' output go to stderr, as in rpc mode
        with protocol_stdout() as stdio, stdio.text_out() as out:
            return run_main(_run_print(args, stdin_text, json_mode=True, out=out))
    return run_main(_run_print(args, stdin_text, json_mode=False))


def _export(session_file: str, rest: list[str], args: argparse.Namespace) -> int:
    """``pi --export SESSION.jsonl|ID [OUT.html]``: write the page, print where, exit."""
    from ..export.html import ExportError, export_session_html

    if len(rest) > 1:
        print(f"pi: --export takes one output path after the session file, not {len(rest)}", file=sys.stderr)
        return 1
    from ..session import AmbiguousSessionError

    source = Path(session_file)
    try:
        if not source.expanduser().exists():
            source = _session_of_id(session_file, args) or source
    except AmbiguousSessionError as exc:
        print(f"pi: {exc}", file=sys.stderr)
        return 1
    try:
        written = export_session_html(source, Path(rest[0]) if rest else None)
    except ExportError as exc:
        print(f"pi: {exc}", file=sys.stderr)
        return 1
    print(f"Exported to: {written}")
    return 0


def _session_of_id(arg: str, args: argparse.Namespace) -> Path | None:
    """The session file of a session id or unique id prefix (as ``pi sessions`` prints
    it and ``--session`` takes it), or ``None``: ``--export`` takes ids too (pi 1.6.0
    takes only paths; what is not found stays "File not found")."""
    from ..session import SessionNotFoundError
    from ..session.listing import find_session, looks_like_path
    from .bootstrap import resolved_session_dir

    if looks_like_path(arg):
        return None
    cwd = os.getcwd()
    try:
        return Path(find_session(arg, cwd=cwd, session_dir=resolved_session_dir(args, cwd)))
    except SessionNotFoundError:
        return None


async def _run_print(
    args: argparse.Namespace, stdin_text: str | None, *, json_mode: bool, out: TextIO | None = None
) -> int:
    """Print or json mode. SIGINT, SIGTERM and SIGHUP stop it in an orderly way (see
    :mod:`.process`): during start-up the start is cancelled; during a run the run is
    aborted (bash commands stopped) and no further prompt starts; then the runtime is
    disposed of and the status is ``128 + signal number``."""
    # the runtime, here rather than at the top: ``pi --help`` does not need it (see ``run``)
    from ..runtime import NoModelError, SessionBusyError, no_model_message
    from .bootstrap import CliError, diagnostics_of, initial_input, open_runtime
    from .print_mode import run_print

    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    stop: dict[str, Any] = {"signum": None, "runtime": None}

    def on_signal(signum: int) -> None:
        stop["signum"] = signum
        if stop["runtime"] is not None:
            stop["runtime"].session.abort()
        elif main_task is not None:
            main_task.cancel()

    remove_signals = install_stop_signals(loop, on_signal, (signal.SIGINT, *STOP_SIGNALS))
    try:
        try:
            initial = initial_input(args.messages, stdin_text=stdin_text, cwd=os.getcwd())
            runtime = await open_runtime(args, mode="json" if json_mode else "print", start=False)
        except CliError as exc:
            print(f"pi: {exc}", file=sys.stderr)
            return 1
        except asyncio.CancelledError:
            if stop["signum"] is None:
                raise
            return signal_status(stop["signum"], 1)
        for line in diagnostics_of(runtime):
            print(f"pi: {line}", file=sys.stderr)
        if runtime.session.model is None:
            # Nothing to run the prompts with (the offline demo answers only when named):
            # one line naming the ways to configure a model, before session_start, any
            # tool or request, and nothing on stdout (json mode: no header either).
            print(f"pi: {no_model_message(runtime.session.models.models_path)}", file=sys.stderr)
            runtime.session.dispose("pi has no model")
            return 1
        stop["runtime"] = runtime
        try:
            status = await run_print(
                runtime, initial, args, json_mode=json_mode, stopped=lambda: stop["signum"] is not None, out=out
            )
        except (NoModelError, SessionBusyError, CliError) as exc:
            print(f"pi: {exc}", file=sys.stderr)
            status = 1
        finally:
            await runtime.dispose("quit")
            if stop["signum"] is not None:
                from ..tools.shell import kill_all_groups

                kill_all_groups()  # anything the abort did not reach
    finally:
        remove_signals()
    if runtime.session.sm.write_failure is not None:
        status = 1  # the session file could not be written (reported), also when it was closed
    # session_shutdown ran, child processes are stopped, the session file is fsynced and
    # closed: the process may end without interpreter teardown (see .process).
    allow_fast_exit()
    return signal_status(stop["signum"], status)
