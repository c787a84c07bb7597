"""Connections to real stdio servers: listing, calls, results, crashes, timeouts, shutdown."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp_testkit import TOOL_COUNT, WAIT, alive, read_pids, stdio, tools_changed

from pi_hookspecs import AbortController, AbortError, ImageContent, TextContent, ToolResult
from pi_mcp.config import ServerEntry, parse_server
from pi_mcp.connection import McpConnection
from pi_mcp.errors import McpUnavailableError
from pi_mcp.log import McpLog
from pi_mcp.tools import MAX_TEXT_CHARS, call_mcp_tool


def make(name: str = "fx", session_cwd: Path | None = None, log: McpLog | None = None, **entry: Any) -> McpConnection:
    entry.setdefault("command", sys.executable)
    config = parse_server(name, entry)
    return McpConnection(ServerEntry(name, config, "test"), str(session_cwd or Path.cwd()), log=log)


class Ctx:
    """What a tool's execute sees of its context (here: no parent, an abort signal)."""

    def __init__(self, parent: str | None = None, signal: Any = None) -> None:
        self.parent_tool_call_id = parent
        self.signal = signal
        self.updates: list[ToolResult] = []

    def update(self, partial: ToolResult) -> None:
        self.updates.append(partial)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fx() -> Any:
    """One server for the tests that only call tools (it survives their calls)."""
    connection = make(**stdio("--page-size", "4"))
    await connection.session()
    yield connection
    await connection.close()


shared_loop = pytest.mark.asyncio(loop_scope="module")


@shared_loop
async def test_listing_follows_pagination_cursors(fx: McpConnection) -> None:
    names = [t.name for t in fx.tools]
    assert len(names) == TOOL_COUNT and names[:3] == ["echo", "add", "picture"] and "weird.name" in names
    assert fx.state == "connected" and fx.has_resources and fx.server_name == "fixture"


@shared_loop
async def test_results_text_structured_image_and_is_error(fx: McpConnection) -> None:
    added = await call_mcp_tool(fx, "add", {"a": 2, "b": 40}, Ctx(), "mcp__fx__add")
    assert added.structured_content == {"total": 42} and not added.is_error
    assert added.details == {"server": "fx", "tool": "add"}
    picture = await call_mcp_tool(fx, "picture", {}, Ctx(), "mcp__fx__picture")
    assert isinstance(picture.content[0], ImageContent) and picture.content[0].mime_type == "image/png"
    failed = await call_mcp_tool(fx, "fail", {"reason": "no disk"}, Ctx(), "mcp__fx__fail")
    assert failed.is_error and "no disk" in failed.text_content()
    invalid = await call_mcp_tool(fx, "add", {"a": "x"}, Ctx(), "mcp__fx__add")
    assert invalid.is_error


@shared_loop
async def test_long_text_reaches_the_model_shortened_and_scripts_get_all_of_it(fx: McpConnection) -> None:
    size = MAX_TEXT_CHARS * 3
    direct = await call_mcp_tool(fx, "big", {"size": size}, Ctx(), "mcp__fx__big")
    text = direct.text_content()
    assert text.startswith("HEAD") and "TAIL" in text and len(text) < MAX_TEXT_CHARS + 500
    assert f"…{size - MAX_TEXT_CHARS} chars truncated…" in text
    path = direct.details["fullOutputPath"]
    assert path in text and Path(path).read_text() == "HEAD" + "x" * (size - 8) + "TAIL"
    nested = await call_mcp_tool(fx, "big", {"size": size}, Ctx(parent="call_1"), "mcp__fx__big")
    assert len(nested.text_content()) == size and "fullOutputPath" not in nested.details


@shared_loop
async def test_progress_notifications_become_updates(fx: McpConnection) -> None:
    ctx = Ctx()
    result = await call_mcp_tool(fx, "progress", {}, ctx, "mcp__fx__progress")
    assert result.text_content() == "progressed"
    assert [u.text_content() for u in ctx.updates] == ["half way", "done"]


@shared_loop
async def test_abort_cancels_a_running_call(fx: McpConnection) -> None:
    controller = AbortController()
    task = asyncio.ensure_future(call_mcp_tool(fx, "slow", {"seconds": 60}, Ctx(signal=controller.signal), "x"))
    await asyncio.sleep(0)  # let the call start
    started = time.monotonic()
    controller.abort("user")
    with pytest.raises(AbortError):
        await asyncio.wait_for(task, WAIT)
    assert time.monotonic() - started < 5
    assert (await call_mcp_tool(fx, "echo", {"text": "still here"}, Ctx(), "x")).text_content() == "still here"


@shared_loop
async def test_a_server_crashing_mid_call_gives_an_error_then_reconnects(fx: McpConnection, tmp_path: Path) -> None:
    first_pid, connects = fx.pid, fx.connects
    result = await call_mcp_tool(fx, "crash", {}, Ctx(), "mcp__fx__crash")
    assert result.is_error
    assert 'MCP server "fx" disconnected' in result.text_content() and "crashing on purpose" in result.text_content()
    assert fx.state == "disconnected" and "crashing on purpose" in (fx.error or "")
    again = await call_mcp_tool(fx, "echo", {"text": "back"}, Ctx(), "mcp__fx__echo")
    assert again.text_content() == "back" and fx.state == "connected" and fx.connects == connects + 1
    assert fx.pid != first_pid and not alive(first_pid or 0)


@shared_loop
async def test_list_changed_relists_the_tools(fx: McpConnection) -> None:
    changed = tools_changed(fx)
    await fx.call_tool("grow", {"tool": "fresh"})
    await asyncio.wait_for(changed.wait(), WAIT)
    assert "fresh" in [t.name for t in fx.tools]
    changed = tools_changed(fx)
    await fx.call_tool("shrink", {"tool": "fresh"})
    await asyncio.wait_for(changed.wait(), WAIT)
    assert "fresh" not in [t.name for t in fx.tools]


async def test_a_server_that_never_starts_times_out(tmp_path: Path) -> None:
    connection = make(**stdio("--hang", "--pidfile", str(tmp_path / "pids")), timeout=0.5)
    started = time.monotonic()
    with pytest.raises(
        McpUnavailableError, match=r'MCP server "fx" failed to connect: did not finish starting within 0\.5s'
    ):
        await connection.session()
    assert time.monotonic() - started < 5
    assert connection.state == "failed"
    await connection.close()
    assert [pid for pid in read_pids(tmp_path / "pids") if alive(pid)] == []


async def test_missing_commands_and_bad_values_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = make(command="pi-no-such-server-command")
    with pytest.raises(McpUnavailableError, match="cannot start 'pi-no-such-server-command'"):
        await missing.session()
    monkeypatch.delenv("PI_TEST_UNSET", raising=False)
    unset = make(**stdio(), env={"KEY": "${PI_TEST_UNSET}"})
    with pytest.raises(McpUnavailableError, match='env "KEY": environment variable PI_TEST_UNSET is not set'):
        await unset.session()
    nowhere = make(**stdio(), cwd="does-not-exist")
    with pytest.raises(McpUnavailableError, match="is not a directory"):
        await nowhere.session()
    for connection in (missing, unset, nowhere):
        assert connection.state == "failed"
        await connection.close()


async def test_env_expansion_and_cwd_reach_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_TEST_SECRET", "s3cret")
    monkeypatch.setenv("PI_TEST_NOT_PASSED", "leak")
    (tmp_path / "work").mkdir()
    connection = make(
        session_cwd=tmp_path,
        **stdio(),
        cwd="work",
        env={"TOKEN": "Bearer ${PI_TEST_SECRET}", "MODE": "${PI_TEST_MODE:-default}", "CMD": "!echo computed"},
    )
    try:
        await connection.session()
        values = [
            (await connection.call_tool("env", {"variable": v})).content[0].text for v in ("TOKEN", "MODE", "CMD")
        ]
        assert values == ["Bearer s3cret", "default", "computed"]
        # a stdio server sees a minimal environment plus its configured env
        assert (await connection.call_tool("env", {"variable": "PI_TEST_NOT_PASSED"})).content[0].text == "<unset>"
        assert (await connection.call_tool("where", {})).content[0].text == str(tmp_path / "work")
    finally:
        await connection.close()


async def test_closing_stops_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    connection = make(**stdio("--pidfile", str(pids), "--child"))
    await connection.session()
    server, helper = read_pids(pids)
    assert alive(server) and alive(helper) and connection.pid == server
    await connection.close()
    assert not alive(server) and not alive(helper)
    assert connection.state == "closed"
    with pytest.raises(McpUnavailableError, match="is shut down"):
        await connection.session()


async def test_closing_while_connecting_leaves_nothing_behind(tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    connection = make(**stdio("--hang", "--pidfile", str(fifo), "--child"), timeout=30)
    connection.start()
    # the read returns once the server (started, not answering) has written its pids
    text = await asyncio.wait_for(asyncio.to_thread(fifo.read_text), WAIT)
    pids = [int(p) for p in text.split()]
    assert len(pids) == 2 and all(alive(pid) for pid in pids) and connection.state == "connecting"
    await asyncio.wait_for(connection.close(), WAIT)
    assert [pid for pid in pids if alive(pid)] == []


async def test_server_log_notifications_go_to_mcp_log(pi_agent_dir: Path) -> None:
    log = McpLog(pi_agent_dir / "mcp.log")
    connection = make(log=log, **stdio())
    try:
        await connection.call_tool("log", {"message": "disk almost full"})
    finally:
        await connection.close()
    line = (pi_agent_dir / "mcp.log").read_text().splitlines()[-1]
    assert line.endswith("[fx] warning fixture: disk almost full")


def test_the_log_rotates(tmp_path: Path) -> None:
    log = McpLog(tmp_path / "mcp.log", max_bytes=200)
    for i in range(10):
        log.write("s", "info", None, {"n": i, "pad": "x" * 30})
    assert (tmp_path / "mcp.log.1").exists()
    assert (tmp_path / "mcp.log").stat().st_size <= 200
    assert '"n": 9' in (tmp_path / "mcp.log").read_text()


@shared_loop
async def test_text_and_images_convert(fx: McpConnection) -> None:
    echo = await call_mcp_tool(fx, "echo", {"text": "é"}, Ctx(), "mcp__fx__echo")
    assert echo.content == [TextContent(text="é")]


async def test_the_call_timeout_restarts_with_every_progress_notification(tmp_path: Path) -> None:
    connection = make(**stdio())
    try:
        await connection.session()
        # a short timeout for the calls only (a loaded machine may start the server slowly)
        connection.entry.config = connection.entry.config.model_copy(update={"timeout": 0.5})
        ticked = await call_mcp_tool(connection, "ticker", {"steps": 3, "seconds": 0.25}, Ctx(), "x")
        assert ticked.text_content() == "ticked" and not ticked.is_error  # 0.75s in all, progress every 0.25s
        slow = await call_mcp_tool(connection, "slow", {"seconds": 30}, Ctx(), "x")
        assert slow.is_error and 'MCP tool "fx/slow" did not answer within 0.5s' in slow.text_content()
        # the server that timed out is restarted (with a timeout it can start in) for the next call
        assert connection.state == "disconnected"
        connection.entry.config = connection.entry.config.model_copy(update={"timeout": WAIT})
        assert (await call_mcp_tool(connection, "echo", {"text": "alive"}, Ctx(), "x")).text_content() == "alive"
    finally:
        await connection.close()
