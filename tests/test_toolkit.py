"""``pi_hookspecs.toolkit``: pi's folders and settings files, offered to plugins once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_hookspecs import toolkit

ROOT = Path(__file__).resolve().parents[1]


def test_agent_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert toolkit.agent_dir() == tmp_path / "agent"
    assert toolkit.user_settings_file() == tmp_path / "agent" / "settings.json"
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert toolkit.agent_dir() == tmp_path / ".pi" / "agent"
    assert toolkit.project_dir(tmp_path / "proj") == tmp_path / "proj" / ".pi"


def test_read_settings_reads_as_pi_does(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert toolkit.read_settings(path) == {}
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert toolkit.read_settings(path) == {"a": 1}
    path.write_text("  \n")
    assert toolkit.read_settings(path) == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"a": 1,\n  nope}', "settings.json:2:3: invalid JSON"),
        (b"[1, 2]", "expected a JSON object at the top level, found list"),
        (b'{"a": "\xff"}', "not UTF-8 text"),
    ],
)
def test_a_broken_file_is_one_line_naming_it(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    with pytest.raises(toolkit.SettingsFileError) as caught:
        toolkit.read_settings(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
    assert "\n" not in str(caught.value) and caught.value.key is None


def test_a_huge_sparse_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    with open(path, "wb") as file:
        file.truncate(512 * 1024 * 1024)  # 512 MB of holes: reading it would cost that much memory
    with pytest.raises(toolkit.SettingsFileError, match=r"larger than the 4\.0 MiB limit; it was not read"):
        toolkit.read_settings(path)


def test_reads_are_shared_while_the_file_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"greeter": {"greeting": "Hi"}}')
    first = toolkit.read_settings(path)
    assert toolkit.read_settings(path) is first
    path.write_text('{"greeter": {"greeting": "Hello there"}}')  # another size: read again
    assert toolkit.read_settings(path) == {"greeter": {"greeting": "Hello there"}}


def test_settings_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    assert toolkit.settings_section("greeter") is None
    (tmp_path / "settings.json").write_text('{"greeter": {"greeting": "Hi"}, "other": 5}')
    section = toolkit.settings_section("greeter")
    assert section == {"greeting": "Hi"}
    assert section is not None
    section["greeting"] = "changed"  # a copy: the shared read stays as the file says
    assert toolkit.settings_section("greeter") == {"greeting": "Hi"}
    with pytest.raises(toolkit.SettingsFileError) as caught:
        toolkit.settings_section("other")
    assert caught.value.key == "other" and "other must be an object, found int" in str(caught.value)


def _sources() -> list[Path]:
    found = []
    for top in ("plugins", "examples"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            if "tests" in parts or "{{" in str(path) or ".venv" in parts:
                continue
            found.append(path)
    return found


def test_no_plugin_looks_up_the_agent_folder_itself() -> None:
    """The lookup lives in the contract; a plugin that repeats it would miss the day
    pi's rule changes."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in _sources()
        if "PI_CODING_AGENT_DIR" in path.read_text(encoding="utf-8") or '".pi" / "agent"' in path.read_text()
    ]
    assert offenders == []
    assert len(_sources()) > 50, "the scan found the plugins' sources"


def test_core_uses_the_same_lookup() -> None:
    from pi_core import _paths

    assert _paths.agent_dir is toolkit.agent_dir
    assert os.fspath(_paths.project_dir("x")) == os.fspath(toolkit.project_dir("x"))


def test_a_broken_settings_file_is_reported_once_with_the_plugins_that_read_it(tmp_path: Path) -> None:
    """pi, pluggable-pi-sandbox and pluggable-pi-otel all read the user's settings; the
    fault of the file is one line (pi's), the sandbox says only what it means for it."""
    import subprocess
    import sys

    agent = tmp_path / "agent"
    agent.mkdir()
    settings = agent / "settings.json"
    settings.write_text("{ nope")
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(agent),
        "PI_EXTENSIONS": "sandbox,otel",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pi_core", "-p", "--model", "faux/offline-demo", "what is here?"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    faults = [line for line in done.stderr.splitlines() if "invalid JSON" in line]
    assert faults == [f"pi: {settings}:1:3: invalid JSON: Expecting property name enclosed in double quotes"]
    assert f"pluggable-pi-sandbox: every command is refused until {settings} is fixed" in done.stderr
