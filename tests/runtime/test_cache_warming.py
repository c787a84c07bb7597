"""Prompt-cache warming (``cacheWarming``): the session's last request is repeated with
a one-token cap before its cache entry expires, when that pays; plugins decide last
(``cache_warming_decision``); refreshes are ``usage`` entries of kind ``cache_warm``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import lines, write_settings

from pi_core.ai import FauxResponse, FauxScript, faux_model
from pi_core.runtime import create_agent_session
from pi_core.runtime.cache_warmer import evaluate, prompt_cache_lifetime_ms, warm_delay_ms
from pi_hookspecs import Model, StreamOptions, hookimpl

# $10 / $50 / $1 / $12.5 per million tokens; a 100k-token prompt
COST = {"input": 10, "output": 50, "cache_read": 1, "cache_write": 12.5}
BIG_PROMPT = {"input": 1_000, "output": 20, "cache_read": 99_000, "cache_write": 0}


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def test_the_economics_of_a_refresh() -> None:
    model = Model(id="m", provider="p", api="faux", cost=COST)
    running = evaluate(model, 100_000, "streaming")
    assert running.warm_cost == pytest.approx(0.1 + 0.00005)
    assert running.miss_cost == pytest.approx(1.25 - 0.1)
    assert running.action == "warm" and running.continuation_probability == 1
    idle = evaluate(model, 100_000, "idle")  # 0.15 * 1.15 - 0.10005 = 0.072
    assert idle.action == "warm" and idle.expected_savings == pytest.approx(0.15 * 1.15 - 0.10005)
    small = evaluate(model, 20_000, "idle")  # not worth it between runs
    assert small.action == "stop" and small.economics_available
    assert evaluate(model, 0, "streaming").economics_available is False


def test_lifetimes_and_the_refresh_delay() -> None:
    model = Model.model_validate({"id": "m", "promptCache": {"short": 300, "long": 3600}})
    assert prompt_cache_lifetime_ms(model, StreamOptions()) == 300_000
    assert prompt_cache_lifetime_ms(model, StreamOptions(extra={"cache_retention": "long"})) == 3_600_000
    assert prompt_cache_lifetime_ms(model, StreamOptions(extra={"cache_retention": "none"})) is None
    assert prompt_cache_lifetime_ms(Model(id="plain"), StreamOptions()) is None
    assert warm_delay_ms(300_000) == 270_000  # 90% of the lifetime
    assert warm_delay_ms(60_000) == 50_000  # at least ten seconds of margin
    assert warm_delay_ms(10_000) is None


async def start_warming(cwd: Path, *plugins: Any) -> tuple[Any, list[StreamOptions], list[Any]]:
    """A session on a model whose cache lives 11 s (a refresh after 1 s)."""
    script = FauxScript(
        [FauxResponse(text="answer", usage=BIG_PROMPT)],
        fallback=lambda context: FauxResponse(
            text="", usage={"input": 0, "output": 1, "cache_read": 100_000, "cache_write": 0}
        ),
    )
    model = faux_model(script, id="cached", cost=COST, promptCache={"short": 11})
    sent: list[StreamOptions] = []
    holder: dict[str, Any] = {}

    def recording_stream(model: Model, context: Any, options: StreamOptions) -> Any:
        sent.append(options)
        return holder["runtime"].session.models.stream(model, context, options)

    runtime = await create_agent_session(
        cwd=cwd, model=model, plugins=list(plugins), installed_plugins=False, stream_fn=recording_stream
    )
    holder["runtime"] = runtime
    events: list[Any] = []
    runtime.subscribe(events.append)
    return runtime, sent, events


async def test_an_idle_session_refreshes_its_cache_and_records_the_usage(cwd: Path) -> None:
    decisions: list[Any] = []

    class Observer:
        @hookimpl
        def cache_warming_decision(self, event: Any) -> None:
            decisions.append(event)

    runtime, sent, events = await start_warming(cwd, Observer)
    await runtime.session.prompt("hello")
    assert runtime.session.cache_warmer.status()["state"] == "scheduled"
    await asyncio.sleep(1.6)
    assert len(sent) >= 2 and sent[1].max_tokens == 1 and sent[1].extra["max_retries"] == 0
    assert decisions and decisions[0].action == "warm" and decisions[0].continuation_probability == 0.15
    usage = [r for r in lines(runtime.session.session_file) if r["type"] == "usage"]
    assert usage[0]["kind"] == "cache_warm" and usage[0]["usage"]["cacheRead"] == 100_000
    assert any(e.type == "entry_appended" and e.entry["type"] == "usage" for e in events)
    # the refresh never enters the model's context
    assert [m.role for m in runtime.session.messages] == ["system", "user", "assistant"]
    await runtime.dispose()


async def test_a_plugin_stops_warming(cwd: Path) -> None:
    class Stop:
        @hookimpl
        def cache_warming_decision(self, event: Any) -> Any:
            return {"action": "stop"}

    class Later:  # loaded after Stop: the last handler that returns an action decides
        @hookimpl(trylast=True)
        def cache_warming_decision(self, event: Any) -> Any:
            return None

    runtime, sent, _ = await start_warming(cwd, Stop, Later)
    await runtime.session.prompt("hello")
    await asyncio.sleep(1.4)
    assert len(sent) == 1
    status = runtime.session.cache_warmer.status()
    assert status["state"] == "inactive" and status["reason"] == "stopped by a plugin"
    await runtime.dispose()


async def test_off_and_streaming_modes(cwd: Path) -> None:
    write_settings({"cacheWarming": "off"})
    runtime, sent, _ = await start_warming(cwd)
    await runtime.session.prompt("hello")
    assert runtime.session.cache_warmer.status() == {"state": "inactive", "reason": "cache warming disabled"}
    await runtime.dispose()
    write_settings({"cacheWarming": "streaming"})
    runtime, sent, _ = await start_warming(cwd)
    await runtime.session.prompt("hello")  # the run settled: streaming-only warming ends with it
    assert runtime.session.cache_warmer.status()["reason"] == "the agent run settled"
    await asyncio.sleep(1.2)
    assert len(sent) == 1
    await runtime.dispose()
