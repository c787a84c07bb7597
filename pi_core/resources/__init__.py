"""Settings, project trust, context files, SYSTEM.md, skills, prompt templates and the
system prompt: everything pi reads from the agent directory and the project.

The submodules are the reference; the names below are the ones most callers need.
They are imported on first use, so importing one submodule stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "CONTEXT_FILE_NAMES": "context_files",
    "ContextFilesResult": "context_files",
    "load_context_files": "context_files",
    "ResourceDiagnostic": "diagnostics",
    "ResourceOptions": "loader",
    "Resources": "loader",
    "load_resources": "loader",
    "PromptTemplate": "prompt_templates",
    "PromptTemplatesResult": "prompt_templates",
    "expand_prompt_template": "prompt_templates",
    "load_prompt_templates": "prompt_templates",
    "parse_command_args": "prompt_templates",
    "substitute_args": "prompt_templates",
    "DEFAULT_TOOLS": "settings",
    "CompactionSettings": "settings",
    "RetrySettings": "settings",
    "Settings": "settings",
    "SettingsError": "settings",
    "load_settings": "settings",
    "merge_settings": "settings",
    "read_settings_file": "settings",
    "removed_tools": "settings",
    "resolve_default_tools": "settings",
    "session_dir_setting": "settings",
    "SkillsResult": "skills",
    "expand_skill_command": "skills",
    "format_skills_for_prompt": "skills",
    "load_skills": "skills",
    "SystemPromptFiles": "system_files",
    "load_system_prompt_files": "system_files",
    "apply_system_prompt_patch": "system_prompt",
    "build_system_prompt": "system_prompt",
    "build_system_prompt_sections": "system_prompt",
    "diff_system_prompt_sections": "system_prompt",
    "render_system_prompt": "system_prompt",
    "TrustAnswer": "trust",
    "TrustDecision": "trust",
    "TrustStore": "trust",
    "has_trust_requiring_project_resources": "trust",
    "resolve_project_trust": "trust",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
        DEFAULT_TOOLS,
        CompactionSettings,
        RetrySettings,
        Settings,
        SettingsError,
        load_settings,
        merge_settings,
        read_settings_file,
        removed_tools,
        resolve_default_tools,
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
    from .trust import (
        TrustAnswer,
        TrustDecision,
        TrustStore,
        has_trust_requiring_project_resources,
        resolve_project_trust,
    )
