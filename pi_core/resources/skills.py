"""Skills (Agent Skills): discovery, frontmatter validation, and their prompt index.

A skill is a ``SKILL.md`` (or, in some places, a plain ``.md`` file) whose YAML
frontmatter gives a ``name`` and a ``description``. Only that metadata is kept; the
body is read when the skill is used (:func:`read_skill_body`).

**Discovery modes.** ``pi`` mode (``<agent dir>/skills``, ``.pi/skills``, directories
named in settings or on the command line): ``.md`` files directly in the root, and
``SKILL.md`` files below it. ``agents`` mode (``~/.agents/skills`` and the project's
``.agents/skills`` in the working directory and its ancestors up to the git root): no
``.md`` files in the root itself; ``SKILL.md`` and other ``.md`` files below it. In
both modes a directory holding a ``SKILL.md`` is one skill and is not searched
further; ``.gitignore`` / ``.ignore`` / ``.fdignore`` rules are honoured; dot entries
and ``node_modules`` are skipped; symlinks are followed and the same real file is
loaded once.

**Validation.** ``name``: at most 64 characters of lowercase letters, digits and single
hyphens, not starting or ending with a hyphen (violations are warnings; the skill
still loads); a missing name falls back to the directory of a ``SKILL.md`` (the file
name of a plain ``.md``). ``description`` is required (at most 1024 characters): a
``SKILL.md`` without one is reported and not loaded, a plain ``.md`` without one is
silently not a skill. ``disable-model-invocation: true`` keeps the skill out of the
system prompt (it can still be run with ``/skill:name``).

**Precedence.** The first skill of a name wins, later ones are reported as
collisions: project settings paths, project discovery, user settings paths, user
discovery, then ``--skill`` paths, then paths from the ``resources_discover`` hook.
An untrusted project contributes nothing (no ``.pi/skills``, no ``.agents/skills``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from pi_hookspecs import Skill
from pi_hookspecs.record import dataclass

from .._paths import project_dir
from ._discovery import Candidate, discovery_scope, load_first_by_name, markdown_candidates, settings_entries
from ._files import (
    FrontmatterError,
    IgnoreRules,
    absolute_path,
    ancestors_to_git_root,
    canonical_path,
    entry_kind,
    parse_frontmatter,
    read_text,
    split_frontmatter,
)
from .diagnostics import ResourceDiagnostic
from .settings import ResourceEntries, Settings

SKILL_FILE_NAME = "SKILL.md"
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024

DiscoveryMode = Literal["pi", "agents"]

_NAME_CHARS = re.compile(r"[a-z0-9-]+")


@dataclass
class SkillsResult:
    """The loaded skills (in precedence order) and what went wrong."""

    skills: list[Skill] = field(default_factory=list)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)


# --------------------------------------------------------------------------- validation


def validate_skill_name(name: str) -> list[str]:
    """What is wrong with a skill name per the Agent Skills rules (empty when valid)."""
    problems: list[str] = []
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"skill name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not _NAME_CHARS.fullmatch(name):
        problems.append(f'skill name "{name}" may only contain lowercase letters a-z, digits 0-9 and hyphens')
    if name.startswith("-") or name.endswith("-"):
        problems.append(f'skill name "{name}" must not start or end with a hyphen')
    if "--" in name:
        problems.append(f'skill name "{name}" must not contain consecutive hyphens')
    return problems


def validate_skill_description(description: Any) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["skill description is required (frontmatter field 'description'); the skill is not loaded"]
    if len(description) > MAX_DESCRIPTION_LENGTH:
        return [f"skill description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len(description)})"]
    return []


# --------------------------------------------------------------------------- discovery


def discover_skill_files(root: Path, mode: DiscoveryMode = "pi") -> list[Path]:
    """The candidate skill files under ``root`` (see the module docstring), sorted by
    name within each directory."""
    found: list[Path] = []
    visited: set[str] = set()

    def walk(directory: Path, rules: IgnoreRules) -> None:
        real = canonical_path(directory)
        if real in visited:  # a symlink cycle, or two links to one directory
            return
        visited.add(real)
        rules = rules.entering(directory)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name == SKILL_FILE_NAME:
                _, is_file = entry_kind(entry)
                if is_file and not rules.ignores(Path(entry.path), is_dir=False):
                    found.append(Path(entry.path))
                    return
        at_root = directory == root
        for entry in entries:
            if entry.name.startswith(".") or entry.name == "node_modules":
                continue
            is_dir, is_file = entry_kind(entry)
            path = Path(entry.path)
            if is_dir:
                if not rules.ignores(path, is_dir=True):
                    walk(path, rules)
                continue
            if not is_file or not entry.name.endswith(".md"):
                continue
            if ((mode == "pi" and at_root) or (mode == "agents" and not at_root)) and not rules.ignores(
                path, is_dir=False
            ):
                found.append(path)

    root = absolute_path(root)
    if root.is_dir():
        walk(root, IgnoreRules())
    return found


# --------------------------------------------------------------------------- one file


def load_skill_file(path: Path, source: str = "path") -> tuple[Skill | None, list[ResourceDiagnostic]]:
    """The skill in ``path`` (or ``None``) and the warnings about it."""
    diagnostics: list[ResourceDiagnostic] = []
    declared = path.name == SKILL_FILE_NAME

    def warn(message: str) -> None:
        # a problem that keeps the skill out is an error (shown in every mode), a
        # problem it loads despite is a warning
        level: Literal["error", "warning"] = "error" if message.endswith("the skill is not loaded") else "warning"
        diagnostics.append(ResourceDiagnostic(level, message, str(path), kind="skill"))

    try:
        text = read_text(path)
    except OSError as exc:
        warn(f"cannot read skill file: {exc.strerror or exc}; the skill is not loaded")
        return None, diagnostics
    try:
        frontmatter, _ = parse_frontmatter(text)
    except FrontmatterError as exc:
        if declared:
            warn(f"{exc}; the skill is not loaded")
        return None, diagnostics

    description = frontmatter.get("description")
    has_description = isinstance(description, str) and bool(description.strip())
    if not declared and not has_description:
        return None, diagnostics  # a plain Markdown file, not a skill

    for problem in validate_skill_description(description):
        warn(problem)

    fallback = path.parent.name if declared else path.stem
    raw_name = frontmatter.get("name")
    if raw_name is not None and not isinstance(raw_name, str):
        warn(f'skill name must be a string, found {raw_name!r}; using "{fallback}"')
    name = raw_name.strip() if isinstance(raw_name, str) and raw_name.strip() else fallback
    for problem in validate_skill_name(name):
        warn(problem)

    flag = frontmatter.get("disable-model-invocation", False)
    if not isinstance(flag, bool):
        warn(f"disable-model-invocation must be true or false, found {flag!r}; taken as false")
        flag = False

    if not has_description:
        return None, diagnostics
    assert isinstance(description, str)
    skill = Skill(
        name=name,
        description=description.strip(),
        file_path=str(path),
        base_dir=str(path.parent),
        source=source,
        disable_model_invocation=flag,
    )
    return skill, diagnostics


# --------------------------------------------------------------------------- all locations


def _explicit_candidates(
    paths: Iterable[Path], source: str, entries: ResourceEntries | None, diagnostics: list[ResourceDiagnostic]
) -> list[Candidate]:
    return markdown_candidates(
        paths, source, entries, diagnostics, files_in=discover_skill_files, label="skill", kind="skill"
    )


def _auto_candidates(
    dirs: Iterable[tuple[Path, DiscoveryMode]], source: str, entries: ResourceEntries | None
) -> list[Candidate]:
    return [Candidate(p, source, entries) for d, mode in dirs for p in discover_skill_files(d, mode)]


def project_agents_skill_dirs(cwd: str | os.PathLike[str], *, home: Path | None = None) -> list[Path]:
    """``.agents/skills`` of ``cwd`` and its ancestors up to the git root (nearest first),
    without the user's own ``~/.agents/skills``."""
    user_dir = canonical_path((home if home is not None else Path.home()) / ".agents" / "skills")
    dirs = [d / ".agents" / "skills" for d in ancestors_to_git_root(absolute_path(cwd))]
    return [d for d in dirs if canonical_path(d) != user_dir]


def load_skills(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: Path | None = None,
    settings: Settings | None = None,
    project_trusted: bool | None = None,
    cli_paths: Sequence[str] = (),
    extension_paths: Sequence[str] = (),
    include_defaults: bool = True,
    home: Path | None = None,
) -> SkillsResult:
    """Every skill for ``cwd`` in precedence order (see the module docstring).

    ``settings`` supplies the ``skills`` lists (loaded when omitted);
    ``project_trusted`` defaults to ``settings.project_trusted``. ``cli_paths`` are
    ``--skill`` arguments and ``extension_paths`` the ``resources_discover`` results,
    both relative to ``cwd``. ``include_defaults=False`` (``--no-skills``) keeps only
    those two.
    """
    scope = discovery_scope(cwd, agent_dir, settings, project_trusted)
    user_home = home if home is not None else Path.home()
    result = SkillsResult()

    candidates: list[Candidate] = []
    if include_defaults:
        project_entries, user_entries = settings_entries(scope.settings, "skills", scope.trusted, result.diagnostics)
        if scope.trusted:
            if project_entries is not None:
                candidates += _explicit_candidates(
                    project_entries.paths, "project", project_entries, result.diagnostics
                )
            project_dirs: list[tuple[Path, DiscoveryMode]] = [(project_dir(scope.cwd) / "skills", "pi")]
            project_dirs += [(d, "agents") for d in project_agents_skill_dirs(scope.cwd, home=user_home)]
            candidates += _auto_candidates(project_dirs, "project", project_entries)
        if user_entries is not None:
            candidates += _explicit_candidates(user_entries.paths, "user", user_entries, result.diagnostics)
        user_dirs: list[tuple[Path, DiscoveryMode]] = [(absolute_path(scope.agent_dir) / "skills", "pi")]
        user_dirs.append((absolute_path(user_home) / ".agents" / "skills", "agents"))
        candidates += _auto_candidates(user_dirs, "user", user_entries)
    for source, paths in scope.given_paths(cli_paths, extension_paths):
        candidates += _explicit_candidates(paths, source, None, result.diagnostics)
    result.skills += load_first_by_name(
        candidates,
        load_skill_file,
        result.diagnostics,
        'skill name "{name}" is already taken by {winner}; this skill is not loaded',
    )
    return result


# --------------------------------------------------------------------------- using skills


def read_skill_body(skill: Skill) -> str:
    """The instructions of ``skill``: its file without the frontmatter. Raises ``OSError``."""
    text = read_text(Path(skill.file_path))
    try:
        _, body = parse_frontmatter(text)
    except FrontmatterError:
        _, body = split_frontmatter(text)
    return body


def escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skill_invocation(skill: Skill, args: str = "") -> str:
    """The text ``/skill:name args`` becomes: the skill's instructions in a ``<skill>``
    block, followed by the arguments. Raises ``OSError`` when the file is gone."""
    body = read_skill_body(skill)
    block = (
        f'<skill name="{escape_xml(skill.name)}" location="{escape_xml(skill.file_path)}">\n'
        f"Relative paths in this skill are relative to {skill.base_dir}.\n\n"
        f"{body}\n"
        "</skill>"
    )
    return f"{block}\n\n{args.strip()}" if args.strip() else block


def expand_skill_command(text: str, skills: Sequence[Skill]) -> str | None:
    """The expansion of ``/skill:name args``, or ``None`` when ``text`` is not such a
    command or names no loaded skill. Raises ``OSError`` when the skill file is gone."""
    match = re.match(r"^/skill:(\S+)(?:\s+([\s\S]*))?$", text)
    if match is None:
        return None
    skill = next((s for s in skills if s.name == match.group(1)), None)
    if skill is None:
        return None
    return format_skill_invocation(skill, match.group(2) or "")


def format_skills_for_prompt(skills: Sequence[Skill], read_tool_available: bool, bash_available: bool = False) -> str:
    """The skills index of the system prompt (``""`` when no skill is visible).

    Skills with ``disable_model_invocation`` are left out. The wording names the tool
    that loads a skill file: ``read`` when available, else ``bash``, else neither
    (the file is reached some other way, e.g. from a code-mode script)."""
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    if read_tool_available:
        how = "load its file with the read tool"
    elif bash_available:
        how = "load its file with bash (for example with cat)"
    else:
        how = "load its file"
    lines = [
        "Skills hold specialized instructions for particular kinds of tasks.",
        f"When a task matches a skill's description, {how} before you start, then follow it.",
        "Relative paths inside a skill file refer to the skill's directory (the directory of its file); "
        "use absolute paths in tool calls.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{escape_xml(skill.name)}</name>",
            f"    <description>{escape_xml(skill.description)}</description>",
            f"    <location>{escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILL_FILE_NAME",
    "DiscoveryMode",
    "SkillsResult",
    "discover_skill_files",
    "escape_xml",
    "expand_skill_command",
    "format_skill_invocation",
    "format_skills_for_prompt",
    "load_skill_file",
    "load_skills",
    "project_agents_skill_dirs",
    "read_skill_body",
    "validate_skill_description",
    "validate_skill_name",
]
