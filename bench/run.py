"""Run every benchmark and print the numbers (ratios, never assertions).

    uv run python bench/run.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ai
import cli
import codemode
import dispatch
import mcp  # bench/mcp.py: measures in a subprocess (the name shadows the SDK package here)
import runtime
import session
import tool_search

SUITES = [dispatch, ai, session, runtime, cli, tool_search, codemode, mcp]


def main() -> None:
    for suite in SUITES:
        print("\n".join(suite.report()))
        print()


if __name__ == "__main__":
    main()
