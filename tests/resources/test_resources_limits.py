"""Size limits of the files pi reads at startup: each is looked at (``stat``) before it
is read, and an oversized one is cut (context files) or refused (settings, trust store,
skills, prompt templates) with one diagnostic naming it, never read whole."""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pi_core.resources._files import MAX_RESOURCE_FILE_BYTES, FileTooLargeError, format_bytes, read_text, read_text_head
from pi_core.resources.context_files import MAX_CONTEXT_FILE_BYTES, load_context_files
from pi_core.resources.prompt_templates import load_prompt_template
from pi_core.resources.settings import SettingsError, load_settings, read_settings_file
from pi_core.resources.trust import TrustStore, TrustStoreError


def sparse(path: Path, head: bytes, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


@pytest.fixture
def no_whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ``read(n)`` of a file opened in binary mode is recorded; an unbounded one fails."""
    sizes: list[int] = []
    real_open = builtins.open

    class Guard:
        def __init__(self, handle: Any) -> None:
            self._handle = handle

        def read(self, n: int = -1) -> Any:
            assert n >= 0, "a whole-file read"
            sizes.append(n)
            return self._handle.read(n)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._handle, name)

        def __enter__(self) -> Guard:
            return self

        def __exit__(self, *exc: object) -> None:
            self._handle.close()

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        return Guard(handle) if "b" in mode else handle

    monkeypatch.setattr(builtins, "open", guarded_open)
    return sizes


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (10, 256 * 1024, 1536, 5 << 20, 512 << 20, 1 << 30)] == [
        "10 B",
        "256 KiB",
        "1.5 KiB",
        "5.0 MiB",
        "512.0 MiB",
        "1.0 GiB",
    ]


def test_a_huge_context_file_is_cut_at_a_line_with_a_marker_and_one_error(
    tmp_path: Path, no_whole_reads: list[int]
) -> None:
    project = tmp_path / "p"
    lines = "".join(f"rule {i}: keep it short\n" for i in range(250_000))  # ~6 MB
    (project).mkdir()
    (project / "AGENTS.md").write_text(lines)
    result = load_context_files(project, agent_dir=tmp_path / "agent")
    [context] = result.files
    body, marker = context.content.rsplit("\n\n", 1)
    assert len(body.encode()) <= MAX_CONTEXT_FILE_BYTES and body.endswith("keep it short\n") and lines.startswith(body)
    assert marker.startswith("[pi: this file is 6.3 MiB;") and "only its first 256 KiB were loaded" in marker
    [diagnostic] = result.diagnostics
    assert (
        diagnostic.level == "error" and diagnostic.kind == "context" and diagnostic.path == str(project / "AGENTS.md")
    )
    assert "larger than the 256 KiB limit" in diagnostic.message
    assert max(no_whole_reads) <= MAX_CONTEXT_FILE_BYTES + 1


def test_a_context_file_at_the_limit_is_whole(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"x" * MAX_CONTEXT_FILE_BYTES)
    result = load_context_files(tmp_path, agent_dir=tmp_path / "agent")
    assert result.files[0].content == "x" * MAX_CONTEXT_FILE_BYTES and result.diagnostics == []


def test_a_sparse_512mb_settings_file_is_refused_unread(tmp_path: Path, no_whole_reads: list[int]) -> None:
    agent = tmp_path / "agent"
    path = sparse(agent / "settings.json", b"{", 512 << 20)
    with pytest.raises(SettingsError) as caught:
        read_settings_file(path)
    assert (
        str(caught.value)
        == f"{path}: cannot read: the settings file is 512.0 MiB, larger than the 4.0 MiB limit; it was not read"
    )
    settings = load_settings(tmp_path, agent_dir=agent)
    assert [str(e) for e in settings.errors] == [str(caught.value)]
    assert no_whole_reads == []  # refused from its size alone


def test_settings_at_the_limit_still_load(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = json.dumps({"defaultModel": "m"})
    path.write_text(text + " " * (MAX_RESOURCE_FILE_BYTES - len(text)))
    assert read_settings_file(path) == {"defaultModel": "m"}


def test_read_text_refuses_a_file_over_its_limit(tmp_path: Path) -> None:
    path = sparse(tmp_path / "big.md", b"---\n", MAX_RESOURCE_FILE_BYTES + 1)
    with pytest.raises(FileTooLargeError) as caught:
        read_text(path)
    assert isinstance(caught.value, OSError) and "4.0 MiB" in str(caught.value.strerror)
    assert read_text_head(path, 4) == ("---\n", MAX_RESOURCE_FILE_BYTES + 1)


def test_a_huge_prompt_template_is_not_loaded(tmp_path: Path) -> None:
    path = sparse(tmp_path / "review.md", b"Review this\n", 1 << 30)
    template, diagnostics = load_prompt_template(path)
    assert template is None
    [diagnostic] = diagnostics
    assert "larger than the 4.0 MiB limit" in diagnostic.message and diagnostic.path == str(path)


def test_a_huge_skill_file_is_not_loaded(tmp_path: Path) -> None:
    from pi_core.resources.skills import load_skill_file

    path = sparse(tmp_path / "big" / "SKILL.md", b"---\nname: big\ndescription: Big.\n---\n", 1 << 30)
    skill, diagnostics = load_skill_file(path)
    assert skill is None
    [diagnostic] = diagnostics
    assert diagnostic.level == "error" and "larger than the 4.0 MiB limit" in diagnostic.message


def test_a_huge_trust_store_is_an_error_naming_it(tmp_path: Path) -> None:
    sparse(tmp_path / "trust.json", b"{", 64 << 20)
    with pytest.raises(TrustStoreError, match=re.escape("trust.json: cannot read: the file is 64.0 MiB")):
        TrustStore(tmp_path).read()
