"""Context files (AGENTS.md …) and SYSTEM.md / APPEND_SYSTEM.md."""

from __future__ import annotations

import textwrap
from pathlib import Path

from pi_core.resources.context_files import load_context_files
from pi_core.resources.system_files import load_system_prompt_files


def write(path: Path, text: str) -> Path:
    """Create ``path`` (and its parents) with ``text``, dedented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def paths(cwd: Path, agent_dir: Path, **kwargs: object) -> list[str]:
    return [f.path for f in load_context_files(cwd, agent_dir=agent_dir, **kwargs).files]  # type: ignore[arg-type]


def test_agent_dir_first_then_root_to_cwd(tmp_path: Path, agent_dir: Path) -> None:
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    write(agent_dir / "AGENTS.md", "global")
    write(tmp_path / "a" / "CLAUDE.md", "a")
    write(cwd / "AGENTS.md", "c")
    files = load_context_files(cwd, agent_dir=agent_dir).files
    assert [f.path for f in files] == [
        str(agent_dir / "AGENTS.md"),
        str(tmp_path / "a" / "CLAUDE.md"),
        str(cwd / "AGENTS.md"),
    ]
    assert [f.content for f in files] == ["global", "a", "c"]


def test_one_file_per_directory_in_candidate_order(tmp_path: Path, agent_dir: Path) -> None:
    for name in ("CLAUDE.md", "AGENTS.md", "AGENTS.override.md"):
        write(tmp_path / name, name)
    assert paths(tmp_path, agent_dir) == [str(tmp_path / "AGENTS.override.md")]
    (tmp_path / "AGENTS.override.md").unlink()
    assert paths(tmp_path, agent_dir) == [str(tmp_path / "AGENTS.md")]
    (tmp_path / "AGENTS.md").unlink()
    (tmp_path / "CLAUDE.md").unlink()
    (tmp_path / "CLAUDE.md").mkdir()  # not a regular file: skipped
    write(tmp_path / "CLAUDE.MD", "upper")
    assert paths(tmp_path, agent_dir) == [str(tmp_path / "CLAUDE.MD")]


def test_bom_stripped_and_duplicates_removed(tmp_path: Path, agent_dir: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes("\ufeffhello".encode())
    # the agent dir's file is the same file as the project's
    (agent_dir / "AGENTS.md").symlink_to(tmp_path / "AGENTS.md")
    files = load_context_files(tmp_path, agent_dir=agent_dir).files
    assert [(f.path, f.content) for f in files] == [(str(agent_dir / "AGENTS.md"), "hello")]


def test_subdirectories_are_not_searched_and_the_flag_disables(tmp_path: Path, agent_dir: Path) -> None:
    write(tmp_path / "src" / "AGENTS.md", "below cwd")
    write(tmp_path / "AGENTS.md", "here")
    assert paths(tmp_path, agent_dir) == [str(tmp_path / "AGENTS.md")]
    assert paths(tmp_path, agent_dir, enabled=False) == []


def test_nested_linked_worktree_shadows_the_main_worktree_file(tmp_path: Path, agent_dir: Path) -> None:
    main = tmp_path / "repo"
    (main / ".git" / "worktrees" / "feat").mkdir(parents=True)
    (main / ".git" / "worktrees" / "feat" / "commondir").write_text("../..\n")
    feat = main / "worktrees" / "feat"
    write(feat / ".git", f"gitdir: {main / '.git' / 'worktrees' / 'feat'}\n")
    write(main / "AGENTS.md", "main copy")
    write(feat / "AGENTS.md", "worktree copy")
    assert paths(feat, agent_dir) == [str(feat / "AGENTS.md")]
    # a different file name is not the same instructions: both load
    (main / "AGENTS.md").rename(main / "CLAUDE.md")
    assert paths(feat, agent_dir) == [str(main / "CLAUDE.md"), str(feat / "AGENTS.md")]


# --------------------------------------------------------------------------- SYSTEM.md / APPEND_SYSTEM.md


def test_trusted_project_file_wins_over_the_agent_dir(project: Path, agent_dir: Path) -> None:
    write(agent_dir / "SYSTEM.md", "agent system")
    write(agent_dir / "APPEND_SYSTEM.md", "agent append")
    write(project / ".pi" / "SYSTEM.md", "project system")
    write(project / ".pi" / "APPEND_SYSTEM.md", "project append")
    trusted = load_system_prompt_files(project, agent_dir=agent_dir, project_trusted=True)
    assert (trusted.custom_prompt, trusted.append) == ("project system", ["project append"])
    assert trusted.custom_prompt_source == str(project / ".pi" / "SYSTEM.md")
    untrusted = load_system_prompt_files(project, agent_dir=agent_dir, project_trusted=False)
    assert (untrusted.custom_prompt, untrusted.append) == ("agent system", ["agent append"])


def test_command_line_wins_and_reads_files(project: Path, agent_dir: Path) -> None:
    write(agent_dir / "SYSTEM.md", "agent system")
    write(agent_dir / "APPEND_SYSTEM.md", "agent append")
    write(project / "extra.md", "from a file")
    files = load_system_prompt_files(
        project, agent_dir=agent_dir, system_prompt="Be terse.", append_system_prompt=["extra.md", "inline"]
    )
    assert files.custom_prompt == "Be terse." and files.custom_prompt_source == "command line"
    assert files.append == ["from a file", "inline"]
    assert files.append_sources == [str(project / "extra.md"), "command line"]


def test_empty_system_md_counts_as_absent(project: Path, agent_dir: Path) -> None:
    write(agent_dir / "SYSTEM.md", "  \n")
    files = load_system_prompt_files(project, agent_dir=agent_dir)
    assert files.custom_prompt is None and files.append == []
