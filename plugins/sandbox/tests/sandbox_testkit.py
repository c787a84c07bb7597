"""Helpers for pluggable-pi-sandbox's tests (a plain module: the root tests own ``conftest``).

Every test runs the real sandbox (bubblewrap or Landlock) on real files: a temporary
HOME with a planted ``~/.ssh/id_rsa``, a project folder, and a private "system temp
folder" (``tempfile.tempdir``), so that HOME lies outside every writable folder.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pi_sandbox import landlock
from pi_sandbox.bwrap import find_bwrap
from pi_sandbox.sandbox import forget_probes

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted"
BACKENDS = ["bwrap", "landlock"]


def bwrap_works() -> bool:
    from pi_sandbox.bwrap import probe

    path = find_bwrap()
    if path is None:
        return False
    try:
        probe(path)
    except Exception:
        return False
    return True


def need(backend: str) -> None:
    if backend == "bwrap" and not bwrap_works():
        pytest.skip("bubblewrap cannot create user namespaces on this machine")
    if backend == "landlock" and landlock.abi_version() < 1:
        pytest.skip("the kernel offers no Landlock")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each Linux backend the machine offers (the others skip with the reason)."""
    need(request.param)
    return str(request.param)


def sandboxed(pi: Any, backend: str, **settings: Any) -> Any:
    """``pi`` (a ``PiHarness``) with pluggable-pi-sandbox on ``backend`` and ``settings``."""
    from pi_sandbox import SandboxPlugin

    return pi.use(SandboxPlugin).configure(sandbox={"backend": backend, **settings})


def need_some_sandbox() -> None:
    if not bwrap_works() and landlock.abi_version() < 1:
        pytest.skip("neither bubblewrap nor Landlock works on this machine")


@dataclass
class Machine:
    home: Path
    tmp: Path
    agent: Path

    def settings(self, **sandbox: Any) -> None:
        """Write the user's settings (``sandbox`` key)."""
        path = self.agent / "settings.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data["sandbox"] = sandbox
        path.write_text(json.dumps(data))


@pytest.fixture
def machine(tmp_path: Path, pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    """A temporary HOME (with ``~/.ssh/id_rsa``), temp folder and agent directory
    (``pi_agent_dir``, the ``pi`` fixture's)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-commands")
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    forget_probes()
    yield Machine(home=home, tmp=tmp, agent=pi_agent_dir)
    forget_probes()


class HttpServer:
    """A local HTTP server on a free loopback port, answering ``hello from <path>``."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                paths.append(self.path)
                body = f"hello from {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    try:
        yield server
    finally:
        server.close()


def fetch(url: str) -> str:
    """A shell command that GETs ``url`` with Python's urllib (which honours the
    ``http_proxy`` the sandbox sets) and prints the body."""
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=10).read().decode())"
    return f"{sys.executable} -I -c {json.dumps(code)}"
