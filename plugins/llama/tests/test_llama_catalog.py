"""The catalogue, the snapshot and the registration of pluggable-pi-llama, in-process
against the scripted router: which models are offered, their context and thinking, the
snapshot a start restores (pi's offline catalogue refresh, in a real model registry),
the one short look at the router without one, the URL a stored login names."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_kit import stock
from scripted_router import ScriptedRouter, dead_url

from pi_core.ai import ModelRegistry
from pi_hookspecs import CredentialSource, LoginMethod, ProviderDefinition
from pi_llama import LlamaPlugin
from pi_llama.catalog import fetch_snapshot, read_snapshot, snapshot_path
from pi_llama.client import LlamaClient, normalize_server_url
from pi_llama.config import connection, server_url
from pi_llama.huggingface import HuggingFaceClient, find_token, split_reference


@pytest.fixture
def router() -> Iterator[ScriptedRouter]:
    with ScriptedRouter() as server:
        yield stock(server)


@pytest.fixture
def configured(pi_agent_dir: Path, router: ScriptedRouter, monkeypatch: pytest.MonkeyPatch) -> ScriptedRouter:
    monkeypatch.setenv("LLAMA_BASE_URL", router.url)
    monkeypatch.delenv("LLAMA_API_KEY", raising=False)
    return router


def register(plugin: LlamaPlugin) -> list[Any]:
    registered: list[Any] = []
    plugin.register_providers(registered.append)
    return registered


def started(plugin: LlamaPlugin, agent_dir: Path) -> ModelRegistry:
    """A model registry with the plugin's registrations, restored as a start restores
    it: pi's offline catalogue refresh (which hands the plugin the stored login's env)."""
    registry = ModelRegistry(models_path=agent_dir / "models.json", builtins=False)
    assert registry.use_registrations([(value, "llama") for value in register(plugin)]) == []
    assert asyncio.run(registry.refresh_catalogues(allow_network=False)) == {}
    return registry


def llama_models(registry: ModelRegistry, model_type: str = "chat") -> list[Any]:
    return sorted(registry.models_of_type(model_type, "llama.cpp"), key=lambda m: m.id)


def test_server_urls_are_normalised() -> None:
    assert normalize_server_url("http://127.0.0.1:9931/v1/") == "http://127.0.0.1:9931"
    assert normalize_server_url(" https://host/llama/?x=1#y ") == "https://host/llama"
    with pytest.raises(ValueError):
        normalize_server_url("ftp://host")


def test_the_snapshot_offers_loaded_and_sleeping_chat_models(configured: ScriptedRouter) -> None:
    snapshot = fetch_snapshot(LlamaClient(configured.url))
    models = {m["id"]: m for m in snapshot.models}
    assert sorted(models) == ["gemma-3-4b", "qwen3-8b"]  # not unloaded, not the decision-only model
    qwen, gemma = models["qwen3-8b"], models["gemma-3-4b"]
    assert qwen["context_window"] == 32768  # from /props of the loaded model
    assert qwen["reasoning"] is True and qwen["compat"]["thinkingFormat"] == "qwen-chat-template"
    assert qwen["base_url"] == f"{configured.url}/v1" and qwen["api"] == "openai-completions"
    assert gemma["context_window"] == 131072 and gemma["input"] == ["text", "image"]
    # a sleeping model is not asked for its props (that would wake it)
    asked = [r.query["model"] for r in configured.state.requests if r.path == "/props" and "model" in r.query]
    assert asked == [["qwen3-8b"]]


def test_unloaded_presets_are_offered_when_the_router_autoloads(configured: ScriptedRouter) -> None:
    configured.state.autoload = True
    snapshot = fetch_snapshot(LlamaClient(configured.url))
    assert "preset-coder" in snapshot.model_ids() and "llama-3.2-1b" not in snapshot.model_ids()


def test_a_start_without_a_snapshot_asks_the_router_once(configured: ScriptedRouter, pi_agent_dir: Path) -> None:
    registered = register(LlamaPlugin())
    provider = next(r for r in registered if isinstance(r, ProviderDefinition))
    assert provider.name == "llama.cpp" and provider.models == []  # the models come from the refresh
    registry = started(LlamaPlugin(), pi_agent_dir)
    assert [m.id for m in llama_models(registry)] == ["gemma-3-4b", "qwen3-8b"]
    # the same chat models as classifiers, and the decision-only model as one
    classifiers = [(m.id, m.api) for m in llama_models(registry, "classifier")]
    assert classifiers == [
        ("gemma-3-4b", "llama-cpp-classify"),
        ("julia-1", "typesafe-system-one"),
        ("qwen3-8b", "llama-cpp-classify"),
    ]
    assert any(isinstance(r, LoginMethod) for r in registered)
    assert any(isinstance(r, CredentialSource) for r in registered)
    assert read_snapshot(configured.url) is not None
    # the next start uses the snapshot: no request at all
    before = len(configured.state.requests)
    again = started(LlamaPlugin(), pi_agent_dir)
    assert len(configured.state.requests) == before
    assert [m.id for m in llama_models(again)] == ["gemma-3-4b", "qwen3-8b"]
    # offline (PI_OFFLINE) a start without a snapshot does not look at the router
    snapshot_path().unlink()
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("PI_OFFLINE", "1")
    try:
        assert llama_models(started(LlamaPlugin(), pi_agent_dir)) == []
    finally:
        monkeypatch.undo()
    assert len(configured.state.requests) == before


def test_a_start_with_a_dead_router_offers_no_models_quickly(
    pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", dead_url())
    plugin = LlamaPlugin()
    assert llama_models(started(plugin, pi_agent_dir)) == []
    assert plugin.startup_error is not None and "Could not reach llama.cpp server" in plugin.startup_error
    assert not snapshot_path().exists()


def test_unconfigured_means_no_router_and_no_request(pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    assert connection() is None
    provider = next(r for r in register(LlamaPlugin()) if isinstance(r, ProviderDefinition))
    assert provider.models == [] and provider.base_url == "http://127.0.0.1:9931/v1"
    assert llama_models(started(LlamaPlugin(), pi_agent_dir)) == []


def test_a_start_restores_the_snapshot_of_the_router_the_stored_login_names(
    configured: ScriptedRouter, pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The login's URL reaches the plugin through pi (``CatalogueRefresh.env``): the
    router it names is the one asked, not ``LLAMA_BASE_URL``."""
    monkeypatch.setenv("LLAMA_BASE_URL", dead_url())
    (pi_agent_dir / "auth.json").write_text(
        json.dumps({"llama.cpp": {"type": "api_key", "env": {"LLAMA_BASE_URL": configured.url}}})
    )
    assert [m.id for m in llama_models(started(LlamaPlugin(), pi_agent_dir))] == ["gemma-3-4b", "qwen3-8b"]
    assert read_snapshot(configured.url) is not None


def test_a_stored_login_wins_over_the_environment(pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_BASE_URL", "http://elsewhere:1")
    # pi 1.6.0's entry: its env, as pi hands it to the plugin
    assert server_url({"LLAMA_BASE_URL": "http://a:2/v1"}) == "http://a:2"
    assert server_url({}) == "http://elsewhere:1"
    # what earlier versions of this plugin stored: its URL is read from the file
    monkeypatch.delenv("LLAMA_BASE_URL")
    (pi_agent_dir / "auth.json").write_text(
        json.dumps(
            {"llama.cpp": {"type": "oauth", "access": "", "refresh": "", "expires": 1, "serverUrl": "http://b:3"}}
        )
    )
    monkeypatch.setenv("LLAMA_API_KEY", "from-env")
    found = connection()
    assert found is not None and (found.server_url, found.api_key) == ("http://b:3", "from-env")


async def test_login_checks_the_router_and_stores_its_url(
    configured: ScriptedRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLAMA_BASE_URL")
    answers = iter([f"{configured.url}/v1", ""])

    class Callbacks:
        signal: Any = None

        async def prompt(self, message: str, *, placeholder: str | None = None, secret: bool = False) -> str:
            return next(answers)

        def progress(self, message: str) -> None:
            pass

    method = next(r for r in register(LlamaPlugin()) if isinstance(r, LoginMethod))
    credentials = await method.login(Callbacks())
    assert method.kind == "api_key" and method.refresh is None
    # pi 1.6.0's entry: no key given, the URL in env
    assert credentials.to_json() == {"type": "api_key", "env": {"LLAMA_BASE_URL": configured.url}}
    assert method.api_key is not None and method.api_key(credentials) == "local"
    assert read_snapshot(configured.url) is not None  # the login looked at the router


def test_hugging_face_token_lookup(tmp_path: Path) -> None:
    assert find_token({"HF_TOKEN": " t0 "}) == "t0"
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "token").write_text("t1\n")
    assert find_token({"HF_HOME": str(tmp_path / "hf")}) == "t1"
    (tmp_path / "path-token").write_text("t2")
    assert find_token({"HF_TOKEN_PATH": str(tmp_path / "path-token"), "HF_HOME": str(tmp_path / "hf")}) == "t2"
    assert split_reference("org/repo:Q4_K_M") == ("org/repo", "Q4_K_M")
    assert split_reference("org/repo") == ("org/repo", None)


def test_hugging_face_search_and_quantizations(router: ScriptedRouter) -> None:
    router.state.hf_models = [{"id": "org/Qwen3-GGUF", "downloads": 1200}, {"id": "x/other-GGUF", "downloads": 3}]
    router.state.hf_details["org/Qwen3-GGUF"] = {
        "id": "org/Qwen3-GGUF",
        "gated": False,
        "siblings": [
            {"rfilename": "Qwen3-Q8_0.gguf", "size": 800},
            {"rfilename": "Qwen3-Q4_K_M.gguf", "size": 400},
            {"rfilename": "big/Qwen3-F16-00001-of-00002.gguf", "size": 1000},
            {"rfilename": "big/Qwen3-F16-00002-of-00002.gguf", "size": 1000},
            {"rfilename": "mmproj-F16.gguf", "size": 50},
            {"rfilename": "README.md"},
        ],
    }
    client = HuggingFaceClient("secret", router.url)
    assert [r.id for r in client.search_sync("qwen")] == ["org/Qwen3-GGUF"]
    details = client.details_sync("org/Qwen3-GGUF")
    assert [(q.name, q.size) for q in details.quantizations] == [("Q4_K_M", 400), ("Q8_0", 800), ("F16", 2000)]
    assert router.state.requests[0].headers["Authorization"] == "Bearer secret"
