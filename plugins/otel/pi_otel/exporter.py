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
from importlib import metadata
from typing import Any, Literal

from . import semconv as sc
from .config import DEFAULT_ANSWER_GRACE_MS, OtelConfig
from .records import Point, SpanRecord

State = Literal["starting", "unknown", "healthy", "failing", "broken"]
MAX_QUEUED = 1000
"""Trees waiting for export at most; more are dropped (and counted) while a collector hangs."""

_COLLECT = "collect"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


class Pipeline:
    """Export of one configuration (see the module docstring)."""

    def __init__(self, config: OtelConfig) -> None:
        self.config = config
        self.key = config.key()
        self.state: State = "starting"
        self.problem: str | None = None
        """The last export failure (or why the pipeline could not start)."""
        self.dropped = 0
        settings = config.settings
        self.endpoint = (
            os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
            or settings.endpoint or "http://localhost:4318"
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

    def submit(self, roots: list[SpanRecord], points: list[Point]) -> None:
        """Queue finished span trees and measurements (never blocks)."""
        if not roots and not points:
            return
        with self._cond:
            if len(self._queue) >= MAX_QUEUED:
                self.dropped += len(roots)
                return
            self._queue.append((roots, points))
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
            return
        self._set_state("unknown")
        self._probe()
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                item = self._queue.popleft()
            try:
                if item == _COLLECT:
                    self._collect()
                else:
                    self._export(*item)
            except Exception as exc:  # never let the thread die
                self._set_state("failing", f"{type(exc).__name__}: {exc}")
            with self._cond:
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
            self._reader = PeriodicExportingMetricReader(self._make_exporter("metrics"), export_interval_millis=math.inf)
            meter = MeterProvider(resource=resource, metric_readers=[self._reader], shutdown_on_exit=False).get_meter(
                "pi_otel", _version("pluggable-pi-otel")
            )
            self._instruments = {
                sc.METRIC_TOKEN_USAGE: meter.create_histogram(
                    sc.METRIC_TOKEN_USAGE, unit="{token}", description="Tokens used by GenAI requests",
                    explicit_bucket_boundaries_advisory=list(sc.TOKEN_BUCKETS),
                ),
                sc.METRIC_OPERATION_DURATION: meter.create_histogram(
                    sc.METRIC_OPERATION_DURATION, unit="s", description="Duration of GenAI operations",
                    explicit_bucket_boundaries_advisory=list(sc.DURATION_BUCKETS),
                ),
                sc.METRIC_TIME_TO_FIRST_CHUNK: meter.create_histogram(
                    sc.METRIC_TIME_TO_FIRST_CHUNK, unit="s", description="Time to the first chunk of a streamed response",
                    explicit_bucket_boundaries_advisory=list(sc.DURATION_BUCKETS),
                ),
                sc.METRIC_COST: meter.create_counter(
                    sc.METRIC_COST, unit="{USD}", description="What model requests cost, in US dollars (pi's prices)"
                ),
                sc.METRIC_TOOL_CALLS: meter.create_counter(
                    sc.METRIC_TOOL_CALLS, unit="{call}", description="Tool calls by tool and outcome"
                ),
                sc.METRIC_HOOK_OUTCOMES: meter.create_counter(
                    sc.METRIC_HOOK_OUTCOMES, unit="{outcome}",
                    description="Hook handlers that blocked, transformed, handled, cancelled or failed, by plugin",
                ),
            }

    def _make_exporter(self, signal: Literal["traces", "metrics"]) -> Any:
        env = os.environ
        upper = signal.upper()
        settings = self.config.settings
        protocol = (
            env.get(f"OTEL_EXPORTER_OTLP_{upper}_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or settings.protocol or "http/protobuf"
        ).strip()
        kwargs: dict[str, Any] = {}
        has_env_endpoint = bool(env.get(f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
        if settings.endpoint and not has_env_endpoint:
            base = settings.endpoint.rstrip("/")
            kwargs["endpoint"] = base if protocol == "grpc" else f"{base}/v1/{signal}"
        if settings.headers and not (env.get(f"OTEL_EXPORTER_OTLP_{upper}_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS")):
            kwargs["headers"] = dict(settings.headers)
        if protocol == "http/protobuf":
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
        if getattr(result, "name", "") == "SUCCESS":
            self._set_state("healthy")
        else:
            self._set_state("failing", self.problem or "the collector refused the export")

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
        if self._reader is not None and time.monotonic() - self._last_collect >= self._metric_interval:
            self._collect()

    def _collect(self) -> None:
        if self._reader is None:
            return
        self._last_collect = time.monotonic()
        self._request_sent()
        self._reader.collect()

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
        pipeline._set_state("failing", message)


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
