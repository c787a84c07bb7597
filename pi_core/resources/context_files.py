"""Context files: ``AGENTS.md`` and friends, the instructions a directory gives the model.

Each directory contributes at most one file, the first of ``AGENTS.override.md``,
``AGENTS.md``, ``AGENTS.MD``, ``CLAUDE.md``, ``CLAUDE.MD`` that is a regular,
readable file. The agent directory comes first, then every directory from the
filesystem root down to the working directory (general first, specific last). The
same file reached twice (same real path) is loaded once; a byte-order mark is
stripped. Only the first :data:`MAX_CONTEXT_FILE_BYTES` (256 KiB) of a file are read and
sent; a larger file is cut there, with a marker and one diagnostic naming it. Context
files load whether or not the project is trusted; ``--no-context-files`` turns the
whole discovery off.

When the working directory is inside a linked git worktree nested in its main
worktree, and both worktree roots hold a context file of the same name, the main
worktree's copy is skipped: it is the same repository's instructions, checked out
twice.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path

from pi_hookspecs import ContextFile
from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from ._files import absolute_path, canonical_path, format_bytes, read_text, read_text_head
from .diagnostics import ResourceDiagnostic

CONTEXT_FILE_NAMES: tuple[str, ...] = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")

MAX_CONTEXT_FILE_BYTES = 256 * 1024
"""The most of one context file that is read and sent to the model: a larger file is
cut after its last complete line within the limit, a marker says so, and one error
diagnostic names the file."""


@dataclass
class ContextFilesResult:
    """The context files found (``AGENTS.md`` …) and the problems met."""

    files: list[ContextFile] = field(default_factory=list)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)


def load_context_file(directory: Path, diagnostics: list[ResourceDiagnostic] | None = None) -> ContextFile | None:
    """The context file of one directory, or ``None``. A candidate that cannot be read is
    reported and the next one is tried."""
    for name in CONTEXT_FILE_NAMES:
        path = directory / name
        try:
            if not path.is_file():
                continue
            content, size = read_text_head(path, MAX_CONTEXT_FILE_BYTES)
            if size > MAX_CONTEXT_FILE_BYTES:
                limit = format_bytes(MAX_CONTEXT_FILE_BYTES)
                content += (
                    f"\n\n[pi: this file is {format_bytes(size)}; only its first {limit} were loaded "
                    f"(context files are capped at {limit}).]"
                )
                if diagnostics is not None:
                    # an error, not a warning: the user must hear that the model sees part of it
                    message = (
                        f"context file is {format_bytes(size)}, larger than the {limit} limit; "
                        f"only its first {limit} are sent to the model"
                    )
                    diagnostics.append(ResourceDiagnostic("error", message, str(path), kind="context"))
            return ContextFile(path=str(path), content=content)
        except OSError as exc:
            if diagnostics is not None:
                diagnostics.append(
                    ResourceDiagnostic(
                        "warning", f"cannot read context file: {exc.strerror or exc}", str(path), kind="context"
                    )
                )
    return None


def _main_worktree_root(directory: Path) -> Path | None:
    """For the root of a linked git worktree (``.git`` is a file), the root of its main
    worktree; otherwise ``None``."""
    marker = directory / ".git"
    try:
        if not marker.is_file():
            return None
        first = read_text(marker).splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    gitdir = Path(first[len("gitdir:") :].strip())
    if not gitdir.is_absolute():
        gitdir = directory / gitdir
    common = gitdir
    try:
        common_ref = (gitdir / "commondir").read_text(encoding="utf-8").strip()
        common = Path(common_ref) if Path(common_ref).is_absolute() else gitdir / common_ref
    except OSError:
        if gitdir.parent.name == "worktrees":
            common = gitdir.parent.parent
    common = Path(canonical_path(common))
    if common.name != ".git":
        return None
    return common.parent


def load_context_files(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: Path | None = None,
    enabled: bool = True,
) -> ContextFilesResult:
    """The context files for ``cwd``: the agent directory's first, then root -> ``cwd``.
    ``enabled=False`` (``--no-context-files``) loads none."""
    result = ContextFilesResult()
    if not enabled:
        return result
    seen: set[str] = set()
    adir = agent_dir if agent_dir is not None else default_agent_dir()
    user_file = load_context_file(absolute_path(adir), result.diagnostics)
    if user_file is not None:
        result.files.append(user_file)
        seen.add(canonical_path(user_file.path))

    chain: list[Path] = []
    current = absolute_path(cwd)
    while True:
        chain.append(current)
        if current.parent == current:
            break
        current = current.parent

    shadowed: dict[str, set[str]] = {}  # main worktree root -> context file names of nested worktrees
    found: list[ContextFile] = []
    for directory in chain:  # cwd first, root last
        context = load_context_file(directory, result.diagnostics)
        if context is not None:
            name = Path(context.path).name
            if name in shadowed.get(canonical_path(directory), set()):
                context = None
        if context is not None:
            real = canonical_path(context.path)
            if real not in seen:
                seen.add(real)
                found.append(context)
        main_root = _main_worktree_root(directory)
        if main_root is not None and context is not None:
            shadowed.setdefault(str(main_root), set()).add(Path(context.path).name)
    result.files.extend(reversed(found))
    return result


__all__ = [
    "CONTEXT_FILE_NAMES",
    "MAX_CONTEXT_FILE_BYTES",
    "ContextFilesResult",
    "load_context_file",
    "load_context_files",
]
