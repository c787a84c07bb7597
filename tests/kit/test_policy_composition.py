"""Organization policy composition, end to end: the real ``pi`` command with the example
policy installed as a package and required in the user settings.

A project cannot remove the policy: its ``disabledExtensions``, ``requiredExtensions``
and ``policy`` settings are ignored for it, even when the project is trusted; and pi
refuses to start when the policy is missing, disabled or failed to load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit_support import install_policy

PI = Path(sys.executable).parent / "pi"
DENY_LS = "bash:\n  deny:\n    - pattern: '^ls\\b'\n      reason: no listing here\n"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    return install_policy(site)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# a project\n")
    return project


def require_policy(agent_dir: Path, rules: str = DENY_LS) -> Path:
    (agent_dir / "settings.json").write_text(json.dumps({"requiredExtensions": ["policy"]}))
    path = agent_dir / "policy.yaml"
    path.write_text(rules)
    return path


def hostile_project(project: Path) -> None:
    """A project that tries every settings-level way to switch the policy off."""
    (project / "permissive.yaml").write_text("")
    (project / ".pi").mkdir()
    settings = {
        "disabledExtensions": ["policy"],
        "requiredExtensions": [],
        "policy": {"rulesFile": str(project / "permissive.yaml"), "auditLog": None},
    }
    (project / ".pi" / "settings.json").write_text(json.dumps(settings))


def pi(*args: str, cwd: Path, site: Path | None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("PYTHONPATH", None)
    if site is not None:
        full["PYTHONPATH"] = str(site)
    return subprocess.run([str(PI), *args], cwd=cwd, capture_output=True, text=True, env=full, timeout=120)


def json_run(*args: str, cwd: Path, site: Path | None) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    out = pi("--mode", "json", "--no-session", "--model", "faux/offline-demo", *args, cwd=cwd, site=site)
    return out, [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_a_required_policy_blocks_even_when_a_trusted_project_disables_it(
    agent_dir: Path, project: Path, site: Path
) -> None:
    rules = require_policy(agent_dir)
    hostile_project(project)
    out, events = json_run("--approve", "what is here?", cwd=project, site=site)
    assert out.returncode == 0, out.stderr
    (end,) = [e for e in events if e["type"] == "tool_execution_end"]
    text = "".join(block["text"] for block in end["result"]["content"])
    assert end["toolName"] == "bash" and end["isError"] is True
    assert text == f"policy: no listing here (rule bash.deny[0] of {rules})"
    (record,) = [json.loads(line) for line in (agent_dir / "policy-audit.jsonl").read_text().splitlines()]
    assert record["verdict"] == "block" and record["input"] == {"command": "ls"}

    listed = json.loads(pi("extensions", "list", "--json", "--approve", cwd=project, site=site).stdout)
    (policy,) = [p for p in listed["plugins"] if p["name"] == "policy"]
    assert (
        policy["status"] == "loaded"
        and policy["distribution"] == "pluggable-pi-policy"
        and policy["source"] == "entrypoint"
    )


def test_pi_refuses_to_start_without_the_required_policy(agent_dir: Path, project: Path) -> None:
    require_policy(agent_dir)
    out = pi("-p", "--model", "faux/offline-demo", "what is here?", cwd=project, site=None)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == (
        f"pi: required plugins are not running (requiredExtensions in {agent_dir / 'settings.json'}): "
        "'policy' is not installed or not found"
    )
    assert not (agent_dir / "sessions").exists()


@pytest.mark.parametrize(
    ("args", "env"),
    [(["--no-extensions"], {}), ([], {"PI_EXTENSIONS": ""}), ([], {"PI_EXTENSIONS": "mcp"})],
    ids=["--no-extensions", "PI_EXTENSIONS-empty", "PI_EXTENSIONS-without-it"],
)
def test_pi_refuses_to_start_with_the_policy_switched_off(
    agent_dir: Path, project: Path, site: Path, args: list[str], env: dict[str, str]
) -> None:
    require_policy(agent_dir)
    out = pi("-p", "--model", "faux/offline-demo", *args, "what is here?", cwd=project, site=site, **env)
    assert out.returncode == 1 and out.stdout == ""
    assert "required plugins are not running" in out.stderr and "'policy' is disabled by " in out.stderr


def test_pi_refuses_to_start_when_the_policy_fails_to_load(agent_dir: Path, project: Path, site: Path) -> None:
    require_policy(agent_dir)
    (site / "pi_policy" / "__init__.py").write_text("raise ImportError('the policy engine is missing')\n")
    out = pi("-p", "--model", "faux/offline-demo", "what is here?", cwd=project, site=site)
    assert out.returncode == 1
    assert "'policy' error: import failed: ImportError: the policy engine is missing" in out.stderr


def test_broken_rules_fail_closed(agent_dir: Path, project: Path, site: Path) -> None:
    rules = require_policy(agent_dir, "bash:\n  deny: [\n")
    out, events = json_run("what is here?", cwd=project, site=site)
    assert out.returncode == 0, out.stderr
    (end,) = [e for e in events if e["type"] == "tool_execution_end"]
    text = "".join(block["text"] for block in end["result"]["content"])
    assert end["isError"] is True
    assert text.startswith(f"policy: the rules file {rules} is not valid YAML: line 3, column 1:")


def test_print_mode_reports_the_policy_startup_error(agent_dir: Path, project: Path, site: Path) -> None:
    rules = require_policy(agent_dir, "bash:\n  deny: [\n")
    out = pi("-p", "--model", "faux/offline-demo", "what is here?", cwd=project, site=site)
    assert out.returncode == 0, out.stderr
    assert f"in session_start: handler raised PolicyError: the rules file {rules} is not valid YAML" in out.stderr


def test_rpc_mode_refuses_with_a_message_not_a_traceback(agent_dir: Path, project: Path) -> None:
    require_policy(agent_dir)
    out = pi("--mode", "rpc", "--no-session", cwd=project, site=None)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        f"pi: required plugins are not running (requiredExtensions in {agent_dir / 'settings.json'}): "
        "'policy' is not installed or not found"
    )
