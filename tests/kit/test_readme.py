"""The README: its pieces table names every workspace member (folder and distribution),
and its commands are the ones tasks.py and pi accept."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from kit_support import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def workspace_members() -> dict[str, str]:
    """Folder (relative, as the README writes it) -> distribution name, for every member
    of the uv workspace, pluggable-pi included."""
    root = tomllib.loads((REPO / "pyproject.toml").read_text())
    out = {"pi_core/": root["project"]["name"]}
    for pattern in root["tool"]["uv"]["workspace"]["members"]:
        for folder in sorted(REPO.glob(pattern)):
            if (folder / "pyproject.toml").is_file():
                name = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"]
                out[folder.relative_to(REPO).as_posix()] = name
    return out


def test_the_pieces_table_names_every_workspace_member() -> None:
    table = README.split("## The pieces", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    missing = []
    for folder, dist in workspace_members().items():
        row = next((r for r in rows if re.search(rf"`{re.escape(folder.rstrip('/'))}/?`", r)), None)
        if row is None or f"`{dist}`" not in row:
            missing.append(f"{folder} ({dist})")
    assert not missing, f"README.md's pieces table does not name: {', '.join(missing)}"


def test_tasks_py_takes_pytest_arguments_and_refuses_others() -> None:
    assert "python3 tasks.py test -k " in README
    usage = subprocess.run(
        [sys.executable, str(REPO / "tasks.py"), "demo", "-k", "x"], capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 1 and "python3 tasks.py test [PYTEST ARGS...]" in usage.stderr
    helped = subprocess.run(
        [sys.executable, str(REPO / "tasks.py"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and "test -k EXPR" in helped.stdout
