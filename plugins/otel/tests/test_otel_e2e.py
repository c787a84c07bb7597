"""The real ``pi -p`` (pluggable-pi-otel found through its ``pi.extensions`` entry point) against
the loopback model server, exporting over OTLP/HTTP to a receiver in the test that
decodes the protobuf requests: spans, parents, attributes, events and metric points."""

from __future__ import annotations

import json
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otel_testkit import (
    Collector,
    Span,
    WireServer,
    closed_port_url,
    configure_model,
    pi_env,
    run_pi,
    text_reply,
    tool_reply,
)

POLICY = """
from pi_hookspecs import hookimpl


class Policy:
    @hookimpl
    def tool_call(self, event):
        if event.tool_name == "bash" and "forbidden" in event.input.get("command", ""):
            return {"block": True, "reason": "forbidden commands are not run here"}

    @hookimpl
    def tool_result(self, event):
        text = "".join(block.text for block in event.content if block.type == "text")
        if "secret" in text:
            return {"content": [{"type": "text", "text": text.replace("secret", "******")}]}
"""


@pytest.fixture
def agent(pi_agent_dir: Path) -> Path:
    directory = pi_agent_dir
    (directory / "settings.json").write_text(json.dumps({"defaultTools": ["+codemode"]}))
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    yield server
    server.close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    receiver = Collector()
    yield receiver
    receiver.close()


def script(wire: WireServer) -> None:
    """A tool call whose result a plugin redacts, a call another plugin blocks, a
    codemode script that calls bash (a nested call), then the answer."""
    wire.enqueue(
        tool_reply("bash", {"command": "echo the secret word"}, "call_1"),
        tool_reply("bash", {"command": "echo forbidden"}, "call_2"),
        tool_reply("codemode", {"code": "out = tools.bash(command='echo nested')\nprint(out)"}, "call_3"),
        text_reply("All done.", prompt_tokens=40, completion_tokens=7),
    )


def run(agent: Path, project: Path, wire: WireServer, endpoint: str, **env: str) -> Any:
    model = configure_model(agent, wire)
    policy = project.parent / "policy.py"
    policy.write_text(textwrap.dedent(POLICY))
    return run_pi(
        "-p",
        "--no-session",
        "--model",
        model,
        "-e",
        str(policy),
        "do the things",
        cwd=project,
        env=pi_env(agent, PI_EXTENSIONS="otel,codemode", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, **env),
    )


def by_name(spans: list[Span], name: str) -> list[Span]:
    return [span for span in spans if span.name == name]


def test_a_run_is_exported_as_genai_spans_and_metrics(
    agent: Path, project: Path, wire: WireServer, collector: Collector
) -> None:
    script(wire)
    done = run(agent, project, wire, collector.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "All done."
    assert "pluggable-pi-otel" not in done.stderr
    # pi has handed everything to its export process, which sends it now
    received = collector.wait(lambda r: len(r.spans) >= 9 and "pi.cost.usage" in r.metrics)
    spans = received.spans
    names = sorted(span.name for span in spans)
    assert names == sorted(
        [
            "invoke_agent",
            *["chat local-model"] * 4,
            "execute_tool bash",
            "execute_tool bash",
            "execute_tool codemode",
            "execute_tool bash",
        ]
    ), names
    (run_span,) = by_name(spans, "invoke_agent")
    ids = {span.span_id: span for span in spans}
    assert run_span.parent_span_id == "" and all(span.trace_id == run_span.trace_id for span in spans)
    assert run_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run_span.attributes["gen_ai.provider.name"] == "local"
    assert run_span.attributes["gen_ai.request.model"] == "local-model"
    assert run_span.attributes["gen_ai.usage.input_tokens"] == 3 * 10 + 40
    assert run_span.attributes["gen_ai.usage.output_tokens"] == 4 * 5 + 2
    assert run_span.attributes["gen_ai.conversation.id"]
    assert run_span.resource["service.name"] == "pi"
    assert run_span.kind == 1  # SPAN_KIND_INTERNAL

    chats = sorted(by_name(spans, "chat local-model"), key=lambda span: span.start_ns)
    assert all(chat.parent_span_id == run_span.span_id and chat.kind == 3 for chat in chats)  # CLIENT
    last = chats[-1].attributes
    assert last["gen_ai.operation.name"] == "chat"
    assert last["gen_ai.provider.name"] == "local" and last["pi.provider"] == "local"
    assert last["gen_ai.request.model"] == "local-model" and last["gen_ai.request.stream"] is True
    assert last["gen_ai.usage.input_tokens"] == 40 and last["gen_ai.usage.output_tokens"] == 7
    assert last["gen_ai.response.finish_reasons"] == ["stop"]
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert last["server.address"] == "127.0.0.1" and last["server.port"] == int(wire.url.rsplit(":", 1)[1])
    assert 0 <= last["gen_ai.response.time_to_first_chunk"] < 30
    assert last["pi.cost.usd"] == pytest.approx((40 * 1.0 + 7 * 2.0) / 1e6)
    # no content unless asked for
    assert not any(
        key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.tool.call.res"))
        for span in spans
        for key in span.attributes
    )

    tools = {span.attributes["gen_ai.tool.call.id"]: span for span in spans if span.name.startswith("execute_tool")}
    assert set(tools) == {"call_1", "call_2", "call_3", "call_3/1"}
    for call_id in ("call_1", "call_2", "call_3"):
        assert tools[call_id].parent_span_id == run_span.span_id
    nested = tools["call_3/1"]
    assert nested.parent_span_id == tools["call_3"].span_id  # nested under the codemode call
    assert nested.attributes["pi.tool.parent_call_id"] == "call_3"
    assert nested.attributes["gen_ai.tool.name"] == "bash" and nested.attributes["pi.tool.outcome"] == "ok"
    assert tools["call_3"].start_ns <= nested.start_ns <= nested.end_ns <= tools["call_3"].end_ns
    assert tools["call_1"].attributes["gen_ai.operation.name"] == "execute_tool"
    assert tools["call_1"].attributes["gen_ai.tool.type"] == "function"
    assert tools["call_1"].attributes["gen_ai.tool.description"]
    # the redaction: a transformed tool_result, naming the plugin
    ((event_name, event),) = tools["call_1"].events
    assert event_name == "pi.hook.transformed"
    assert event["pi.hook.name"] == "tool_result" and event["pi.hook.outcome"] == "transformed"
    plugin = event["pi.plugin.name"]
    assert "policy" in plugin.lower()
    # the blocked call: an error span with the block as an event naming the plugin
    blocked = tools["call_2"]
    assert blocked.status_code == 2 and blocked.attributes["error.type"] == "blocked"  # STATUS_CODE_ERROR
    assert blocked.attributes["pi.tool.outcome"] == "blocked"
    assert blocked.events == [
        (
            "pi.hook.blocked",
            {
                "pi.hook.name": "tool_call",
                "pi.plugin.name": plugin,
                "pi.hook.outcome": "blocked",
                "pi.hook.message": "forbidden commands are not run here",
                "gen_ai.tool.call.id": "call_2",
            },
        )
    ]
    assert tools["call_1"].status_code == 0 and tools["call_1"].attributes["pi.tool.outcome"] == "ok"
    # every child inside its parent's time
    for span in spans:
        if span.parent_span_id:
            parent = ids[span.parent_span_id]
            assert parent.start_ns <= span.start_ns <= span.end_ns <= parent.end_ns, span.name

    metrics = received.metrics
    usage = {(a["gen_ai.token.type"]): p for a, p in metrics["gen_ai.client.token.usage"]}
    assert usage["input"].count == 4 and usage["input"].sum == 70
    assert usage["output"].count == 4 and usage["output"].sum == 22
    chat_attrs = next(a for a, _ in metrics["gen_ai.client.token.usage"])
    assert chat_attrs["gen_ai.operation.name"] == "chat" and chat_attrs["gen_ai.provider.name"] == "local"
    assert chat_attrs["gen_ai.request.model"] == "local-model"
    durations = {a["gen_ai.operation.name"]: p for a, p in metrics["gen_ai.client.operation.duration"]}
    assert durations["chat"].count == 4 and durations["invoke_agent"].count == 1
    assert metrics["gen_ai.client.operation.time_to_first_chunk"][0][1].count == 4
    calls = {
        (a["gen_ai.tool.name"], a["pi.tool.outcome"], a["pi.tool.nested"]): p.as_int
        for a, p in metrics["pi.tool.calls"]
    }
    assert calls == {
        ("bash", "ok", False): 1,
        ("bash", "blocked", False): 1,
        ("codemode", "ok", False): 1,
        ("bash", "ok", True): 1,
    }
    outcomes = {
        (a["pi.hook.name"], a["pi.plugin.name"], a["pi.hook.outcome"]): p.as_int for a, p in metrics["pi.hook.outcomes"]
    }
    assert outcomes == {("tool_result", plugin, "transformed"): 1, ("tool_call", plugin, "blocked"): 1}
    ((_, cost),) = metrics["pi.cost.usage"]
    assert cost.as_double == pytest.approx((70 * 1.0 + 22 * 2.0) / 1e6)


def test_a_collector_that_is_down_or_hangs_changes_neither_answer_nor_status(
    agent: Path, project: Path, wire: WireServer, collector: Collector, tmp_path: Path
) -> None:
    hanging = Collector("hang")
    log = tmp_path / "otel.log"
    try:
        endpoints = {"up": collector.url, "down": closed_port_url(), "hangs": hanging.url}
        results: dict[str, list[Any]] = {name: [] for name in endpoints}
        for _ in range(2):
            for name, url in endpoints.items():
                script(wire)
                results[name].append(run(agent, project, wire, url, PI_OTEL_DEBUG="1", PI_OTEL_LOG=str(log)))
        for name, dones in results.items():
            for done in dones:
                assert done.returncode == 0, (name, done.stderr)
                assert done.stdout.strip() == "All done.", name
                assert "telemetry not" not in done.stderr, name  # pi itself never waited for the collector

        def handover_ms(done: Any) -> float:
            line = next(line for line in done.stderr.splitlines() if "exit flush" in line)
            return float(line.split("exit flush ")[1].split(" ms")[0])

        waits = {name: max(handover_ms(done) for done in dones) for name, dones in results.items()}
        runs = {name: round(min(done.seconds for done in dones), 3) for name, dones in results.items()}
        print(f"\npi's exit wait (max of 2, ms): {waits}; whole pi -p run (min of 2, s): {runs}")
        # Generous bounds (shared, noisy machines); the budget is 50 ms over a collector that is up.
        assert waits["down"] <= 500 and waits["hangs"] <= 500
        assert runs["down"] <= runs["up"] + 2.0 and runs["hangs"] <= runs["up"] + 2.0
        # the healthy collector got both runs; the export processes say what failed
        # (a line each time the cause changes: here every run changes it)
        collector.wait(lambda r: len(r.spans) >= 2 * 9)
        down = endpoints["down"]
        for _ in range(600):
            text = log.read_text() if log.exists() else ""
            if f"traces: refused: nothing accepts connections at {down[7:]}" in text and "traces: timeout:" in text:
                break
            threading.Event().wait(0.05)
        assert f"traces: refused: nothing accepts connections at {down[7:]} ({down}/v1/traces)" in text, text
        assert f"traces: timeout: {hanging.url}/v1/traces did not answer within 2 s" in text, text
        assert "refused" not in "".join(line for line in text.splitlines() if hanging.url in line), text
    finally:
        hanging.close()


def test_in_process_export_waits_for_a_collector_only_while_it_deserves_it(
    agent: Path, project: Path, wire: WireServer, collector: Collector
) -> None:
    """``PI_OTEL_IN_PROCESS=1`` (also the fallback when the export process cannot start):
    the export thread is pi's, so pi waits at exit, for a collector that answered."""
    hanging = Collector("hang")
    try:
        endpoints = {"up": collector.url, "down": closed_port_url(), "hangs": hanging.url}
        results = {}
        for name, url in endpoints.items():
            script(wire)
            results[name] = run(agent, project, wire, url, PI_OTEL_IN_PROCESS="1", PI_OTEL_DEBUG="1")
    finally:
        hanging.close()
    for name, done in results.items():
        assert done.returncode == 0 and done.stdout.strip() == "All done.", (name, done.stderr)
    assert len(collector.received.spans) == 9  # received before pi exited
    assert "telemetry not" not in results["up"].stderr
    for name in ("down", "hangs"):
        assert f"pluggable-pi-otel: telemetry not (fully) exported to {endpoints[name]}" in results[name].stderr

    def flush_ms(done: Any) -> float:
        line = next(line for line in done.stderr.splitlines() if "exit flush" in line)
        return float(line.split("exit flush ")[1].split(" ms")[0])

    waits = {name: flush_ms(done) for name, done in results.items()}
    print(f"\nin-process exit flush (ms): {waits}")
    assert waits["down"] <= waits["up"] + 500 and waits["hangs"] <= waits["up"] + 500


OBSERVER = """
import json, os, sys
from pi_hookspecs import hookimpl


class Observer:
    @hookimpl
    def session_shutdown(self):
        with open(os.environ["OBSERVED"], "w") as fh:
            json.dump(sorted(m for m in sys.modules if m.startswith("opentelemetry")), fh)
"""


def test_without_an_endpoint_nothing_is_imported_or_exported(
    agent: Path, project: Path, wire: WireServer, tmp_path: Path
) -> None:
    observer = tmp_path / "observer.py"
    observer.write_text(textwrap.dedent(OBSERVER))
    observed = tmp_path / "observed.json"
    model = configure_model(agent, wire)
    wire.enqueue(tool_reply("bash", {"command": "echo hi"}, "call_1"), text_reply("Fine."))
    done = run_pi(
        "-p",
        "--no-session",
        "--model",
        model,
        "-e",
        str(observer),
        "go",
        cwd=project,
        env=pi_env(agent, PI_EXTENSIONS="otel", OBSERVED=str(observed)),
    )
    assert done.returncode == 0 and done.stdout.strip() == "Fine.", done.stderr
    assert json.loads(observed.read_text()) == []
    listing = run_pi("extensions", "list", "--json", cwd=project, env=pi_env(agent, PI_EXTENSIONS="otel"))
    assert listing.returncode == 0, listing.stderr
    assert '"otel"' in listing.stdout


def test_invalid_settings_are_reported_naming_the_file(agent: Path, project: Path, wire: WireServer) -> None:
    (agent / "settings.json").write_text(json.dumps({"otel": {"endpoint": 42}}))
    model = configure_model(agent, wire)
    wire.enqueue(text_reply("Still answering."))
    done = run_pi("-p", "--no-session", "--model", model, "go", cwd=project, env=pi_env(agent, PI_EXTENSIONS="otel"))
    assert done.returncode == 0 and done.stdout.strip() == "Still answering."
    assert (
        f"invalid settings in {agent / 'settings.json'}: otel.endpoint: Input should be a valid string" in done.stderr
    )
