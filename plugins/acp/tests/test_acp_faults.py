"""Faults an ACP client runs into, each driven through a real client
connection (the ``acp`` SDK's client side) against ``pi acp`` in a subprocess:

* ``session/load`` of a session that was created but never prompted (pi has written no
  file for it yet) loads it, in the same process and in a later one;
* a client that refuses ``terminal/create`` (or another request) has its reason reach
  the model in the tool result;
* a plugin handler that fails through the ACP SDK never shows the model a file path
  or a line number.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import acp
import pytest
from acp_kit import (
    POLICY,
    Editor,
    WireServer,
    configure_local_endpoint,
    open_pi,
    stderr_of,
    text_reply,
    tool_reply,
    use_server,
)

REFUSAL = "terminals are disabled in this workspace"
"""The reason a refusing client gives."""

INTERNAL_PATH = re.compile(r"site-packages|\.py:\d+|\.py\b|/pi_acp/|/acp/")
"""What model-visible text must not hold: file paths and line references of pi's,
the SDK's or a plugin's code."""


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def model(wire: WireServer, pi_agent_dir: Path) -> str:
    return str(configure_local_endpoint(wire.url))


def _args(model: str) -> list[str]:
    return ["--model", model, "-e", str(POLICY)]


def _tool_results(wire: WireServer) -> list[str]:
    """The tool results the model was sent in the last request."""
    messages = wire.requests[-1].body["messages"]
    return [
        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
        for m in messages
        if m["role"] == "tool"
    ]


async def _announced(editor: Editor) -> None:
    """Wait for the ``available_commands_update`` that follows ``session/new``'s answer."""
    for _ in range(200):
        if "available_commands_update" in editor.kinds():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no available_commands_update")


def _session_files(agent_dir: Path) -> list[Path]:
    return sorted((agent_dir / "sessions").rglob("*.jsonl"))


# ------------------------------------------------------------------ session/load before the first prompt


async def test_a_session_never_prompted_loads_in_the_same_process(
    wire: WireServer, model: str, pi_agent_dir: Path, pi_project: Path
) -> None:
    """acpx's order: session/new, then session/load of that id before any prompt."""
    editor = Editor(terminal=False)
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        assert _session_files(pi_agent_dir) == []  # pi writes a session once it has an answer
        await _announced(editor)
        editor.updates.clear()
        loaded = await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        assert loaded.config_options and loaded.modes is not None
        assert editor.kinds() == ["available_commands_update"]  # nothing to replay
        # loading it twice is the same, and the session serves prompts under its id
        await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        wire.enqueue(text_reply("first answer"))
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("hello")])
        assert response.stop_reason == "end_turn", stderr_of(pi_project)
        assert "first answer" in editor.text()
        # once prompted, loading it again (in this process: its file is locked by it) replays it
        editor.updates.clear()
        await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        assert editor.text("user_message_chunk") == "hello" and editor.text() == "first answer"
        wire.enqueue(text_reply("second answer"))
        again = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("more")])
        assert again.stop_reason == "end_turn", stderr_of(pi_project)
    files = _session_files(pi_agent_dir)
    assert len(files) == 1 and new.session_id in files[0].name
    header = json.loads(files[0].read_text().splitlines()[0])
    assert header["id"] == new.session_id
    sent = wire.requests[-1].body["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == ["user", "assistant", "user"]


async def test_a_session_never_prompted_loads_in_a_later_process(
    wire: WireServer, model: str, pi_agent_dir: Path, pi_project: Path
) -> None:
    """The id pi acp handed out is remembered: a later pi acp loads it, empty, and it
    goes on under that id; an id pi acp never handed out is still not found."""
    async with open_pi(Editor(), *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
    assert _session_files(pi_agent_dir) == []
    later = Editor(terminal=False)
    async with open_pi(later, *_args(model), cwd=pi_project) as conn:
        loaded = await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        assert loaded.config_options and later.kinds() == ["available_commands_update"]
        wire.enqueue(text_reply("hello from later"))
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("hi")])
        assert response.stop_reason == "end_turn", stderr_of(pi_project)
        listed = await conn.list_sessions(cwd=str(pi_project))
        assert [s.session_id for s in listed.sessions] == [new.session_id]
        with pytest.raises(acp.RequestError) as unknown:
            await conn.load_session(cwd=str(pi_project), session_id="0190aaaa-never-handed-out", mcp_servers=[])
        assert unknown.value.code == -32002
    files = _session_files(pi_agent_dir)
    assert len(files) == 1 and json.loads(files[0].read_text().splitlines()[0])["id"] == new.session_id
    # and a third process finds it the ordinary way, with its history
    third = Editor()
    async with open_pi(third, *_args(model), cwd=pi_project) as conn:
        await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
    assert third.text("user_message_chunk") == "hi" and third.text() == "hello from later"


async def test_two_processes_cannot_both_open_one_unwritten_session(
    wire: WireServer, model: str, pi_agent_dir: Path, pi_project: Path
) -> None:
    """The process that has the unwritten session open holds it: a second one gets an
    error naming the reason (as pi's lock on a written session file does), and can
    load it once the first is gone."""
    async with open_pi(Editor(), *_args(model), cwd=pi_project) as first:
        new = await first.new_session(cwd=str(pi_project), mcp_servers=[])
        with pytest.raises(acp.RequestError) as busy:
            async with open_pi(Editor(), *_args(model), cwd=pi_project) as second:
                await second.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        assert busy.value.code == -32603 and "another pi acp process" in json.dumps(busy.value.data)
    async with open_pi(Editor(), *_args(model), cwd=pi_project) as third:
        await third.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        wire.enqueue(text_reply("ok"))
        await third.prompt(session_id=new.session_id, prompt=[acp.text_block("now")])
    assert not list((pi_agent_dir / "acp-sessions").iterdir())  # written: the marker is gone


async def test_a_session_kept_in_memory_loads_in_the_same_process_only(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    editor = Editor(terminal=False)
    async with open_pi(editor, *_args(model), "--no-session", cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        wire.enqueue(text_reply("kept in memory"))
        await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("remember")])
        editor.updates.clear()
        await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        assert editor.text("user_message_chunk") == "remember" and editor.text() == "kept in memory"
    with pytest.raises(acp.RequestError) as missing:
        async with open_pi(Editor(), *_args(model), "--no-session", cwd=pi_project) as conn:
            await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
    assert missing.value.code == -32002


# ------------------------------------------------------------------ a client's refusal reaches the model


class RefusingEditor(Editor):
    """An editor that offers a terminal, then refuses to create one, and refuses
    permission dialogs and file reads with a JSON-RPC error."""

    async def create_terminal(self, session_id: str, command: str, *args: Any, **kwargs: Any) -> Any:
        self.commands.append([command])
        raise acp.RequestError.internal_error({"details": REFUSAL})

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        self.permissions.append((tool_call, options))
        raise acp.RequestError(-32000, "permission dialogs are turned off", {"details": "by the workspace policy"})

    async def read_text_file(self, session_id: str, path: str, *args: Any, **kwargs: Any) -> Any:
        self.reads.append(path)
        raise acp.RequestError.resource_not_found(path)


async def test_a_refused_terminal_create_tells_the_model_the_clients_reason(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    wire.enqueue(tool_reply("bash", {"command": "echo hi"}, "call_1"), text_reply("understood"))
    editor = RefusingEditor()
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("run it")])
    assert response.stop_reason == "end_turn", stderr_of(pi_project)
    assert editor.commands, "the command was not sent to the editor's terminal"
    [result] = _tool_results(wire)
    assert REFUSAL in result and "terminal/create" in result, result
    assert result != "Internal error" and not INTERNAL_PATH.search(result), result
    done = editor.tool_updates("call_1")[-1]
    assert done.status == "failed" and REFUSAL in done.raw_output["content"]


async def test_a_plugin_failing_through_the_sdk_shows_the_model_no_internal_paths(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    """The policy's ``ctx.ui.confirm`` fails (the editor answers the permission request
    with an error), and the editor refuses a read: the model sees what failed and the
    client's reason, never a file path or line of pi, the SDK or the plugin."""
    (pi_project / "notes.txt").write_text("local text\n")
    wire.enqueue(
        tool_reply("bash", {"command": "echo ask me"}, "call_1"),
        tool_reply("read", {"path": "notes.txt"}, "call_2"),
        text_reply("done"),
    )
    editor = RefusingEditor(terminal=False)
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("go")])
    assert response.stop_reason == "end_turn", stderr_of(pi_project)
    assert len(editor.permissions) == 1 and editor.reads == [str(pi_project / "notes.txt")]
    blocked, refused = _tool_results(wire)
    for text in (blocked, refused):
        assert not INTERNAL_PATH.search(text), text
    assert "confirm_policy" in blocked and "permission dialogs are turned off" in blocked, blocked
    assert "by the workspace policy" in blocked, blocked
    assert "Resource not found" in refused and "fs/read_text_file" in refused, refused
    # the editor's view of the calls holds no internal path either
    for call in ("call_1", "call_2"):
        done = editor.tool_updates(call)[-1]
        assert done.status == "failed" and not INTERNAL_PATH.search(done.raw_output["content"])
    # the full report, with where it happened, is on stderr for the developer
    assert "confirm_policy" in stderr_of(pi_project)
