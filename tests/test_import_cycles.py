"""Neither ``pi_core`` nor the contract ``pi_hookspecs`` has import circles: no module
imports, directly or through others, a module that imports it back — counting imports inside functions and
under ``TYPE_CHECKING`` too (a circle dodged that way is still a circle to a reader)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import pytest

import pi_core
import pi_hookspecs


def _modules(top: ModuleType) -> dict[str, tuple[Path, bool]]:
    root = Path(str(top.__file__)).parent
    modules: dict[str, tuple[Path, bool]] = {}
    for path in root.rglob("*.py"):
        parts = [top.__name__, *path.relative_to(root).with_suffix("").parts]
        package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if package else parts)] = (path, package)
    return modules


def _imports(name: str, path: Path, package: bool, modules: dict[str, tuple[Path, bool]]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # a module inside a package may import that package's __init__: not a circle
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


@pytest.mark.parametrize("package", [pi_core, pi_hookspecs], ids=lambda package: package.__name__)
def test_no_import_circles(package: ModuleType) -> None:
    modules = _modules(package)
    graph = {name: _imports(name, path, package, modules) for name, (path, package) in modules.items()}
    assert _circles(graph) == []


def test_the_check_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
