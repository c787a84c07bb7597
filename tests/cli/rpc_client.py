"""A small RPC client for tests: runs the real ``pi --mode rpc`` in a subprocess, sends
commands and waits for records (never for time).

Records are read from the child's stdout as bytes split on LF only (a binary
``readline``), so U+2028/U+2029 inside JSON strings stay inside their record.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

PI = [sys.executable, "-m", "pi_core", "--mode", "rpc"]
TIMEOUT = 15.0
"""Seconds any single wait may take before the test fails (a hang, not a slow machine)."""

Record = dict[str, Any]
Match = Callable[[Record], bool]


def of_type(kind: str, **fields: Any) -> Match:
    return lambda r: r.get("type") == kind and all(r.get(k) == v for k, v in fields.items())


class RpcProcess:
    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*PI, *args],
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.records: list[Record] = []
        """Every record read so far, in order."""
        self._cursor = 0
        self._queue: queue.Queue[Record | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._ids = itertools.count(1)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ------------------------------------------------------------------ reading

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            try:
                self._queue.put(json.loads(line))
            except ValueError:  # a protocol violation: keep it for the assertions to show
                self._queue.put({"type": "<not json>", "raw": line.decode("utf-8", "replace")})
        self._queue.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def _pull(self, timeout: float) -> bool:
        try:
            record = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no record within {timeout}s; stderr:\n{self.stderr}") from None
        if record is None:
            self._queue.put(None)
            return False
        self.records.append(record)
        return True

    def wait_for(self, match: Match, timeout: float = TIMEOUT) -> Record:
        """The next record (after the previous match) that ``match`` accepts."""
        while True:
            while self._cursor < len(self.records):
                record = self.records[self._cursor]
                self._cursor += 1
                if match(record):
                    return record
            if not self._pull(timeout):
                raise AssertionError(f"pi closed stdout before the record came; stderr:\n{self.stderr}")

    def seen(self, match: Match) -> list[Record]:
        """The records read so far that ``match`` accepts."""
        return [r for r in self.records[: self._cursor] if match(r)]

    def since(self, record: Record) -> list[Record]:
        """The records read after ``record`` up to the current position."""
        index = next(i for i, r in enumerate(self.records) if r is record)
        return self.records[index + 1 : self._cursor]

    # ------------------------------------------------------------------ writing

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, record: Record) -> None:
        self.send_raw(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")

    def command(self, kind: str, **fields: Any) -> str:
        """Send a command with a fresh id; returns the id."""
        command_id = f"req-{next(self._ids)}"
        self.send({"id": command_id, "type": kind, **fields})
        return command_id

    def response(self, command_id: str, timeout: float = TIMEOUT) -> Record:
        return self.wait_for(lambda r: r.get("type") == "response" and r.get("id") == command_id, timeout)

    def call(self, kind: str, **fields: Any) -> Record:
        """Send a command and return its response."""
        return self.response(self.command(kind, **fields))

    def ok(self, kind: str, **fields: Any) -> Any:
        """Send a command, check it succeeded, return its data."""
        response = self.call(kind, **fields)
        assert response["success"], response
        return response.get("data")

    def prompt_and_settle(self, message: str, **fields: Any) -> list[Record]:
        """Prompt, wait for ``agent_settled``; returns the records of the run."""
        command_id = self.command("prompt", message=message, **fields)
        response = self.response(command_id)
        assert response["success"] and response["data"] == {"disposition": "started"}, response
        settled = self.wait_for(of_type("agent_settled"))
        return [*self.since(response), settled]

    # ------------------------------------------------------------------ ending

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def send_signal(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def rest(self, timeout: float = TIMEOUT) -> list[Record]:
        """Every record until pi closes stdout."""
        while self._pull(timeout):
            pass
        out = self.records[self._cursor :]
        self._cursor = len(self.records)
        return out

    def __enter__(self) -> RpcProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def session_records(path: str | Path) -> list[Record]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
