"""What the Markdown resource loaders (skills, prompt templates) share (private):
where to look (:func:`discovery_scope`), the settings lists, the candidate files of
explicit paths, and the rule that the first resource of a name wins."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from ._files import absolute_path, canonical_path, resolve_entry
from .diagnostics import DiagnosticKind, ResourceDiagnostic
from .settings import ResourceEntries, ResourceKind, Settings, SettingsError, load_settings


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def file_path(self) -> str: ...


R = TypeVar("R", bound=_Named)


@dataclass(frozen=True)
class Scope:
    """Where a loader looks: the agent directory, the working directory (absolute),
    the settings and whether the project is trusted."""

    agent_dir: Path
    cwd: Path
    settings: Settings
    trusted: bool

    def given_paths(self, cli_paths: Sequence[str], extension_paths: Sequence[str]) -> list[tuple[str, list[Path]]]:
        """``--skill``/``--prompt-template``-style paths and ``resources_discover``
        results, resolved against the working directory, with their source names."""
        return [
            ("cli", [resolve_entry(p, self.cwd) for p in cli_paths]),
            ("extension", [resolve_entry(p, self.cwd) for p in extension_paths]),
        ]


def discovery_scope(
    cwd: str | os.PathLike[str], agent_dir: Path | None, settings: Settings | None, project_trusted: bool | None
) -> Scope:
    """The :class:`Scope` of a loader call: the settings are loaded when not given,
    and ``project_trusted`` defaults to theirs."""
    adir = agent_dir if agent_dir is not None else default_agent_dir()
    base = absolute_path(cwd)
    if settings is None:
        settings = load_settings(base, agent_dir=adir, project_trusted=bool(project_trusted))
    trusted = settings.project_trusted if project_trusted is None else project_trusted
    return Scope(adir, base, settings, trusted)


@dataclass(frozen=True)
class Candidate:
    """A file that may hold a resource, where it was found and the settings list
    (if any) whose exclusions apply to it."""

    path: Path
    source: str
    entries: ResourceEntries | None = None


def settings_entries(
    settings: Settings, kind: ResourceKind, trusted: bool, diagnostics: list[ResourceDiagnostic]
) -> tuple[ResourceEntries | None, ResourceEntries | None]:
    """The ``kind`` lists of the project (``None`` unless ``trusted``) and user settings.
    A malformed list is reported and taken as none, so that the rest is still found."""
    try:
        scopes = {entries.scope: entries for entries in settings.resource_entries(kind)}
    except SettingsError as exc:
        diagnostics.append(ResourceDiagnostic("error", str(exc), None, kind="settings"))
        scopes = {}
    return (scopes.get("project") if trusted else None), scopes.get("user")


def markdown_candidates(
    paths: Iterable[Path],
    source: str,
    entries: ResourceEntries | None,
    diagnostics: list[ResourceDiagnostic],
    *,
    files_in: Callable[[Path], list[Path]],
    label: str,
    kind: DiagnosticKind,
    warn_missing: bool = True,
) -> list[Candidate]:
    """The candidates of explicit ``paths``: the ``files_in`` a directory, or a ``.md``
    file itself. Anything else is a warning about the ``label`` path (a missing path
    only with ``warn_missing``)."""
    found: list[Candidate] = []
    for path in paths:
        if path.is_dir():
            found += [Candidate(p, source, entries) for p in files_in(path)]
        elif path.is_file() and path.name.endswith(".md"):
            found.append(Candidate(path, source, entries))
        elif path.exists():
            diagnostics.append(
                ResourceDiagnostic("warning", f"{label} path is not a Markdown file", str(path), kind=kind)
            )
        elif warn_missing:
            diagnostics.append(ResourceDiagnostic("warning", f"{label} path does not exist", str(path), kind=kind))
    return found


def load_first_by_name(
    candidates: Iterable[Candidate],
    load: Callable[[Path, str], tuple[R | None, list[ResourceDiagnostic]]],
    diagnostics: list[ResourceDiagnostic],
    collision: str,
) -> list[R]:
    """``load`` each candidate (skipping those its settings list excludes and files
    already loaded, e.g. through a symlink or listed twice) and keep the first resource
    of each name; a later one is reported with the ``collision`` message (its
    ``{name}`` and ``{winner}``, the path of the first, filled in)."""
    processed: set[str] = set()
    winners: dict[str, R] = {}
    loaded: list[R] = []
    for candidate in candidates:
        if candidate.entries is not None and candidate.entries.excludes(candidate.path):
            continue
        real = canonical_path(candidate.path)
        if real in processed:
            continue
        processed.add(real)
        resource, found = load(candidate.path, candidate.source)
        diagnostics += found
        if resource is None:
            continue
        winner = winners.get(resource.name)
        if winner is not None:
            diagnostics.append(
                ResourceDiagnostic(
                    "warning",
                    collision.format(name=resource.name, winner=winner.file_path),
                    resource.file_path,
                    kind="collision",
                    winner_path=winner.file_path,
                )
            )
            continue
        winners[resource.name] = resource
        loaded.append(resource)
    return loaded
