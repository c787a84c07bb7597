"""The export process: OpenTelemetry runs next to pi, not in it.

Importing the OpenTelemetry SDK and the OTLP exporter costs about 150 ms of CPU; done on
a thread inside pi it competes with the agent for the interpreter lock (every socket
wait of pi's own thread then waits for the import to yield) and delays the first model
request by about as much. So the plugin starts ``python -m pi_otel.sidecar`` (about
5 ms of pi's time) and streams the finished span trees and measurements to it, one JSON
line each, through a pipe written by a thread of its own. The process imports the SDK
while pi works and exports with :class:`~pi_otel.exporter.Pipeline`.

At exit pi only waits until the pipe has taken the last lines, then closes it; the
process exports what it has and ends (it is in a session of its own, so a Ctrl+C of
pi's terminal does not cut the export short, and it never holds pi's stdout or stderr).
A collector that is down or hangs is the export process's problem only: it gives up
when the exporter's own timeout (``OTEL_EXPORTER_OTLP_TIMEOUT``) runs out.

When the process cannot be started, the plugin exports on a thread in pi instead.
``PI_OTEL_LOG=FILE`` makes the process write what happened (export failures included)
to ``FILE``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import IO, Any

from .config import OtelConfig, OtelSettings
from .records import Point, SpanEvent, SpanRecord

# ----------------------------------------------------------------------------- wire format


def encode_span(record: SpanRecord) -> dict[str, Any]:
    return {
        "n": record.name,
        "k": record.kind,
        "s": record.start_ns,
        "e": record.end_ns,
        "a": {k: v for k, v in record.attributes.items() if v is not None},
        "v": [[event.name, event.time_ns, event.attributes] for event in record.events],
        "x": record.error,
        "c": [encode_span(child) for child in record.children],
    }


def decode_span(data: dict[str, Any], parent: SpanRecord | None = None) -> SpanRecord:
    record = SpanRecord(data["n"], data["k"], data["s"], data["a"], parent=parent, end_ns=data["e"], error=data["x"])
    record.events = [SpanEvent(name, at, attributes) for name, at, attributes in data["v"]]
    record.children = [decode_span(child, record) for child in data["c"]]
    return record


def encode(roots: list[SpanRecord], points: list[Point]) -> bytes:
    line = {"roots": [encode_span(root) for root in roots],
            "points": [[p.instrument, p.value, p.attributes] for p in points]}
    return json.dumps(line, separators=(",", ":"), default=str).encode() + b"\n"


def decode(line: bytes) -> tuple[list[SpanRecord], list[Point]]:
    data = json.loads(line)
    return ([decode_span(root) for root in data["roots"]],
            [Point(name, value, attributes) for name, value, attributes in data["points"]])


# ----------------------------------------------------------------------------- pi's side


class SidecarClient:
    """Feeds the export process (see the module docstring); the plugin's pipeline."""

    def __init__(self, config: OtelConfig) -> None:
        self.config = config
        self.key = config.key()
        self.state = "starting"
        self.problem: str | None = None
        self.endpoint = _endpoint(config)
        header = {
            "settings": config.settings.model_dump(mode="json", by_alias=True, exclude_unset=True),
            "reason": config.reason,
            "capture_content": config.capture_content,
            "traces": config.traces,
            "metrics": config.metrics,
        }
        path = os.environ.get("PI_OTEL_LOG")
        log: IO[bytes] | None = open(path, "ab") if path else None
        # The process must find this very pi_otel (and OpenTelemetry next to it).
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "pi_otel.sidecar"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log or subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
        finally:
            if log is not None:
                log.close()  # the process has its own
        self._cond = threading.Condition()
        self._lines: deque[bytes | None] = deque([json.dumps(header).encode() + b"\n"])
        self._closed = False
        self._writer = threading.Thread(target=self._write, name="pi-otel-pipe", daemon=True)
        self._writer.start()

    def submit(self, roots: list[SpanRecord], points: list[Point]) -> None:
        if not roots and not points:
            return
        line = encode(roots, points)
        with self._cond:
            if not self._closed:
                self._lines.append(line)
                self._cond.notify_all()

    def flush(self, exit_timeout: float, grace: float = 0.0) -> bool:
        """Hand everything to the export process and close its input (pi is leaving).
        Waits only for the pipe, at most ``exit_timeout`` seconds."""
        deadline = time.monotonic() + exit_timeout
        with self._cond:
            if not self._closed:
                self._closed = True
                self._lines.append(None)
                self._cond.notify_all()
            while self.state not in ("handed over", "broken"):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.problem = self.problem or "the export process did not take the telemetry in time"
                    return False
                self._cond.wait(remaining)
        return self.state == "handed over"

    def _write(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        while True:
            with self._cond:
                while not self._lines:
                    self._cond.wait()
                line = self._lines.popleft()
            try:
                if line is None:
                    stdin.close()
                    state = "handed over"
                else:
                    stdin.write(line)
                    stdin.flush()
                    continue
            except (OSError, ValueError) as exc:
                code = self._process.poll()
                state = "broken"
                self.problem = f"the export process ended (status {code})" if code is not None else str(exc)
            with self._cond:
                self.state = state
                self._closed = True
                self._lines.clear()
                self._cond.notify_all()
            return


_CLIENT: SidecarClient | None = None
_CLIENT_LOCK = threading.Lock()


def start(config: OtelConfig) -> Any:
    """The process's export pipeline for ``config``: the export process, or a thread in
    pi when the process cannot be started (or ``PI_OTEL_IN_PROCESS=1``)."""
    global _CLIENT
    if os.environ.get("PI_OTEL_IN_PROCESS") != "1":
        with _CLIENT_LOCK:
            current = _CLIENT
            if current is not None and current.key == config.key() and current.state != "broken":
                return current
            try:
                _CLIENT = SidecarClient(config)
            except OSError:
                _CLIENT = None
            else:
                if current is not None:
                    current.flush(0)  # the old configuration's process exports and ends
                return _CLIENT
    from .exporter import get_pipeline

    return get_pipeline(config)


def _endpoint(config: OtelConfig) -> str:
    env = os.environ
    return (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or config.settings.endpoint or "http://localhost:4318"
    )


# ----------------------------------------------------------------------------- the export process


def main() -> int:
    """``python -m pi_otel.sidecar``: a header line (the configuration), then one line
    per batch; end of input means pi is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .exporter import Pipeline

    stdin = sys.stdin.buffer
    header = json.loads(stdin.readline() or b"{}")
    if not header:
        return 0
    config = OtelConfig(
        enabled=True,
        reason=header.get("reason", ""),
        settings=OtelSettings.model_validate(header.get("settings") or {}),
        capture_content=bool(header.get("capture_content")),
        traces=bool(header.get("traces", True)),
        metrics=bool(header.get("metrics", True)),
    )
    pipeline = Pipeline(config)  # imports OpenTelemetry on its thread while this one reads
    for line in stdin:
        try:
            roots, points = decode(line)
        except (ValueError, KeyError, TypeError) as exc:
            print(f"pluggable-pi-otel: a batch could not be read: {exc}", file=sys.stderr)
            continue
        pipeline.submit(roots, points)
    # pi is done. Wait for the exports as long as the exporter itself would try.
    try:
        timeout = float(os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT", "10000")) / 1000
    except ValueError:
        timeout = 10.0
    started = time.monotonic()
    complete = pipeline.flush(exit_timeout=2 * timeout + 5, grace=2 * timeout + 5)
    waited = time.monotonic() - started
    if not complete:
        print(f"pluggable-pi-otel: telemetry not (fully) exported to {pipeline.endpoint}: "
              f"{pipeline.problem or 'the collector did not answer in time'}", file=sys.stderr)
    elif os.environ.get("PI_OTEL_DEBUG") == "1":
        print(f"pluggable-pi-otel: exported {pipeline.exported_spans} spans to {pipeline.endpoint} "
              f"({waited * 1000:.0f} ms after pi closed the pipe)", file=sys.stderr)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
