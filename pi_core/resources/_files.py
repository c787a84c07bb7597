"""Small filesystem helpers shared by the resource loaders (private)."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pathspec

BOM = "\ufeff"
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


def canonical_path(path: str | os.PathLike[str]) -> str:
    """The absolute path with ``~`` expanded and symlinks resolved (as far as they exist)."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(path))))


def absolute_path(path: str | os.PathLike[str]) -> Path:
    """The absolute, normalised path (``~`` expanded, symlinks kept)."""
    return Path(os.path.normpath(os.path.abspath(os.path.expanduser(os.fspath(path)))))


def resolve_entry(entry: str, base: Path) -> Path:
    """A path from a settings file or the command line: ``~`` expanded, relative to ``base``."""
    expanded = os.path.expanduser(entry.strip())
    path = Path(expanded)
    if not path.is_absolute():
        path = base / path
    return absolute_path(path)


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith(BOM) else text


MAX_RESOURCE_FILE_BYTES = 4 * 1024 * 1024
"""The largest resource file (settings, skill, prompt template, ``SYSTEM.md`` …) pi
reads: a larger one is refused from its size alone, never read."""


def format_bytes(size: int) -> str:
    """``512 B``, ``256 KiB``, ``5.0 MiB``, ``1.0 GiB``."""
    if size < 1024:
        return f"{size} B"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size // 1024} KiB" if size % 1024 == 0 else f"{size / 1024:.1f} KiB"


class FileTooLargeError(OSError):
    """A file over a size limit; ``strerror`` says its size and the limit."""

    def __init__(self, path: str | os.PathLike[str], size: int, limit: int, what: str = "file") -> None:
        super().__init__(
            errno.EFBIG,
            f"the {what} is {format_bytes(size)}, larger than the {format_bytes(limit)} limit; it was not read",
            os.fspath(path),
        )
        self.size = size
        self.limit = limit


def check_file_size(path: str | os.PathLike[str], limit: int, what: str = "file") -> int:
    """The size of ``path`` (``stat``, nothing read); raises :class:`FileTooLargeError`
    when it is over ``limit`` and ``OSError`` when it cannot be looked at."""
    size = os.stat(path).st_size
    if size > limit:
        raise FileTooLargeError(path, size, limit, what)
    return size


def read_text(path: Path, *, limit: int = MAX_RESOURCE_FILE_BYTES) -> str:
    """A text file's content: UTF-8 (undecodable bytes replaced), BOM stripped. A file
    over ``limit`` bytes raises :class:`FileTooLargeError` (an ``OSError``) unread."""
    check_file_size(path, limit)
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)  # a file that grew since stat is still cut off
    if len(data) > limit:
        raise FileTooLargeError(path, len(data), limit)
    return strip_bom(data.decode("utf-8", errors="replace"))


def read_text_head(path: Path, limit: int) -> tuple[str, int]:
    """``(text, size)``: the first ``limit`` bytes of a text file at most (cut after its
    last complete line when there is one; UTF-8, undecodable bytes replaced, BOM
    stripped) and the file's size, so that the caller can tell whether it was cut."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1)
    if len(data) > limit:
        size = max(size, len(data))
        data = data[:limit]
        newline = data.rfind(b"\n")
        if newline > 0:
            data = data[: newline + 1]
    return strip_bom(data.decode("utf-8", errors="replace")), size


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


class FrontmatterError(ValueError):
    """The YAML frontmatter of a Markdown file cannot be parsed."""


_OPENING = re.compile(r"---[ \t]*\n")
_CLOSING = re.compile(r"^---[ \t]*$", re.MULTILINE)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """``(yaml_text, body)``. ``yaml_text`` is ``None`` when the text does not start
    with a ``---`` line closed by another ``---`` line; the body is stripped."""
    text = normalize_newlines(strip_bom(text))
    opening = _OPENING.match(text)
    if opening is None:
        return None, text.strip()
    closing = _CLOSING.search(text, opening.end())
    if closing is None:
        return None, text.strip()
    yaml_text = text[opening.end() : closing.start()]
    return yaml_text, text[closing.end() :].strip()


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """``(frontmatter, body)``; ``{}`` without frontmatter. Raises :class:`FrontmatterError`
    for invalid YAML or frontmatter that is not a mapping."""
    yaml_text, body = split_frontmatter(text)
    if yaml_text is None or not yaml_text.strip():
        return {}, body
    import yaml  # type: ignore[import-untyped]  # imported on first use: most commands never read frontmatter

    try:
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontmatterError(f"invalid YAML frontmatter{where}: {problem}") from exc
    if data is None:
        return {}, body
    if not isinstance(data, Mapping):
        raise FrontmatterError(f"frontmatter must be a mapping of keys to values, found {type(data).__name__}")
    return {str(k): v for k, v in data.items()}, body


def find_git_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a ``.git`` entry."""
    current = start
    while True:
        if os.path.lexists(current / ".git"):
            return current
        if current.parent == current:
            return None
        current = current.parent


def ancestors_to_git_root(start: Path) -> list[Path]:
    """``start`` and its parents up to the git root (or the filesystem root without one)."""
    root = find_git_root(start)
    chain = [start]
    current = start
    while current != root and current.parent != current:
        current = current.parent
        chain.append(current)
    return chain


def entry_kind(entry: os.DirEntry[str]) -> tuple[bool, bool]:
    """``(is_dir, is_file)`` of a directory entry, following symlinks; a broken link is neither."""
    try:
        return entry.is_dir(follow_symlinks=True), entry.is_file(follow_symlinks=True)
    except OSError:
        return False, False


class IgnoreRules:
    """``.gitignore`` / ``.ignore`` / ``.fdignore`` rules met while walking down a tree.

    Each file's patterns match paths relative to its own directory; a deeper file's
    rules are checked after a shallower one's, so a deeper ``!pattern`` re-includes.
    """

    def __init__(self, specs: tuple[tuple[Path, pathspec.PathSpec[Any]], ...] = ()) -> None:
        self._specs = specs

    def entering(self, directory: Path) -> IgnoreRules:
        """The rules in force inside ``directory`` (its own ignore files added)."""
        lines: list[str] = []
        for name in IGNORE_FILE_NAMES:
            candidate = directory / name
            try:
                if candidate.is_file():
                    lines.extend(normalize_newlines(read_text(candidate)).split("\n"))
            except OSError:
                continue
        if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
            return self
        import pathspec  # ~20 ms: only a resource folder that has ignore files needs it

        return IgnoreRules((*self._specs, (directory, pathspec.PathSpec.from_lines("gitignore", lines))))

    def ignores(self, path: Path, *, is_dir: bool) -> bool:
        verdict: bool | None = None
        for base, spec in self._specs:
            relative = os.path.relpath(path, base).replace(os.sep, "/")
            if relative.startswith(".."):
                continue
            result = spec.check_file(relative + "/" if is_dir else relative).include
            if result is not None:
                verdict = result
        return bool(verdict)
