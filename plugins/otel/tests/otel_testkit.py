"""Test helpers for pluggable-pi-otel: a local OTLP/HTTP receiver decoding protobuf with
``opentelemetry-proto``, and the real ``pi`` command against the loopback model server
(a plain module: the root tests own ``conftest``)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "ai"))

from wire_server import Canned, WireServer, chat_chunks  # noqa: E402

Mode = Literal["ok", "hang", "gate", "slow"]


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind)


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


@dataclass
class Span:
    name: str
    span_id: str
    parent_span_id: str
    trace_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    status_message: str
    start_ns: int
    end_ns: int
    resource: dict[str, Any]


@dataclass
class Received:
    spans: list[Span] = field(default_factory=list)
    metrics: dict[str, list[tuple[dict[str, Any], Any]]] = field(default_factory=dict)
    """Metric name -> [(point attributes, data point)]."""
    metric_resources: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, int]] = field(default_factory=list)
    """(path, body size) of every request, empty ones (the probe) included."""


class Collector:
    """An OTLP/HTTP receiver on a loopback port: ``mode="ok"`` decodes and answers 200;
    ``mode="hang"`` accepts requests and never answers (until :meth:`close`);
    ``mode="gate"`` holds each request until ``release`` is set, then answers;
    ``mode="slow"`` answers each request after ``delay`` seconds. ``refuse`` maps a path
    (``/v1/metrics``) to the HTTP status it answers instead (a backend that takes only
    traces answers 405)."""

    def __init__(self, mode: Mode = "ok", *, delay: float = 0.0, refuse: dict[str, int] | None = None) -> None:
        self.mode = mode
        self.delay = delay
        self.refuse = dict(refuse or {})
        self.received = Received()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.release = threading.Event()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if collector.mode == "hang":
                    collector.release.wait(60)
                    return
                if collector.mode == "slow":
                    collector.release.wait(collector.delay)
                elif collector.mode == "gate":
                    collector.release.wait(60)
                status = collector.refuse.get(self.path)
                if status is not None:
                    with collector.lock:
                        collector.received.requests.append((self.path, len(body)))
                        collector.refused += 1
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                response = collector.take(self.path, body, dict(self.headers))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(response)))
                self.end_headers()
                self.wfile.write(response)

        self.refused = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.headers: list[dict[str, str]] = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def take(self, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        with self.lock:
            self.received.requests.append((path, len(body)))
            self.headers.append(headers)
            if path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    resource = attributes(resource_spans.resource.attributes)
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            self.received.spans.append(
                                Span(
                                    name=span.name,
                                    span_id=span.span_id.hex(),
                                    parent_span_id=span.parent_span_id.hex(),
                                    trace_id=span.trace_id.hex(),
                                    kind=span.kind,
                                    attributes=attributes(span.attributes),
                                    events=[(event.name, attributes(event.attributes)) for event in span.events],
                                    status_code=span.status.code,
                                    status_message=span.status.message,
                                    start_ns=span.start_time_unix_nano,
                                    end_ns=span.end_time_unix_nano,
                                    resource=resource,
                                )
                            )
                self.changed.notify_all()
                return ExportTraceServiceResponse().SerializeToString()
            if path == "/v1/metrics":
                metrics_request = ExportMetricsServiceRequest.FromString(body)
                for resource_metrics in metrics_request.resource_metrics:
                    self.received.metric_resources.append(attributes(resource_metrics.resource.attributes))
                    for scope_metrics in resource_metrics.scope_metrics:
                        for metric in scope_metrics.metrics:
                            kind = metric.WhichOneof("data")
                            points = getattr(metric, kind).data_points if kind else []
                            self.received.metrics.setdefault(metric.name, []).extend(
                                (attributes(point.attributes), point) for point in points
                            )
                self.changed.notify_all()
                return ExportMetricsServiceResponse().SerializeToString()
        return b""

    def wait(self, condition: Callable[[Received], bool], timeout: float = 60) -> Received:
        """Wait until what was received satisfies ``condition`` (the export process sends
        after pi has exited); fails after ``timeout`` seconds."""
        with self.changed:
            if not self.changed.wait_for(lambda: condition(self.received), timeout):
                raise AssertionError(f"the collector did not receive it in {timeout} s: {self.received.requests}")
        return self.received

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port_url() -> str:
    """The URL of a loopback port nobody listens on (a collector that is down)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


def export_processes(agent: Path) -> list[int]:
    """Pids of the export processes (``python -m pi_otel.sidecar``) of pi runs with the
    agent folder ``agent``, from ``/proc``."""
    found = []
    marker = f"PI_CODING_AGENT_DIR={agent}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"pi_otel.sidecar" not in cmdline:
                continue
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = next(
                (line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), ""
            )
        except OSError:
            continue
        if "Z" not in state.split(":", 1)[-1]:  # a zombie has ended
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], timeout: float, step: float = 0.05) -> float | None:
    """Seconds until ``condition()`` held, or None after ``timeout``."""
    start = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            return None
        time.sleep(step)


def text_reply(text: str, *, prompt_tokens: int = 10, completion_tokens: int = 5) -> Canned:
    return chat_chunks(
        [{"content": text}],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    )


def tool_reply(name: str, args: dict[str, Any], call_id: str) -> Canned:
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
                ]
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]},
        ],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )


def configure_model(agent: Path, server: WireServer) -> str:
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": f"{server.url}/v1",
                        "api": "openai-completions",
                        "apiKey": "test-key",
                        "models": [
                            {
                                "id": "local-model",
                                "contextWindow": 32000,
                                "maxTokens": 1024,
                                "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 0},
                            }
                        ],
                    }
                }
            }
        )
    )
    return "local/local-model"


def pi_env(agent: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``pi`` run: no PI_* or OTEL_* of the caller's; the plugins
    named in PI_EXTENSIONS load through their entry points."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "OTEL_"))}
    # A collector that is down or hangs: the export process gives up after 2 s, not 10.
    env.update(PI_CODING_AGENT_DIR=str(agent), PYTHONUNBUFFERED="1", OTEL_EXPORTER_OTLP_TIMEOUT="2000")
    env.update(extra)
    return env


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_pi(*args: str, cwd: Path, env: dict[str, str], timeout: float = 90) -> Done:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pi_core", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    return Done(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)
