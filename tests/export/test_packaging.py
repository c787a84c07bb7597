"""The export's templates ship in pluggable-pi's wheel (they are package data, not code)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "pi_core" / "export" / "templates"


def test_the_wheel_holds_the_templates(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "uv", "build", "--wheel", "-q", "--package", "pluggable-pi", "-o", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("pluggable_pi-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"pi_core/export/templates/{p.name}" for p in TEMPLATES.iterdir() if p.is_file()}
    assert len(expected) >= 4 and expected <= names
