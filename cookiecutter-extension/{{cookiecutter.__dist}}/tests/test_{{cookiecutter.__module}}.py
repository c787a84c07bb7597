"""Tests of the {{ cookiecutter.__module }} plugin on pi's scripted model.

The ``pi`` fixture comes with pluggable-pi (a pytest11 plugin): a real session in a temporary
project and agent directory, where each model request takes the next scripted reply.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

from pi_core.testing import ECHO, PiHarness, call

from {{ cookiecutter.__package }} import SETTINGS_KEY, {{ cookiecutter.__class }}

PROJECT = Path(__file__).resolve().parents[1]


def test_the_tool_greets_with_the_configured_greeting(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }}).configure(**{SETTINGS_KEY: {"greeting": "Hi"}})
    pi.script(call("{{ cookiecutter.__tool }}", name="Ada"), ECHO)
    run = pi.prompt("greet Ada")
    assert "{{ cookiecutter.__tool }}" in pi.declared_tools(run.requests[0])
    assert run.tool_results[0].text == "Hi, Ada!"
    assert run.text == "Hi, Ada!"  # ECHO answered with the last tool result


def test_the_tool_rejects_invalid_arguments(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }})
    pi.script(call("{{ cookiecutter.__tool }}"), "sorry")
    result = pi.prompt("greet").tool_results[0]
    assert result.is_error and "name: missing" in result.text


def test_the_policy_blocks_a_matching_bash_command(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }})
    pi.script(call("bash", command="rm -rf /"), ECHO)
    result = pi.prompt("clean the disk").tool_results[0]
    assert result.is_error
    assert result.text.startswith("{{ cookiecutter.__module }}: the command matches")


def test_the_policy_lets_other_commands_run(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }}).configure(**{SETTINGS_KEY: {"blockedCommands": [r"\bsudo\b"]}})
    pi.script(call("bash", command="echo fine"), ECHO)
    result = pi.prompt("say fine").tool_results[0]
    assert not result.is_error and result.text == "fine\n"


def test_the_redactor_hides_secrets_from_the_model(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }}).configure(**{SETTINGS_KEY: {"redact": [r"sk-[A-Za-z0-9]+"]}})
    pi.write("config.txt", "key = sk-abc123\n")
    pi.script(call("read", path="config.txt"), ECHO)
    run = pi.prompt("show the config")
    assert run.tool_results[0].text.splitlines() == ["key = [redacted]"]
    assert "sk-abc123" not in str(run.requests[1].messages[-1])  # the exact request the model got


def test_invalid_settings_are_reported_and_tool_calls_fail_closed(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }}).configure(**{SETTINGS_KEY: {"greeting": 3, "blockedCommands": ["("]}})
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert result.is_error
    assert f"{SETTINGS_KEY}.greeting: Input should be a valid string" in result.text
    assert f"{SETTINGS_KEY}.blockedCommands: Value error, invalid regular expression '('" in result.text
    startup = [e for e in pi.plugin_errors if e.hook == "session_start"]
    assert startup and startup[0].plugin == "{{ cookiecutter.__class }}"
    assert f"{SETTINGS_KEY}.greeting" in startup[0].message


def test_the_entry_point_names_the_plugin_class() -> None:
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    target = pyproject["project"]["entry-points"]["pi.extensions"]["{{ cookiecutter.__module }}"]
    module, _, attribute = target.partition(":")
    assert getattr(importlib.import_module(module), attribute) is {{ cookiecutter.__class }}


def test_a_trusted_project_cannot_loosen_the_policy(pi: PiHarness) -> None:
    # The policy keys come from the user's settings only: a project the user trusts
    # (its .pi/settings.json counts) still cannot switch the safeguards off.
    pi.use({{ cookiecutter.__class }}).configure(**{SETTINGS_KEY: {"redact": [r"sk-[A-Za-z0-9]+"]}})
    pi.configure_project(**{SETTINGS_KEY: {"blockedCommands": [], "redact": [], "greeting": "Yo"}}).trust_project()
    pi.write("config.txt", "key = sk-abc123\n")
    pi.script(call("bash", command="rm -rf /"), call("read", path="config.txt"), call("{{ cookiecutter.__tool }}", name="Ada"),
              ECHO)
    run = pi.prompt("clean the disk, show the config, greet Ada")
    blocked, read, greeted = run.tool_results
    assert blocked.is_error and blocked.text.startswith("{{ cookiecutter.__module }}: the command matches")
    assert read.text.splitlines() == ["key = [redacted]"]
    assert greeted.text == "Yo, Ada!"  # keys that are not policy may come from the project
    assert pi.ui.notifications == [
        ("warning", f"{{ cookiecutter.__module }}: ignored {SETTINGS_KEY}.blockedCommands, {SETTINGS_KEY}.redact of the "
         "project's .pi/settings.json: policy settings count only in your user settings")
    ]


def test_a_project_s_snake_case_policy_keys_are_ignored_too(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }}).configure_project(**{SETTINGS_KEY: {"blocked_commands": []}}).trust_project()
    pi.script(call("bash", command="rm -rf /"), ECHO)
    assert pi.prompt("clean the disk").tool_results[0].is_error


def test_the_user_s_own_policy_settings_apply_in_a_trusted_project(pi: PiHarness) -> None:
    pi.use({{ cookiecutter.__class }}).configure(**{SETTINGS_KEY: {"blockedCommands": [r"\bsudo\b"]}}).trust_project()
    pi.script(call("bash", command="sudo true"), ECHO)
    result = pi.prompt("become root").tool_results[0]
    assert result.is_error and "sudo" in result.text
    assert pi.ui.notifications == []
