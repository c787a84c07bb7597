"""Settings, project trust, context files, SYSTEM.md, skills, prompt templates and the
system prompt: everything pi reads from the agent directory and the project.

The submodules are the reference; the names below are the ones most callers need.
They are imported on first use, so importing one submodule stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".context_files": "CONTEXT_FILE_NAMES ContextFilesResult load_context_files",
        ".diagnostics": "ResourceDiagnostic",
        ".loader": "ResourceOptions Resources load_resources",
        ".prompt_templates": (
            "PromptTemplate PromptTemplatesResult expand_prompt_template load_prompt_templates "
            "parse_command_args substitute_args"
        ),
        ".settings": (
            "CompactionSettings RetrySettings Settings SettingsError load_settings "
            "merge_settings read_settings_file session_dir_setting"
        ),
        ".skills": "SkillsResult expand_skill_command format_skills_for_prompt load_skills",
        ".tool_selection": "DEFAULT_TOOLS removed_tools resolve_default_tools",
        ".system_files": "SystemPromptFiles load_system_prompt_files",
        ".system_prompt": (
            "apply_system_prompt_patch build_system_prompt build_system_prompt_sections "
            "diff_system_prompt_sections render_system_prompt"
        ),
        ".trust": "TrustAnswer TrustDecision TrustStore has_trust_requiring_project_resources resolve_project_trust",
    },
)

__all__ = [
    "CONTEXT_FILE_NAMES",
    "DEFAULT_TOOLS",
    "CompactionSettings",
    "ContextFilesResult",
    "PromptTemplate",
    "PromptTemplatesResult",
    "ResourceDiagnostic",
    "ResourceOptions",
    "Resources",
    "RetrySettings",
    "Settings",
    "SettingsError",
    "SkillsResult",
    "SystemPromptFiles",
    "TrustAnswer",
    "TrustDecision",
    "TrustStore",
    "apply_system_prompt_patch",
    "build_system_prompt",
    "build_system_prompt_sections",
    "diff_system_prompt_sections",
    "expand_prompt_template",
    "expand_skill_command",
    "format_skills_for_prompt",
    "has_trust_requiring_project_resources",
    "load_context_files",
    "load_prompt_templates",
    "load_resources",
    "load_settings",
    "load_skills",
    "load_system_prompt_files",
    "merge_settings",
    "parse_command_args",
    "read_settings_file",
    "removed_tools",
    "render_system_prompt",
    "resolve_default_tools",
    "resolve_project_trust",
    "session_dir_setting",
    "substitute_args",
]


if TYPE_CHECKING:
    from .context_files import CONTEXT_FILE_NAMES, ContextFilesResult, load_context_files
    from .diagnostics import ResourceDiagnostic
    from .loader import ResourceOptions, Resources, load_resources
    from .prompt_templates import (
        PromptTemplate,
        PromptTemplatesResult,
        expand_prompt_template,
        load_prompt_templates,
        parse_command_args,
        substitute_args,
    )
    from .settings import (
        CompactionSettings,
        RetrySettings,
        Settings,
        SettingsError,
        load_settings,
        merge_settings,
        read_settings_file,
        session_dir_setting,
    )
    from .skills import SkillsResult, expand_skill_command, format_skills_for_prompt, load_skills
    from .system_files import SystemPromptFiles, load_system_prompt_files
    from .system_prompt import (
        apply_system_prompt_patch,
        build_system_prompt,
        build_system_prompt_sections,
        diff_system_prompt_sections,
        render_system_prompt,
    )
    from .tool_selection import DEFAULT_TOOLS, removed_tools, resolve_default_tools
    from .trust import (
        TrustAnswer,
        TrustDecision,
        TrustStore,
        has_trust_requiring_project_resources,
        resolve_project_trust,
    )
