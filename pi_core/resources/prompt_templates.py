"""Prompt templates: Markdown files that become ``/name`` commands.

``review.md`` is the command ``/review``. Its frontmatter may give a ``description``
(otherwise the first non-empty line, cut at 60 characters) and an
``argument-hint``. Typing ``/review a "b c"`` expands the template body with the
arguments (``parse_command_args``, ``substitute_args``).

Templates are found in ``<agent dir>/prompts`` and, when the project is trusted,
``.pi/prompts`` (direct ``.md`` children only), in the ``prompts`` settings lists, in
``--prompt-template`` paths and in paths from the ``resources_discover`` hook. The
first template of a name wins (project settings, project directory, user settings,
user directory, command line, hook); later ones are reported as collisions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import field
from pathlib import Path

from pi_hookspecs.record import dataclass

from .._paths import project_dir
from ._discovery import Candidate, discovery_scope, load_first_by_name, markdown_candidates, settings_entries
from ._files import (
    FrontmatterError,
    absolute_path,
    entry_kind,
    parse_frontmatter,
    read_text,
)
from .diagnostics import ResourceDiagnostic
from .settings import ResourceEntries, Settings

DESCRIPTION_FALLBACK_LENGTH = 60


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt template file: its name, description and text."""

    name: str
    description: str
    content: str
    file_path: str
    source: str = "path"
    argument_hint: str | None = None


@dataclass
class PromptTemplatesResult:
    """The prompt templates found and the problems met."""

    templates: list[PromptTemplate] = field(default_factory=list)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)

    def get(self, name: str) -> PromptTemplate | None:
        return next((t for t in self.templates if t.name == name), None)


# --------------------------------------------------------------------------- arguments


def parse_command_args(text: str) -> list[str]:
    """Split command arguments the way a shell would, in a forgiving way.

    Whitespace separates arguments. A quote (``"`` or ``'``) starts quoting only at
    the beginning of an argument and only when a matching closing quote follows;
    otherwise it is ordinary text (``doesn't`` stays one word, an unmatched ``"`` is
    kept). Inside quotes a backslash before the same quote character yields that
    quote; other backslashes are kept as typed. ``""`` is an empty argument.
    """
    args: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        current: list[str] = []
        if text[i] in "\"'":
            quote = text[i]
            j = i + 1
            quoted: list[str] = []
            closed = False
            while j < n:
                char = text[j]
                if char == "\\" and j + 1 < n and text[j + 1] == quote:
                    quoted.append(quote)
                    j += 2
                    continue
                if char == quote:
                    closed = True
                    break
                quoted.append(char)
                j += 1
            if closed:
                current += quoted
                i = j + 1
            else:
                current.append(quote)
                i += 1
        while i < n and not text[i].isspace():
            current.append(text[i])
            i += 1
        args.append("".join(current))
    return args


_PLACEHOLDER = re.compile(
    r"\$(?:"
    r"(?P<all>ARGUMENTS|@)"
    r"|(?P<pos>\d+)"
    r"|\{(?P<dpos>\d+):-(?P<ddefault>[^}]*)\}"
    r"|\{@:-(?P<adefault>[^}]*)\}"
    r"|\{@:(?P<start>\d+)(?::(?P<length>\d+))?\}"
    r")"
)


def substitute_args(template: str, args: Sequence[str]) -> str:
    """Fill ``template`` with ``args`` in one pass (values are never substituted again).

    ``$1`` … ``$N``: one argument ("" when missing); ``$@`` and ``$ARGUMENTS``: all,
    joined with spaces; ``${N:-default}``: argument N, or ``default`` when missing or
    empty; ``${@:-default}``: all arguments, or ``default`` when there are none;
    ``${@:N}``: the arguments from N on; ``${@:N:L}``: L arguments from N on. Any other
    ``$`` is kept.
    """
    everything = " ".join(args)

    def arg(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(match: re.Match[str]) -> str:
        if match.group("all") is not None:
            return everything
        if match.group("pos") is not None:
            return arg(match.group("pos"))
        if match.group("dpos") is not None:
            return arg(match.group("dpos")) or match.group("ddefault")
        if match.group("adefault") is not None:
            return everything or match.group("adefault")
        start = max(0, int(match.group("start")) - 1)
        length = match.group("length")
        chosen = args[start:] if length is None else args[start : start + int(length)]
        return " ".join(chosen)

    return _PLACEHOLDER.sub(replace, template)


_COMMAND = re.compile(r"^/(\S+)(?:\s+([\s\S]*))?$")


def expand_prompt_template(text: str, templates: Iterable[PromptTemplate]) -> str:
    """``/name args`` expanded with the template ``name``; any other text unchanged."""
    match = _COMMAND.match(text)
    if match is None:
        return text
    template = next((t for t in templates if t.name == match.group(1)), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(match.group(2) or ""))


# --------------------------------------------------------------------------- loading


def load_prompt_template(path: Path, source: str = "path") -> tuple[PromptTemplate | None, list[ResourceDiagnostic]]:
    """The template in ``path`` (``None`` when it cannot be read or parsed, with a warning)."""
    diagnostics: list[ResourceDiagnostic] = []
    try:
        frontmatter, body = parse_frontmatter(read_text(path))
    except (OSError, FrontmatterError) as exc:
        message = f"cannot read prompt template: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
        diagnostics.append(
            ResourceDiagnostic("error", f"{message}; the template is not loaded", str(path), kind="prompt")
        )
        return None, diagnostics
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        first = next((line.strip() for line in body.split("\n") if line.strip()), "")
        description = first[:DESCRIPTION_FALLBACK_LENGTH] + ("..." if len(first) > DESCRIPTION_FALLBACK_LENGTH else "")
    hint = frontmatter.get("argument-hint")
    template = PromptTemplate(
        name=path.name[: -len(".md")] if path.name.endswith(".md") else path.name,
        description=description.strip(),
        content=body,
        file_path=str(path),
        source=source,
        argument_hint=str(hint) if hint is not None and str(hint).strip() else None,
    )
    return template, diagnostics


def template_files(directory: Path) -> list[Path]:
    """The ``.md`` files directly in ``directory`` (symlinks followed), sorted."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.name.endswith(".md") and entry_kind(e)[1]]


def _candidates(
    paths: Iterable[Path],
    source: str,
    entries: ResourceEntries | None,
    diagnostics: list[ResourceDiagnostic],
    *,
    warn_missing: bool = True,
) -> list[Candidate]:
    return markdown_candidates(
        paths,
        source,
        entries,
        diagnostics,
        files_in=template_files,
        label="prompt template",
        kind="prompt",
        warn_missing=warn_missing,
    )


def load_prompt_templates(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: Path | None = None,
    settings: Settings | None = None,
    project_trusted: bool | None = None,
    cli_paths: Sequence[str] = (),
    extension_paths: Sequence[str] = (),
    include_defaults: bool = True,
) -> PromptTemplatesResult:
    """Every prompt template for ``cwd`` in precedence order (see the module docstring).
    ``include_defaults=False`` (``--no-prompt-templates``) keeps only ``cli_paths`` and
    ``extension_paths``."""
    scope = discovery_scope(cwd, agent_dir, settings, project_trusted)
    result = PromptTemplatesResult()
    candidates: list[Candidate] = []
    if include_defaults:
        project_entries, user_entries = settings_entries(scope.settings, "prompts", scope.trusted, result.diagnostics)
        if scope.trusted:
            if project_entries is not None:
                candidates += _candidates(project_entries.paths, "project", project_entries, result.diagnostics)
            candidates += _candidates(
                [project_dir(scope.cwd) / "prompts"], "project", project_entries, result.diagnostics, warn_missing=False
            )
        if user_entries is not None:
            candidates += _candidates(user_entries.paths, "user", user_entries, result.diagnostics)
        candidates += _candidates(
            [absolute_path(scope.agent_dir) / "prompts"], "user", user_entries, result.diagnostics, warn_missing=False
        )
    for source, paths in scope.given_paths(cli_paths, extension_paths):
        candidates += _candidates(paths, source, None, result.diagnostics)
    result.templates += load_first_by_name(
        candidates,
        load_prompt_template,
        result.diagnostics,
        "prompt template /{name} is already defined by {winner}; this one is not loaded",
    )
    return result


__all__ = [
    "PromptTemplate",
    "PromptTemplatesResult",
    "expand_prompt_template",
    "load_prompt_template",
    "load_prompt_templates",
    "parse_command_args",
    "substitute_args",
    "template_files",
]
