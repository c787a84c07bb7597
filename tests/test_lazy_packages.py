"""Packages whose names are imported on first use (pi_core._lazy): each one's table, its
TYPE_CHECKING imports and its ``__all__`` agree, every name resolves, and importing one
submodule does not import its siblings."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

LAZY_PACKAGES = ["pi_core.compaction", "pi_core.resources", "pi_core.session"]


def _parts(package: str) -> tuple[dict[str, set[str]], dict[str, set[str]], list[str]]:
    """(lazy table, TYPE_CHECKING imports, __all__) read from the package's source."""
    source = Path(importlib.import_module(package).__file__ or "").read_text()
    tree = ast.parse(source)
    table: dict[str, set[str]] = {}
    typed: dict[str, set[str]] = {}
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if getattr(call.func, "id", None) == "lazy_exports":
                literal = ast.literal_eval(call.args[1])
                table = {module: set(names.split()) for module, names in literal.items()}
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__":
            exported = ast.literal_eval(node.value)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom)
                module = "." * stmt.level + (stmt.module or "")
                typed.setdefault(module, set()).update(alias.name for alias in stmt.names)
    return table, typed, exported


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_table_type_checking_imports_and_all_agree(package: str) -> None:
    table, typed, exported = _parts(package)
    assert table, f"{package} has no lazy_exports table"
    assert table == typed
    assert sorted(exported) == sorted(name for names in table.values() for name in names)
    assert len(exported) == len(set(exported))


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_resolves_to_its_modules_object(package: str) -> None:
    table, _typed, exported = _parts(package)
    module = importlib.import_module(package)
    for source, names in table.items():
        provider = importlib.import_module(source, package)
        for name in names:
            assert getattr(module, name) is getattr(provider, name)
    assert set(exported) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


def test_importing_one_submodule_leaves_its_siblings_unimported() -> None:
    code = (
        "import sys\nimport pi_core.compaction.tokens\n"
        "print(sorted(m for m in sys.modules if m.startswith('pi_core.compaction.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(ast.literal_eval(out))
    assert "pi_core.compaction.tokens" in loaded
    assert not loaded & {"pi_core.compaction.summarize", "pi_core.compaction.branch", "pi_core.compaction.cut_point"}
