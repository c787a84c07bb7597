"""No setting is silently ignored: every key of pi 1.6.0's settings reference is
declared in the registry (pi_core/resources/settings_keys.py) with who reads it, or is
refused with a one-line warning naming the file and the key."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pi_core.resources.settings import USER_ONLY_KEYS, load_settings, unknown_key_errors
from pi_core.resources.settings_keys import BY_KEY, GROUPS, KEYS, SettingKey, reference_keys

REPO = Path(__file__).resolve().parents[2]
KEY_LIST = Path(__file__).with_name("data") / "pi-1.6.0-settings-keys.txt"
"""The keys of pi 1.6.0's docs/settings.md tables, one a line (checked against the
document itself below wherever pi 1.6.0's package or the reference docs are present)."""


def reference_doc() -> Path | None:
    candidates = [Path("/work/shared/reference/pi-docs/settings.md")]
    if os.environ.get("PI_TS"):
        candidates.append(
            Path(os.environ["PI_TS"]).parent / "node_modules/@earendil-works/pi-coding-agent/docs/settings.md"
        )
    candidates.append(Path.home() / ".cache/pi-ts-1.6.0/node_modules/@earendil-works/pi-coding-agent/docs/settings.md")
    return next((path for path in candidates if path.is_file()), None)


def table_keys(markdown: str) -> list[str]:
    """The first cell of every settings table row: ``| `key` | type | default | ...``."""
    return re.findall(r"^\| `([A-Za-z$][A-Za-z0-9.]*)` \|", markdown, flags=re.MULTILINE)


def test_key_list_matches_the_reference_document() -> None:
    doc = reference_doc()
    if doc is None:
        pytest.skip("pi 1.6.0's settings.md is not on this machine (the committed key list is used)")
    assert table_keys(doc.read_text()) == KEY_LIST.read_text().split()


def test_every_reference_key_is_declared_once() -> None:
    listed = KEY_LIST.read_text().split()
    assert sorted(reference_keys()) == sorted(listed)
    assert len(KEYS) == len(BY_KEY), "a key is declared twice"


def _source(path: str) -> str:
    target = REPO / path
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return "\n".join(file.read_text() for file in files if "__pycache__" not in file.parts)


SETTINGS_SOURCE = (REPO / "pi_core/resources/settings.py").read_text()


@pytest.mark.parametrize("entry", [e for e in KEYS if e.use in ("run", "plugin")], ids=lambda e: e.key)
def test_a_key_with_an_effect_is_read_where_the_registry_says(entry: SettingKey) -> None:
    """``reads`` appears in one of the ``where`` files; an accessor of Settings named
    there reads the key itself (its last part, quoted, in settings.py)."""
    assert entry.where and entry.reads, f"{entry.key}: say who reads it"
    if not any((REPO / path).exists() for path in entry.where):
        pytest.xfail(f"{entry.key}: {entry.where} is not in this tree yet (another change)")
    found = any(entry.reads in _source(path) for path in entry.where)
    if not found and entry.key == "cacheWarming":
        pytest.xfail("cacheWarming: prompt-cache warming (issue 17 item 2) is built by another change")
    assert found, f"{entry.key}: {entry.reads!r} is not read in {entry.where}"
    accessor = entry.reads.rstrip("(")
    if re.fullmatch(r"[a-z_]+", accessor) and f"def {accessor}" in SETTINGS_SOURCE:
        leaf = entry.key.rsplit(".", 1)[-1]
        assert f'"{leaf}"' in SETTINGS_SOURCE, f"Settings.{accessor} does not read {entry.key}"


@pytest.mark.parametrize("entry", [e for e in KEYS if e.use == "interactive" and not e.pending], ids=lambda e: e.key)
def test_an_interactive_key_is_read_by_the_terminal_ui(entry: SettingKey) -> None:
    assert entry.reads in _source("pi_core/cli/tui"), (
        f"{entry.key} is declared read by the terminal UI ({entry.reads!r}), but pi_core/cli/tui does not read it"
    )
    accessor = entry.reads.lstrip(".")
    if re.fullmatch(r"[a-z_]+", accessor) and f"def {accessor}" in SETTINGS_SOURCE:  # a Settings accessor
        assert f'"{entry.key.rsplit(".", 1)[-1]}"' in SETTINGS_SOURCE, f"Settings.{accessor} does not read {entry.key}"


def test_pending_interactive_keys_are_named_in_the_docs() -> None:
    """docs/settings.md lists exactly the interactive keys the terminal UI does not read
    yet under "Not yet implemented"."""
    docs = (REPO / "docs/settings.md").read_text()
    section = docs[docs.index("**Not yet implemented:**") :]
    section = section[: section.index("\n\n")]
    named = set(re.findall(r"`([A-Za-z.]+)`", section))
    assert named == {entry.key for entry in KEYS if entry.pending}


@pytest.mark.parametrize("entry", KEYS, ids=lambda e: e.key)
def test_a_wrong_value_is_one_error_naming_file_and_key_and_the_default_applies(
    tmp_path: Path, entry: SettingKey
) -> None:
    data: dict[str, object] = {}
    node = data
    *parents, leaf = entry.key.split(".")
    for part in parents:
        node = node.setdefault(part, {})  # type: ignore[assignment]
    node[leaf] = [1, 2]
    (tmp_path / "settings.json").write_text(json.dumps(data))
    settings = load_settings(tmp_path, agent_dir=tmp_path)
    assert [str(e) for e in settings.errors] == [
        f"{tmp_path / 'settings.json'}: {entry.key} must be {entry.expected}, found [1, 2]"
    ]
    assert settings.errors[0].level == "error"
    assert settings.lookup(*entry.key.split(".")) == (None, None)  # dropped: readers see the default
    assert settings.validate() == []


@pytest.mark.parametrize("entry", [e for e in KEYS if e.use == "refused"], ids=lambda e: e.key)
def test_a_refused_key_is_one_warning_unless_its_value_asks_for_nothing(tmp_path: Path, entry: SettingKey) -> None:
    assert entry.reason
    candidates = [True, "websocket", ["x"], "radius", 1000]
    # enableInstallTelemetry: no value asks for anything (pi never reports installs)
    asking = [value for value in candidates if entry.check(value) and value not in entry.inert][:1]
    for value, expected in [*((value, 1) for value in asking), *((inert, 0) for inert in entry.inert)]:
        data: dict[str, object] = {}
        node = data
        *parents, leaf = entry.key.split(".")
        for part in parents:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[leaf] = value
        (tmp_path / "settings.json").write_text(json.dumps(data))
        settings = load_settings(tmp_path, agent_dir=tmp_path)
        assert len(settings.errors) == expected, (value, settings.errors)
        if expected:
            error = settings.errors[0]
            assert error.level == "warning" and str(error).startswith(f"{tmp_path / 'settings.json'}: {entry.key} = ")
            assert entry.reason in str(error)


@pytest.mark.parametrize("entry", [e for e in KEYS if e.pending], ids=lambda e: e.key)
def test_a_pending_key_that_is_set_is_one_warning(tmp_path: Path, entry: SettingKey) -> None:
    value = next(v for v in (True, False, "auto", "transcript", "fullscreen", "final", 5, ["x"], "x") if entry.check(v))
    data: dict[str, object] = {}
    node = data
    *parents, leaf = entry.key.split(".")
    for part in parents:
        node = node.setdefault(part, {})  # type: ignore[assignment]
    node[leaf] = value
    (tmp_path / "settings.json").write_text(json.dumps(data))
    settings = load_settings(tmp_path, agent_dir=tmp_path)
    assert [str(e) for e in settings.errors] == [
        f"{tmp_path / 'settings.json'}: {entry.key} is not read by this pi's terminal yet; it has no effect"
    ]
    assert settings.errors[0].level == "warning"


def test_unknown_keys_are_reported_unless_a_plugin_claims_them(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(
        json.dumps({"fancyMode": True, "sandbox": {"network": False}, "retry": {"maxRetry": 1}, "theme": "dark"})
    )
    settings = load_settings(tmp_path, agent_dir=tmp_path)
    path = tmp_path / "settings.json"
    assert [str(e) for e in settings.errors] == [f"{path}: unknown setting retry.maxRetry"]
    assert [str(e) for e in unknown_key_errors(settings, ["pluggable-pi-otel"])] == [
        f"{path}: unknown setting fancyMode",
        f"{path}: unknown setting sandbox",
    ]
    assert [str(e) for e in unknown_key_errors(settings, ["pluggable-pi-sandbox"])] == [
        f"{path}: unknown setting fancyMode"
    ]
    assert settings.get("fancyMode") is True  # kept as it is, never rewritten


def test_groups_must_be_objects(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps({"compaction": "yes", "retry": {"provider": 5}}))
    settings = load_settings(tmp_path, agent_dir=tmp_path)
    assert sorted(str(e).split(": ", 1)[1] for e in settings.errors) == [
        'compaction must be an object, found "yes"',
        "retry.provider must be an object, found 5",
    ]
    assert settings.compaction_settings().enabled and settings.retry_settings().provider.max_retries == 0
    assert "compaction" in GROUPS and "retry.provider" in GROUPS


def test_install_telemetry_at_pi_1_6_0_s_default_is_not_warned_about(tmp_path: Path) -> None:
    """``enableInstallTelemetry: true`` is pi 1.6.0's default, which settings it writes
    may spell out: it asks for nothing this pi does not do (it reports nothing either way)."""
    for value in (True, False):
        (tmp_path / "settings.json").write_text(json.dumps({"enableInstallTelemetry": value}))
        assert load_settings(tmp_path, agent_dir=tmp_path).errors == []


def test_docs_say_what_each_key_does_here() -> None:
    """docs/settings.md names every key, and the refused and not-yet-read interactive
    keys in its table of what this pi does not do."""
    docs = (REPO / "docs/settings.md").read_text()
    missing = [entry.key for entry in KEYS if f"`{entry.key}`" not in docs]
    assert not missing, f"docs/settings.md does not mention {missing}"
    section = docs[docs.index("## Keys this pi refuses") :]
    for entry in KEYS:
        if entry.use == "refused":
            assert f"`{entry.key}`" in section, entry.key


def test_user_only_keys_in_a_project_file_are_one_warning_each(tmp_path: Path) -> None:
    assert {entry.key for entry in KEYS if entry.user_only} == USER_ONLY_KEYS
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    (project / ".pi" / "settings.json").write_text(
        json.dumps({"httpProxy": "http://p:1", "defaultProjectTrust": "always", "defaultModel": "m"})
    )
    settings = load_settings(project, agent_dir=agent, project_trusted=True)
    where = project / ".pi" / "settings.json"
    assert [str(e) for e in settings.errors] == [
        f"{where}: {key} can only be set in {agent / 'settings.json'}; ignored here"
        for key in ("httpProxy", "defaultProjectTrust")
    ]
    assert settings.http_proxy is None and settings.default_project_trust == "ask" and settings.default_model == "m"
