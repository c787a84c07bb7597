"""pluggable-pi-mcp beside pi's startup: the SDK loads in a background thread, stdio servers start
at ``session_start`` and connect in the background, and the first request still declares
the ``direct`` tools of configured servers."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_testkit import (
    WAIT,
    CaptureUI,
    alive,
    calls,
    manager_of,
    result_texts,
    start,
    stdio,
    write_mcp_json,
)

import pi_mcp.manager
import pi_mcp.stdio
from pi_hookspecs import SystemMessage
from pi_mcp import sdk
from pi_mcp.stdio import default_environment


def declared_in(script: Any, request: int) -> set[str]:
    """The tools declared to the model in request ``request`` (its loadout messages)."""
    context = script.contexts[request]
    names = {t.name for t in context.tools}
    for message in context.messages:
        if isinstance(message, SystemMessage):
            names |= {t.name for t in message.tools_added or []}
            names -= {t.name for t in message.tools_removed or []}
    return names


class GatedImport:
    """Replaces the SDK's background import by one that waits until released (the SDK
    is imported in the test process already), or fails."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.error = error

    def __call__(self) -> None:
        self.started.set()
        if not self.release.wait(WAIT):
            raise TimeoutError("the gated SDK import was never released")
        if self.error is not None:
            raise self.error


@pytest.fixture
def gated_import(monkeypatch: pytest.MonkeyPatch) -> Iterator[GatedImport]:
    gate = GatedImport()
    monkeypatch.setattr(sdk, "_future", None)
    monkeypatch.setattr(sdk, "_import_all", gate)
    yield gate
    gate.release.set()


def test_import_pi_mcp_does_not_import_the_sdk() -> None:
    """Loading the plugin (and every module a session with servers imports on pi's
    thread) costs no ``import mcp``."""
    code = (
        "import sys, pi_mcp, pi_mcp.manager, pi_mcp.connection, pi_mcp.stdio, pi_mcp.tools, "
        "pi_mcp.resources, pi_mcp.commands, pi_mcp.status, pi_mcp.oauth, pi_mcp.sdk\n"
        "pi_mcp.McpPlugin()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_server_environment_matches_the_sdks() -> None:
    from mcp.client.stdio import get_default_environment

    assert default_environment() == get_default_environment()


async def test_session_start_waits_neither_for_the_sdk_nor_for_the_server_yet_the_first_request_declares_direct_tools(
    pi_agent_dir: Path, pi_project: Path, tmp_path: Path, gated_import: GatedImport
) -> None:
    opened = tmp_path / "serve"
    write_mcp_json(pi_agent_dir, {"slow": stdio("--wait-for", str(opened), exposure="direct")})
    runtime, script = await start(pi_project, calls(("mcp__slow__echo", {"text": "late"})), "done")
    try:
        connection = manager_of(runtime).find("slow")
        # session_start returned while the SDK was still loading and the server starting…
        assert await asyncio.to_thread(gated_import.started.wait, WAIT)
        assert not sdk.loaded()
        assert connection.state == "connecting" and connection.pending
        assert "mcp__slow__echo" not in {d.name for d in runtime.session.tools.all_definitions()}
        # …but the server's process was started by then
        assert connection.pid is not None and alive(connection.pid)
        gated_import.release.set()
        opened.touch()
        # the prompt waits for the direct server, so its first request declares the tool
        await asyncio.wait_for(runtime.session.prompt("echo late"), WAIT)
        assert "mcp__slow__echo" in declared_in(script, 0)
        assert result_texts(script, 1) == ["late"]
        assert connection.state == "connected" and connection.connects == 1
    finally:
        await runtime.dispose()


async def test_a_server_that_never_answers_holds_the_first_request_only_for_its_timeout(
    pi_agent_dir: Path, pi_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pi's own bound on the first prompt's wait is out of the way: only the server's
    # timeout (1 s) can end the wait, or the prompt would run into the test's WAIT
    monkeypatch.setattr(pi_mcp.manager, "DIRECT_WAIT_SECONDS", 600.0)
    write_mcp_json(
        pi_agent_dir, {"mute": stdio("--hang", exposure="direct", timeout=1), "fx": stdio(exposure="direct")}
    )
    ui = CaptureUI()
    runtime, script = await start(pi_project, calls(("mcp__fx__echo", {"text": "still here"})), "ok", ui=ui)
    try:
        await asyncio.wait_for(runtime.session.prompt("go"), WAIT)
        assert script.requests == 2
        assert "mcp__fx__echo" in declared_in(script, 0)  # the other server was not held up
        assert result_texts(script, 1) == ["still here"]
        mute = manager_of(runtime).find("mute")
        assert mute.state == "failed" and "did not finish starting within 1s" in (mute.error or "")
        await asyncio.wait_for(asyncio.gather(*manager_of(runtime)._tasks), WAIT)  # the startup report
        about = [w for w in ui.texts("warning") if '"mute"' in w]
        assert about == ['MCP server "mute" failed to connect: did not finish starting within 1s']
    finally:
        await runtime.dispose()


async def test_servers_without_direct_tools_connect_once_the_first_request_is_out(
    pi_agent_dir: Path, pi_project: Path, tmp_path: Path
) -> None:
    opened = tmp_path / "serve"
    write_mcp_json(pi_agent_dir, {"later": stdio("--wait-for", str(opened), exposure="deferred")})
    runtime, script = await start(pi_project, "hello")
    try:
        connection = manager_of(runtime).find("later")
        assert connection.deferred and connection.state == "connecting"
        assert connection.pid is not None and alive(connection.pid)  # started, not yet connected to
        # the first request does not wait for it (the server would not even answer yet)
        await asyncio.wait_for(runtime.session.prompt("hi"), WAIT)
        assert script.requests == 1
        assert not connection.deferred  # the request is out: it goes on connecting
        opened.touch()
        await asyncio.wait_for(connection.wait(None), WAIT)
        assert connection.state == "connected", connection.error
    finally:
        await runtime.dispose()


async def test_a_server_never_connected_to_is_stopped_at_once_on_shutdown(
    pi_agent_dir: Path, pi_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A started server nobody connected to yet (still starting up, it would read the
    end of its input only once started) gets SIGTERM right away: the grace a connected
    server gets after its stdin closed does not apply."""
    monkeypatch.setattr(pi_mcp.stdio, "STDIN_GRACE_SECONDS", 600.0)
    write_mcp_json(pi_agent_dir, {"idle": stdio("--wait-for", str(tmp_path / "never"))})
    runtime, _ = await start(pi_project)
    connection = manager_of(runtime).find("idle")
    assert connection.deferred and connection.pid is not None and alive(connection.pid)
    await asyncio.wait_for(runtime.dispose(), WAIT)
    assert not alive(connection.pid)
    assert connection.state == "closed"


async def test_an_sdk_that_fails_to_import_is_reported_per_server(
    pi_agent_dir: Path, pi_project: Path, gated_import: GatedImport
) -> None:
    gated_import.error = ModuleNotFoundError("No module named 'mcp'")
    gated_import.release.set()
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct")})
    ui = CaptureUI()
    runtime, _ = await start(pi_project, "no tools today", ui=ui)
    try:
        await asyncio.wait_for(runtime.session.prompt("hi"), WAIT)
        connection = manager_of(runtime).find("fx")
        assert connection.state == "failed"
        assert not alive(connection.pid)  # the started server was stopped
        await asyncio.wait_for(asyncio.gather(*manager_of(runtime)._tasks), WAIT)
        assert [w for w in ui.texts("warning") if '"fx"' in w] == [
            "MCP server \"fx\" failed to connect: ModuleNotFoundError: No module named 'mcp'"
        ]
    finally:
        await runtime.dispose()


def test_pi_print_mode_declares_the_tool_of_a_slow_starting_server_in_its_first_request(
    pi_agent_dir: Path, pi_project: Path
) -> None:
    """``pi -p`` end to end: the server sleeps 0.5 s before it serves; its direct tool is
    declared in the first request all the same, and the call goes through."""
    from mcp_testkit import env_without_pi, write_local_models

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "ai"))
    from wire_server import WireServer, chat_chunks

    server = WireServer()
    try:
        write_mcp_json(
            pi_agent_dir,
            {
                "slow": stdio("--start-delay", "0.5", exposure="direct"),
                "other": stdio(exposure="codemode"),
            },
        )
        write_local_models(pi_agent_dir, server.url)
        server.enqueue(
            chat_chunks(
                [
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "mcp__slow__echo", "arguments": json.dumps({"text": "slowly"})},
                            }
                        ]
                    },
                ],
                finish_reason="tool_calls",
            ),
            chat_chunks([{"content": "Echoed."}]),
        )
        env = env_without_pi()
        env.update(PI_CODING_AGENT_DIR=str(pi_agent_dir), PI_EXTENSIONS="mcp")
        done = subprocess.run(
            [sys.executable, "-m", "pi_core", "-p", "--no-session", "--model", "local/m", "echo it"],
            cwd=pi_project,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Echoed."
        first, second = (request.body for request in server.requests)
        assert [tool["function"]["name"] for tool in first["tools"]].count("mcp__slow__echo") == 1
        result = next(m for m in second["messages"] if m["role"] == "tool")
        assert "slowly" in json.dumps(result["content"])
        assert "failed" not in done.stderr
    finally:
        server.close()
