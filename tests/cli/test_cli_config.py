"""``pi config``: the resources pi finds and switching them off and on in a scope's
settings (a real subprocess; the terminal UI in a pseudo-terminal)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_helpers import run_pi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interactive_pty import PI, TIMEOUT, clean_env, loose, pty_or_skip, wait_for_raw_mode


def make_resources(agent_dir: Path) -> tuple[Path, Path]:
    skill = agent_dir / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Deploy the app\n---\nSteps.\n")
    prompt = agent_dir / "prompts" / "review.md"
    prompt.parent.mkdir(parents=True)
    prompt.write_text("---\ndescription: Review\n---\nReview this.\n")
    plugin = agent_dir / "extensions" / "acme.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("")
    return skill, prompt


def test_config_lists_resources_without_a_terminal(agent_dir: Path, project: Path) -> None:
    skill, _prompt = make_resources(agent_dir)
    (agent_dir / "settings.json").write_text(json.dumps({"disabledExtensions": ["acme"], "skills": [f"-{skill}"]}))
    result = run_pi("config", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Settings: {agent_dir / 'settings.json'} (user)"
    assert any(line.startswith("  [ ] acme") for line in lines)
    assert any(line.startswith("  [x] tools") and "built-in" in line for line in lines)
    assert any(line.startswith("  [ ] deploy") and str(skill) in line for line in lines)
    assert any(line.startswith("  [x] review") for line in lines)


def test_config_local_needs_a_trusted_project(agent_dir: Path, project: Path) -> None:
    result = run_pi("config", "--local", cwd=project)
    assert result.returncode == 1 and "--approve" in result.stderr
    assert not (project / ".pi").exists()
    approved = run_pi("config", "-l", "--approve", cwd=project)
    assert approved.returncode == 0 and f"{project / '.pi' / 'settings.json'} (project)" in approved.stdout


def test_config_toggles_in_the_terminal(agent_dir: Path, project: Path) -> None:
    skill, _ = make_resources(agent_dir)
    pexpect = pty_or_skip()
    child = pexpect.spawn(
        PI[0],
        [*PI[1:], "config"],
        cwd=str(project),
        env=clean_env(PI_EXTENSIONS=""),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(60, 200),
    )
    child.expect(loose("Space toggle"))
    names = [line.split("]")[1].split()[0] for line in run_pi("config", cwd=project).stdout.splitlines() if "[" in line]
    # keys are handled in order: "tools" (the first row) off and on again, down to the skill, off, close
    keys = "  " + "\x1b[B" * names.index("deploy") + " " + "\r"
    wait_for_raw_mode(child)
    child.send(keys)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    data = json.loads((agent_dir / "settings.json").read_text())
    assert data == {"skills": [f"-{skill}"]}
    listed = run_pi("config", cwd=project).stdout
    assert "[ ] deploy" in listed and "[x] tools" in listed
