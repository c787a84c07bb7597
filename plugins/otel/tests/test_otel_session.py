"""pluggable-pi-otel in a pi session on the scripted model (the ``pi`` fixture), exporting to a
local OTLP/HTTP receiver: retries, compaction, failing and transforming hooks, content
capture, and the configuration from the user settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otel_testkit import Collector, Span

from pi_core.ai import FauxResponse
from pi_core.testing import PiHarness, call
from pi_hookspecs import hookimpl
from pi_otel import OtelDisabled, OtelPlugin, load_config
from pi_otel.config import ConfigError


@pytest.fixture(autouse=True)
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


@pytest.fixture
def collector() -> Iterator[Collector]:
    receiver = Collector()
    yield receiver
    receiver.close()


class Meddler:
    """A plugin whose hooks fail and transform (what pluggable-pi-otel reports as hook events)."""

    @hookimpl
    def turn_start(self) -> None:
        raise RuntimeError("the turn hook broke")

    @hookimpl
    def message_end(self, event: Any) -> Any:
        message = event.message
        if message.role == "assistant" and message.stop_reason == "stop":
            copy = message.model_copy(deep=True)
            copy.content[0].text = copy.content[0].text.upper()
            return {"message": copy}
        return None


def one(spans: list[Span], name: str) -> Span:
    (span,) = [span for span in spans if span.name == name]
    return span


def test_retries_compaction_and_hook_outcomes(pi: PiHarness, collector: Collector) -> None:
    pi.configure(
        otel={
            "endpoint": collector.url,
            "serviceName": "pi-ci",
            "resourceAttributes": {"team": "qa"},
            "headers": {"x-token": "t1"},
            "agentName": "reviewer",
        },
        retry={"baseDelayMs": 1},
        compaction={"keepRecentTokens": 1},
    )
    pi.use(OtelPlugin, Meddler)
    pi.script(FauxResponse(error_message="429 Too Many Requests: slow down"), "the answer")
    run = pi.prompt("hello")
    assert run.text == "THE ANSWER"
    pi.script("a summary of it all")
    pi.run(pi.session.compact())
    pi.close()  # session_shutdown: handed to the export process, which sends it

    spans = collector.wait(lambda r: len(r.spans) >= 4 and "pi.hook.outcomes" in r.metrics).spans
    agent = one(spans, "invoke_agent reviewer")
    assert agent.attributes["gen_ai.agent.name"] == "reviewer"
    assert agent.resource["service.name"] == "pi-ci" and agent.resource["team"] == "qa"
    assert agent.resource["telemetry.distro.name"] == "pluggable-pi-otel"
    assert all(headers.get("x-token") == "t1" for headers in collector.headers)
    assert agent.status_code == 0  # the retry succeeded
    retry = [attrs for name, attrs in agent.events if name == "pi.retry"]
    assert retry == [{"pi.retry.attempt": 1, "error.type": "429", "pi.error.message": retry[0]["pi.error.message"]}]
    assert "Too Many Requests" in retry[0]["pi.error.message"]
    failures = [attrs for name, attrs in agent.events if name == "pi.hook.failed"]
    assert len(failures) == 2  # one turn per attempt
    assert {f["pi.plugin.name"] for f in failures} == {"Meddler"} and failures[0]["pi.hook.name"] == "turn_start"
    assert "the turn hook broke" in failures[0]["pi.hook.message"]

    chats = sorted((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_ns)
    assert [c.parent_span_id for c in chats] == [agent.span_id] * 2
    failed, answered = chats
    assert failed.status_code == 2 and failed.attributes["error.type"] == "429"
    assert "Too Many Requests" in failed.status_message
    assert answered.status_code == 0 and answered.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert answered.events[0][0] == "pi.hook.transformed"
    assert (
        answered.events[0][1]["pi.hook.name"] == "message_end" and answered.events[0][1]["pi.plugin.name"] == "Meddler"
    )

    compaction = one(spans, "pi.compaction")
    assert compaction.parent_span_id == ""  # a manual compaction: a trace of its own
    assert compaction.attributes["pi.compaction.reason"] == "manual"
    assert compaction.attributes["pi.compaction.from_plugin"] is False
    assert compaction.attributes["gen_ai.usage.output_tokens"] > 0
    assert compaction.trace_id != agent.trace_id

    outcomes = {
        (a["pi.hook.name"], a["pi.hook.outcome"]): p.as_int for a, p in collector.received.metrics["pi.hook.outcomes"]
    }
    assert outcomes[("turn_start", "failed")] == 2 and outcomes[("message_end", "transformed")] == 1


def test_content_is_recorded_only_when_asked_for(
    pi: PiHarness, collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    pi.use(OtelPlugin)
    pi.write("notes.txt", "remember the milk\n")
    pi.script(call("read", path="notes.txt"), "You must remember the milk.")
    pi.prompt("what do my notes say?")
    pi.close()

    spans = collector.wait(lambda r: len(r.spans) >= 4).spans
    agent = one(spans, "invoke_agent")
    assert json.loads(agent.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "what do my notes say?"}]}
    ]
    output = json.loads(agent.attributes["gen_ai.output.messages"])
    assert output[0]["parts"] == [{"type": "text", "content": "You must remember the milk."}]
    tool = one(spans, "execute_tool read")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"path": "notes.txt"}
    assert "remember the milk" in tool.attributes["gen_ai.tool.call.result"]
    chats = sorted((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_ns)
    second = json.loads(chats[1].attributes["gen_ai.input.messages"])
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["parts"][0]["type"] == "tool_call" and second[1]["parts"][0]["name"] == "read"
    assert second[2]["parts"][0]["type"] == "tool_call_response"
    assert "remember the milk" in second[2]["parts"][0]["response"]
    system = json.loads(chats[0].attributes["gen_ai.system_instructions"])
    assert system[0]["type"] == "text" and system[0]["content"]
    assert json.loads(chats[1].attributes["gen_ai.output.messages"])[0]["finish_reason"] == "stop"


def test_without_an_endpoint_the_plugin_has_no_hooks(pi_agent_dir: Path) -> None:
    plugin = OtelPlugin()
    assert isinstance(plugin, OtelDisabled) and "no OTLP endpoint" in plugin.reason
    # only `pi otel status`, which pi asks for on its command line: no session event reaches it
    assert [name for name in dir(plugin) if hasattr(getattr(plugin, name), "pi_impl")] == ["register_cli_commands"]


def test_configuration(pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = pi_agent_dir / "settings.json"
    settings.write_text(json.dumps({"otel": {"endpoint": "http://collector:4318", "captureContent": True}}))
    config = load_config()
    assert config.enabled and config.capture_content and "otel.endpoint" in config.reason
    # the environment wins over the settings
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    assert not load_config().capture_content
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not load_config().enabled
    monkeypatch.delenv("OTEL_SDK_DISABLED")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    assert load_config().reason == "neither traces nor metrics are exported"
    monkeypatch.delenv("OTEL_TRACES_EXPORTER")
    monkeypatch.delenv("OTEL_METRICS_EXPORTER")
    settings.write_text(json.dumps({"otel": {"enabled": False}}))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert not load_config().enabled  # the user said no
    settings.write_text(json.dumps({"otel": {"endpont": "http://typo"}}))
    with pytest.raises(ConfigError, match=r"otel\.endpont: Extra inputs are not permitted"):
        load_config()
    settings.write_text("{ not json")  # pi reports the broken file once; telemetry stays off, saying why
    off = load_config()
    assert not off.enabled and off.reason.startswith(f"the settings file {settings}:1:3: invalid JSON")
