"""Trust is visible: when an untrusted project's extensions, settings or mcp.json are
skipped, print mode says so in one line on stderr (with how to trust it), and
``pi mcp list`` names the project servers it ignored."""

from __future__ import annotations

import json
from pathlib import Path

from reliability_helpers import run_pi, scripted_model, steps_env

EXTENSION = """
from pathlib import Path

Path(__file__).with_name("ran").write_text("project code ran")
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".pi" / "extensions").mkdir(parents=True)
    (root / ".pi" / "extensions" / "local.py").write_text(EXTENSION)
    (root / ".pi" / "settings.json").write_text(json.dumps({"packages": ["npm:something"]}))
    (root / ".pi" / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "docs-server"}}}))
    return root


def test_print_mode_says_in_one_line_what_it_skipped(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    env = {**steps_env(), "PI_EXTENSIONS": "scripted,local"}  # no installed plugin, the project's own
    out = run_pi("-p", *scripted_model(tmp_path), "go", cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "all done\n"
    lines = [line for line in out.stderr.splitlines() if "not trusted" in line]
    assert len(lines) == 1, out.stderr
    for part in (".pi/settings.json", ".pi/mcp.json", ".pi/extensions", "--approve"):
        assert part in lines[0]
    assert not (cwd / ".pi" / "extensions" / "ran").exists()

    trusted = run_pi("-p", "--approve", *scripted_model(tmp_path), "go", cwd=cwd, env=env)
    assert "not trusted" not in trusted.stderr
    assert (cwd / ".pi" / "extensions" / "ran").exists(), trusted.stderr


def test_pi_mcp_list_names_the_project_servers_it_ignored(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    out = run_pi("mcp", "list", cwd=cwd, env={"PI_EXTENSIONS": "mcp"})
    assert "mcp.json (servers docs) is not read: the project is not trusted (start pi" in out.stdout, out
    listed = run_pi("mcp", "list", "--json", cwd=cwd, env={"PI_EXTENSIONS": "mcp"})
    notes = json.loads(listed.stdout)["notes"]
    assert any("not trusted" in note for note in notes)
