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
A collector that is down or hangs is the export process's problem only, and for a
bounded time: the process ends at the latest ``OTEL_EXPORTER_OTLP_TIMEOUT`` (the longest
per-signal timeout; default 10 s) after pi closed the pipe, and at most one export
process per agent folder and configuration goes on sending after its pi exited (the
others hand their telemetry over through a spool file; see :func:`finish` and
:mod:`pi_otel.state`).

When the process cannot be started, the plugin exports on a thread in pi instead.
``PI_OTEL_LOG=FILE`` makes the process write what happened to ``FILE``: the cause of a
failed export (a timeout, a refused connection, an HTTP status, a name that does not
resolve), once each time it changes; ``pi otel status`` shows the last result per
signal.
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
from pathlib import Path
from typing import IO, Any

from . import state as st
from .config import OtelConfig, OtelSettings, agent_dir
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
    line = {
        "roots": [encode_span(root) for root in roots],
        "points": [[p.instrument, p.value, p.attributes] for p in points],
    }
    return json.dumps(line, separators=(",", ":"), default=str).encode() + b"\n"


def decode(line: bytes) -> tuple[list[SpanRecord], list[Point]]:
    data = json.loads(line)
    return (
        [decode_span(root) for root in data["roots"]],
        [Point(name, value, attributes) for name, value, attributes in data["points"]],
    )


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
            "state_dir": str(st.state_dir(agent_dir())),
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
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or config.settings.endpoint
        or "http://localhost:4318"
    )


# ----------------------------------------------------------------------------- the export process


def main() -> int:
    """``python -m pi_otel.sidecar``: a header line (the configuration), then one line
    per batch; end of input means pi is done (see :func:`finish`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from . import exporter
    from .exporter import Pipeline

    exporter.LOG = _log
    stdin = sys.stdin.buffer
    header = json.loads(stdin.readline() or b"{}")
    if not header:
        return 0
    config = _config(header)
    directory = Path(header["state_dir"]) if header.get("state_dir") else st.state_dir(agent_dir())
    pipeline = Pipeline(config, directory)  # imports OpenTelemetry on its thread while this one reads
    for line in stdin:
        _submit(pipeline, line)
    finish(pipeline, header, directory)
    sys.stderr.flush()
    os._exit(0)


def finish(pipeline: Any, header: dict[str, Any], directory: Path) -> None:
    """pi is gone: send what is left within the export timeout, or hand it over.

    * The process has ``OTEL_EXPORTER_OTLP_TIMEOUT`` (the longest of the per-signal
      timeouts; default 10 s) from the end of its input; then it ends, whatever is still
      on its way (a request still waiting is recorded as a timeout).
    * To go on sending after pi exited it must hold ``export-<key>.lock`` in the agent
      folder (``key`` names the configuration). When another process of the same
      configuration holds it, this one writes what it has not sent to the spool and ends
      at once: the holder sends it, and its own deadline grows to the spooled data's
      export timeout. So at most one export process per agent folder and configuration
      outlives its pi, and none longer than the timeout after the last pi it serves.
    """
    deadline = time.monotonic() + pipeline.timeout
    key = st.config_key(header)
    lock = st.ExportLock(directory, key)
    debug = os.environ.get("PI_OTEL_DEBUG") == "1"
    try:
        held = lock.try_acquire()
    except OSError as exc:
        _log(f"pluggable-pi-otel: cannot lock {lock.path}: {exc}; sending alone")
        held = True
    if not held:
        lines, trees = pipeline.pending()
        try:
            path = st.write_spool(directory, key, header, lines)
        except OSError as exc:
            _log(f"pluggable-pi-otel: {trees} span trees dropped: cannot write the spool in {directory}: {exc}")
        else:
            if debug:
                _log(
                    f"pluggable-pi-otel: another export process holds {lock.path.name}: "
                    f"{trees} span trees handed over in {path}"
                )
        pipeline.write_status(force=True)
        return
    started = time.monotonic()
    deadline, _ = _adopt(pipeline, directory, key, deadline)
    while True:
        complete = pipeline.wait_done(deadline)
        if complete:
            lock.release()
            # A process that found the lock taken spooled before it tried: seen here.
            if not st.pending_spool(directory, key) or not lock.try_acquire():
                break
        elif not st.pending_spool(directory, key):
            break
        deadline, adopted = _adopt(pipeline, directory, key, deadline)
        if not adopted:
            break
        if deadline <= time.monotonic():
            complete = False
            break
    if complete:
        pipeline.write_status(force=True)
    else:
        _, trees = pipeline.pending()
        pipeline.abandon()
        if debug:
            _log(
                f"pluggable-pi-otel: {trees} span trees not sent to {pipeline.endpoint} within "
                f"{pipeline.timeout:g} s of pi's exit"
            )
    if debug and complete:
        _log(
            f"pluggable-pi-otel: exported {pipeline.exported_spans} spans to {pipeline.endpoint} "
            f"({(time.monotonic() - started) * 1000:.0f} ms after pi closed the pipe)"
        )


def _adopt(pipeline: Any, directory: Path, key: str, deadline: float) -> tuple[float, int]:
    """Queue what other export processes of ``key`` spooled; the deadline, grown to the
    export timeout after each spooled batch was written (its pi's exit), and how many
    spool files were taken."""
    spooled, dropped = st.take_spool(directory, key)
    if dropped:
        _log(f"pluggable-pi-otel: {dropped} spooled batches deleted unsent (older than a day, or too many)")
    for mtime, lines in spooled:
        deadline = max(deadline, time.monotonic() + (mtime + pipeline.timeout - time.time()))
        for line in lines:
            _submit(pipeline, line)
    return deadline, len(spooled) + dropped


def _submit(pipeline: Any, line: bytes) -> None:
    try:
        roots, points = decode(line)
    except (ValueError, KeyError, TypeError) as exc:
        _log(f"pluggable-pi-otel: a batch could not be read: {exc}")
        return
    pipeline.submit(roots, points, line)


def _config(header: dict[str, Any]) -> OtelConfig:
    return OtelConfig(
        enabled=True,
        reason=header.get("reason", ""),
        settings=OtelSettings.model_validate(header.get("settings") or {}),
        capture_content=bool(header.get("capture_content")),
        traces=bool(header.get("traces", True)),
        metrics=bool(header.get("metrics", True)),
    )


def _log(line: str) -> None:
    """A line of the export log: this process's stderr is ``PI_OTEL_LOG`` (or nothing)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    main()
