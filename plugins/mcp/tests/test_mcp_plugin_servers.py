"""MCP servers a plugin registers (``register_mcp_servers``), end to end in ``pi -p``: the
server is connected like a configured one and its tool answers the model's call; the
plugin lists the registrations; without pluggable-pi-mcp each registration is one error line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_testkit import env_without_pi, stdio, write_local_models

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "ai"))
from wire_server import WireServer, chat_chunks

PLUGIN = """
import json
from pathlib import Path

from pi_hookspecs import hookimpl

CONFIG = json.loads({config!r})
LISTED = Path(__file__).with_suffix(".listed.json")


@hookimpl
def register_mcp_servers(register):
    register("tickets", CONFIG)


@hookimpl
def session_start(event, ctx):
    LISTED.write_text(json.dumps([server.to_json() for server in ctx.get_mcp_servers()]))
"""


@pytest.fixture
def server() -> Iterator[WireServer]:
    wire = WireServer()
    try:
        yield wire
    finally:
        wire.close()


def setup(pi_agent_dir: Path, tmp_path: Path, server: WireServer) -> tuple[Path, dict[str, Any]]:
    config = stdio(exposure="direct", description="Tickets of the team")
    plugin = tmp_path / "tickets.py"
    plugin.write_text(textwrap.dedent(PLUGIN).format(config=json.dumps(config)))
    write_local_models(pi_agent_dir, server.url)
    return plugin, config


def run_pi(pi_agent_dir: Path, cwd: Path, plugin: Path, extensions: str) -> subprocess.CompletedProcess[str]:
    env = env_without_pi()
    env.update(PI_CODING_AGENT_DIR=str(pi_agent_dir), PI_EXTENSIONS=extensions)
    return subprocess.run(
        [sys.executable, "-m", "pi_core", "-p", "--no-session", "-e", str(plugin), "--model", "local/m", "echo it"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_a_server_a_plugin_registers_answers_the_models_call(
    pi_agent_dir: Path, pi_project: Path, tmp_path: Path, server: WireServer
) -> None:
    plugin, config = setup(pi_agent_dir, tmp_path, server)
    call = {"name": "mcp__tickets__echo", "arguments": json.dumps({"text": "from a plugin's server"})}
    server.enqueue(
        chat_chunks(
            [{"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": call}]}],
            finish_reason="tool_calls",
        ),
        chat_chunks([{"content": "Echoed."}]),
    )
    done = run_pi(pi_agent_dir, pi_project, plugin, "mcp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Echoed."
    first, second = (request.body for request in server.requests)
    assert "mcp__tickets__echo" in [tool["function"]["name"] for tool in first["tools"]]
    result = next(m for m in second["messages"] if m["role"] == "tool")
    assert "from a plugin's server" in json.dumps(result["content"])
    listed = json.loads(plugin.with_suffix(".listed.json").read_text())
    assert listed == [{"name": "tickets", "config": config, "plugin": "tickets"}]
    assert done.stderr == ""


def test_without_pi_mcp_each_registration_is_one_error_line(
    pi_agent_dir: Path, pi_project: Path, tmp_path: Path, server: WireServer
) -> None:
    plugin, _ = setup(pi_agent_dir, tmp_path, server)
    server.enqueue(chat_chunks([{"content": "No tools here."}]))
    done = run_pi(pi_agent_dir, pi_project, plugin, "")  # pi's built-ins only: nothing connects MCP servers
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "No tools here."
    problems = [line for line in done.stderr.splitlines() if "tickets" in line]
    assert len(problems) == 1, done.stderr
    assert 'MCP server "tickets" is not connected: no loaded plugin connects MCP servers' in problems[0]
    assert "Traceback" not in done.stderr
