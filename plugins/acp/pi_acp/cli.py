"""``pi acp [options]``: serve the Agent Client Protocol on stdin/stdout.

    pi acp                      # what an editor runs: {"command": "pi", "args": ["acp"]}
    pi acp --model anthropic/claude-sonnet-4-5:high -e ./my_plugin.py --approve

The editor's ``initialize`` is answered first (:mod:`pi_acp.handshake`), with nothing
heavy imported; then the server (:mod:`pi_acp.server`) is loaded and takes over the
connection. stdout carries protocol messages only: file descriptor 1 is pointed at
stderr (and 0 at ``/dev/null``) for everything else in the process, as ``pi --mode rpc``
does.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

HELP = "Serve the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Emacs, Neovim...)"


@dataclass
class Options:
    model: str | None = None
    thinking: str | None = None
    extensions: list[str] = field(default_factory=list)
    no_extensions: bool = False
    approve: bool | None = None
    tools: list[str] | None = None
    no_session: bool = False


def parse(args: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="pi acp", description=HELP)
    parser.add_argument("--model", help='the model of new sessions ("provider/id" or "provider/id:thinking")')
    parser.add_argument(
        "--thinking", help="the thinking level of new sessions (off, minimal, low, medium, high, xhigh, max)"
    )
    parser.add_argument("-e", "--extension", action="append", default=[], metavar="PATH|MODULE", help="load a plugin")
    parser.add_argument("--no-extensions", action="store_true", help="load no installed or discovered plugin")
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument("--approve", dest="approve", action="store_true", default=None, help="trust the project")
    trust.add_argument("--no-approve", dest="approve", action="store_false", help="do not trust the project")
    parser.add_argument("--tools", help="comma-separated tool names (as pi --tools)")
    parser.add_argument("--no-session", action="store_true", help="keep sessions in memory (no session files)")
    ns = parser.parse_args(args)
    return Options(
        model=ns.model,
        thinking=ns.thinking,
        extensions=list(ns.extension),
        no_extensions=ns.no_extensions,
        approve=ns.approve,
        tools=[t.strip() for t in ns.tools.split(",") if t.strip()] if ns.tools else None,
        no_session=ns.no_session,
    )


def main(args: list[str]) -> int:
    """``pi acp`` (registered through ``register_cli_commands`` and declared in the
    ``pi.cli_commands`` entry-point group)."""
    try:
        options = parse(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    sys.stdout.flush()
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # children and stray reads never consume protocol input
    os.close(devnull)
    try:
        os.dup2(2, 1)  # stray prints (plugins, libraries) go to stderr, not into the protocol
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    from . import __version__
    from .handshake import answer_initialize

    try:
        initialized, pending = answer_initialize(in_fd, out_fd, __version__)
    except OSError as exc:
        print(f"pi acp: {exc}", file=sys.stderr)
        return 1
    import asyncio

    from .server import serve

    try:
        return asyncio.run(serve(options, in_fd=in_fd, out_fd=out_fd, initialized=initialized, pending=pending))
    except KeyboardInterrupt:
        return 130
