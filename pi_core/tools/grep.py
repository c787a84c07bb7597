"""The ``grep`` tool: search file contents, with ``rg`` when installed and a
pure-Python search otherwise. Both honour ``.gitignore``, include hidden files and
skip ``.git``; the Python search uses Python regular expressions."""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from pi_hookspecs import AbortSignal, ToolDefinition, ToolResult

from ._common import (
    ToolArgs,
    ToolError,
    ctx_signal,
    define_tool,
    listing_result,
    raise_if_aborted,
    read_only_annotations,
    run_stoppable,
    search_root,
)
from .truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line

DEFAULT_LIMIT = 100


class GrepArgs(ToolArgs):
    pattern: str = Field(description="Regular expression (or literal text with literal=true) to search for")
    path: str | None = Field(default=None, description="Directory or file to search (default: the working directory)")
    glob: str | None = Field(
        default=None, description="Only search files matching this glob, e.g. '*.py' or '**/*.test.ts'"
    )
    ignoreCase: bool | None = Field(default=None, description="Match case-insensitively (default: false)")
    literal: bool | None = Field(
        default=None, description="Treat the pattern as literal text, not a regex (default: false)"
    )
    context: int | None = Field(default=None, description="Lines to show before and after each match (default: 0)")
    limit: int | None = Field(
        default=None, ge=1, description=f"Largest number of matches to return (default: {DEFAULT_LIMIT})"
    )


DESCRIPTION = (
    "Search file contents for a pattern and return the matching lines with file paths and line numbers. "
    "Honours .gitignore. Output stops after "
    f"{DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB, whichever comes first; lines longer than "
    f"{GREP_MAX_LINE_LENGTH} characters are cut."
)


@dataclass
class _Match:
    path: str
    line: int
    text: str | None = None


def _json_text(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    text = value.get("text")
    if isinstance(text, str):
        return text
    if isinstance(value.get("bytes"), str):
        return base64.b64decode(value["bytes"]).decode("utf-8", errors="replace")
    return None


async def _rg_matches(
    rg: str, args: GrepArgs, search_path: str, limit: int, signal: AbortSignal | None
) -> tuple[list[_Match], bool]:
    from .external import stream_lines

    argv = [rg, "--json", "--line-number", "--color=never", "--hidden", "--no-require-git"]
    if args.ignoreCase:
        argv.append("--ignore-case")
    if args.literal:
        argv.append("--fixed-strings")
    # rg's --glob overrides .gitignore; a file type does not. Name globs become a type;
    # globs with a directory part are applied to rg's results.
    path_glob: str | None = None
    if args.glob:
        negated = args.glob.startswith("!")
        pattern = args.glob[1:] if negated else args.glob
        if "/" in pattern.rstrip("/"):
            path_glob = args.glob
        else:
            argv += ["--type-add", f"piglob:{pattern}", "--type-not" if negated else "--type", "piglob"]
    argv += ["--glob", "!.git", "--", args.pattern, search_path]
    matches: list[_Match] = []
    is_dir = os.path.isdir(search_path)

    def on_line(line: str) -> bool:
        try:
            event = json.loads(line)
        except ValueError:
            return True
        if event.get("type") != "match":
            return True
        data = event.get("data") or {}
        path, number = _json_text(data.get("path")), data.get("line_number")
        if path is None or not isinstance(number, int):
            return True
        if (
            path_glob
            and is_dir
            and not _glob_allows(path_glob, os.path.relpath(path, search_path).replace(os.sep, "/"))
        ):
            return True
        matches.append(_Match(path, number, _json_text(data.get("lines"))))
        return len(matches) <= limit

    result = await stream_lines(argv, on_line, signal)
    if not result.stopped and result.returncode not in (0, 1):
        raise ToolError(result.stderr.strip() or f"ripgrep exited with code {result.returncode}")
    return matches[:limit], len(matches) > limit


def _compile(args: GrepArgs) -> re.Pattern[str]:
    source = re.escape(args.pattern) if args.literal else args.pattern
    try:
        return re.compile(source, re.IGNORECASE if args.ignoreCase else 0)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {args.pattern!r}: {exc}") from None


def _glob_allows(glob: str | None, rel: str) -> bool:
    from .walk import glob_matches

    if not glob:
        return True
    if glob.startswith("!"):
        return not glob_matches(glob[1:], rel, anchored=True)
    return glob_matches(glob, rel, anchored=True)


_LINE_PIECE_BYTES = 1024 * 1024
"""The most of one line the Python search holds: a longer line is searched in pieces
of this size (a match spanning two pieces is missed), so a huge file never loads whole."""

_WHOLE_FILE_BYTES = 8 * 1024 * 1024
"""Context lines of a file up to this size are read at once (and kept for the other
matches in it); a larger file is streamed for each match's lines."""


def _search_file(path: str, regex: re.Pattern[str], matches: list[_Match], limit: int) -> None:
    """Append the matching lines of ``path``, read a line (at most a piece) at a time.
    A file with a NUL byte is binary and skipped, as rg does."""
    found: list[_Match] = []
    try:
        with open(path, "rb") as handle:
            number, matched, start = 1, False, ""
            while len(matches) + len(found) <= limit:
                piece = handle.readline(_LINE_PIECE_BYTES)
                if not piece:
                    break
                if b"\x00" in piece:
                    return
                ends = piece.endswith(b"\n")
                line = piece[:-1].decode("utf-8", errors="replace") if ends else piece.decode("utf-8", errors="replace")
                start = start or line  # the line's first piece: what the output shows of it
                if not matched and regex.search(line.removesuffix("\r")):
                    found.append(_Match(path, number, start))
                    matched = True
                if ends:
                    number, matched, start = number + 1, False, ""
    except OSError:
        return
    matches.extend(found)


def _python_matches(
    args: GrepArgs, search_path: str, is_dir: bool, limit: int, stop: threading.Event
) -> tuple[list[_Match], bool]:
    from .walk import walk

    regex = _compile(args)
    matches: list[_Match] = []
    if not is_dir:
        if os.path.isfile(search_path):
            _search_file(search_path, regex, matches, limit)
    else:
        for entry in walk(search_path, stop=stop):
            if not entry.is_file or not _glob_allows(args.glob, entry.rel):
                continue
            _search_file(entry.path, regex, matches, limit)
            if len(matches) > limit or stop.is_set():
                break
    return matches[:limit], len(matches) > limit


class _Formatter:
    def __init__(self, search_path: str, is_dir: bool, context: int) -> None:
        self.search_path = search_path
        self.is_dir = is_dir
        self.context = context
        self.files: dict[str, list[str]] = {}
        self.lines_truncated = False

    def shown_path(self, path: str) -> str:
        if self.is_dir:
            rel = os.path.relpath(path, self.search_path)
            if rel != "." and not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        return os.path.basename(path)

    def _lines(self, path: str, first: int, last: int) -> tuple[int, list[str]]:
        """``(first, lines)``: lines ``first`` to ``last`` (1-based) of ``path`` as far as
        the file has them; a small file is read once and kept, a large one streamed."""
        if path not in self.files:
            try:
                if os.path.getsize(path) > _WHOLE_FILE_BYTES:
                    return first, _stream_lines(path, first, last)
                with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                    text = handle.read()
                self.files[path] = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            except OSError:
                self.files[path] = []
        return first, self.files[path][first - 1 : last]

    def _cut(self, text: str) -> str:
        cut, was_cut = truncate_line(text)
        self.lines_truncated = self.lines_truncated or was_cut
        return cut

    def block(self, match: _Match) -> list[str]:
        shown = self.shown_path(match.path)
        if self.context == 0 and match.text is not None:
            text = match.text.replace("\r\n", "\n").replace("\r", "").removesuffix("\n")
            return [f"{shown}:{match.line}: {self._cut(text)}"]
        first, lines = self._lines(match.path, max(1, match.line - self.context), match.line + self.context)
        if not lines:
            return [f"{shown}:{match.line}: (unable to read file)"]
        out = []
        for number, line in enumerate(lines, start=first):
            text = self._cut(line)
            out.append(f"{shown}:{number}: {text}" if number == match.line else f"{shown}-{number}- {text}")
        return out


def _stream_lines(path: str, first: int, last: int) -> list[str]:
    """Lines ``first`` to ``last`` (1-based; split at ``\\n``, a final ``\\r`` dropped)
    of a large file, reading it a piece at a time; of a line longer than a piece only
    its first piece is kept (the output shows its first characters only)."""
    lines: list[str] = []
    with open(path, "rb") as handle:
        number, fresh = 1, True
        while number <= last:
            piece = handle.readline(_LINE_PIECE_BYTES)
            if not piece:
                break
            ends = piece.endswith(b"\n")
            if fresh and number >= first:
                lines.append(piece.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace"))
            fresh = ends
            if ends:
                number += 1
    return lines


async def run_grep(args: GrepArgs, ctx: Any, *, use_rg: bool | None = None) -> ToolResult:
    from .external import find_executable

    signal = ctx_signal(ctx)
    raise_if_aborted(signal)
    search_path = search_root(args.path, ctx)
    is_dir = os.path.isdir(search_path)
    limit = max(1, args.limit or DEFAULT_LIMIT)
    rg = find_executable("rg") if use_rg is not False else None
    if rg is not None:
        matches, limit_reached = await _rg_matches(rg, args, search_path, limit, signal)
    else:
        matches, limit_reached = await run_stoppable(signal, _python_matches, args, search_path, is_dir, limit)
    if not matches:
        return ToolResult.text("No matches found")
    formatter = _Formatter(search_path, is_dir, max(0, args.context or 0))
    lines = [line for match in matches for line in formatter.block(match)]
    notes: list[tuple[str, str, Any]] = []
    if formatter.lines_truncated:
        notice = f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        notes.append((notice, "linesTruncated", True))
    return listing_result(
        lines,
        limit=limit,
        limit_reached=limit_reached,
        unit="matches",
        limit_key="matchLimitReached",
        refine=True,
        notes=notes,
    )


def create_grep_tool(*, use_rg: bool | None = None) -> ToolDefinition:
    """``use_rg=False`` always uses the Python search; ``None`` uses ``rg`` when it is on
    ``PATH`` at call time."""

    async def run(args: GrepArgs, ctx: Any) -> ToolResult:
        return await run_grep(args, ctx, use_rg=use_rg)

    return define_tool(
        name="grep",
        description=DESCRIPTION,
        args_model=GrepArgs,
        run=run,
        prompt_snippet="Search file contents for patterns (honours .gitignore)",
        prompt_guidelines=["Use grep to search file contents instead of running grep or rg through bash."],
        annotations=read_only_annotations("Search file contents"),
        default_active=False,
    )
