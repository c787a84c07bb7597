"""No class of the workspace grows past 700 lines: a class that large holds several
subjects, and the next change to one of them has to be read against all the others.
Split it along its seams (see docs/architecture.md for how the runtime's parts are cut)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 700
SOURCES = ("pi_core", "hookspecs/pi_hookspecs", "plugins", "examples")


def _classes() -> list[tuple[int, str]]:
    found = []
    for top in SOURCES:
        for path in (ROOT / top).rglob("*.py"):
            if "tests" in path.relative_to(ROOT).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    assert node.end_lineno is not None
                    lines = node.end_lineno - node.lineno + 1
                    found.append((lines, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"))
    return found


def test_no_class_is_over_700_lines() -> None:
    classes = _classes()
    assert len(classes) > 100, "the scan found the workspace's classes"
    too_big = sorted((f"{name} ({lines} lines)" for lines, name in classes if lines > LIMIT), reverse=True)
    assert too_big == []
