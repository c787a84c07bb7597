"""Helpers of the plugin-author kit tests: uv, and the example policy "installed" as a
distribution on a ``PYTHONPATH`` directory (a package plus its ``.dist-info``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "examples" / "pi-policy"


def uv() -> list[str]:
    """uv from PATH, else the one installed for this Python."""
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def install_policy(site: Path) -> Path:
    """pi-policy as an installed distribution in ``site``: ``pi_policy/`` and
    ``pi_policy-0.1.0.dist-info`` with its ``pi.extensions`` entry point ``policy``."""
    shutil.copytree(POLICY / "pi_policy", site / "pi_policy", ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "pi_policy-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pi-policy\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[pi.extensions]\npolicy = pi_policy:PolicyPlugin\n")
    (info / "RECORD").write_text("")
    return site
