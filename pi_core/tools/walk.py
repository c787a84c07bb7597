"""The pure-Python file walk behind ``grep`` and ``find`` when ``rg`` / ``fd`` are not
installed: hidden files included, ``.git`` skipped, ``.gitignore`` honoured.

Ignore rules come from ``.gitignore`` and ``.ignore`` files in every directory walked,
from those of the parent directories up to the enclosing repository root (the nearest
directory holding ``.git``) and from that repository's ``.git/info/exclude``. As in git,
a deeper file overrides a shallower one, the last matching line of a file wins, ``!``
re-includes, and nothing inside an ignored directory is visited. Symbolic links are
listed but not followed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE_NAMES = (".gitignore", ".ignore")
SKIPPED_NAMES = frozenset({".git"})


@dataclass(frozen=True)
class Entry:
    path: str
    """Absolute path."""
    rel: str
    """Path relative to the walk's root, ``/``-separated."""
    is_dir: bool
    is_symlink: bool
    is_file: bool
    """A regular file (not a link, FIFO, socket or device)."""


class _Rules:
    """The ignore specs in force in one directory, shallowest first, each with the
    absolute directory its patterns are relative to."""

    def __init__(self, specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.specs = specs

    def extended(self, directory: str) -> _Rules:
        spec = _load_spec(directory)
        return _Rules((*self.specs, (directory, spec))) if spec is not None else self

    def ignored(self, path: str, is_dir: bool) -> bool:
        for base, spec in reversed(self.specs):
            prefix = base if base.endswith(os.sep) else base + os.sep
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :].replace(os.sep, "/")
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                return bool(result.include)
        return False


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def _load_spec(directory: str) -> pathspec.GitIgnoreSpec | None:
    lines: list[str] = []
    for name in IGNORE_FILE_NAMES:
        lines.extend(_read_lines(os.path.join(directory, name)))
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    import pathspec  # only the Python fallback needs it

    return pathspec.GitIgnoreSpec.from_lines(lines)


def repo_root(directory: str) -> str | None:
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def initial_rules(root: str) -> _Rules:
    """The rules of the directories above ``root`` (within its repository)."""
    repo = repo_root(root)
    if repo is None:
        return _Rules()
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = os.path.join(".git", "info", "exclude")
    chain = []
    current = os.path.dirname(root) if root != repo else None
    while current is not None:
        chain.append(current)
        if current == repo:
            break
        parent = os.path.dirname(current)
        current = None if parent == current else parent
    for directory in reversed(chain):
        spec = _load_spec(directory)
        if spec is not None:
            specs.append((directory, spec))
    exclude_lines = _read_lines(os.path.join(repo, exclude))
    if any(line.strip() and not line.startswith("#") for line in exclude_lines):
        import pathspec  # ~20 ms: only the Python fallback needs it

        specs.insert(0, (repo, pathspec.GitIgnoreSpec.from_lines(exclude_lines)))
    return _Rules(tuple(specs))


def walk(root: str, *, stop: threading.Event | None = None) -> Iterator[Entry]:
    """Every entry under ``root`` (not ``root`` itself) that the ignore rules let
    through, directories before their content, names sorted."""
    root = os.path.abspath(root)
    rules = initial_rules(root)
    if rules.ignored(root, True):
        # The root was named explicitly: search it even though its parents ignore it.
        rules = _Rules()
    yield from _walk_dir(root, root, rules.extended(root), stop)


def _walk_dir(root: str, directory: str, rules: _Rules, stop: threading.Event | None) -> Iterator[Entry]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if stop is not None and stop.is_set():
            return
        if entry.name in SKIPPED_NAMES:
            continue
        try:
            is_symlink = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if rules.ignored(entry.path, is_dir):
            continue
        rel = os.path.relpath(entry.path, root).replace(os.sep, "/")
        yield Entry(entry.path, rel, is_dir, is_symlink, is_file)
        if is_dir:
            yield from _walk_dir(root, entry.path, rules.extended(entry.path), stop)


# --------------------------------------------------------------------------- globs


@lru_cache(maxsize=256)
def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A glob as a test of ``/``-separated paths (wcmatch): ``**`` spans directories,
    ``*`` and ``?`` stay within one and match dot files too, ``[...]`` and ``{a,b}``
    work, ``\\`` escapes."""
    from wcmatch import glob  # kept off the startup path: only a find/grep glob needs it

    return glob.compile(pattern, flags=glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.FORCEUNIX).match


def glob_matches(pattern: str, rel: str, *, anchored: bool) -> bool:
    """Whether ``rel`` (a ``/``-separated path below the search root) matches ``pattern``.

    A pattern without ``/`` is matched against the last path component. One with ``/``
    against the whole path: from the search root when ``anchored``, else at any depth.
    """
    pattern = pattern.rstrip("/") or pattern
    if "/" not in pattern:
        return glob_matcher(pattern)(rel.rsplit("/", 1)[-1])
    if pattern.startswith("/"):
        pattern = pattern.lstrip("/")
    elif not anchored and not pattern.startswith("**"):
        pattern = "**/" + pattern
    return glob_matcher(pattern)(rel)
