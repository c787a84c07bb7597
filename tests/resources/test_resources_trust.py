"""Project trust: trust.json format and inheritance, what needs trust, the resolver."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pi_core.extensions import LoadOptions, PluginHost
from pi_core.resources import trust as trust_module
from pi_core.resources.diagnostics import ResourceDiagnostic
from pi_core.resources.trust import (
    TrustAnswer,
    TrustDecision,
    TrustStore,
    TrustStoreError,
    has_trust_requiring_project_resources,
    resolve_project_trust,
    trust_requiring_project_resources,
)
from pi_hookspecs import ProjectTrustResult, hookimpl


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def protected(project: Path) -> Path:
    """Give ``project`` a resource that needs trust."""
    (project / ".pi").mkdir(exist_ok=True)
    (project / ".pi" / "settings.json").write_text("{}")
    return project


# --------------------------------------------------------------------------- the store


def test_store_writes_the_typescript_format(agent_dir: Path, tmp_path: Path) -> None:
    b, a = tmp_path / "b", tmp_path / "a"
    b.mkdir()
    a.mkdir()
    store = TrustStore(agent_dir)
    store.set(b, False)
    store.set(a, True)
    text = (agent_dir / "trust.json").read_text()
    expected = {os.path.realpath(a): True, os.path.realpath(b): False}
    assert text == json.dumps(expected, indent=2) + "\n"
    assert list(json.loads(text)) == sorted(expected)
    assert not (agent_dir / "trust.json.lock").exists()


def test_nearest_saved_ancestor_decides(agent_dir: Path, tmp_path: Path) -> None:
    deep = tmp_path / "work" / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    store = TrustStore(agent_dir)
    store.set(tmp_path / "work", True)
    assert store.get(deep) is True
    store.set(tmp_path / "work" / "repo", False)
    entry = store.get_entry(deep)
    assert entry is not None and entry.trusted is False and entry.path == os.path.realpath(tmp_path / "work" / "repo")
    assert store.get(tmp_path / "work" / "other") is True
    assert store.get(tmp_path) is None
    store.set(tmp_path / "work" / "repo", None)
    assert store.get(deep) is True


def test_paths_are_canonical(agent_dir: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    store = TrustStore(agent_dir)
    store.set(tmp_path / "link", True)
    assert list(store.read()) == [os.path.realpath(real)]
    assert store.get(real / "sub") is True


def test_reads_a_file_written_by_the_typescript_pi(agent_dir: Path, tmp_path: Path) -> None:
    child = tmp_path / "x"
    text = f'\ufeff{{\n  "{child}": null,\n  "{tmp_path}": true\n}}\n'
    (agent_dir / "trust.json").write_text(text)
    store = TrustStore(agent_dir)
    assert store.get(tmp_path / "x") is True  # null means "no decision": the parent decides


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{oops", "invalid JSON at line 1"),
        ("[]", "expected a JSON object"),
        ('{"/a": "yes"}', 'value for "/a" must be true, false or null'),
    ],
)
def test_malformed_store_names_the_file(agent_dir: Path, content: str, fragment: str) -> None:
    (agent_dir / "trust.json").write_text(content)
    with pytest.raises(TrustStoreError) as info:
        TrustStore(agent_dir).get("/a")
    assert str(info.value).startswith(str(agent_dir / "trust.json")) and fragment in str(info.value)


def test_an_abandoned_lock_is_taken_over(agent_dir: Path, tmp_path: Path) -> None:
    lock = agent_dir / "trust.json.lock"
    lock.mkdir()
    old = time.time() - 60
    os.utime(lock, (old, old))
    TrustStore(agent_dir).set(tmp_path, True)
    assert TrustStore(agent_dir).get(tmp_path) is True and not lock.exists()


def test_a_held_lock_is_reported(agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trust_module, "_LOCK_TIMEOUT_SECONDS", 0)
    (agent_dir / "trust.json.lock").mkdir()
    with pytest.raises(TrustStoreError, match="locked by another process"):
        TrustStore(agent_dir).set(tmp_path, True)


# --------------------------------------------------------------------------- what needs trust


def test_a_bare_pi_dir_needs_no_trust(project: Path, home: Path) -> None:
    (project / ".pi").mkdir()
    (project / ".pi" / "sessions").mkdir()
    assert not has_trust_requiring_project_resources(project, home=home)


@pytest.mark.parametrize(
    "entry", ["settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md"]
)
def test_protected_pi_entries(project: Path, home: Path, entry: str) -> None:
    target = project / ".pi" / entry
    target.parent.mkdir(parents=True, exist_ok=True)
    if "." in entry:
        target.write_text("x")
    else:
        target.mkdir()
    assert trust_requiring_project_resources(project, home=home) == [Path(os.path.realpath(target))]


def test_agents_skills_in_ancestors_up_to_the_git_root(tmp_path: Path, home: Path) -> None:
    outer = tmp_path / "outer"
    repo = outer / "repo"
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    (outer / ".agents" / "skills").mkdir(parents=True)  # above the git root: not the project's
    assert not has_trust_requiring_project_resources(cwd, home=home)
    (repo / "pkg" / ".agents" / "skills").mkdir(parents=True)
    assert has_trust_requiring_project_resources(cwd, home=home)


def test_the_users_own_agents_skills_never_count(home: Path) -> None:
    (home / ".agents" / "skills").mkdir(parents=True)
    assert not has_trust_requiring_project_resources(home, home=home)
    work = home / "work"
    work.mkdir()
    assert not has_trust_requiring_project_resources(work, home=home)


# --------------------------------------------------------------------------- the resolver


class Calls:
    def __init__(self, plugin_result: Any = None, answer: TrustAnswer | None = None) -> None:
        self.plugin_result = plugin_result
        self.answer = answer
        self.plugins = 0
        self.asked: list[str] = []

    async def ask_plugins(self) -> Any:
        self.plugins += 1
        if isinstance(self.plugin_result, Exception):
            raise self.plugin_result
        return self.plugin_result

    async def ask_user(self, cwd: str) -> TrustAnswer | None:
        self.asked.append(cwd)
        return self.answer


async def resolve(
    project: Path, agent_dir: Path, home: Path, calls: Calls | None = None, **kwargs: Any
) -> TrustDecision:
    calls = calls or Calls()
    return await resolve_project_trust(
        project, ask_plugins=calls.ask_plugins, ask_user=calls.ask_user, agent_dir=agent_dir, home=home, **kwargs
    )


async def test_cli_override_wins_over_everything(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)
    TrustStore(agent_dir).set(project, False)
    calls = Calls(ProjectTrustResult(trusted="no"))
    assert await resolve(project, agent_dir, home, calls, override=True) == TrustDecision(True, "cli")
    assert await resolve(project, agent_dir, home, calls, override=False) == TrustDecision(False, "cli")
    assert calls.plugins == 0


async def test_nothing_to_protect_is_trusted_without_asking(project: Path, agent_dir: Path, home: Path) -> None:
    calls = Calls(ProjectTrustResult(trusted="no"))
    decision = await resolve(project, agent_dir, home, calls, has_ui=True)
    assert decision == TrustDecision(True, "no-project-resources") and calls.plugins == 0 and not calls.asked


async def test_plugin_decides_and_may_remember(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)
    TrustStore(agent_dir).set(project, False)
    decision = await resolve(project, agent_dir, home, Calls({"trusted": "yes", "remember": True}))
    assert decision == TrustDecision(True, "plugin")
    assert TrustStore(agent_dir).get(project) is True
    decision = await resolve(project, agent_dir, home, Calls(ProjectTrustResult(trusted="no")))
    assert decision == TrustDecision(False, "plugin") and TrustStore(agent_dir).get(project) is True


async def test_undecided_plugins_fall_back_to_saved_decision(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)
    TrustStore(agent_dir).set(project.parent, True)
    decision = await resolve(project, agent_dir, home, Calls(ProjectTrustResult(trusted="undecided", remember=True)))
    assert decision == TrustDecision(True, "saved", os.path.realpath(project.parent))


@pytest.mark.parametrize(
    ("default", "expected"),
    [
        ("always", TrustDecision(True, "default")),
        ("never", TrustDecision(False, "default")),
        ("ask", TrustDecision(False, "no-ui")),
    ],
)
async def test_default_project_trust_from_user_settings(
    project: Path, agent_dir: Path, home: Path, default: str, expected: TrustDecision
) -> None:
    protected(project)
    (project / ".pi" / "settings.json").write_text(json.dumps({"defaultProjectTrust": "always"}))  # ignored: user-only
    (agent_dir / "settings.json").write_text(json.dumps({"defaultProjectTrust": default}))
    calls = Calls()
    assert await resolve(project, agent_dir, home, calls) == expected
    assert not calls.asked  # no UI: never asked


async def test_ask_with_a_ui(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)
    calls = Calls(answer=TrustAnswer(trusted=True, remember=True, path=str(project.parent)))
    decision = await resolve(project, agent_dir, home, calls, has_ui=True)
    assert decision == TrustDecision(True, "user", os.path.realpath(project.parent))
    assert calls.asked == [os.path.realpath(project)]
    assert TrustStore(agent_dir).get(project) is True
    # once saved, nobody is asked again
    calls = Calls(answer=TrustAnswer(trusted=False))
    assert (await resolve(project, agent_dir, home, calls, has_ui=True)).source == "saved" and not calls.asked


async def test_a_dismissed_question_is_untrusted_and_not_saved(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)
    decision = await resolve(project, agent_dir, home, Calls(answer=None), has_ui=True)
    assert decision == TrustDecision(False, "user") and not (agent_dir / "trust.json").exists()


async def test_failures_are_reported_and_never_trust(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)
    (agent_dir / "trust.json").write_text("{broken")
    (agent_dir / "settings.json").write_text(json.dumps({"defaultProjectTrust": "sometimes"}))
    seen: list[ResourceDiagnostic] = []
    decision = await resolve(project, agent_dir, home, Calls(RuntimeError("plugin down")), on_diagnostic=seen.append)
    assert decision == TrustDecision(False, "no-ui")
    messages = [str(d) for d in seen]
    assert any("project_trust failed: RuntimeError: plugin down" in m for m in messages)
    assert any(str(agent_dir / "trust.json") in m and "saved trust decisions ignored" in m for m in messages)
    assert any('defaultProjectTrust must be "ask", "always" or "never"' in m for m in messages)


async def test_with_the_real_plugin_host(project: Path, agent_dir: Path, home: Path) -> None:
    protected(project)

    class Policy:
        @hookimpl
        def project_trust(self, event: Any) -> Any:
            return ProjectTrustResult(trusted="yes" if event.cwd.endswith("project") else "no", remember=True)

    host = PluginHost(
        LoadOptions(cwd=str(project), agent_dir=agent_dir, sdk_plugins=[Policy], entry_points=False, builtins=[])
    )
    decision = await resolve_project_trust(
        project, ask_plugins=host.decide_project_trust, agent_dir=agent_dir, home=home
    )
    assert decision == TrustDecision(True, "plugin")
    assert json.loads((agent_dir / "trust.json").read_text()) == {os.path.realpath(project): True}
