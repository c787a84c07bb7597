"""Command-line conformance, round 3 (issue 32): the options and commands a pi 1.6.0 user
types — ``--theme``, ``--use-theme``, ``--no-themes``, ``--tui-mode``, ``pi update``'s
targets and options, ``pi config``'s — run by this pi and, when ``PI_TS`` names an
installed pi 1.6.0, by pi 1.6.0 in the same test.

Each case reduces a run to what must agree: whether it succeeds, which options the help
names, that an error names the valid values. Wording is each pi's own, and so is the
status of a usage error (argparse and typer exit with 2, pi 1.6.0 with 1): a failure is
compared as a failure. Golden files (``golden/cli_<case>.json``) hold this pi's shape for
runs without ``PI_TS``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import PI, PI_TS, SKIP_REASON, check_golden, environment, first_difference, fresh_dir, have_pi_ts

Shape = Callable[[subprocess.CompletedProcess[str]], dict[str, Any]]


def _mentions(text: str, words: tuple[str, ...]) -> dict[str, bool]:
    return {word: word in text for word in words}


def succeeds_naming(*words: str) -> Shape:
    """Exit status 0, and which of ``words`` stdout names."""
    return lambda run: {"ok": run.returncode == 0, "names": _mentions(run.stdout, words)}


def fails_naming(*words: str) -> Shape:
    """A failure (any non-zero status), nothing on stdout, and which of ``words`` stderr names."""
    return lambda run: {
        "fails": run.returncode != 0,
        "stdout": run.stdout.strip(),
        "names": _mentions(run.stderr, words),
    }


def succeeds_in_lines(count: int) -> Shape:
    return lambda run: {"ok": run.returncode == 0, f"{count} line(s)": len(run.stdout.strip().splitlines()) == count}


def succeeds() -> Shape:
    return lambda run: {"ok": run.returncode == 0}


@dataclass
class Case:
    name: str
    args: list[str]
    shape: Shape


CASES = [
    Case(
        "help_lists_the_theme_and_tui_options",
        ["--help"],
        succeeds_naming("--theme", "--use-theme", "--no-themes", "--tui-mode", "fullscreen", "regular"),
    ),
    Case("tui_mode_bogus", ["--tui-mode", "bogus", "-p", "hi"], fails_naming("bogus", "regular", "fullscreen")),
    Case("tui_mode_without_a_value", ["--tui-mode"], fails_naming("--tui-mode")),
    Case("use_theme_without_a_name", ["--use-theme"], fails_naming("--use-theme")),
    Case(
        "update_help",
        ["update", "--help"],
        succeeds_naming("--self", "--extensions", "--models", "--all", "--extension", "--force", "self", "pi"),
    ),
    Case("update_models", ["update", "--models"], succeeds_in_lines(1)),
    Case("update_extensions_nothing_recorded", ["update", "--extensions"], succeeds()),
    Case("update_an_unrecorded_package", ["update", "--extension", "pi-nothing-here"], fails_naming("pi-nothing-here")),
    Case("update_unknown_option", ["update", "--bogus"], fails_naming("--bogus")),
    Case("config_help", ["config", "--help"], succeeds_naming("-l", "--local", "--approve", "--no-approve")),
]


def run_case(which: str, case: Case, root: Path) -> dict[str, Any]:
    cwd = fresh_dir(root / "project")
    agent = fresh_dir(root / f"agent-{which}")
    command = [*PI] if which == "py" else [PI_TS]
    done = subprocess.run(
        [*command, *case.args],
        cwd=cwd,
        env=environment(agent),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return case.shape(done)


_OURS: dict[str, dict[str, Any]] = {}


def ours_outcome(case: Case, root: Path) -> dict[str, Any]:
    if case.name not in _OURS:
        _OURS[case.name] = run_case("py", case, root)
    return _OURS[case.name]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cli_matches_the_golden_file(case: Case, tmp_path: Path) -> None:
    check_golden(f"cli_{case.name}", ours_outcome(case, tmp_path))


@pytest.mark.skipif(not have_pi_ts(), reason=SKIP_REASON)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cli_matches_pi_1_6_0(case: Case, tmp_path: Path) -> None:
    ours = ours_outcome(case, tmp_path)
    theirs = run_case("ts", case, tmp_path)
    difference = first_difference(ours, theirs)
    assert difference is None, f"differs from pi 1.6.0 at {difference}: ours {ours}, theirs {theirs}"
