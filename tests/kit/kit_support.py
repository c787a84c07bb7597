"""Helpers of the plugin-author kit tests: uv, virtual environments made the README's
way, and the example policy "installed" as a distribution on a ``PYTHONPATH`` directory
(a package plus its ``.dist-info``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "examples" / "pluggable-pi-policy"


def uv() -> list[str]:
    """uv from PATH, else the one installed for this Python."""
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def readme_venv(root: Path, *, with_uv: bool = True) -> Path:
    """A virtual environment like the one ``python3 tasks.py setup`` makes (``uv sync``):
    pluggable-pi and pluggable-pi-hookspecs from this checkout, **no pip**, and (``with_uv``) the uv
    package of the development group. Built from uv's cache: about a second."""
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    made = subprocess.run(
        [*uv(), "venv", "--python", sys.executable, str(root)], capture_output=True, text=True, env=env
    )
    assert made.returncode == 0, made.stderr
    packages = ["-e", str(REPO / "hookspecs"), "-e", str(REPO), *(["uv"] if with_uv else [])]
    done = subprocess.run(
        [*uv(), "pip", "install", "--python", str(root / "bin" / "python"), *packages],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert not (root / "bin" / "pip").exists()
    return root


def without_uv_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with every PATH folder that holds a ``uv`` program left out (pyenv's
    shims too), and no ``VIRTUAL_ENV``: pi must find its installer by itself."""
    folders = [f for f in env.get("PATH", "").split(os.pathsep) if f and not (Path(f) / "uv").exists()]
    out = {**env, "PATH": os.pathsep.join(folders)}
    out.pop("VIRTUAL_ENV", None)
    return out


def install_policy(site: Path) -> Path:
    """pluggable-pi-policy as an installed distribution in ``site``: ``pi_policy/`` and
    ``pluggable_pi_policy-<version>.dist-info`` with its ``pi.extensions`` entry point
    ``policy`` and its requirement on the plugin contract (which pi checks before importing it)."""
    shutil.copytree(POLICY / "pi_policy", site / "pi_policy", ignore=shutil.ignore_patterns("__pycache__"))
    version = re.search(r'^__version__ = "([^"]+)"', (POLICY / "pi_policy" / "__init__.py").read_text(), re.M)
    assert version, "pi_policy/__init__.py has no __version__"
    info = site / f"pluggable_pi_policy-{version.group(1)}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: pluggable-pi-policy\nVersion: {version.group(1)}\n"
        "Requires-Dist: pluggable-pi-hookspecs<2,>=1.0\n"
    )
    (info / "entry_points.txt").write_text("[pi.extensions]\npolicy = pi_policy:PolicyPlugin\n")
    (info / "RECORD").write_text("")
    return site
