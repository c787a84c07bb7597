"""``pi fleet run TASKS.jsonl --out DIR``: every task a headless pi session on Ray.

Parsing the command line imports nothing heavy; Ray, the runtime and rich are imported
once a run starts (``pi -p`` never imports this module's dependencies).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HELP = "Run one prompt across many repositories: headless pi sessions on Ray (pluggable-pi-fleet)"

INSTALL_HINT = (
    "pi fleet: Ray is not installed in this environment: install pluggable-pi-fleet with its dependencies "
    "(pip install pluggable-pi-fleet)"
)


@dataclass
class Options:
    tasks: Path
    out: Path
    model: str | None = None
    max_parallel: int | None = None
    address: str | None = None
    retries: int = 2
    rerun: bool = False
    num_cpus: int | None = None
    extensions: list[str] = field(default_factory=list)
    approve: bool | None = None
    env: list[str] = field(default_factory=list)


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argument type: a whole number of ``minimum`` or more."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {minimum} or more, got {value}")
        return value

    return parse


_positive = _at_least(1)
_count = _at_least(0)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="pi fleet", description=HELP)
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run every task of a task file (one JSON object per line)",
        description='Run every task of TASKS (lines of {"id", "repo", "prompt"} with optional "model", '
        '"settings", "ref") in its own working copy under DIR; results in DIR/results.jsonl, DIR/report.html.',
    )
    run.add_argument("tasks", type=Path, metavar="TASKS.jsonl", help="the task file")
    run.add_argument("--out", type=Path, required=True, metavar="DIR", help="the output directory (made if missing)")
    run.add_argument("--model", help='the model of tasks that name none ("provider/id" or "provider/id:thinking")')
    run.add_argument(
        "--max-parallel", type=_positive, metavar="N", help="at most N tasks at once (default: Ray's CPUs)"
    )
    run.add_argument(
        "--address",
        default=None,
        help="the Ray cluster to use (default: $RAY_ADDRESS, else a local Ray started for this run)",
    )
    run.add_argument(
        "--retries", type=_count, default=2, metavar="N", help="attempts after a worker died mid-task (default 2)"
    )
    run.add_argument("--rerun", action="store_true", help="run every task again, also those whose result is ok")
    run.add_argument("--num-cpus", type=_positive, metavar="N", help="the CPUs of the local Ray (default: all)")
    run.add_argument("-e", "--extension", action="append", default=[], metavar="PATH|MODULE", help="load a plugin")
    trust = run.add_mutually_exclusive_group()
    trust.add_argument("--approve", dest="approve", action="store_true", default=None, help="trust every working copy")
    trust.add_argument("--no-approve", dest="approve", action="store_false", help="trust no working copy")
    run.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="also send this environment variable to the workers (PI_* and *_API_KEY are always sent)",
    )
    return top


def parse(args: list[str]) -> Options | None:
    ns = parser().parse_args(args)
    if ns.command is None:
        parser().print_help()
        return None
    return Options(
        tasks=ns.tasks,
        out=ns.out,
        model=ns.model,
        max_parallel=ns.max_parallel,
        address=ns.address or os.environ.get("RAY_ADDRESS") or None,
        retries=ns.retries,
        rerun=ns.rerun,
        num_cpus=ns.num_cpus,
        # a path is taken from here, not from each working copy (pi -e reads it from the cwd too)
        extensions=[str(Path(e).resolve()) if Path(e).exists() else e for e in ns.extension],
        approve=ns.approve,
        env=list(ns.env),
    )


def main(args: list[str]) -> int:
    """``pi fleet`` (registered through ``register_cli_commands`` and declared in the
    ``pi.cli_commands`` entry-point group)."""
    try:
        options = parse(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    if options is None:
        return 0
    try:
        import ray  # noqa: F401
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 1
    from .driver import run

    return run(options)
