"""The wire: the handshake pi answers before importing anything heavy, JSON-RPC errors
for malformed input and unknown methods, ``pi acp`` found both ways."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import acp
from acp.schema import InitializeResponse
from acp_kit import PI_ACP

from pi_acp import __version__
from pi_acp.handshake import PROTOCOL_VERSION, initialize_result


def test_the_handshake_answer_is_what_the_sdk_expects() -> None:
    assert PROTOCOL_VERSION == acp.PROTOCOL_VERSION
    parsed = InitializeResponse.model_validate(initialize_result(__version__))
    caps = parsed.agent_capabilities
    assert caps is not None and caps.load_session and caps.prompt_capabilities.image
    assert caps.prompt_capabilities.embedded_context and caps.mcp_capabilities.http
    assert caps.session_capabilities.list is not None


class Raw:
    """``pi acp`` with raw JSON lines on its stdin and stdout."""

    def __init__(self, cwd: Path, *args: str) -> None:
        env = {**os.environ, "PI_EXTENSIONS": ""}
        self.proc = subprocess.Popen(
            [*PI_ACP, *args], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )

    def send(self, data: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "pi acp closed its stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def test_malformed_json_and_unknown_methods_get_errors_and_pi_keeps_serving(
    pi_agent_dir: Path, pi_project: Path
) -> None:
    pi = Raw(pi_project)
    try:
        start = time.perf_counter()
        pi.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        init = pi.read()
        assert init["id"] == 0 and init["result"]["protocolVersion"] == 1, init
        assert init["result"]["agentInfo"]["name"] == "pi" and time.perf_counter() - start < 30
        pi.send(b"{this is not json\n")
        parse = pi.read()
        assert parse["id"] is None and parse["error"]["code"] == -32700 and parse["error"]["message"] == "Parse error"
        pi.send(b"[1, 2]\n")
        invalid = pi.read()
        assert invalid["error"]["code"] == -32600 and invalid["id"] is None
        pi.send({"jsonrpc": "2.0", "id": 7, "method": "session/teleport", "params": {}})
        unknown = pi.read()
        assert unknown["id"] == 7 and unknown["error"]["code"] == -32601
        pi.send({"jsonrpc": "2.0", "id": 8, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}})
        assert pi.read()["error"]["code"] == -32602
        pi.send(
            {"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}
        )
        assert pi.read()["error"]["code"] == -32602
        pi.send(
            {"jsonrpc": "2.0", "id": 10, "method": "session/new", "params": {"cwd": str(pi_project), "mcpServers": []}}
        )
        while "id" not in (message := pi.read()):
            assert message["method"] == "session/update"
        assert message["id"] == 10 and message["result"]["sessionId"], message
    finally:
        assert pi.close() == 0


def test_initialize_need_not_come_first(pi_agent_dir: Path, pi_project: Path) -> None:
    """Garbage before initialize: the SDK serves everything, initialize included."""
    pi = Raw(pi_project)
    try:
        pi.send(b"garbage\n")
        assert pi.read()["error"]["code"] == -32700
        pi.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {"terminal": True}},
            }
        )
        answer = pi.read()
        assert answer["result"]["agentCapabilities"]["loadSession"] is True
    finally:
        assert pi.close() == 0


def test_pi_acp_through_register_cli_commands(pi_agent_dir: Path, pi_project: Path) -> None:
    """Without the fast entry point, ``pi acp`` is found by loading the plugins (the
    plugin registers it through ``register_cli_commands``)."""
    from pi_acp.plugin import AcpPlugin

    registered: dict[str, Any] = {}
    AcpPlugin().register_cli_commands(lambda name, main, help="": registered.update({name: (main, help)}))
    assert registered["acp"][0].__module__ == "pi_acp.cli" and "Agent Client Protocol" in registered["acp"][1]
    out = subprocess.run([sys.executable, "-m", "pi_core", "acp", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage: pi acp" in out.stdout
