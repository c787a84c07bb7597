"""Helpers for pluggable-pi-mcp's tests (a plain module: the root tests own ``conftest``).

The agent folder and the project are the published kit's fixtures (``pi_agent_dir``,
``pi_project``, from pluggable-pi's pytest plugin), as in any plugin's tests."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_core.ai import FauxResponse, FauxScript, faux_model
from pi_core.runtime import SessionRuntime, create_agent_session
from pi_core.testing import RecordingUI
from pi_mcp import McpPlugin

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "servers" / "fixture_server.py"
TOOL_COUNT = 17
"""How many tools the fixture server offers."""
WAIT = 20.0
"""Upper bound of every wait on an event in these tests (they finish far sooner)."""


def stdio(*args: str, **fields: Any) -> dict[str, Any]:
    """A ``mcpServers`` entry running the fixture server over stdio."""
    return {"command": sys.executable, "args": [str(FIXTURE), *args], **fields}


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def write_mcp_json(directory: Path, servers: dict[str, Any], **top: Any) -> Path:
    return write_json(directory / "mcp.json", {"mcpServers": servers, **top})


def write_local_models(directory: Path, url: str) -> Path:
    """``models.json`` with model ``local/m`` at the OpenAI-compatible server at ``url``."""
    local = {
        "baseUrl": f"{url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "m", "contextWindow": 32000, "maxTokens": 1024}],
    }
    return write_json(directory / "models.json", {"providers": {"local": local}})


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def read_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


class HttpServer:
    """The fixture server over streamable HTTP in a subprocess on a free loopback port."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> HttpServer:
        self.process = subprocess.Popen(
            [sys.executable, str(FIXTURE), "--http", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(WAIT)
        if not line or not line[0].startswith("PORT "):
            self.__exit__()
            raise RuntimeError(f"the fixture HTTP server did not start: {line!r}")
        self.port = int(line[0].split()[1])
        return self

    def __exit__(self, *exc: Any) -> None:
        """Stop the server at once (SIGKILL: like a crash, and no graceful shutdown
        waiting for the client's open event stream)."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            self.process.wait(WAIT)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    with HttpServer() as server:
        yield server


class CaptureUI(RecordingUI):
    """The kit's recording UI, with the notification texts of one level."""

    def texts(self, level: str | None = None) -> list[str]:
        return [m for lvl, m in self.notifications if level is None or lvl == level]


async def start(
    cwd: Path, *responses: Any, plugins: tuple[Any, ...] = (McpPlugin,), ui: Any = None, **kwargs: Any
) -> tuple[SessionRuntime, FauxScript]:
    """A started session on the scripted model with pluggable-pi-mcp (and ``plugins``)."""
    script = FauxScript(list(responses))
    kwargs.setdefault("installed_plugins", False)
    runtime = await create_agent_session(cwd=cwd, model=faux_model(script), plugins=list(plugins), ui=ui, **kwargs)
    return runtime, script


def calls(*pairs: tuple[str, dict[str, Any]]) -> FauxResponse:
    return FauxResponse(tool_calls=list(pairs))


def plugin_of(runtime: SessionRuntime) -> McpPlugin:
    for record in runtime.session.plugins.records:
        if isinstance(record.plugin, McpPlugin):
            return record.plugin
    raise AssertionError("pluggable-pi-mcp is not loaded")


def manager_of(runtime: SessionRuntime) -> Any:
    manager = plugin_of(runtime).manager
    assert manager is not None, "pluggable-pi-mcp did not start"
    return manager


async def connected(runtime: SessionRuntime, name: str) -> Any:
    """The connection of server ``name`` once its first attempt finished."""
    connection = manager_of(runtime).find(name)
    assert connection is not None, f"no server {name}"
    await asyncio.wait_for(connection.wait(None), WAIT)
    return connection


def tools_changed(connection: Any) -> asyncio.Event:
    """An event set the next time the connection re-lists (and registers) its tools."""
    event = asyncio.Event()
    original = connection.on_tools

    def wrapped(conn: Any) -> None:
        if original is not None:
            original(conn)
        event.set()

    connection.on_tools = wrapped
    return event


def tool_names(runtime: SessionRuntime) -> dict[str, str]:
    """Registered tool name -> exposure."""
    return {d.name: d.exposure for d in runtime.session.tools.all_definitions()}


def result_texts(script: FauxScript, request: int) -> list[str]:
    """The texts of the tool results the model saw in request ``request``."""
    out = []
    for message in script.contexts[request].messages:
        if getattr(message, "role", None) == "toolResult":
            out.append("".join(getattr(b, "text", "") for b in message.content))
    return out


def env_without_pi() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
