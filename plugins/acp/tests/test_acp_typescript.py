"""The official TypeScript SDK (``@agentclientprotocol/sdk`` from npm) as an
independent ACP client of ``pi acp``. Installed with npm into a cache directory on
first use; skipped with the reason when node or the npm registry is unreachable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp_kit import POLICY, WireServer, configure_local_endpoint, text_reply, tool_reply, use_server

SDK = "@agentclientprotocol/sdk@2.4.0"
CACHE = Path(os.environ.get("PI_TEST_CACHE", Path.home() / ".cache" / "pi-tests")) / "acp-ts"
CLIENT = Path(__file__).with_name("ts_client.mjs")


def _install() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the TypeScript ACP client")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 18:
        pytest.skip(f"node {version} is too old for {SDK} (18 or later)")
    marker = CACHE / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    if not marker.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / "package.json").write_text('{"private": true}\n')
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", SDK], cwd=CACHE, capture_output=True, text=True, timeout=240
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install {SDK} timed out (registry unreachable?)")
        if done.returncode != 0 or not marker.exists():
            pytest.skip(f"npm install {SDK} failed (registry unreachable?): {done.stderr.strip()[-300:]}")
    return CACHE


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def test_the_typescript_sdk_drives_pi_acp(wire: WireServer, pi_agent_dir: Path, pi_project: Path) -> None:
    cache = _install()
    model = configure_local_endpoint(wire.url)
    (pi_project / "notes.txt").write_text("draft\n")
    wire.enqueue(
        tool_reply("bash", {"command": "echo ask ts"}, "call_1"),
        tool_reply("write", {"path": "notes.txt", "content": "final\n"}, "call_2"),
        text_reply("Finished from TypeScript."),
    )
    client = cache / "ts_client.mjs"
    shutil.copyfile(CLIENT, client)  # node resolves the SDK from the script's folder
    env = {**os.environ, "PI_EXTENSIONS": ""}
    done = subprocess.run(
        [
            "node",
            str(client),
            str(pi_project),
            sys.executable,
            "-m",
            "pi_core",
            "acp",
            "--model",
            model,
            "-e",
            str(POLICY),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["init"]["agentInfo"]["name"] == "pi" and out["init"]["agentCapabilities"]["loadSession"]
    assert out["prompt"]["stopReason"] == "end_turn"
    assert out["unknown"] == -32601
    assert [s["sessionId"] for s in out["listed"]["sessions"]] == [out["session"]["sessionId"]]
    kinds = [u["sessionUpdate"] for u in out["updates"]]
    assert "tool_call" in kinds and "tool_call_update" in kinds and "agent_message_chunk" in kinds
    text = "".join(u["content"]["text"] for u in out["updates"] if u["sessionUpdate"] == "agent_message_chunk")
    assert "Finished from TypeScript." in text
    assert [p["toolCall"]["toolCallId"] for p in out["permissions"]] == ["call_1"]
    assert out["writes"] == [
        {"sessionId": out["session"]["sessionId"], "path": str(pi_project / "notes.txt"), "content": "final\n"}
    ]
    assert (pi_project / "notes.txt").read_text() == "final\n"
    assert out["exitCode"] == 0
