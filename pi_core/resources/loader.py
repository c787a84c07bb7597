"""Everything a session needs from the filesystem, loaded in one call.

:func:`load_resources` reads the settings, the context files, ``SYSTEM.md`` /
``APPEND_SYSTEM.md``, the skills and the prompt templates of one working directory
once the project trust decision is known (see :mod:`pi_core.resources.trust`). The
result is a snapshot: nothing is re-read per turn. :meth:`Resources.extend` adds the
paths the ``resources_discover`` hook returns; :meth:`Resources.system_prompt_options`
assembles the inputs of the system prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path

from pi_hookspecs import ContextFile, Skill, SystemPromptOptions
from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from ._files import absolute_path
from .context_files import load_context_files
from .diagnostics import ResourceDiagnostic
from .prompt_templates import PromptTemplate, load_prompt_templates
from .settings import Settings, load_settings, unknown_key_errors
from .skills import load_skills
from .system_files import SystemPromptFiles, load_system_prompt_files


@dataclass(frozen=True)
class ResourceOptions:
    """Command-line choices that shape resource loading."""

    skill_paths: Sequence[str] = ()
    """``--skill`` (repeatable)."""
    prompt_template_paths: Sequence[str] = ()
    """``--prompt-template`` (repeatable)."""
    no_skills: bool = False
    no_prompt_templates: bool = False
    no_context_files: bool = False
    system_prompt: str | None = None
    """``--system-prompt``: text or a file path."""
    append_system_prompt: Sequence[str] = ()
    """``--append-system-prompt`` (repeatable): text or file paths."""


@dataclass
class Resources:
    """A snapshot of one working directory's resources."""

    cwd: Path
    agent_dir: Path
    settings: Settings
    options: ResourceOptions
    context_files: list[ContextFile] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    prompt_templates: list[PromptTemplate] = field(default_factory=list)
    system_files: SystemPromptFiles = field(default_factory=SystemPromptFiles)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)
    extension_skill_paths: list[str] = field(default_factory=list)
    extension_prompt_paths: list[str] = field(default_factory=list)
    home: Path | None = None

    @property
    def project_trusted(self) -> bool:
        return self.settings.project_trusted

    def _load_skills(self) -> list[ResourceDiagnostic]:
        result = load_skills(
            self.cwd,
            agent_dir=self.agent_dir,
            settings=self.settings,
            cli_paths=self.options.skill_paths,
            extension_paths=self.extension_skill_paths,
            include_defaults=not self.options.no_skills,
            home=self.home,
        )
        self.skills = result.skills
        return result.diagnostics

    def _load_prompts(self) -> list[ResourceDiagnostic]:
        result = load_prompt_templates(
            self.cwd,
            agent_dir=self.agent_dir,
            settings=self.settings,
            cli_paths=self.options.prompt_template_paths,
            extension_paths=self.extension_prompt_paths,
            include_defaults=not self.options.no_prompt_templates,
        )
        self.prompt_templates = result.templates
        return result.diagnostics

    def extend(self, skill_paths: Sequence[str] = (), prompt_paths: Sequence[str] = ()) -> list[ResourceDiagnostic]:
        """Add ``resources_discover`` paths (after every other source; earlier names win)
        and reload what they affect. Returns the new diagnostics (also appended to
        :attr:`diagnostics`)."""
        new: list[ResourceDiagnostic] = []
        if skill_paths:
            self.extension_skill_paths += [p for p in skill_paths if p not in self.extension_skill_paths]
            new += [d for d in self._load_skills() if d not in self.diagnostics]
        if prompt_paths:
            self.extension_prompt_paths += [p for p in prompt_paths if p not in self.extension_prompt_paths]
            new += [d for d in self._load_prompts() if d not in self.diagnostics]
        self.diagnostics += new
        return new

    def system_prompt_options(
        self,
        *,
        selected_tools: Sequence[str],
        hidden_tools: Sequence[str] = (),
        tool_snippets: Mapping[str, str] | None = None,
        tool_guidelines: Mapping[str, Sequence[str]] | None = None,
        prompt_guidelines: Sequence[str] = (),
        sections: Mapping[str, str] | None = None,
    ) -> SystemPromptOptions:
        """The inputs of the system prompt: these resources plus the tool loadout
        (constructed from values of the right types, not validated again)."""
        return SystemPromptOptions.model_construct(
            custom_prompt=self.system_files.custom_prompt,
            selected_tools=list(selected_tools),
            hidden_tools=list(hidden_tools),
            tool_snippets=dict(tool_snippets or {}),
            tool_guidelines={name: list(rules) for name, rules in (tool_guidelines or {}).items()},
            prompt_guidelines=list(prompt_guidelines),
            sections=dict(sections or {}),
            append_system_prompt=list(self.system_files.append),
            cwd=str(self.cwd),
            context_files=[file.model_copy() for file in self.context_files],
            skills=[skill.model_copy() for skill in self.skills],
        )


def load_resources(
    cwd: str | os.PathLike[str],
    *,
    project_trusted: bool,
    agent_dir: Path | None = None,
    settings: Settings | None = None,
    options: ResourceOptions | None = None,
    home: Path | None = None,
    plugin_names: Iterable[str] = (),
) -> Resources:
    """Load every resource of ``cwd`` for a decided trust state.

    ``plugin_names`` (of the loaded plugins) claim the top-level settings keys named
    after them; other undeclared keys are reported as unknown.

    An untrusted project still gets its context files (``AGENTS.md`` …), but none of
    its settings, skills, prompt templates or ``SYSTEM.md`` / ``APPEND_SYSTEM.md``.
    Settings errors (broken JSON, mistyped values) are reported as diagnostics.
    """
    adir = agent_dir if agent_dir is not None else default_agent_dir()
    base = absolute_path(cwd)
    opts = options or ResourceOptions()
    if settings is None or settings.project_trusted != project_trusted:
        settings = load_settings(base, agent_dir=adir, project_trusted=project_trusted)
    resources = Resources(cwd=base, agent_dir=adir, settings=settings, options=opts, home=home)
    for error in [*settings.errors, *settings.validate(), *unknown_key_errors(settings, plugin_names)]:
        where, _, message = str(error).partition(": ")  # "file[:line:column]: message"
        resources.diagnostics.append(ResourceDiagnostic(error.level, message, where, kind="settings"))

    context = load_context_files(base, agent_dir=adir, enabled=not opts.no_context_files)
    resources.context_files = context.files
    resources.diagnostics += context.diagnostics

    resources.system_files = load_system_prompt_files(
        base,
        agent_dir=adir,
        project_trusted=project_trusted,
        system_prompt=opts.system_prompt,
        append_system_prompt=list(opts.append_system_prompt) or None,
    )
    resources.diagnostics += resources.system_files.diagnostics
    resources.diagnostics += resources._load_skills()
    resources.diagnostics += resources._load_prompts()
    return resources


__all__ = ["ResourceOptions", "Resources", "load_resources"]
