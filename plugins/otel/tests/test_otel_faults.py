"""Collectors that misbehave, against the real ``pi -p`` and its export processes: one
that hangs (accepts the connection, never answers), one that is down, a host name that
does not resolve, a backend that answers 405 to metrics (Arize Phoenix takes traces
only). What must hold: the export processes end within the export timeout of pi's exit,
at most one of them outlives its pi per agent folder (others hand their telemetry to
it), the log names the real cause once per cause, and ``pi otel status`` shows the last
result per signal."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otel_testkit import (
    Collector,
    WireServer,
    closed_port_url,
    configure_model,
    export_processes,
    pi_env,
    run_pi,
    text_reply,
    wait_for,
)

from pi_otel.config import export_timeout


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
def log(tmp_path: Path) -> Path:
    return tmp_path / "otel.log"


def ask(agent: Path, project: Path, wire: WireServer, endpoint: str, **env: str) -> Any:
    """One ``pi -p`` run (one model answer: an invoke_agent and a chat span)."""
    model = configure_model(agent, wire)
    wire.enqueue(text_reply("Fine."))
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "PI_EXTENSIONS": "otel", **env}
    done = run_pi("-p", "--no-session", "--model", model, "hello", cwd=project, env=pi_env(agent, **base))
    assert done.returncode == 0 and done.stdout.strip() == "Fine.", done.stderr
    return done


def log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def status(agent: Path, project: Path, *args: str) -> Any:
    return run_pi("otel", "status", *args, cwd=project, env=pi_env(agent, PI_EXTENSIONS="otel"))


def no_export_processes(agent: Path, timeout: float) -> float | None:
    return wait_for(lambda: not export_processes(agent), timeout)


@pytest.mark.parametrize(
    "timeouts",
    [
        {"OTEL_EXPORTER_OTLP_TIMEOUT": "2000"},
        # the per-signal variables win over the general one (60 s here)
        {
            "OTEL_EXPORTER_OTLP_TIMEOUT": "60000",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2000",
            "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "2000",
        },
    ],
    ids=["general", "per-signal"],
)
def test_a_hanging_collector_leaves_one_export_process_for_at_most_the_timeout(
    pi_agent_dir: Path, project: Path, wire: WireServer, log: Path, timeouts: dict[str, str]
) -> None:
    agent = pi_agent_dir
    hanging = Collector("hang")
    try:
        most = 0
        for _ in range(4):
            ask(agent, project, wire, hanging.url, PI_OTEL_LOG=str(log), **timeouts)
            ended = time.monotonic()
            # the export process of this run hands over to the one still sending (or is it)
            assert wait_for(lambda: len(export_processes(agent)) <= 1, 1.5) is not None, export_processes(agent)
            most = max(most, len(export_processes(agent)))
        assert most <= 1
        # the last one ends within the timeout (2 s) of pi's exit, not 2 x timeout + 5 s
        assert no_export_processes(agent, 8) is not None, export_processes(agent)
        lived = time.monotonic() - ended
        print(f"\nthe export process ended {lived:.2f} s after the last pi exited (timeout 2 s)")
        assert lived <= 2 + 2.0
    finally:
        hanging.close()
    lines = log_lines(log)
    traces = [line for line in lines if "traces:" in line]
    assert traces == [
        f"pluggable-pi-otel: traces: timeout: {hanging.url}/v1/traces did not answer within 2 s "
        "(OTEL_EXPORTER_OTLP_TIMEOUT)"
    ], lines
    assert not any("refused" in line for line in lines), lines
    shown = status(agent, project, "--json")
    assert shown.returncode == 0, shown.stderr
    entry = json.loads(shown.stdout)["signals"]["traces"]
    assert entry["result"] == "error" and entry["error"].startswith("timeout:"), entry


def test_the_log_names_a_refused_connection_and_a_name_that_does_not_resolve(
    pi_agent_dir: Path, project: Path, wire: WireServer, log: Path
) -> None:
    agent = pi_agent_dir
    down = closed_port_url()
    port = down.rsplit(":", 1)[1]
    for _ in range(2):
        ask(agent, project, wire, down, PI_OTEL_LOG=str(log))
    assert no_export_processes(agent, 5) is not None
    # a name that does not resolve fails at once; the longer timeout keeps a loaded
    # machine from reporting a slow start of the export as a timeout
    invalid = "http://pi-otel-test.invalid:4318"
    ask(agent, project, wire, invalid, PI_OTEL_LOG=str(log), OTEL_EXPORTER_OTLP_TIMEOUT="4000")
    assert no_export_processes(agent, 8) is not None
    lines = log_lines(log)
    # The exporter retries a refused connection until its timeout: the metrics (sent
    # after the spans) may not get their turn before the export process ends.
    assert [line for line in lines if "traces:" in line] == [
        f"pluggable-pi-otel: traces: refused: nothing accepts connections at 127.0.0.1:{port} ({down}/v1/traces)",
        "pluggable-pi-otel: traces: DNS: the host name 'pi-otel-test.invalid' of "
        "http://pi-otel-test.invalid:4318/v1/traces does not resolve",
    ], lines  # the refusal once for two runs
    assert all(": refused: " in line or ": DNS: " in line for line in lines), lines
    assert not any("timeout" in line for line in lines)


def test_metrics_refused_with_405_is_one_log_line_and_shown_by_pi_otel_status(
    pi_agent_dir: Path, project: Path, wire: WireServer, log: Path
) -> None:
    agent = pi_agent_dir
    phoenix = Collector(refuse={"/v1/metrics": 405})  # takes traces only
    try:
        for _ in range(3):
            ask(agent, project, wire, phoenix.url, PI_OTEL_LOG=str(log))
        phoenix.wait(lambda r: sum(span.name == "invoke_agent" for span in r.spans) == 3)
        assert no_export_processes(agent, 5) is not None
    finally:
        phoenix.close()
    assert phoenix.refused >= 3
    metrics_url = f"{phoenix.url}/v1/metrics"
    assert log_lines(log) == [
        f"pluggable-pi-otel: metrics: HTTP 405 Method Not Allowed from {metrics_url} "
        "(the collector takes no metrics there; OTEL_METRICS_EXPORTER=none stops sending them)"
    ]
    shown = status(agent, project, "--json")
    assert shown.returncode == 0, shown.stderr
    signals = json.loads(shown.stdout)["signals"]
    assert signals["traces"]["result"] == "ok" and signals["traces"]["endpoint"] == f"{phoenix.url}/v1/traces"
    assert signals["metrics"]["result"] == "error" and "HTTP 405" in signals["metrics"]["error"]
    assert signals["logs"]["result"] == "not exported"
    text = status(agent, project).stdout
    assert "traces   ok" in text and "metrics  error" in text and "HTTP 405 Method Not Allowed" in text, text


def test_an_export_process_hands_its_telemetry_to_the_one_still_sending(
    pi_agent_dir: Path, project: Path, wire: WireServer, log: Path
) -> None:
    """The first run's export process still waits for the collector when the second run
    ends: the second's process spools its spans and ends at once; the first sends them
    when the collector answers."""
    agent = pi_agent_dir
    gate = Collector("gate")
    try:
        env = {"PI_OTEL_LOG": str(log), "PI_OTEL_DEBUG": "1", "OTEL_EXPORTER_OTLP_TIMEOUT": "10000"}
        ask(agent, project, wire, gate.url, **env)
        assert wait_for(lambda: len(export_processes(agent)) == 1, 2) is not None
        (holder,) = export_processes(agent)
        ask(agent, project, wire, gate.url, **env)
        assert wait_for(lambda: export_processes(agent) == [holder], 2) is not None, export_processes(agent)
        assert any("handed over" in line for line in log_lines(log)), log_lines(log)
        shown = json.loads(status(agent, project, "--json").stdout)
        assert shown["sending"] == [holder]
        threading.Timer(0.2, gate.release.set).start()
        received = gate.wait(lambda r: sum(span.name == "invoke_agent" for span in r.spans) == 2, timeout=15)
        assert sum(span.name == "chat local-model" for span in received.spans) == 2
        assert no_export_processes(agent, 10) is not None
    finally:
        gate.close()
    assert not list((agent / "otel" / "spool").iterdir())
    assert not any("error" in line or "timeout" in line for line in log_lines(log)), log_lines(log)


def test_the_export_timeout_is_in_milliseconds_and_per_signal() -> None:
    assert export_timeout("traces", {}) == 10.0  # the specification's default
    assert export_timeout("traces", {"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}) == 2.5
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "700"}
    assert export_timeout("metrics", env) == 0.7 and export_timeout("traces", env) == 2.5
    assert export_timeout("traces", {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}) == 10.0
    assert export_timeout("traces", {"OTEL_EXPORTER_OTLP_TIMEOUT": "-1"}) == 10.0
