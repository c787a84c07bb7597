"""A stdio server that breaks the protocol: a line that is not JSON, or a reply to a
request pi never sent, fails the waiting call at once (not after its timeout) with an
error result and an ``mcp.log`` entry; a server that let a call time out is restarted
before the next call."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from mcp_testkit import HERE, alive, read_pids

from pi_mcp.config import ServerEntry, parse_server
from pi_mcp.connection import McpConnection
from pi_mcp.log import McpLog
from pi_mcp.tools import call_mcp_tool

FAULTY = HERE / "servers" / "faulty_server.py"
TIMEOUT = 30.0
"""The calls' timeout: the faults must be caught long before it."""


class Ctx:
    parent_tool_call_id = None
    signal = None

    def update(self, partial: Any) -> None:
        pass


def connect(tmp_path: Path, timeout: float = TIMEOUT) -> McpConnection:
    config = parse_server(
        "bad",
        {"command": sys.executable, "args": [str(FAULTY), "--pidfile", str(tmp_path / "pids")], "timeout": timeout},
    )
    return McpConnection(ServerEntry("bad", config, "test"), str(tmp_path), log=McpLog(tmp_path / "mcp.log"))


async def test_a_malformed_message_or_unknown_id_fails_the_call_at_once(tmp_path: Path) -> None:
    connection = connect(tmp_path)
    try:
        await connection.session()
        for tool, fault in [("garbage", "malformed message 'this is not json {'"), ("wrong_id", "987654")]:
            started = time.monotonic()
            result = await call_mcp_tool(connection, tool, {}, Ctx(), f"mcp__bad__{tool}")
            assert time.monotonic() - started < 5  # at once, not after the 30 s timeout
            assert result.is_error and fault in result.text_content(), result.text_content()
            assert fault in (tmp_path / "mcp.log").read_text().splitlines()[-1]
        ok = await call_mcp_tool(connection, "ok", {}, Ctx(), "mcp__bad__ok")  # the connection still works
        assert ok.text_content() == "fine" and not ok.is_error
    finally:
        await connection.close()


async def test_a_server_that_timed_out_is_restarted_before_the_next_call(tmp_path: Path) -> None:
    connection = connect(tmp_path)
    try:
        await connection.session()
        connection.entry.config = connection.entry.config.model_copy(update={"timeout": 0.5})
        (first,) = read_pids(tmp_path / "pids")
        hung = await call_mcp_tool(connection, "hang", {}, Ctx(), "mcp__bad__hang")
        assert hung.is_error and "did not answer within 0.5s" in hung.text_content()
        assert "restarted" in (tmp_path / "mcp.log").read_text()
        connection.entry.config = connection.entry.config.model_copy(update={"timeout": TIMEOUT})
        ok = await call_mcp_tool(connection, "ok", {}, Ctx(), "mcp__bad__ok")
        assert ok.text_content() == "fine"
        pids = read_pids(tmp_path / "pids")
        assert len(pids) == 2 and pids[0] == first and not alive(first)  # a new server process
    finally:
        await connection.close()
