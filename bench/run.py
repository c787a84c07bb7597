"""Run every benchmark and print the numbers (ratios, never assertions).

    uv run python bench/run.py

``bench/cli.py`` runs pi 1.6.0 beside our pi: ``PI_TS`` names its wrapper, defaulting to
the output of ``../shared/tools/install-pi-ts`` when that wrapper is already installed at
its default path (this never installs it). ``PI_BENCH_RUNS`` sets its slots per case
(default 15), ``PI_BENCH_CASES`` its cases; its last table lists every budget and whether
it is met.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ai
import cli
import codemode
import dispatch
import editors  # bench/editors.py: pluggable-pi-acp's handshake and per-update cost
import fleet  # bench/fleet.py: pluggable-pi-fleet, 20 scripted tasks at --max-parallel 1 and 2
import imports  # bench/imports.py: modules and import time of pi -p
import mcp  # bench/mcp.py: measures in a subprocess (the name shadows the SDK package here)
import runtime
import sandbox  # bench/sandbox.py: pluggable-pi-sandbox's cost per bash call
import session
import tool_search

SUITES = [dispatch, ai, session, runtime, imports, cli, tool_search, codemode, mcp, sandbox, editors, fleet]


def main() -> None:
    cli.default_pi_ts()
    for suite in SUITES:
        try:
            print("\n".join(suite.report()))
        except Exception as error:  # one failing suite does not hide the others' numbers
            print(f"{suite.__name__}: failed: {type(error).__name__}: {error}")
        print(flush=True)


if __name__ == "__main__":
    main()
