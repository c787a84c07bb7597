"""The system prompt as named sections, and the patches that keep its prefix stable.

:func:`build_system_prompt_sections` turns :class:`~pi_hookspecs.SystemPromptOptions`
into an ordered ``{name: text}`` mapping:

``preamble`` → ``tools`` → ``rules`` → ``docs`` → ``addendum`` → ``project_context`` →
``skills`` → ``cwd`` → custom sections (in the order given).

``preamble`` is plain text; every other section is wrapped in a tag of its own name
(``<cwd>\\n…\\n</cwd>``) so that a later version of a section reads as a replacement.
A custom prompt (``SYSTEM.md`` / ``--system-prompt``) replaces the preamble and drops
``tools``, ``rules`` and ``docs``; everything after stays. Empty sections are left out.

The transcript stores the sections of the first system message and afterwards only
patches (:func:`diff_system_prompt_sections`: changed sections, ``None`` for removed
ones). Unchanged sections are never resent, so the prompt prefix stays byte-identical
and provider prompt caches keep hitting. :func:`render_system_prompt` joins sections
into the text the model receives, the way the ai layer replays them.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pi_hookspecs import ContextFile, SystemPromptOptions

from .diagnostics import ResourceDiagnostic
from .skills import escape_xml, format_skills_for_prompt

log = logging.getLogger(__name__)

SECTION_ORDER: tuple[str, ...] = ("preamble", "tools", "rules", "docs", "addendum", "project_context", "skills", "cwd")
SECTION_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

DEFAULT_PREAMBLE = (
    "You are a coding agent running inside pi, working in the user's project on their behalf. "
    "You explore code, run commands, and make careful, precise changes with the tools described below. "
    "Understand before you change: read the relevant files first, keep edits focused on what was asked, "
    "and check your work when you can."
)

TOOLS_FOOTER = "Other tools may be available as well, for example ones added by extensions."

GENERAL_RULES: tuple[str, ...] = (
    "Keep your answers short and to the point",
    "Name the files you read or change by their paths",
)


@functools.cache
def default_docs_dir() -> Path | None:
    """pi's own documentation directory, when this installation has one (looked up
    once per process: the system prompt is rebuilt every turn)."""
    candidate = Path(__file__).resolve().parents[2] / "docs"
    return candidate if candidate.is_dir() else None


def _tools_section(declared: Sequence[str], snippets: Mapping[str, str]) -> str:
    lines = [f"- {name}: {snippets[name].strip()}" for name in declared if snippets.get(name, "").strip()]
    listing = "\n".join(lines) if lines else "(none)"
    return f"{listing}\n\n{TOOLS_FOOTER}"


def _rules_section(
    declared: Sequence[str], tool_guidelines: Mapping[str, Sequence[str]], prompt_guidelines: Sequence[str]
) -> str:
    rules: list[str] = []
    seen: set[str] = set()

    def add(rule: str) -> None:
        rule = rule.strip()
        if rule and rule not in seen:
            seen.add(rule)
            rules.append(rule)

    has_bash, has_powershell = "bash" in declared, "powershell" in declared
    if (has_bash or has_powershell) and not any(name in declared for name in ("grep", "find", "ls")):
        shell = "bash or PowerShell" if has_bash and has_powershell else "bash" if has_bash else "PowerShell"
        add(f"Use {shell} to list, search and find files (for example ls, rg, find)")
    for name in declared:
        for rule in tool_guidelines.get(name, ()):
            add(rule)
    for rule in prompt_guidelines:
        add(rule)
    for rule in GENERAL_RULES:
        add(rule)
    return "\n".join(f"- {rule}" for rule in rules)


def _docs_section(docs_dir: Path) -> str:
    return (
        "pi's own documentation. Read it only when the user asks about pi itself: its settings, plugins "
        "and hooks, skills, prompt templates or context files.\n"
        f"- Documentation: {docs_dir}\n"
        "- settings.md: configuration and project trust; plugins.md and hooks.md: writing plugins; "
        "skills-and-prompts.md: skills, prompt templates, AGENTS.md, SYSTEM.md\n"
        "- Read these files in full and follow their links before answering or implementing"
    )


def render_project_context(files: Sequence[ContextFile]) -> str:
    """The ``project_context`` section body: each file wrapped with its path, in order."""
    parts = ["Instructions for this project and its directories (listed from general to specific):"]
    for file in files:
        parts.append(f'<project_instructions path="{escape_xml(file.path)}">\n{file.content}\n</project_instructions>')
    return "\n\n".join(parts)


def _skills_reader(selected: Sequence[str], declared: Sequence[str]) -> tuple[bool, bool] | None:
    """Which tool loads a skill file: ``(read, bash)`` flags, both false for a reader that is
    active but hidden (reached indirectly); ``None`` when no reader is active at all."""
    if "read" in declared:
        return True, False
    if "bash" in declared:
        return False, True
    if "read" in selected or "bash" in selected:
        return False, False
    return None


def build_system_prompt_sections(
    options: SystemPromptOptions,
    *,
    docs_dir: Path | None = None,
    diagnostics: list[ResourceDiagnostic] | None = None,
) -> dict[str, str]:
    """The ordered sections of the system prompt for ``options`` (see the module docstring).

    The tool list holds the selected tools that are not hidden and have a snippet;
    the rules follow the same declared tools. Custom sections (``options.sections``)
    come last; an invalid name (not ``^[a-z][a-z0-9_-]*$``, or ``preamble``) is skipped
    and reported in ``diagnostics`` (or logged). A custom section named like a built-in
    one replaces that section's text in place. ``docs_dir`` defaults to
    :func:`default_docs_dir`; without one there is no ``docs`` section.
    """
    hidden = set(options.hidden_tools)
    selected = list(dict.fromkeys(options.selected_tools))
    declared = [name for name in selected if name not in hidden]

    bodies: dict[str, str] = {}
    if options.custom_prompt and options.custom_prompt.strip():
        bodies["preamble"] = options.custom_prompt
    else:
        bodies["preamble"] = DEFAULT_PREAMBLE
        bodies["tools"] = _tools_section(declared, options.tool_snippets)
        bodies["rules"] = _rules_section(declared, options.tool_guidelines, options.prompt_guidelines)
        docs = docs_dir if docs_dir is not None else default_docs_dir()
        if docs is not None:
            bodies["docs"] = _docs_section(docs)
    addendum = "\n\n".join(part for part in options.append_system_prompt if part.strip())
    if addendum:
        bodies["addendum"] = addendum
    if options.context_files:
        bodies["project_context"] = render_project_context(options.context_files)
    reader = _skills_reader(selected, declared)
    if reader is not None and options.skills:
        index = format_skills_for_prompt(options.skills, *reader)
        if index:
            bodies["skills"] = index
    bodies["cwd"] = options.cwd.replace("\\", "/")

    for name, content in options.sections.items():
        if not SECTION_NAME.match(name) or name == "preamble":
            message = (
                f"invalid system prompt section name {name!r}: use lowercase letters, digits, '_' and '-', "
                "starting with a letter (not 'preamble'); the section is left out"
            )
            if diagnostics is not None:
                diagnostics.append(ResourceDiagnostic("warning", message, None, kind="system-prompt"))
            else:
                log.warning(message)
            continue
        if content and content.strip():
            bodies[name] = content

    sections: dict[str, str] = {}
    for name, body in bodies.items():
        if not body.strip():
            continue
        sections[name] = body if name == "preamble" else f"<{name}>\n{body}\n</{name}>"
    return sections


def render_system_prompt(sections: Mapping[str, str | None]) -> str:
    """The prompt text: the non-blank sections, in order, separated by a blank line
    (exactly how the ai layer replays a transcript's system messages)."""
    return "\n\n".join(text for text in sections.values() if text and text.strip())


def build_system_prompt(options: SystemPromptOptions, *, docs_dir: Path | None = None) -> str:
    """The whole prompt as text: ``options.force_system_prompt`` when set, else the
    rendered sections."""
    if options.force_system_prompt is not None:
        return options.force_system_prompt
    return render_system_prompt(build_system_prompt_sections(options, docs_dir=docs_dir))


def diff_system_prompt_sections(old: Mapping[str, str | None], new: Mapping[str, str]) -> dict[str, str | None]:
    """The patch from ``old`` (the sections the model has) to ``new``: changed or added
    sections with their new text, removed ones with ``None``. ``{}`` when nothing changed."""
    patch: dict[str, str | None] = {name: text for name, text in new.items() if old.get(name) != text}
    for name, text in old.items():
        if text is not None and name not in new:
            patch[name] = None
    return patch


def apply_system_prompt_patch(sections: Mapping[str, str | None], patch: Mapping[str, str | None]) -> dict[str, str]:
    """The sections after ``patch``: changed ones keep their place, new ones go last,
    ``None`` removes one. This is how a transcript's system messages replay."""
    result = {name: text for name, text in sections.items() if text is not None}
    for name, text in patch.items():
        if text is None:
            result.pop(name, None)
        else:
            result[name] = text
    return result


__all__ = [
    "DEFAULT_PREAMBLE",
    "SECTION_NAME",
    "SECTION_ORDER",
    "apply_system_prompt_patch",
    "build_system_prompt",
    "build_system_prompt_sections",
    "default_docs_dir",
    "diff_system_prompt_sections",
    "format_skills_for_prompt",
    "render_project_context",
    "render_system_prompt",
]
