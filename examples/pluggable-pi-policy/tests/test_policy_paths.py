"""write.allow: where write and edit may write (globs relative to the project)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pi_core.testing import ECHO, PiHarness, call

from pi_policy.paths import glob_regex, project_relative

from .support import audit, with_rules

RULES = """
write:
  allow: ["src/**", "*.md"]
"""


def test_writing_inside_the_allowlist_is_allowed(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.script(call("write", path="src/pkg/mod.py", content="x = 1\n"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    assert not result.is_error
    assert (pi.project / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"


def test_writing_elsewhere_in_the_project_is_blocked(pi: PiHarness) -> None:
    rules = with_rules(pi, RULES)
    pi.script(call("write", path="setup.cfg", content="[x]\n"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    assert result.is_error
    assert result.text == f"policy: setup.cfg is not in the write allowlist (write.allow of {rules})"
    assert not (pi.project / "setup.cfg").exists()
    assert audit(pi)[0]["rule"] == "write.allow"


@pytest.mark.parametrize("path", ["../outside.md", "/tmp/pi-policy-test/outside.md", "~/outside.md", "@../x.md"])
def test_writing_outside_the_project_is_blocked(pi: PiHarness, path: str) -> None:
    with_rules(pi, RULES)
    pi.script(call("write", path=path, content="x"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    assert result.is_error and f"policy: {path} is outside the project" in result.text


def test_a_symbolic_link_out_of_the_project_is_followed_and_blocked(pi: PiHarness, tmp_path: Path) -> None:
    with_rules(pi, RULES)
    outside = tmp_path / "outside"
    outside.mkdir()
    (pi.project / "src").mkdir()
    (pi.project / "src" / "link").symlink_to(outside)
    pi.script(call("write", path="src/link/evil.md", content="x"), ECHO)
    result = pi.prompt("write it").tool_results[0]
    assert result.is_error and "is outside the project" in result.text
    assert not (outside / "evil.md").exists()


def test_edit_is_checked_too(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.write("config.toml", "a = 1\n")
    pi.script(call("edit", path="config.toml", edits=[{"oldText": "a = 1", "newText": "a = 2"}]), ECHO)
    result = pi.prompt("edit it").tool_results[0]
    assert result.is_error and "config.toml is not in the write allowlist" in result.text
    assert (pi.project / "config.toml").read_text() == "a = 1\n"


def test_without_an_allowlist_paths_are_not_restricted(pi: PiHarness) -> None:
    with_rules(pi, "bash:\n  deny: []\n")
    pi.script(call("write", path="anywhere.cfg", content="x"), ECHO)
    assert not pi.prompt("write it").tool_results[0].is_error


def test_the_tools_the_allowlist_applies_to_are_configurable(pi: PiHarness) -> None:
    with_rules(pi, "write:\n  allow: []\n  tools: [edit]\n")
    pi.script(call("write", path="free.txt", content="x"), ECHO)
    assert not pi.prompt("write it").tool_results[0].is_error


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("src/**", "src/a/b.py", True),
        ("src/**", "srcx/a.py", False),
        ("**/*.md", "README.md", True),
        ("**/*.md", "docs/a/b.md", True),
        ("*.md", "docs/b.md", False),
        ("docs/?.txt", "docs/a.txt", True),
        ("docs/?.txt", "docs/ab.txt", False),
        ("[!_]*.py", "_private.py", False),
        ("[!_]*.py", "public.py", True),
        ("./notes/*", "notes/x", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_globs(glob: str, path: str, expected: bool) -> None:
    assert bool(glob_regex(glob).fullmatch(path)) is expected


def test_project_relative_paths(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "a").mkdir(parents=True)
    assert project_relative("a/../b.txt", str(project)) == "b.txt"
    assert project_relative(str(project / "a" / "c.txt"), str(project)) == "a/c.txt"
    assert project_relative("\u00a0x.txt".replace("\u00a0", "\u2009"), str(project)) == " x.txt"
    assert project_relative("../p2/x", str(project)) is None
    assert project_relative(os.sep, str(project)) is None
