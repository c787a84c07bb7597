"""Typed settings accessors, migrations, resource lists and defaultTools resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_core.resources.settings import (
    CompactionSettings,
    ProviderRetrySettings,
    RetrySettings,
    Settings,
    SettingsError,
    load_settings,
    session_dir_setting,
)
from pi_core.resources.tool_selection import resolve_default_tools


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def settings_for(
    tmp_path: Path, user: dict | None = None, project: dict | None = None, *, trusted: bool = True
) -> Settings:
    agent = tmp_path / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    if user is not None:
        write_json(agent / "settings.json", user)
    if project is not None:
        write_json(tmp_path / "proj" / ".pi" / "settings.json", project)
    (tmp_path / "proj").mkdir(exist_ok=True)
    return load_settings(tmp_path / "proj", agent_dir=agent, project_trusted=trusted)


def test_defaults_without_any_file(tmp_path: Path) -> None:
    s = settings_for(tmp_path)
    assert s.compaction_settings() == CompactionSettings(enabled=True, reserve_tokens=16384, keep_recent_tokens=20000)
    assert s.retry_settings() == RetrySettings(
        enabled=True,
        max_retries=3,
        base_delay_ms=2000,
        max_agent_delay_ms=60000,
        provider=ProviderRetrySettings(timeout_ms=None, max_retries=0, max_retry_delay_ms=60000),
    )
    assert (s.steering_mode, s.follow_up_mode) == ("one-at-a-time", "one-at-a-time")
    assert (s.default_provider, s.default_model, s.default_thinking_level) == (None, None, "medium")
    assert s.enabled_models is None and s.shell_path is None and s.shell_command_prefix is None
    assert s.block_images is False and s.default_project_trust == "ask" and s.session_dir is None
    assert s.extension_paths == s.skill_paths == s.prompt_paths == []
    assert s.http_idle_timeout_ms == 300000
    assert s.validate() == []


def test_project_over_user_for_typed_values_and_nested_objects(tmp_path: Path) -> None:
    s = settings_for(
        tmp_path,
        user={
            "defaultModel": "u",
            "compaction": {"reserveTokens": 1000, "keepRecentTokens": 5},
            "retry": {"maxRetries": 9},
            "steeringMode": "all",
            "images": {"blockImages": True},
            "shellPath": "~/bin/zsh",
        },
        project={"defaultModel": "p", "compaction": {"keepRecentTokens": 7}, "followUpMode": "all"},
    )
    assert s.default_model == "p"
    assert s.compaction_settings() == CompactionSettings(True, 1000, 7)
    assert s.retry_settings().max_retries == 9
    assert (s.steering_mode, s.follow_up_mode) == ("all", "all")
    assert s.block_images is True
    assert s.shell_path == str(Path.home() / "bin/zsh")


def test_untrusted_project_settings_are_ignored(tmp_path: Path) -> None:
    s = settings_for(
        tmp_path, user={"defaultModel": "u"}, project={"defaultModel": "p", "skills": ["x"]}, trusted=False
    )
    assert s.default_model == "u" and s.skill_paths == [] and s.project == {}


def test_default_project_trust_is_user_only(tmp_path: Path) -> None:
    s = settings_for(tmp_path, user={"defaultProjectTrust": "never"}, project={"defaultProjectTrust": "always"})
    assert s.default_project_trust == "never"


def test_wrong_types_are_reported_at_load_naming_file_and_key(tmp_path: Path) -> None:
    s = settings_for(tmp_path, user={"retry": {"maxRetries": "3"}}, project={"compaction": {"reserveTokens": -1}})
    # each mistyped value: one error naming the file and the key; the value is dropped, the default applies
    assert sorted(str(e) for e in s.errors) == sorted(
        [
            f"{s.project_path}: compaction.reserveTokens must be a non-negative integer, found -1",
            f'{s.user_path}: retry.maxRetries must be a non-negative integer, found "3"',
        ]
    )
    assert s.compaction_settings().reserve_tokens == 16384 and s.retry_settings().max_retries == 3
    assert s.validate() == []  # nothing left for a reader to trip over


def test_enum_values_are_checked(tmp_path: Path) -> None:
    s = settings_for(tmp_path, user={"steeringMode": "sometimes", "defaultThinkingLevel": "max"})
    assert s.default_thinking_level == "max"
    assert [e.level for e in s.errors] == ["error"] and "steeringMode must be" in str(s.errors[0])
    assert s.steering_mode == "one-at-a-time"


def test_compaction_model_overrides_fall_back_field_by_field(tmp_path: Path) -> None:
    s = settings_for(
        tmp_path,
        user={"compaction": {"reserveTokens": 100, "modelOverrides": {"openai/gpt-x": {"reserveTokens": 400000}}}},
        project={"compaction": {"keepRecentTokens": 50, "modelOverrides": {"anthropic/c": {"keepRecentTokens": 1}}}},
    )
    # one-level merge would drop the user's override map; overrides are merged per model
    assert s.compaction_settings("openai/gpt-x") == CompactionSettings(True, 400000, 50)
    assert s.compaction_settings("anthropic/c") == CompactionSettings(True, 100, 1)
    assert s.compaction_settings("other/m") == CompactionSettings(True, 100, 50)
    bad = settings_for(tmp_path / "b", user={"compaction": {"modelOverrides": {"a/b": {"reserveTokens": 1.5}}}})
    assert "compaction.modelOverrides must be" in str(bad.errors[0])
    assert bad.compaction_settings("a/b") == CompactionSettings()


def test_unknown_keys_are_preserved(tmp_path: Path) -> None:
    s = settings_for(tmp_path, user={"someFutureKey": {"x": 1}, "theme": "dark"})
    assert s.get("someFutureKey") == {"x": 1} and s.copy()["theme"] == "dark"


def test_old_keys_are_migrated_in_memory_only(tmp_path: Path) -> None:
    s = settings_for(
        tmp_path,
        user={
            "queueMode": "all",
            "skills": {"customDirectories": ["~/sk"], "enableSkillCommands": False},
            "retry": {"maxDelayMs": 5},
        },
    )
    assert s.steering_mode == "all" and s.skill_paths == ["~/sk"] and s.enable_skill_commands is False
    assert s.retry_settings().provider.max_retry_delay_ms == 5
    assert "queueMode" in json.loads((tmp_path / "agent" / "settings.json").read_text())


def test_resource_lists_resolve_per_scope(tmp_path: Path) -> None:
    s = settings_for(
        tmp_path, user={"skills": ["mine", "-mine/old", "!**/draft*"]}, project={"skills": ["../team", "+x"]}
    )
    project, user = s.resource_entries("skills")
    assert (project.scope, user.scope) == ("project", "user")
    assert project.paths == ((tmp_path / "proj" / "team").resolve(), (tmp_path / "proj" / ".pi" / "x").resolve())
    assert user.paths == ((tmp_path / "agent" / "mine").resolve(),)
    assert user.excludes(tmp_path / "agent" / "mine" / "old" / "SKILL.md")
    assert user.excludes(tmp_path / "agent" / "mine" / "drafty" / "SKILL.md")
    assert not user.excludes(tmp_path / "agent" / "mine" / "new" / "SKILL.md")
    assert s.skill_paths == ["mine", "-mine/old", "!**/draft*", "../team", "+x"]


def test_session_dir_is_relative_to_cwd_and_the_projects_counts_only_when_trusted(tmp_path: Path) -> None:
    """Unlike pi 1.6.0, an untrusted project's ``sessionDir`` is not used either: only a
    project trusted before the session starts (flag, saved decision, ``always``) sets it."""
    from pi_core.resources.trust import TrustStore

    s = settings_for(tmp_path, user={"sessionDir": "sessions"}, project={"sessionDir": "p-sessions"}, trusted=False)
    assert s.session_dir == tmp_path / "proj" / "sessions"
    proj, agent = tmp_path / "proj", tmp_path / "agent"
    assert session_dir_setting(proj, agent_dir=agent) == proj / "sessions"  # undecided: untrusted
    assert session_dir_setting(proj, agent_dir=agent, approve=True) == proj / "p-sessions"  # --approve
    TrustStore(agent).set(proj, True)
    assert session_dir_setting(proj, agent_dir=agent) == proj / "p-sessions"  # saved decision
    assert session_dir_setting(proj, agent_dir=agent, approve=False) == proj / "sessions"  # --no-approve
    TrustStore(agent).set(proj, False)
    write_json(agent / "settings.json", {"sessionDir": "sessions", "defaultProjectTrust": "always"})
    assert session_dir_setting(proj, agent_dir=agent) == proj / "sessions"  # a saved "no" beats "always"
    TrustStore(agent).set(proj, None)
    assert session_dir_setting(proj, agent_dir=agent) == proj / "p-sessions"  # defaultProjectTrust: always


def test_http_idle_timeout_can_be_disabled(tmp_path: Path) -> None:
    assert settings_for(tmp_path, user={"httpIdleTimeoutMs": "disabled"}).http_idle_timeout_ms is None
    assert settings_for(tmp_path / "b", user={"httpIdleTimeoutMs": 0}).http_idle_timeout_ms is None


# --------------------------------------------------------------------------- defaultTools


@pytest.mark.parametrize(
    ("user", "project", "cli", "expected"),
    [
        (None, None, None, ["read", "bash", "edit", "write"]),
        (["read", "grep"], None, None, ["read", "grep"]),
        (["+codemode"], None, None, ["read", "bash", "edit", "write", "codemode"]),
        (["-bash", "+powershell", "+grep"], None, None, ["read", "edit", "write", "powershell", "grep"]),
        (["read", "grep"], ["+ls"], None, ["read", "grep", "ls"]),
        (["+codemode"], ["read"], None, ["read"]),
        (["read", "-read", "+find"], None, None, ["find"]),
        ([], None, None, []),
        (None, None, ["+codemode", "-write"], ["read", "bash", "edit", "codemode"]),
        (["read"], None, ["bash", "grep"], ["bash", "grep"]),
        (None, None, [], []),
    ],
)
def test_resolve_default_tools(
    tmp_path: Path, user: list | None, project: list | None, cli: list | None, expected: list
) -> None:
    s = settings_for(
        tmp_path,
        user={"defaultTools": user} if user is not None else {},
        project={"defaultTools": project} if project is not None else {},
    )
    assert resolve_default_tools(s, cli) == expected


def test_untrusted_project_default_tools_do_not_apply(tmp_path: Path) -> None:
    s = settings_for(tmp_path, project={"defaultTools": ["-bash"]}, trusted=False)
    assert resolve_default_tools(s) == ["read", "bash", "edit", "write"]
    assert resolve_default_tools(None, ["+grep"]) == ["read", "bash", "edit", "write", "grep"]


def test_mixed_cli_tools_and_bad_setting_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be mixed"):
        resolve_default_tools(None, ["read", "+grep"])
    s = settings_for(tmp_path, user={"defaultTools": "read"})
    assert "defaultTools must be a list of tool names" in str(s.errors[0])
    assert resolve_default_tools(s) == ["read", "bash", "edit", "write"]
    s.user["defaultTools"] = "read"  # a caller's own dictionary is still checked
    with pytest.raises(SettingsError, match="defaultTools must be a list"):
        resolve_default_tools(s)
