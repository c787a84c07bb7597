"""The offline demo (``faux/offline-demo``) answers only when chosen by name: the
registry never offers it (``available``) nor picks it (``default_model``) unless it
is the session's current model, and ``--model`` / settings still resolve it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_core.ai import ModelRegistry
from pi_core.ai.auth import BEARER_ENV, ENV_API_KEYS


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key of the developer's environment."""
    for name in {n for names in ENV_API_KEYS.values() for n in names} | set(BEARER_ENV.values()):
        monkeypatch.delenv(name, raising=False)


def test_without_credentials_there_is_no_model() -> None:
    registry = ModelRegistry()
    assert registry.available() == []
    assert registry.default_model() is None


def test_the_demo_is_resolved_by_name_and_offered_only_as_the_current_model() -> None:
    registry = ModelRegistry()
    demo = registry.resolve("faux/offline-demo").model
    assert demo.ref == "faux/offline-demo" and registry.named_only(demo)
    assert registry.has_auth("faux")  # it needs no key once chosen
    assert [m.ref for m in registry.available(demo)] == ["faux/offline-demo"]
    assert registry.available() == []


def test_the_demo_is_never_offered_next_to_real_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    registry = ModelRegistry()
    refs = [m.ref for m in registry.available()]
    assert refs and all(ref.startswith("anthropic/") for ref in refs)
    default = registry.default_model()
    assert default is not None and default.provider == "anthropic" and not registry.named_only(default)
    demo = registry.get("faux", "offline-demo")
    assert demo is not None
    with_demo = [m.ref for m in registry.available(demo)]
    assert with_demo.count("faux/offline-demo") == 1 and len(with_demo) == len(refs) + 1
    # a current model that is not the demo adds nothing
    assert [m.ref for m in registry.available(default)] == refs


def test_a_models_json_provider_with_a_key_is_the_default(agent_dir: Path) -> None:
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "lab": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-completions",
                        "apiKey": "k",
                        "models": [{"id": "lab-model", "contextWindow": 32000, "maxTokens": 1024}],
                    }
                }
            }
        )
    )
    registry = ModelRegistry()
    assert [m.ref for m in registry.available()] == ["lab/lab-model"]
    assert registry.default_model().ref == "lab/lab-model"  # type: ignore[union-attr]


def test_a_registry_without_the_demo_has_nothing_named_only() -> None:
    registry = ModelRegistry(offline_demo=False)
    assert registry.get("faux", "offline-demo") is None
    assert registry.available() == [] and registry.default_model() is None
