"""``SYSTEM.md`` and ``APPEND_SYSTEM.md``.

``SYSTEM.md`` replaces the default system prompt body (the preamble, tools, rules and
docs sections); project context, skills and the working directory are still added.
``APPEND_SYSTEM.md`` adds instructions (the ``addendum`` section).

For each of the two the first that exists wins, the files are never combined:

1. the command line (``--system-prompt`` / ``--append-system-prompt``: text, or the
   path of an existing file whose content is used);
2. ``<cwd>/.pi/<name>``, only when the project is trusted;
3. ``<agent dir>/<name>``.

An empty ``SYSTEM.md`` counts as absent (the default prompt is used).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path

from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from .._paths import project_dir
from ._files import read_text, resolve_entry
from .diagnostics import ResourceDiagnostic

SYSTEM_FILE_NAME = "SYSTEM.md"
APPEND_SYSTEM_FILE_NAME = "APPEND_SYSTEM.md"


@dataclass
class SystemPromptFiles:
    """What replaces and what extends the default system prompt, and where it came from."""

    custom_prompt: str | None = None
    custom_prompt_source: str | None = None
    append: list[str] = field(default_factory=list)
    append_sources: list[str] = field(default_factory=list)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)


def discover_system_file(
    name: str,
    cwd: str | os.PathLike[str],
    *,
    agent_dir: Path | None = None,
    project_trusted: bool = False,
) -> Path | None:
    """The ``name`` file (``SYSTEM.md`` / ``APPEND_SYSTEM.md``) in force for ``cwd``: the
    trusted project's, else the agent directory's, else ``None``."""
    candidates: list[Path] = []
    if project_trusted:
        candidates.append(project_dir(cwd) / name)
    candidates.append((agent_dir if agent_dir is not None else default_agent_dir()) / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def resolve_prompt_input(
    value: str, cwd: str | os.PathLike[str], diagnostics: list[ResourceDiagnostic] | None = None
) -> tuple[str, str]:
    """``(text, source)`` of a ``--system-prompt`` / ``--append-system-prompt`` value: the
    content of the file it names when one exists (relative to ``cwd``), else the value
    itself (``source`` is then ``"command line"``)."""
    try:
        path = resolve_entry(value, Path(cwd))
        if value.strip() and "\n" not in value and path.is_file():
            try:
                return read_text(path), str(path)
            except OSError as exc:
                if diagnostics is not None:
                    diagnostics.append(
                        ResourceDiagnostic(
                            "warning",
                            f"cannot read: {exc.strerror or exc}; used as text",
                            str(path),
                            kind="system-prompt",
                        )
                    )
    except (OSError, ValueError):
        pass
    return value, "command line"


def _read(path: Path, diagnostics: list[ResourceDiagnostic]) -> str | None:
    try:
        return read_text(path)
    except OSError as exc:
        diagnostics.append(
            ResourceDiagnostic("warning", f"cannot read: {exc.strerror or exc}", str(path), kind="system-prompt")
        )
        return None


def load_system_prompt_files(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: Path | None = None,
    project_trusted: bool = False,
    system_prompt: str | None = None,
    append_system_prompt: Sequence[str] | None = None,
) -> SystemPromptFiles:
    """Resolve ``SYSTEM.md`` / ``APPEND_SYSTEM.md`` (and their command-line overrides)."""
    result = SystemPromptFiles()
    if system_prompt:
        text, source = resolve_prompt_input(system_prompt, cwd, result.diagnostics)
        result.custom_prompt, result.custom_prompt_source = text, source
    else:
        path = discover_system_file(SYSTEM_FILE_NAME, cwd, agent_dir=agent_dir, project_trusted=project_trusted)
        text_or_none = _read(path, result.diagnostics) if path is not None else None
        if path is not None and text_or_none is not None and text_or_none.strip():
            result.custom_prompt, result.custom_prompt_source = text_or_none, str(path)
    if append_system_prompt:
        for value in append_system_prompt:
            text, source = resolve_prompt_input(value, cwd, result.diagnostics)
            if text.strip():
                result.append.append(text)
                result.append_sources.append(source)
    else:
        path = discover_system_file(APPEND_SYSTEM_FILE_NAME, cwd, agent_dir=agent_dir, project_trusted=project_trusted)
        text_or_none = _read(path, result.diagnostics) if path is not None else None
        if path is not None and text_or_none is not None and text_or_none.strip():
            result.append.append(text_or_none)
            result.append_sources.append(str(path))
    return result


__all__ = [
    "APPEND_SYSTEM_FILE_NAME",
    "SYSTEM_FILE_NAME",
    "SystemPromptFiles",
    "discover_system_file",
    "load_system_prompt_files",
    "resolve_prompt_input",
]
