"""Virtual models and dynamic catalogues in the model registry and a session: routing
reasons (``user``, ``continuation``, ``retry``, ``direct``), router state on the branch,
failures as one error response, the limits that apply, ``models-store.json``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pi_core.ai import FauxResponse, FauxScript, ModelRegistry
from pi_core.ai.catalogue_snapshots import ModelsStore, ModelsStoreError
from pi_core.ai.faux import register_faux_script
from pi_core.testing import PiHarness, call
from pi_hookspecs import (
    CatalogueSnapshot,
    LlmContext,
    Model,
    ProviderDefinition,
    Route,
    StreamOptions,
    UserMessage,
    VirtualModelDefinition,
    hookimpl,
)


class Scripted:
    """A provider ``lab`` with two faux-API models, ``small`` and ``large``."""

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(
            ProviderDefinition(
                name="lab",
                api="faux",
                api_key="k",
                models=[Model(id="small", context_window=8000), Model(id="large", context_window=64000)],
            )
        )


class Recorder:
    """A router that records every request and sends ``high`` to ``lab/large``."""

    def __init__(self, state: Any = "count") -> None:
        self.requests: list[Any] = []
        self.state = state

    @hookimpl
    def register_virtual_models(self, register: Any) -> None:
        register(
            VirtualModelDefinition(provider="router", id="auto", thinking_levels=["low", "high"], route=self.route)
        )

    def route(self, request: Any) -> Route:
        self.requests.append(request)
        target = "lab/large" if request.thinking_level == "high" else "lab/small"
        if self.state == "count":
            state = {"n": (request.state or {}).get("n", 0) + 1}
        else:
            state = request.state  # keeps the current state: nothing stored
        return Route(model=target, thinking_level="high", state=state)


def _scripts(*replies: Any) -> tuple[FauxScript, FauxScript]:
    small, large = FauxScript(list(replies)), FauxScript(list(replies))
    register_faux_script("lab", "small", small)
    register_faux_script("lab", "large", large)
    return small, large


def _session(pi: PiHarness, level: str = "high") -> None:
    auto = pi.session.models.get("router", "auto")
    assert pi.run(pi.session.set_model(auto))
    pi.run(pi.session.set_thinking_level(level))


def test_reasons_state_and_dispatch_in_a_session(pi: PiHarness) -> None:
    router = Recorder()
    pi.use(Scripted, router)
    _, large = _scripts(call("ls", path="."), "done")
    _session(pi)
    run = pi.prompt("list")
    assert run.text == "done"
    assert [r.reason for r in router.requests] == ["user", "continuation"]
    assert router.requests[1].previous.model.ref == "lab/large"
    assert [r.state for r in router.requests] == [None, {"n": 1}]
    assert len(large.contexts) == 2
    answers = [m for m in run.messages if m.role == "assistant"]
    # large has no reasoning: the route's "high" is clamped to what it supports
    assert {(m.provider, m.model, m.thinking_level) for m in answers} == {("lab", "large", "off")}
    assert pi.session.model.ref == "router/auto" and pi.session.thinking_level == "high"
    states = [e["data"] for e in pi.session_entries() if e["type"] == "custom"]
    assert states == [
        {"provider": "router", "modelId": "auto", "state": {"n": 1}},
        {"provider": "router", "modelId": "auto", "state": {"n": 2}},
    ]


def test_returning_the_current_state_stores_nothing(pi: PiHarness) -> None:
    router = Recorder(state="keep")
    pi.use(Scripted, router)
    _scripts("one")
    _session(pi)
    pi.prompt("hi")
    assert not [e for e in pi.session_entries() if e["type"] == "custom"]


def test_a_retry_is_routed_with_the_failed_response(pi: PiHarness) -> None:
    router = Recorder()
    pi.use(Scripted, router).configure(retry={"enabled": True, "maxRetries": 1, "baseDelayMs": 1})
    _scripts(FauxResponse(error_message="503 Service Unavailable: overloaded"), "recovered")
    _session(pi)
    run = pi.prompt("hi")
    assert run.text == "recovered"
    assert [r.reason for r in router.requests] == ["user", "retry"]
    failed = router.requests[1].failed
    assert failed.model.ref == "lab/large" and "overloaded" in failed.message.error_message
    assert all(m.role != "assistant" or m.stop_reason != "error" for m in router.requests[1].messages)


def test_a_failed_route_is_an_error_response_and_the_session_goes_on(pi: PiHarness) -> None:
    class Broken:
        @hookimpl
        def register_virtual_models(self, register: Any) -> None:
            register({"provider": "router", "id": "broken", "route": lambda request: 1 / 0})
            register({"provider": "router", "id": "keyless", "route": lambda request: {"model": "anthropic/x"}})

    pi.use(Scripted, Broken)
    broken = pi.session.models.get("router", "broken")
    assert pi.run(pi.session.set_model(broken))
    run = pi.prompt("hi")
    final = run.messages[-1]
    assert final.stop_reason == "error" and (final.provider, final.model) == ("router", "broken")
    assert "Virtual model router/broken: its route failed: ZeroDivisionError" in final.error_message
    assert pi.run(pi.session.set_model(pi.session.models.get("router", "keyless")))
    again = pi.prompt("again")
    assert "routed to anthropic/x, which is not a physical model" in again.messages[-1].error_message


def test_limits_follow_the_physical_model_that_answered_last(pi: PiHarness) -> None:
    seen: list[Any] = []

    class Usage:
        @hookimpl
        def agent_end(self, event: Any, ctx: Any) -> None:
            seen.append(ctx.get_context_usage())

    pi.use(Scripted, Recorder(), Usage)
    _scripts("ok", "ok")
    _session(pi, "low")
    assert pi.session.model.context_window == 0  # declared nothing: unknown
    assert pi.session.limits_model().ref == "router/auto"
    pi.prompt("hi")
    assert pi.session.limits_model().ref == "lab/small"
    _session(pi, "high")
    pi.prompt("again")
    assert pi.session.limits_model().ref == "lab/large"
    assert [usage.context_window for usage in seen] == [8000, 64000]


async def test_direct_requests_are_routed_and_capped(tmp_path: Path) -> None:
    registry = ModelRegistry(models_path=tmp_path / "models.json")
    registry.add_provider(
        Scripted().__class__
        and ProviderDefinition(name="lab", api="faux", api_key="k", models=[Model(id="small", max_tokens=100)])
    )
    seen: list[Any] = []

    def route(request: Any) -> Route:
        seen.append((request.reason, request.state))
        return Route(model="lab/small", state={"ignored": True})

    definition = VirtualModelDefinition(provider="router", id="auto", route=route)
    assert registry.use_virtual_models([(definition, "test")]) == []
    script = FauxScript(["direct answer"])
    register_faux_script("lab", "small", script)
    virtual = registry.get("router", "auto")
    context = LlmContext(messages=[UserMessage(content="summarise")])
    message = await registry.complete(virtual, context, StreamOptions(max_tokens=5000, api_key="router-key"))
    assert message.text() == "direct answer" and (message.provider, message.model) == ("lab", "small")
    assert seen == [("direct", None)]


async def test_a_virtual_model_may_not_take_a_physical_id(tmp_path: Path) -> None:
    registry = ModelRegistry(models_path=tmp_path / "models.json")
    clash = VirtualModelDefinition(provider="anthropic", id="claude-sonnet-4-5", route=print)
    fine = VirtualModelDefinition(provider="anthropic", id="auto", route=print)
    problems = registry.use_virtual_models([(clash, "p"), (fine, "p")])
    assert problems == [
        "plugin 'p': virtual model anthropic/claude-sonnet-4-5 conflicts with a physical model; skipped"
    ]
    assert registry.get("anthropic", "auto") is not None
    assert not registry.has_auth("anthropic") or registry.get("anthropic", "auto") in registry.available()


# --------------------------------------------------------------------------- models-store.json


def test_the_store_keeps_other_entries_and_never_overwrites_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "models-store.json"
    path.write_text(json.dumps({"other": {"models": [{"id": "x", "provider": "other"}], "checkedAt": 1}}))
    store = ModelsStore(path)
    store.write("acme", CatalogueSnapshot(models=[Model(id="a1")], checked_at=5))
    data = json.loads(path.read_text())
    assert data["other"]["models"][0]["id"] == "x"
    assert data["acme"] == {"models": [{**data["acme"]["models"][0], "id": "a1", "provider": "acme"}], "checkedAt": 5}
    assert store.read("acme").models[0].id == "a1"
    store.write("acme", None)
    assert "acme" not in json.loads(path.read_text())
    path.write_text("{not json")
    assert store.read("other") is None and store.error is not None and "invalid JSON" in store.error
    with pytest.raises(ModelsStoreError, match="not overwritten"):
        store.write("acme", CatalogueSnapshot())
    assert path.read_text() == "{not json"


def _acme(refresh: Any, **fields: Any) -> ProviderDefinition:
    """Provider ``acme`` (OpenAI-compatible, at an address nothing answers) whose
    catalogue ``refresh`` refreshes; key ``k`` unless ``fields`` say otherwise."""
    return ProviderDefinition(
        **{"name": "acme", "api": "openai-completions", "base_url": "http://127.0.0.1:9/v1", "api_key": "k", **fields},
        refresh_models=refresh,
    )


async def test_a_refresh_returning_bad_models_is_one_message_and_changes_nothing(tmp_path: Path) -> None:
    registry = ModelRegistry(models_path=tmp_path / "models.json")
    calls: list[bool] = []

    async def refresh(request: Any) -> Any:
        calls.append(request.allow_network)
        return [{"id": "fine"}, {"name": "no id"}] if request.allow_network else None

    registry.add_provider(_acme(refresh, models=[Model(id="base")]))
    errors = await registry.refresh_catalogues(allow_network=True)
    assert calls == [False, True]
    assert list(errors) == ["acme"] and "invalid model at index 1" in errors["acme"]
    assert [m.id for m in registry.models() if m.provider == "acme"] == ["base"]


async def test_a_superseded_refresh_cannot_publish(tmp_path: Path) -> None:
    registry = ModelRegistry(models_path=tmp_path / "models.json")
    outcomes: list[bool] = []

    async def refresh(request: Any) -> Any:
        if not request.allow_network:
            return None
        registry.catalogues.begin("acme")  # a newer refresh started meanwhile
        outcomes.append(await request.publish({"models": [{"id": "stale"}]}))
        return [Model(id="stale")]

    registry.add_provider(_acme(refresh))
    assert await registry.refresh_catalogues(allow_network=True) == {}
    assert outcomes == [False]
    assert registry.get("acme", "stale") is None
    assert not (tmp_path / "models-store.json").exists()


async def test_a_refresh_replaces_models_of_every_type(tmp_path: Path) -> None:
    registry = ModelRegistry(models_path=tmp_path / "models.json")

    async def refresh(request: Any) -> Any:
        if not request.allow_network:
            return None
        return [Model(id="judge"), Model(id="judge", type="classifier", api="llama-cpp-classify")]

    registry.add_provider(_acme(refresh, models=[Model(id="old")]))
    assert await registry.refresh_catalogues(allow_network=True) == {}
    assert [m.id for m in registry.models() if m.provider == "acme"] == ["judge"]
    classifier = registry.get_of_type("classifier", "acme", "judge")
    assert classifier is not None and classifier.api == "llama-cpp-classify"


class Catalogued:
    """A provider ``acme`` whose catalogue comes from ``offered`` (a live service's
    stand-in is not needed: the refresh function is the plugin's own code), and a
    command ``/acme`` that refreshes it and reads the provider's credentials through
    ``ctx.model_registry`` as a plugin would."""

    def __init__(self) -> None:
        self.offered = ["one"]
        self.seen: list[Any] = []
        self.auth: Any = None
        self.result: Any = None

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(_acme(self.refresh_models, api_key="$ACME_TEST_KEY", headers={"X-Team": "blue"}))

    async def refresh_models(self, refresh: Any) -> Any:
        self.seen.append((refresh.allow_network, refresh.api_key))
        if not refresh.allow_network:
            return None
        if refresh.signal is not None and "slow" in self.offered:
            await refresh.signal.wait()
            return None
        return [Model(id=model_id) for model_id in self.offered]

    @hookimpl
    def register_commands(self, register: Any) -> None:
        register("acme", self.command)

    async def command(self, args: str, ctx: Any) -> None:
        self.auth = await ctx.model_registry.get_provider_auth("acme")
        signal = None
        if args == "timeout":
            from pi_hookspecs import AbortController

            controller = AbortController()
            asyncio.get_running_loop().call_later(0.05, controller.abort)
            signal = controller.signal
        self.result = await ctx.model_registry.refresh(providers=["acme"], allow_network=True, signal=signal)


def test_a_plugin_refreshes_its_catalogue_and_reads_its_credentials_through_ctx(
    pi: PiHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_TEST_KEY", "sk-acme")
    plugin = Catalogued()
    pi.use(plugin)
    pi.run(pi.astart())
    session = pi.session
    assert session.models.get("acme", "two") is None
    plugin.offered = ["one", "two"]
    pi.run(session.run_command("acme"))
    assert plugin.result.errors == {} and plugin.result.aborted is False
    # offered at once, in the same session (no reload): /model, --model and ctx see it
    assert session.models.get("acme", "two") is not None
    assert plugin.seen[-1] == (True, "sk-acme")
    auth = plugin.auth
    assert (auth.api_key, auth.base_url, auth.headers.get("X-Team")) == ("sk-acme", "http://127.0.0.1:9/v1", "blue")
    assert pi.plugin_errors == []

    # a refresh that outlives the caller's signal: the caller stops waiting
    plugin.offered = ["slow"]
    pi.run(session.run_command("acme", "timeout"))
    assert plugin.result.aborted is True
    assert session.models.get("acme", "two") is not None  # the models stay as they were


def test_provider_auth_of_an_unknown_or_keyless_provider_is_none(
    pi: PiHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACME_TEST_KEY", raising=False)
    plugin = Catalogued()
    pi.use(plugin)
    pi.run(pi.astart())
    registry = pi.session.context_host.model_registry()
    assert pi.run(registry.get_provider_auth("nobody")) is None
    assert pi.run(registry.get_provider_auth("acme")) is None  # its key is not set
