"""settings.json: merge rules and error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_core.resources.settings import SettingsError, load_settings, merge_settings, read_settings_file


def test_project_over_user_one_level_merge_and_combined_resource_lists() -> None:
    user = {
        "defaultModel": "a",
        "retry": {"enabled": True, "maxRetries": 3},
        "extensions": ["u.py"],
        "defaultProjectTrust": "always",
    }
    project = {"defaultModel": "b", "retry": {"maxRetries": 5}, "extensions": ["p.py"], "defaultProjectTrust": "never"}
    merged = merge_settings(user, project)
    assert merged == {
        "defaultModel": "b",
        "retry": {"enabled": True, "maxRetries": 5},
        "extensions": ["u.py", "p.py"],
        "defaultProjectTrust": "always",
    }


def test_project_settings_only_when_trusted(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"defaultModel": "user"}))
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text(json.dumps({"defaultModel": "project"}))
    assert load_settings(tmp_path, agent_dir=agent).get("defaultModel") == "user"
    assert load_settings(tmp_path, agent_dir=agent, project_trusted=True).get("defaultModel") == "project"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"a": 1,}', ":1:9: invalid JSON: Expecting property name"),
        ("[1, 2]", "expected a JSON object at the top level, found list"),
    ],
)
def test_malformed_settings_name_file_and_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(SettingsError) as info:
        read_settings_file(path)
    assert str(info.value).startswith(str(path)) and fragment in str(info.value)


def test_a_broken_file_is_reported_and_ignored_never_rewritten(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text("{oops")
    settings = load_settings(tmp_path, agent_dir=tmp_path)
    assert settings.merged == {} and len(settings.errors) == 1
    assert (tmp_path / "settings.json").read_text() == "{oops"
