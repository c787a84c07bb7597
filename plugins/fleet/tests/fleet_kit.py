"""What the fleet tests and bench/fleet.py share: a scripted OpenAI-compatible model
server, throwaway git repositories, and the real ``pi fleet`` in a subprocess.

The scripted model reads the task's prompt (the conversation's first user message):

* ``write PATH: TEXT`` — a ``write`` tool call creating PATH with TEXT, then ``done``;
* ``edit PATH: OLD => NEW`` — an ``edit`` tool call, then ``done``;
* ``[block]`` anywhere — the first request of that conversation is held until the test
  releases it (a retry of the task is answered at once); ``[hold]`` holds every request.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PI = [sys.executable, "-m", "pi_core"]
MODEL = "scripted/coder"
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
COST = {"input": 3.0, "output": 15.0, "cacheRead": 0.0, "cacheWrite": 0.0}
"""Dollars per million tokens: each answer costs 100 * 3e-6 + 20 * 15e-6 = $0.0006."""


@dataclass
class Seen:
    key: str
    at: float
    status: int
    turn: int


@dataclass
class ScriptedModel:
    """The server. ``limit_window(seconds)``: from then on for ``seconds`` every request
    is answered 429 (``retry-after-ms``: what remains of the window); ``always_429``:
    every request is answered 429."""

    requests: list[Seen] = field(default_factory=list)
    blocked: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    always_429: bool = False
    retry_after_ms: int = 200
    first_429: bool = False
    """Answer 429 to the second request to arrive, and hold the first one's answer until
    that 429 is out (plus ``hold_first_s``): the other worker sees the limit first hand."""
    hold_first_s: float = 0.4
    window_until: float = 0.0
    _blocked_keys: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _first_429_sent: threading.Event = field(default_factory=threading.Event)

    def start(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                try:
                    model.answer(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        port = self.httpd.server_address[1]
        return f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def count(self, status: int | None = None) -> int:
        return sum(1 for r in self.requests if status is None or r.status == status)

    # ------------------------------------------------------------------ answers

    def answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        key = next((_text(m) for m in messages if m.get("role") == "user"), "")
        turn = sum(1 for m in messages if m.get("role") == "tool")
        now = time.monotonic()
        with self._lock:
            status = 200
            index = len(self.requests)
            if self.always_429 or now < self.window_until or (self.first_429 and index == 1):
                status = 429
            self.requests.append(Seen(key, now, status, turn))
        if status == 429:
            wait_ms = self.retry_after_ms
            if now < self.window_until:
                wait_ms = max(1, int((self.window_until - now) * 1000))
            _send_json(
                handler,
                429,
                {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                {"retry-after-ms": str(wait_ms)},
            )
            if self.first_429:
                self._first_429_sent.set()
            return
        if self.first_429 and index == 0:
            self._first_429_sent.wait(timeout=10)
            time.sleep(self.hold_first_s)
        hold = "[hold]" in key
        if "[block]" in key:
            with self._lock:
                hold = key not in self._blocked_keys
                self._blocked_keys.add(key)
        if hold:
            self.blocked.set()
            self.release.wait(timeout=60)
        _send_sse(handler, self.reply(key, turn))

    def reply(self, prompt: str, turn: int) -> list[dict[str, Any]]:
        clean = prompt.replace("[block]", "").replace("[hold]", "").strip()
        if turn == 0:
            match = re.match(r"write (\S+): (.*)", clean, re.S)
            if match:
                return _tool_call("write", {"path": match[1], "content": match[2] + "\n"})
            match = re.match(r"edit (\S+): (.*?) => (.*)", clean, re.S)
            if match:
                return _tool_call("edit", {"path": match[1], "edits": [{"oldText": match[2], "newText": match[3]}]})
        return [{"content": "done"}]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _tool_call(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]},
    ]


def _send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str]) -> None:
    raw = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(raw)
    handler.wfile.flush()


def _send_sse(handler: BaseHTTPRequestHandler, deltas: list[dict[str, Any]]) -> None:
    finish = "tool_calls" if any("tool_calls" in d for d in deltas) else "stop"

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None, usage: Any = None) -> bytes:
        data: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "coder",
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        if usage is not None:
            data["usage"] = usage
        return f"data: {json.dumps(data)}\n\n".encode()

    pieces = [chunk({"role": "assistant", **d}) for d in deltas]
    pieces += [chunk({}, finish), chunk(None, usage=USAGE), b"data: [DONE]\n\n"]
    raw = b"".join(pieces)
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
    handler.wfile.flush()


# --------------------------------------------------------------------------- setup


def write_models(agent_dir: Path, url: str, settings: dict[str, Any] | None = None) -> str:
    """models.json with the scripted model (and user settings when given); returns its name."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    provider, model = MODEL.split("/")
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    provider: {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-completions",
                        "apiKey": "test-key",
                        "models": [{"id": model, "contextWindow": 32000, "maxTokens": 1024, "cost": COST}],
                    }
                }
            }
        )
    )
    if settings is not None:
        (agent_dir / "settings.json").write_text(json.dumps(settings))
    return MODEL


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository with ``files`` committed."""
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=path, check=True, env=env, capture_output=True)
    return path


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def fleet_env(agent_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "PI_EXTENSIONS": "", "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    # `ray start` turns token authentication on; a client given an address uses it only when told
    env["RAY_AUTH_MODE"] = "token"
    env.update(extra)
    return env


def run_fleet(*args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PI, "fleet", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def run_args(tasks: Path, out: Path, *options: str) -> list[str]:
    """``pi fleet``'s arguments for running ``tasks`` into ``out`` with the scripted model, then ``options``."""
    return ["run", str(tasks), "--out", str(out), "--model", MODEL, *options]


def start_fleet(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*PI, "fleet", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RayHead:
    """A local Ray head (``ray start --head --block``) with ``num_cpus`` CPUs, stopped by
    terminating the process that started it."""

    def __init__(self, num_cpus: int, temp_dir: Path) -> None:
        self.port = free_port()
        ray = Path(sys.executable).with_name("ray")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        self.process = subprocess.Popen(
            [
                str(ray),
                "start",
                "--head",
                "--block",
                f"--num-cpus={num_cpus}",
                f"--port={self.port}",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={temp_dir}",
                "--node-ip-address=127.0.0.1",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.address = f"127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.process.poll() is not None:
                raise RuntimeError(f"ray start ended with status {self.process.returncode}")
            time.sleep(0.2)
        raise RuntimeError("the Ray head did not come up in 60 s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_for(predicate: Any, timeout: float = 30, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def iter_lines(path: Path) -> Iterator[str]:
    yield from path.read_text().splitlines()
