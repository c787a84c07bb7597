"""docs/context.md is generated from the context protocols (pi_hookspecs/context.py) and
every member they declare has a docstring: a property, method or attribute added
without one fails here, and so does a page not regenerated after a change."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import pi_hookspecs.context as contract

REPO = Path(__file__).resolve().parents[1]


def _load(name: str) -> typing.Any:
    spec = importlib.util.spec_from_file_location(name, REPO / "docs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


contextdocs = _load("_contextdocs")
MEMBERS = contextdocs.members()


def declared(name: str) -> set[str]:
    """What the protocol class itself declares, found by Python, not by the generator."""
    cls = getattr(contract, name)
    own = {n for n in vars(cls) if not n.startswith("_")}
    return own | {n for n in vars(cls).get("__annotations__", {}) if not n.startswith("_")}


def test_the_generator_sees_every_member_of_every_protocol() -> None:
    for name in contextdocs.CLASSES:
        assert {m.name for m in MEMBERS if m.cls == name} == declared(name), name
    assert set(contextdocs.CLASSES) == {
        n
        for n, v in vars(contract).items()
        if isinstance(v, type) and getattr(v, "_is_protocol", False) and v.__module__ == contract.__name__
    }


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: f"{m.cls}.{m.name}")
def test_every_member_has_a_docstring(member: typing.Any) -> None:
    assert len(member.doc) >= 15, f"{member.cls}.{member.name} needs a docstring (docs/context.md shows it)"


def test_a_member_without_a_docstring_is_found() -> None:
    source = '''
from typing import Protocol
class UIContext(Protocol):
    """Dialogs."""
    def notify(self, message: str) -> None:
        """Show it."""
        ...
    def beep(self) -> None: ...
    volume: int
'''
    found = {m.name: m.doc for m in contextdocs.members(source)}
    assert found == {"notify": "Show it.", "beep": "", "volume": ""}


def test_docs_context_md_matches_the_docstrings() -> None:
    current = (REPO / "docs" / "context.md").read_text()
    assert current == contextdocs.render(), "docs/context.md is stale: run `python docs/_hookdocs.py`"


def test_the_generator_s_help_and_check_write_nothing(tmp_path: Path) -> None:
    pages = [REPO / "docs" / "hooks.md", REPO / "docs" / "context.md"]
    before = [(p.stat().st_mtime_ns, p.read_text()) for p in pages]
    for args in (["--help"], ["-h"], ["--check"]):
        run = subprocess.run(
            [sys.executable, str(REPO / "docs" / "_hookdocs.py"), *args], capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stdout + run.stderr
    assert (
        "usage: docs/_hookdocs.py"
        in subprocess.run(
            [sys.executable, str(REPO / "docs" / "_hookdocs.py"), "--help"], capture_output=True, text=True
        ).stdout
    )
    assert [(p.stat().st_mtime_ns, p.read_text()) for p in pages] == before
    wrong = subprocess.run(
        [sys.executable, str(REPO / "docs" / "_hookdocs.py"), "--frobnicate"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 2 and "unrecognized arguments: --frobnicate" in wrong.stderr
    assert [(p.stat().st_mtime_ns, p.read_text()) for p in pages] == before
