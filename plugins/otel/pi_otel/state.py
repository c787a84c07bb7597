"""What the export processes share in the agent folder, ``<agent dir>/otel/``:

``status.json``
    The last export result per signal (``traces``, ``metrics``): ``ok`` or ``error``, when,
    to which endpoint, and the cause of an error. ``pi otel status`` shows it. It also
    deduplicates the log: a cause is written to ``PI_OTEL_LOG`` when it differs from the
    one the file already holds for that signal (so a collector that refuses metrics is
    one line, not one per run), and one line says when a signal is exported again.
``export-<key>.lock``
    Held (``flock``) by the one export process of a configuration that is still sending
    after its pi exited; holds its pid.
``spool/<key>-*.jsonl``
    What an export process could not send itself because another one held the lock: the
    holder sends it (see :mod:`pi_otel.sidecar`).

Nothing here imports OpenTelemetry: ``pi otel status`` reads these files in milliseconds.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SIGNALS = ("traces", "metrics")
STATUS_FILE = "status.json"
SPOOL_MAX_AGE = 24 * 3600.0
"""Spooled telemetry older than this (a day) is deleted unsent."""
SPOOL_MAX_FILES = 200
"""Spool files of one configuration kept at most; the oldest go first."""


def state_dir(agent: Path) -> Path:
    return agent / "otel"


def ensure_dir(directory: Path) -> Path:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory


def config_key(header: dict[str, Any], env: dict[str, str] | None = None) -> str:
    """A short name of a configuration: the header pi sends its export process (the
    settings) and the ``OTEL_*`` variables. Export processes of the same key send to the
    same place the same way, so one can send what another spooled."""
    environ = os.environ if env is None else env
    data = {k: header.get(k) for k in ("settings", "capture_content", "traces", "metrics")}
    otel = sorted((k, v) for k, v in environ.items() if k.startswith("OTEL_"))
    text = json.dumps([data, otel], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def now_iso(at: float | None = None) -> str:
    moment = _dt.datetime.fromtimestamp(time.time() if at is None else at, _dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


# ----------------------------------------------------------------------------- the export lock


class ExportLock:
    """``export-<key>.lock``: at most one export process of a configuration sends after
    its pi has exited. The holder writes its pid into the file (``pi otel status``)."""

    def __init__(self, directory: Path, key: str) -> None:
        self.path = directory / f"export-{key}.lock"
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        ensure_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor releases the flock


def lingering(directory: Path) -> list[int]:
    """Pids of export processes holding an export lock (still sending after their pi
    exited), from the pids the holders wrote; without locking anything."""
    pids = []
    for path in sorted(directory.glob("export-*.lock")):
        try:
            pid = int(path.read_text().strip() or "0")
        except (OSError, ValueError):
            continue
        if pid > 0:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            pids.append(pid)
    return pids


# ----------------------------------------------------------------------------- the status file


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    ensure_dir(directory)
    fd = os.open(directory / "status.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_status(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_status(directory: Path, data: dict[str, Any]) -> None:
    path = directory / STATUS_FILE
    tmp = path.with_name(f"{STATUS_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def record(directory: Path, results: dict[str, dict[str, Any]]) -> list[str]:
    """Merge ``results`` (signal -> entry) into ``status.json``; the log lines they call
    for: a cause the file did not hold for that signal yet, or a signal exported again
    after an error. Entries: ``result`` (``ok``/``error``), ``at`` (epoch seconds),
    ``endpoint``, ``error`` (the cause, for an error)."""
    lines: list[str] = []
    with _locked(directory):
        data = read_status(directory)
        for signal, entry in results.items():
            before = data.get(signal) if isinstance(data.get(signal), dict) else None
            old_error = before.get("error") if before and before.get("result") == "error" else None
            new = {
                "result": entry["result"],
                "time": now_iso(entry["at"]),
                "endpoint": entry.get("endpoint"),
                "pid": os.getpid(),
            }
            if entry["result"] == "error":
                new["error"] = entry["error"]
                new["since"] = before.get("since") if old_error == entry["error"] and before else new["time"]
                if old_error != entry["error"]:
                    lines.append(f"pluggable-pi-otel: {signal}: {entry['error']}")
            elif old_error is not None:
                lines.append(f"pluggable-pi-otel: {signal}: exported to {entry.get('endpoint')} again")
            data[signal] = new
        data["updated"] = now_iso()
        _write_status(directory, data)
    return lines


# ----------------------------------------------------------------------------- the spool


def spool_dir(directory: Path) -> Path:
    return directory / "spool"


def write_spool(directory: Path, key: str, header: dict[str, Any], lines: list[bytes]) -> Path | None:
    """Leave ``lines`` (batches in the pipe's format) for the export process holding the
    lock of ``key``; the file appears whole (written aside, then renamed)."""
    if not lines:
        return None
    folder = ensure_dir(spool_dir(directory))
    name = f"{key}-{time.time_ns()}-{os.getpid()}"
    tmp = folder / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(json.dumps({"key": key, "header": header}).encode() + b"\n")
        for line in lines:
            fh.write(line if line.endswith(b"\n") else line + b"\n")
    path = folder / f"{name}.jsonl"
    os.replace(tmp, path)
    return path


def take_spool(directory: Path, key: str) -> tuple[list[tuple[float, list[bytes]]], int]:
    """The spool files of ``key``, oldest first, removed: (modification time, batch
    lines) each; and how many were deleted unsent (older than :data:`SPOOL_MAX_AGE`, or
    beyond :data:`SPOOL_MAX_FILES`). Only the holder of the lock of ``key`` calls this."""
    folder = spool_dir(directory)
    try:
        paths = sorted(folder.glob(f"{key}-*.jsonl"))
    except OSError:
        return [], 0
    taken: list[tuple[float, list[bytes]]] = []
    dropped = 0
    now = time.time()
    excess = max(0, len(paths) - SPOOL_MAX_FILES)
    for index, path in enumerate(paths):
        try:
            mtime = path.stat().st_mtime
            data = path.read_bytes()
        except OSError:
            data = None
        with contextlib.suppress(OSError):
            path.unlink()
        if data is None:
            dropped += 1
            continue
        if index < excess or now - mtime > SPOOL_MAX_AGE:
            dropped += 1
            continue
        lines = data.splitlines()[1:]
        taken.append((mtime, [line for line in lines if line.strip()]))
    # temporary files of a writer that was killed mid-way
    for tmp in folder.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > 3600:
                tmp.unlink()
    return taken, dropped


def pending_spool(directory: Path, key: str) -> bool:
    try:
        return any(spool_dir(directory).glob(f"{key}-*.jsonl"))
    except OSError:
        return False
