"""load_resources: the whole snapshot, trusted and untrusted."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pi_core.resources import ResourceOptions, build_system_prompt_sections, load_resources, resolve_default_tools


def write(path: Path, text: str) -> Path:
    """Create ``path`` (and its parents) with ``text``, dedented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def skill(directory: Path, name: str) -> None:
    write(directory / name / "SKILL.md", f"---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n")


@pytest.fixture
def rich_project(project: Path, agent_dir: Path) -> Path:
    write(project / "AGENTS.md", "Project rules.")
    write(project / ".pi" / "settings.json", json.dumps({"defaultModel": "project-model", "defaultTools": ["+grep"]}))
    write(project / ".pi" / "SYSTEM.md", "Project system prompt.")
    write(project / ".pi" / "APPEND_SYSTEM.md", "Project addendum.")
    write(project / ".pi" / "prompts" / "ship.md", "Ship it.")
    skill(project / ".pi" / "skills", "project-skill")
    skill(project / ".agents" / "skills", "agents-skill")
    write(agent_dir / "AGENTS.md", "User rules.")
    write(agent_dir / "settings.json", json.dumps({"defaultModel": "user-model"}))
    write(agent_dir / "prompts" / "fix.md", "Fix it.")
    skill(agent_dir / "skills", "user-skill")
    return project


def test_untrusted_project_loads_context_files_only(rich_project: Path, agent_dir: Path, home: Path) -> None:
    res = load_resources(rich_project, project_trusted=False, agent_dir=agent_dir, home=home)
    assert [f.content for f in res.context_files] == ["User rules.", "Project rules."]
    assert res.settings.default_model == "user-model"
    assert resolve_default_tools(res.settings) == ["read", "bash", "edit", "write"]
    assert [s.name for s in res.skills] == ["user-skill"]
    assert [t.name for t in res.prompt_templates] == ["fix"]
    assert res.system_files.custom_prompt is None and res.system_files.append == []
    assert res.diagnostics == []


def test_trusted_project_loads_everything(rich_project: Path, agent_dir: Path, home: Path) -> None:
    res = load_resources(rich_project, project_trusted=True, agent_dir=agent_dir, home=home)
    assert res.project_trusted and res.settings.default_model == "project-model"
    assert resolve_default_tools(res.settings) == ["read", "bash", "edit", "write", "grep"]
    assert [s.name for s in res.skills] == ["project-skill", "agents-skill", "user-skill"]
    assert [t.name for t in res.prompt_templates] == ["ship", "fix"]
    assert res.system_files.custom_prompt == "Project system prompt."
    assert res.system_files.append == ["Project addendum."]
    opts = res.system_prompt_options(selected_tools=["read", "bash"], tool_snippets={"read": "Read files"})
    sections = build_system_prompt_sections(opts, docs_dir=Path("/docs"))
    assert list(sections) == ["preamble", "addendum", "project_context", "skills", "cwd"]
    assert sections["preamble"] == "Project system prompt."
    assert "Project rules." in sections["project_context"] and "project-skill" in sections["skills"]


def test_flags_turn_discovery_off(rich_project: Path, agent_dir: Path, home: Path, tmp_path: Path) -> None:
    skill(tmp_path / "cli-skills", "cli-skill")
    write(tmp_path / "cli.md", "From the command line.")
    opts = ResourceOptions(
        no_skills=True,
        no_prompt_templates=True,
        no_context_files=True,
        skill_paths=[str(tmp_path / "cli-skills")],
        prompt_template_paths=[str(tmp_path / "cli.md")],
        system_prompt="CLI prompt",
        append_system_prompt=["CLI addendum"],
    )
    res = load_resources(rich_project, project_trusted=True, agent_dir=agent_dir, options=opts, home=home)
    assert res.context_files == []
    assert [s.name for s in res.skills] == ["cli-skill"] and [t.name for t in res.prompt_templates] == ["cli"]
    assert (res.system_files.custom_prompt, res.system_files.append) == ("CLI prompt", ["CLI addendum"])


def test_extend_adds_hook_paths_last(rich_project: Path, agent_dir: Path, home: Path, tmp_path: Path) -> None:
    res = load_resources(rich_project, project_trusted=True, agent_dir=agent_dir, home=home)
    skill(tmp_path / "ext", "ext-skill")
    skill(tmp_path / "ext", "user-skill")  # loses: the user's own comes first
    write(tmp_path / "ext-prompts" / "ext.md", "From a plugin.")
    new = res.extend(skill_paths=[str(tmp_path / "ext")], prompt_paths=[str(tmp_path / "ext-prompts")])
    assert [s.name for s in res.skills][-1] == "ext-skill" and res.skills[-1].source == "extension"
    assert [t.name for t in res.prompt_templates][-1] == "ext"
    assert [d.kind for d in new] == ["collision"] and new[0].path == str(tmp_path / "ext" / "user-skill" / "SKILL.md")
    assert res.extend(skill_paths=[str(tmp_path / "ext")]) == []  # nothing new to report


def test_settings_problems_become_diagnostics(project: Path, agent_dir: Path, home: Path) -> None:
    write(agent_dir / "settings.json", json.dumps({"retry": {"maxRetries": -1}}))
    write(project / ".pi" / "settings.json", '{"defaultModel": ')
    res = load_resources(project, project_trusted=True, agent_dir=agent_dir, home=home)
    mistyped, broken = (str(d) for d in res.diagnostics)  # in the order the files are read: user first
    assert broken.startswith(f"{project / '.pi' / 'settings.json'}:1:") and "invalid JSON" in broken
    assert mistyped == f"{agent_dir / 'settings.json'}: retry.maxRetries must be a non-negative integer, found -1"
    assert all(d.kind == "settings" and d.level == "error" for d in res.diagnostics)
