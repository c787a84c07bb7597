"""Skills: discovery modes, ignore files, symlinks, frontmatter validation, precedence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_core.resources.diagnostics import ResourceDiagnostic
from pi_core.resources.settings import load_settings
from pi_core.resources.skills import (
    SkillsResult,
    discover_skill_files,
    expand_skill_command,
    format_skill_invocation,
    load_skill_file,
    load_skills,
    read_skill_body,
)
from pi_hookspecs import Skill


def make_skill(
    directory: Path,
    name: str | None = None,
    description: str | None = "Does a thing. Use when asked.",
    *,
    file: str = "SKILL.md",
    extra: str = "",
    body: str = "Instructions.",
) -> Path:
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {json.dumps(description)}")
    if extra:
        lines.append(extra)
    lines += ["---", body, ""]
    path = directory / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def load(project: Path, agent_dir: Path, home: Path, *, trusted: bool = True, **kwargs: object) -> SkillsResult:
    settings = load_settings(project, agent_dir=agent_dir, project_trusted=trusted)
    return load_skills(project, agent_dir=agent_dir, settings=settings, home=home, **kwargs)  # type: ignore[arg-type]


def names(result: SkillsResult) -> list[str]:
    return [s.name for s in result.skills]


def messages(result: SkillsResult) -> list[str]:
    return [str(d) for d in result.diagnostics]


# --------------------------------------------------------------------------- discovery


def test_pi_mode_root_md_files_and_skill_dirs(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    make_skill(root, "review", file="review.md")
    pdf = make_skill(root / "pdf", "pdf")
    make_skill(root / "pdf" / "references" / "inner", "inner")  # inside a skill: not a skill of its own
    make_skill(root / "group", "notes", file="notes.md")  # plain .md below the root: pi mode ignores it
    deep = make_skill(root / "group" / "deep", "deep")
    found = discover_skill_files(root, "pi")
    assert found == [deep, pdf, root / "review.md"]


def test_agents_mode_has_no_root_md_files(tmp_path: Path) -> None:
    root = tmp_path / ".agents" / "skills"
    make_skill(root, "root", file="root.md")
    vendor = make_skill(root / "vendor", "review", file="review.md")
    tool = make_skill(root / "tool", "tool")
    assert discover_skill_files(root, "agents") == [tool, vendor]


def test_ignore_files_dot_entries_and_node_modules(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    (root).mkdir()
    (root / ".gitignore").write_text("drafts/\nsecret.md\n")
    (root / ".fdignore").write_text("*.tmp.md\n")
    make_skill(root / "drafts" / "a", "a")
    make_skill(root, "secret", file="secret.md")
    make_skill(root, "scratch", file="scratch.tmp.md")
    make_skill(root / ".hidden", "hidden")
    make_skill(root / "node_modules" / "pkg", "pkg")
    team = root / "team"
    make_skill(team / "one", "one")
    make_skill(team / "two", "two")
    (team / ".ignore").write_text("*\n!two/\n!two/SKILL.md\n")  # a nested ignore file, with a re-include
    kept = make_skill(root, "kept", file="kept.md")
    assert discover_skill_files(root, "pi") == [kept, team / "two" / "SKILL.md"]


def test_an_ignored_skill_md_does_not_stop_the_search(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    make_skill(root / "box", "box")
    inner = make_skill(root / "box" / "inner", "inner")
    (root / ".gitignore").write_text("box/SKILL.md\n")
    assert discover_skill_files(root, "pi") == [inner]


def test_symlinks_are_followed_and_deduplicated(tmp_path: Path, project: Path, agent_dir: Path, home: Path) -> None:
    shared = make_skill(tmp_path / "shared" / "lint", "lint")
    skills_dir = agent_dir / "skills"
    skills_dir.mkdir()
    (skills_dir / "lint").symlink_to(shared.parent, target_is_directory=True)
    (skills_dir / "lint-again").symlink_to(shared.parent, target_is_directory=True)
    (skills_dir / "loop").symlink_to(skills_dir, target_is_directory=True)  # a cycle must not hang
    (skills_dir / "broken").symlink_to(tmp_path / "missing")
    result = load(project, agent_dir, home, cli_paths=[str(shared)])
    assert names(result) == ["lint"] and result.diagnostics == []
    assert result.skills[0].file_path == str(skills_dir / "lint" / "SKILL.md")


# --------------------------------------------------------------------------- frontmatter


def test_valid_skill_metadata(tmp_path: Path) -> None:
    path = make_skill(
        tmp_path / "pdf-tools", "pdf-tools", "Extract PDFs.", extra="disable-model-invocation: true\nlicense: MIT"
    )
    skill, diagnostics = load_skill_file(path, "user")
    assert diagnostics == []
    assert skill == Skill(
        name="pdf-tools",
        description="Extract PDFs.",
        file_path=str(path),
        base_dir=str(path.parent),
        source="user",
        disable_model_invocation=True,
    )


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("PDF_Tools", "may only contain lowercase letters"),
        ("-pdf", "must not start or end with a hyphen"),
        ("pdf--tools", "must not contain consecutive hyphens"),
        ("a" * 65, "exceeds 64 characters (65)"),
    ],
)
def test_name_violations_warn_but_load(tmp_path: Path, name: str, fragment: str) -> None:
    path = make_skill(tmp_path / "dir", json.dumps(name))
    skill, diagnostics = load_skill_file(path)
    assert skill is not None and skill.name == name
    assert len(diagnostics) == 1 and fragment in str(diagnostics[0]) and str(diagnostics[0]).startswith(str(path))


def test_missing_name_falls_back_to_the_directory(tmp_path: Path) -> None:
    skill, diagnostics = load_skill_file(make_skill(tmp_path / "code-review"))
    assert skill is not None and skill.name == "code-review" and diagnostics == []
    skill, _ = load_skill_file(make_skill(tmp_path / "flat", file="quick-fix.md"))
    assert skill is not None and skill.name == "quick-fix"  # a plain file is named after itself


def test_missing_description(tmp_path: Path) -> None:
    declared = make_skill(tmp_path / "nodesc", "nodesc", description=None)
    skill, diagnostics = load_skill_file(declared)
    assert skill is None and [d.level for d in diagnostics] == ["error"]  # not loaded: an error, shown in every mode
    assert "description is required" in str(diagnostics[0]) and str(diagnostics[0]).startswith(str(declared))
    plain = make_skill(tmp_path / "plain", "plain", description=None, file="notes.md")
    assert load_skill_file(plain) == (None, [])  # plain Markdown: silently not a skill
    blank = make_skill(tmp_path / "blank", "blank", description="   ")
    assert load_skill_file(blank)[0] is None


def test_long_description_warns_but_loads(tmp_path: Path) -> None:
    skill, diagnostics = load_skill_file(make_skill(tmp_path / "long", "long", "x" * 1025))
    assert skill is not None and "description exceeds 1024 characters (1025)" in str(diagnostics[0])


def test_broken_frontmatter(tmp_path: Path) -> None:
    path = tmp_path / "bad" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("---\nname: bad\ndescription: [unclosed\n---\nbody\n")
    skill, diagnostics = load_skill_file(path)
    assert (
        skill is None
        and "invalid YAML frontmatter" in str(diagnostics[0])
        and str(diagnostics[0]).startswith(str(path))
    )
    plain = tmp_path / "bad" / "other.md"
    plain.write_text("---\n: : :\n---\n")
    assert load_skill_file(plain) == (None, [])
    odd = make_skill(tmp_path / "odd", "odd", extra="disable-model-invocation: yes please")
    skill, diagnostics = load_skill_file(odd)
    assert (
        skill is not None and not skill.disable_model_invocation and "disable-model-invocation" in str(diagnostics[0])
    )


# --------------------------------------------------------------------------- locations and precedence


def test_precedence_and_collisions(tmp_path: Path, project: Path, agent_dir: Path, home: Path) -> None:
    (project / ".git").mkdir()
    places = {
        "project-settings": make_skill(project / "team-skills" / "dup", "dup"),
        "project-auto": make_skill(project / ".pi" / "skills" / "dup", "dup"),
        "project-agents": make_skill(project / ".agents" / "skills" / "dup", "dup"),
        "user-settings": make_skill(tmp_path / "mine" / "dup", "dup"),
        "user-auto": make_skill(agent_dir / "skills" / "dup", "dup"),
        "user-agents": make_skill(home / ".agents" / "skills" / "dup", "dup"),
        "cli": make_skill(tmp_path / "cli" / "dup", "dup"),
        "extension": make_skill(tmp_path / "ext" / "dup", "dup"),
    }
    (project / ".pi" / "settings.json").write_text(json.dumps({"skills": ["../team-skills"]}))
    (agent_dir / "settings.json").write_text(json.dumps({"skills": [str(tmp_path / "mine")]}))
    order = list(places)
    for winner in order:
        result = load(
            project, agent_dir, home, cli_paths=[str(tmp_path / "cli")], extension_paths=[str(tmp_path / "ext")]
        )
        assert [s.file_path for s in result.skills] == [str(places[winner])]
        collisions = [d for d in result.diagnostics if d.kind == "collision"]
        assert [d.path for d in collisions] == [str(places[name]) for name in order[order.index(winner) + 1 :]]
        assert all(d.winner_path == str(places[winner]) and "already taken" in d.message for d in collisions)
        places[winner].unlink()


def test_sources(project: Path, agent_dir: Path, home: Path, tmp_path: Path) -> None:
    make_skill(project / ".pi" / "skills" / "p", "p")
    make_skill(agent_dir / "skills" / "u", "u")
    make_skill(tmp_path / "c", "c")
    make_skill(tmp_path / "e", "e")
    result = load(project, agent_dir, home, cli_paths=[str(tmp_path / "c")], extension_paths=[str(tmp_path / "e")])
    assert [(s.name, s.source) for s in result.skills] == [
        ("p", "project"),
        ("u", "user"),
        ("c", "cli"),
        ("e", "extension"),
    ]


def test_untrusted_project_contributes_no_skills(project: Path, agent_dir: Path, home: Path) -> None:
    make_skill(project / ".pi" / "skills" / "p", "p")
    make_skill(project / ".agents" / "skills" / "a", "a")
    make_skill(project.parent / ".agents" / "skills" / "ancestor", "ancestor")
    make_skill(project / "listed" / "l", "l")
    (project / ".pi" / "settings.json").write_text(json.dumps({"skills": ["../listed"]}))
    make_skill(agent_dir / "skills" / "u", "u")
    assert names(load(project, agent_dir, home, trusted=False)) == ["u"]
    assert sorted(names(load(project, agent_dir, home, trusted=True))) == ["a", "ancestor", "l", "p", "u"]


def test_project_agents_skills_stop_at_the_git_root(tmp_path: Path, agent_dir: Path, home: Path) -> None:
    repo = tmp_path / "outer" / "repo"
    cwd = repo / "src"
    cwd.mkdir(parents=True)
    (repo / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git file counts too
    make_skill(repo / ".agents" / "skills" / "inside", "inside")
    make_skill(cwd / ".agents" / "skills" / "nearest", "nearest")
    make_skill(tmp_path / "outer" / ".agents" / "skills" / "outside", "outside")
    assert names(load(cwd, agent_dir, home)) == ["nearest", "inside"]


def test_no_skills_keeps_explicit_paths(project: Path, agent_dir: Path, home: Path, tmp_path: Path) -> None:
    make_skill(agent_dir / "skills" / "u", "u")
    make_skill(tmp_path / "c", "c")
    make_skill(tmp_path / "e", "e")
    result = load(
        project,
        agent_dir,
        home,
        include_defaults=False,
        cli_paths=[str(tmp_path / "c")],
        extension_paths=[str(tmp_path / "e")],
    )
    assert names(result) == ["c", "e"]


def test_settings_exclusions_and_bad_paths(project: Path, agent_dir: Path, home: Path) -> None:
    make_skill(agent_dir / "skills" / "keep", "keep")
    make_skill(agent_dir / "skills" / "old", "old")
    make_skill(agent_dir / "skills" / "draft-x", "draft-x")
    (agent_dir / "settings.json").write_text(
        json.dumps({"skills": ["-skills/old", "!skills/draft-*", "missing", "settings.json"]})
    )
    result = load(project, agent_dir, home)
    assert names(result) == ["keep"]
    assert messages(result) == [
        f"{agent_dir / 'missing'}: skill path does not exist",
        f"{agent_dir / 'settings.json'}: skill path is not a Markdown file",
    ]


def test_relative_cli_paths_resolve_from_cwd(project: Path, agent_dir: Path, home: Path) -> None:
    make_skill(project / "local" / "here", "here")
    assert names(load(project, agent_dir, home, cli_paths=["local"])) == ["here"]


# --------------------------------------------------------------------------- using a skill


def test_body_is_read_on_demand(tmp_path: Path) -> None:
    path = make_skill(tmp_path / "fmt", "fmt", body="Run `scripts/fmt.sh`.")
    skill, _ = load_skill_file(path)
    assert skill is not None and "Run" not in skill.model_dump_json()
    path.write_text(path.read_text().replace("fmt.sh", "format.sh"))
    assert read_skill_body(skill) == "Run `scripts/format.sh`."
    expanded = format_skill_invocation(skill, "  src/  ")
    assert expanded == (
        f'<skill name="fmt" location="{path}">\nRelative paths in this skill are relative to {path.parent}.\n\n'
        "Run `scripts/format.sh`.\n</skill>\n\nsrc/"
    )
    assert expand_skill_command("/skill:fmt src/", [skill]) == expanded
    assert expand_skill_command("/skill:nope x", [skill]) is None
    assert expand_skill_command("/fmt", [skill]) is None
    os.unlink(path)
    with pytest.raises(OSError):
        expand_skill_command("/skill:fmt", [skill])


def test_diagnostic_str_names_the_file() -> None:
    assert str(ResourceDiagnostic("warning", "boom", "/x/SKILL.md")) == "/x/SKILL.md: boom"
    assert str(ResourceDiagnostic("warning", "boom")) == "boom"
