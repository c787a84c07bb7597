"""The export pipeline: one daemon thread per process that does all OpenTelemetry work.

The hooks only build :class:`~pi_otel.records.SpanRecord` trees and
:class:`~pi_otel.records.Point` measurements and hand them over (:meth:`Pipeline.submit`).
The thread imports the SDK and the OTLP exporter (about 170 ms of imports that never
delay the agent), sends one empty traces request to learn whether the collector
answers, then turns each tree into spans (with the recorded start and end times, parents
before children), records the measurements and exports: one request per tree, metrics
on exit and every ``OTEL_METRIC_EXPORT_INTERVAL``.

A collector that is down or hangs never blocks the agent: exports happen on this thread
only. At exit :meth:`Pipeline.flush` waits for the last export only as long as it is
worth it: up to ``exitTimeoutMs`` (default 1 s) for a collector that has answered,
nothing for one that failed, and no more than 40 ms after the first request for one that
has not answered yet (a hanging collector). The thread is a daemon: ``pi -p`` leaves
with ``os._exit`` and takes an export still stuck in a socket with it.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from . import semconv as sc
from . import state as st
from .config import DEFAULT_ANSWER_GRACE_MS, OtelConfig, agent_dir, export_timeout
from .records import Point, SpanRecord

State = Literal["starting", "unknown", "healthy", "failing", "broken"]
MAX_QUEUED = 1000
"""Trees waiting for export at most; more are dropped (and counted) while a collector hangs."""

_COLLECT = "collect"
Signal = Literal["traces", "metrics"]
STATUS_EVERY = 1.0
"""``status.json`` is rewritten at most this often (seconds) while the results stay the same."""


def _log_to_file(line: str) -> None:
    """Where cause lines go in pi's process (the export process writes them to its
    stderr, which is ``PI_OTEL_LOG``): the ``PI_OTEL_LOG`` file, if set."""
    path = os.environ.get("PI_OTEL_LOG")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError:
            pass


LOG: Callable[[str], None] = _log_to_file
"""Writes one line of the export log (:mod:`pi_otel.sidecar` points it at its stderr)."""


def describe_failure(exc: BaseException, url: str, timeout: float) -> str:
    """The cause of a failed request in one stable line (the log is deduplicated by it):
    a timeout, a refused connection, a name that does not resolve, TLS, or else the error."""
    import socket
    import ssl

    import requests.exceptions as rx

    where = urlsplit(url)
    host = where.hostname or url
    address = f"{host}:{where.port}" if where.port else host
    chain: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(chain) < 20:
        item = todo.pop(0)
        if item is None or any(item is seen for seen in chain):
            continue
        chain.append(item)
        todo.extend(
            [
                item.__cause__,
                item.__context__,
                getattr(item, "reason", None) if isinstance(getattr(item, "reason", None), BaseException) else None,
            ]
        )
        todo.extend(arg for arg in item.args if isinstance(arg, BaseException))
    texts = " ".join(str(item) for item in chain)
    if isinstance(exc, rx.ConnectTimeout):
        return f"timeout: could not connect to {address} within {timeout:g} s (OTEL_EXPORTER_OTLP_TIMEOUT)"
    if isinstance(exc, rx.Timeout) or any(isinstance(item, (TimeoutError, socket.timeout)) for item in chain):
        return f"timeout: {url} did not answer within {timeout:g} s (OTEL_EXPORTER_OTLP_TIMEOUT)"
    if (
        any(isinstance(item, socket.gaierror) or type(item).__name__ == "NameResolutionError" for item in chain)
        or "Name or service not known" in texts
        or "nodename nor servname" in texts
    ):
        return f"DNS: the host name {host!r} of {url} does not resolve"
    if any(isinstance(item, ConnectionRefusedError) for item in chain) or "Connection refused" in texts:
        return f"refused: nothing accepts connections at {address} ({url})"
    if isinstance(exc, rx.SSLError) or any(isinstance(item, ssl.SSLError) for item in chain):
        return f"TLS: {address}: {_short(chain[-1])}"
    return f"connection to {url} failed: {_short(exc)}"


def _short(exc: BaseException, limit: int = 200) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_status(status: int, reason: str | None, url: str, signal: str) -> str:
    text = f"HTTP {status}{' ' + reason if reason else ''} from {url}"
    if status in (404, 405) and signal == "metrics":
        text += " (the collector takes no metrics there; OTEL_METRICS_EXPORTER=none stops sending them)"
    elif status in (404, 405):
        text += " (no OTLP traces receiver there; check OTEL_EXPORTER_OTLP_ENDPOINT)"
    elif status in (401, 403):
        text += " (check the credentials: OTEL_EXPORTER_OTLP_HEADERS or otel.headers)"
    return text


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


class Pipeline:
    """Export of one configuration (see the module docstring)."""

    def __init__(self, config: OtelConfig, state_dir: Path | None = None) -> None:
        self.config = config
        self.key = config.key()
        self.state_dir = state_dir if state_dir is not None else st.state_dir(agent_dir())
        """Where ``status.json`` is written (``<agent dir>/otel``)."""
        self.timeouts: dict[Signal, float] = {"traces": export_timeout("traces"), "metrics": export_timeout("metrics")}
        enabled = [signal for signal in self.timeouts if getattr(config, signal)]
        self.timeout = max((self.timeouts[signal] for signal in enabled), default=self.timeouts["traces"])
        """The longest any one export may take (seconds)."""
        self._results: dict[str, dict[str, Any]] = {}
        self._written: dict[str, tuple[str, str | None]] = {}
        self._status_at = 0.0
        self._status_lock = threading.Lock()
        self._status_failed = False
        self._inflight: dict[Signal, tuple[float, str]] = {}
        self._current: Any = None
        self._unsent_points: list[Point] = []
        self.state: State = "starting"
        self.problem: str | None = None
        """The last export failure (or why the pipeline could not start)."""
        self.dropped = 0
        settings = config.settings
        self.endpoint = (
            os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
            or settings.endpoint
            or "http://localhost:4318"
        )
        self.exported_spans = 0
        self._cond = threading.Condition()
        self._queue: deque[Any] = deque()
        self._submitted = 0
        self._done = 0
        self._first_request: float | None = None
        self._tracer: Any = None
        self._collector: Any = None
        self._span_exporter: Any = None
        self._reader: Any = None
        self._instruments: dict[str, Any] = {}
        self._last_collect = time.monotonic()
        try:
            interval = float(os.environ.get("OTEL_METRIC_EXPORT_INTERVAL", "60000")) / 1000
        except ValueError:
            interval = 60.0
        self._metric_interval = interval
        self._thread = threading.Thread(target=self._run, name="pi-otel-export", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the agent's side

    def submit(self, roots: list[SpanRecord], points: list[Point], raw: bytes | None = None) -> None:
        """Queue finished span trees and measurements (never blocks); ``raw``: the same
        batch in the pipe's format, kept until it is sent (see :meth:`pending`)."""
        if not roots and not points:
            return
        with self._cond:
            if len(self._queue) >= MAX_QUEUED:
                self.dropped += len(roots)
                return
            self._queue.append((roots, points, raw))
            self._submitted += 1
            self._cond.notify_all()

    def flush(self, exit_timeout: float, grace: float = DEFAULT_ANSWER_GRACE_MS / 1000) -> bool:
        """Export what is queued, metrics included, and wait for it as long as the
        collector deserves (see the module docstring). True when everything went out."""
        start = time.monotonic()
        with self._cond:
            self._queue.append(_COLLECT)
            self._submitted += 1
            target = self._submitted
            self._cond.notify_all()
            while self._done < target:
                state = self.state
                if state in ("failing", "broken"):
                    return False
                if state == "unknown" and self._first_request is not None:
                    deadline = min(self._first_request + grace, start + exit_timeout)
                else:  # starting (our own imports) or healthy
                    deadline = start + exit_timeout
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def wait_done(self, deadline: float) -> bool:
        """Export what is queued, metrics included, whatever the collector did so far;
        wait until it is done or ``deadline`` (``time.monotonic()``). True when done."""
        with self._cond:
            self._queue.append(_COLLECT)
            self._submitted += 1
            target = self._submitted
            self._cond.notify_all()
            while self._done < target and self.state != "broken":
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return self._done >= target

    def pending(self) -> tuple[list[bytes], int]:
        """What was submitted with its ``raw`` line and is not sent yet (the batch being
        sent included), and the measurements recorded since the last metrics export that
        went through, as one more line: what another export process may send instead.
        Also how many span trees of those are queued."""
        from .sidecar import encode

        with self._cond:
            items = ([self._current] if isinstance(self._current, tuple) else []) + [
                item for item in self._queue if isinstance(item, tuple)
            ]
            lines = [item[2] for item in items if item[2] is not None]
            trees = sum(len(item[0]) for item in items)
            points = list(self._unsent_points)
        if points:
            lines.insert(0, encode([], points))
        return lines, trees

    def abandon(self) -> None:
        """The process ends now: a request still waiting for an answer is a timeout
        (recorded), and the status file is written."""
        for signal, (_, url) in list(self._inflight.items()):
            with self._status_lock:
                last = self._results.get(signal)
            if last is not None and last["result"] == "error" and last["endpoint"] == url:
                continue  # a retry of a request that already failed: its cause is already known
            self._outcome(
                signal,
                url,
                "error",
                f"timeout: {url} did not answer within {self.timeouts[signal]:g} s (OTEL_EXPORTER_OTLP_TIMEOUT)",
            )
        self.write_status(force=True)

    def last_results(self) -> dict[str, dict[str, Any]]:
        with self._status_lock:
            return {signal: dict(entry) for signal, entry in self._results.items()}

    # ------------------------------------------------------------------ results and status

    def _request_started(self, signal: Signal, url: str) -> None:
        self._inflight[signal] = (time.monotonic(), url)
        self._request_sent()

    def _request_failed(self, signal: Signal, url: str, exc: BaseException) -> None:
        self._inflight.pop(signal, None)
        self._outcome(signal, url, "error", describe_failure(exc, url, self.timeouts[signal]))

    def _request_answered(self, signal: Signal, url: str, status: int, reason: str | None) -> None:
        self._inflight.pop(signal, None)
        if 200 <= status < 300:
            self._outcome(signal, url, "ok", None)
        else:
            self._outcome(signal, url, "error", describe_status(status, reason, url, signal))

    def _outcome(self, signal: str, url: str, result: str, error: str | None) -> None:
        """The result of one request: the pipeline's state, ``status.json`` (at once when
        it changed, else at most every :data:`STATUS_EVERY` s) and the log (a new cause)."""
        if error is not None:
            self._set_state("failing", error)
        with self._status_lock:
            self._results[signal] = {"result": result, "at": time.time(), "endpoint": url, "error": error}
            changed = self._written.get(signal) != (result, error)
        self.write_status(force=changed)

    def write_status(self, force: bool = False) -> None:
        with self._status_lock:
            if not self._results or (not force and time.monotonic() - self._status_at < STATUS_EVERY):
                return
            self._status_at = time.monotonic()
            results = {signal: dict(entry) for signal, entry in self._results.items()}
            try:
                lines = st.record(self.state_dir, results)
            except OSError as exc:
                lines = (
                    []
                    if self._status_failed
                    else [f"pluggable-pi-otel: cannot write {self.state_dir / st.STATUS_FILE}: {exc}"]
                )
                self._status_failed = True
            for signal, entry in results.items():
                self._written[signal] = (entry["result"], entry["error"])
        for line in lines:
            LOG(line)

    # ------------------------------------------------------------------ the export thread

    def _set_state(self, state: State, problem: str | None = None) -> None:
        with self._cond:
            if self.state == "broken":
                return
            self.state = state
            if problem is not None:
                self.problem = problem
            self._cond.notify_all()

    def _run(self) -> None:
        try:
            self._setup()
        except Exception as exc:  # an unusable configuration: nothing is exported
            self._set_state("broken", f"{type(exc).__name__}: {exc}")
            for signal in ("traces", "metrics"):
                if getattr(self.config, signal):
                    self._outcome(signal, self.endpoint, "error", f"cannot export: {self.problem}")
            return
        self._set_state("unknown")
        self._probe()
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                item = self._queue.popleft()
                self._current = item
            try:
                if item == _COLLECT:
                    self._collect()
                else:
                    self._export(item[0], item[1])
            except Exception as exc:  # never let the thread die
                self._set_state("failing", f"{type(exc).__name__}: {exc}")
            with self._cond:
                self._current = None
                self._done += 1
                self._cond.notify_all()

    def _setup(self) -> None:
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource

        _watch_logs()
        settings = self.config.settings
        attributes: dict[str, Any] = {
            "service.name": settings.service_name or "pi",
            "service.instance.id": uuid.uuid4().hex,
            "telemetry.distro.name": "pluggable-pi-otel",
        }
        if (version := _version("pluggable-pi")) is not None:
            attributes["service.version"] = version
        if (version := _version("pluggable-pi-otel")) is not None:
            attributes["telemetry.distro.version"] = version
        attributes.update(settings.resource_attributes)
        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the settings.
        resource = Resource.create(attributes).merge(OTELResourceDetector().detect())
        if self.config.traces:
            from opentelemetry.sdk.trace import TracerProvider

            self._span_exporter = self._make_exporter("traces")
            self._collector = _collector()
            provider = TracerProvider(resource=resource, shutdown_on_exit=False)
            provider.add_span_processor(self._collector)
            self._tracer = provider.get_tracer("pi_otel", _version("pluggable-pi-otel"))
        if self.config.metrics:
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

            # No timer thread (math.inf): this thread collects after exports and at exit.
            self._reader = PeriodicExportingMetricReader(
                self._make_exporter("metrics"), export_interval_millis=math.inf
            )
            meter = MeterProvider(resource=resource, metric_readers=[self._reader], shutdown_on_exit=False).get_meter(
                "pi_otel", _version("pluggable-pi-otel")
            )
            self._instruments = {
                sc.METRIC_TOKEN_USAGE: meter.create_histogram(
                    sc.METRIC_TOKEN_USAGE,
                    unit="{token}",
                    description="Tokens used by GenAI requests",
                    explicit_bucket_boundaries_advisory=list(sc.TOKEN_BUCKETS),
                ),
                sc.METRIC_OPERATION_DURATION: meter.create_histogram(
                    sc.METRIC_OPERATION_DURATION,
                    unit="s",
                    description="Duration of GenAI operations",
                    explicit_bucket_boundaries_advisory=list(sc.DURATION_BUCKETS),
                ),
                sc.METRIC_TIME_TO_FIRST_CHUNK: meter.create_histogram(
                    sc.METRIC_TIME_TO_FIRST_CHUNK,
                    unit="s",
                    description="Time to the first chunk of a streamed response",
                    explicit_bucket_boundaries_advisory=list(sc.DURATION_BUCKETS),
                ),
                sc.METRIC_COST: meter.create_counter(
                    sc.METRIC_COST, unit="{USD}", description="What model requests cost, in US dollars (pi's prices)"
                ),
                sc.METRIC_TOOL_CALLS: meter.create_counter(
                    sc.METRIC_TOOL_CALLS, unit="{call}", description="Tool calls by tool and outcome"
                ),
                sc.METRIC_HOOK_OUTCOMES: meter.create_counter(
                    sc.METRIC_HOOK_OUTCOMES,
                    unit="{outcome}",
                    description="Hook handlers that blocked, transformed, handled, cancelled or failed, by plugin",
                ),
            }

    def _make_exporter(self, signal: Literal["traces", "metrics"]) -> Any:
        env = os.environ
        upper = signal.upper()
        settings = self.config.settings
        protocol = (
            env.get(f"OTEL_EXPORTER_OTLP_{upper}_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or settings.protocol
            or "http/protobuf"
        ).strip()
        # The timeout in seconds, from the variables in milliseconds (see export_timeout).
        kwargs: dict[str, Any] = {"timeout": self.timeouts[signal]}
        has_env_endpoint = bool(
            env.get(f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        )
        if settings.endpoint and not has_env_endpoint:
            base = settings.endpoint.rstrip("/")
            kwargs["endpoint"] = base if protocol == "grpc" else f"{base}/v1/{signal}"
        if settings.headers and not (
            env.get(f"OTEL_EXPORTER_OTLP_{upper}_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS")
        ):
            kwargs["headers"] = dict(settings.headers)
        if protocol == "http/protobuf":
            kwargs["session"] = _recording_session(self, signal)
            if signal == "traces":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                return OTLPSpanExporter(**kwargs)
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            return OTLPMetricExporter(**kwargs)
        if protocol == "grpc":
            try:
                if signal == "traces":
                    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
                        OTLPSpanExporter as GrpcSpanExporter,
                    )

                    return GrpcSpanExporter(**kwargs)
                from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (  # type: ignore[import-not-found]
                    OTLPMetricExporter as GrpcMetricExporter,
                )

                return GrpcMetricExporter(**kwargs)
            except ImportError:
                raise RuntimeError(
                    "the grpc protocol needs the opentelemetry-exporter-otlp-proto-grpc package"
                ) from None
        raise RuntimeError(f"OTLP protocol {protocol!r} is not supported (use http/protobuf or grpc)")

    def _request_sent(self) -> None:
        with self._cond:
            if self._first_request is None:
                self._first_request = time.monotonic()
                self._cond.notify_all()

    def _probe(self) -> None:
        """An empty traces request (valid OTLP): whether the collector answers, learnt
        while the agent works, and a connection ready for the first export."""
        if self._span_exporter is None:
            return
        self._request_sent()
        self._note(self._span_exporter.export([]))

    def _note(self, result: Any) -> None:
        """The result of a traces export (over HTTP each request's outcome is known
        already, see :func:`_recording_session`; over gRPC only this)."""
        ok = getattr(result, "name", "") == "SUCCESS"
        if ok:
            self._set_state("healthy")
        else:
            self._set_state("failing", self.problem or "the export failed")
        if "grpc" in type(self._span_exporter).__module__:
            self._outcome("traces", self.endpoint, "ok" if ok else "error", None if ok else self.problem)

    def _export(self, roots: list[SpanRecord], points: list[Point]) -> None:
        if self._tracer is not None and roots:
            for root in roots:
                self._emit(root, None)
            spans = self._collector.take()
            if spans:
                self._request_sent()
                self._note(self._span_exporter.export(spans))
                self.exported_spans += len(spans)
        for point in points:
            instrument = self._instruments.get(point.instrument)
            if instrument is None:
                continue
            if hasattr(instrument, "record"):
                instrument.record(point.value, point.attributes)
            else:
                instrument.add(point.value, point.attributes)
            self._unsent_points.append(point)
        if self._reader is not None and time.monotonic() - self._last_collect >= self._metric_interval:
            self._collect()

    def _collect(self) -> None:
        if self._reader is None:
            return
        self._last_collect = time.monotonic()
        self._request_sent()
        before = self._results.get("metrics", {}).get("at")
        recorded = len(self._unsent_points)
        self._reader.collect()
        after = self._results.get("metrics", {})
        if after.get("result") == "ok" and after.get("at") != before:
            with self._cond:
                del self._unsent_points[:recorded]

    def _emit(self, record: SpanRecord, parent: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

        span = self._tracer.start_span(
            record.name,
            context=parent,
            kind=SpanKind.CLIENT if record.kind == "client" else SpanKind.INTERNAL,
            attributes={k: v for k, v in record.attributes.items() if v is not None},
            start_time=record.start_ns,
        )
        for event in record.events:
            span.add_event(event.name, event.attributes, timestamp=event.time_ns)
        if record.error is not None:
            span.set_status(Status(StatusCode.ERROR, record.error))
        context = set_span_in_context(span)
        for child in record.children:
            self._emit(child, context)
        span.end(end_time=record.end_ns if record.end_ns is not None else record.start_ns)


def _recording_session(pipeline: Pipeline, signal: Signal) -> Any:
    """A ``requests`` session for one OTLP/HTTP exporter that tells ``pipeline`` how
    each request ended: the answer's status, or the exception (a timeout, a refused
    connection …). The exporter itself only logs a failure, in words that do not tell a
    timeout from a refusal."""
    import requests

    class RecordingSession(requests.Session):
        def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
            pipeline._request_started(signal, str(url))
            try:
                response = super().request(method, url, *args, **kwargs)
            except BaseException as exc:
                pipeline._request_failed(signal, str(url), exc)
                raise
            pipeline._request_answered(signal, str(url), response.status_code, response.reason)
            return response

    return RecordingSession()


def _collector() -> Any:
    """A span processor that keeps ended spans: one export request per tree."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

    class Collector(SpanProcessor):
        def __init__(self) -> None:
            self._spans: list[ReadableSpan] = []
            self._lock = threading.Lock()

        def on_end(self, span: ReadableSpan) -> None:
            with self._lock:
                self._spans.append(span)

        def take(self) -> list[ReadableSpan]:
            with self._lock:
                spans, self._spans = self._spans, []
            return spans

    return Collector()


class _Watch(logging.Handler):
    """The OTLP exporters report failures by logging: this turns them into the current
    pipeline's state (a refused connection is known within milliseconds, long before
    the exporter gives up retrying)."""

    def emit(self, record: logging.LogRecord) -> None:
        pipeline = _PIPELINE
        if pipeline is None or record.levelno < logging.WARNING or "exporter" not in record.name:
            return
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        # The cause a request recorded (a timeout, a refusal …) says more than this line.
        pipeline._set_state("failing", None if pipeline.problem else message)


_WATCHING: list[_Watch] = []


def _watch_logs() -> None:
    """Install :class:`_Watch` once, and keep OpenTelemetry's log lines off pi's stderr
    unless ``PI_OTEL_DEBUG=1``."""
    with _PIPELINE_LOCK:
        if _WATCHING:
            return
        _WATCHING.append(_Watch())
    logger = logging.getLogger("opentelemetry")
    logger.addHandler(_WATCHING[0])
    if os.environ.get("PI_OTEL_DEBUG") == "1":
        logger.addHandler(logging.StreamHandler(sys.stderr))
    logger.propagate = False


_PIPELINE: Pipeline | None = None
_PIPELINE_LOCK = threading.Lock()


def get_pipeline(config: OtelConfig) -> Pipeline:
    """The process's pipeline for ``config`` (a new one when the configuration changed,
    e.g. after ``/reload``; the old one finishes its queue on its own)."""
    global _PIPELINE
    with _PIPELINE_LOCK:
        if _PIPELINE is None or _PIPELINE.key != config.key():
            _PIPELINE = Pipeline(config)
        return _PIPELINE
