"""``pi acp`` as editors use it, driven over stdio by the ``acp`` SDK's client side
against a scripted model (a loopback OpenAI-compatible server)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import acp
import pytest
from acp.schema import EmbeddedResourceContentBlock, McpServerStdio, ResourceContentBlock, TextResourceContents
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

MCP_FIXTURE = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "servers" / "fixture_server.py"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def model(wire: WireServer, pi_agent_dir: Path) -> str:
    return configure_local_endpoint(wire.url)


def _args(model: str) -> list[str]:
    return ["--model", model, "-e", str(POLICY)]


async def test_prompt_with_tools_permissions_and_the_editor_as_file_system_and_terminal(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    target = pi_project / "app.py"
    target.write_text("x = 1\n")
    wire.enqueue(
        tool_reply("bash", {"command": "echo ask-first"}, "call_1"),
        tool_reply("bash", {"command": "echo ask-again"}, "call_2"),
        tool_reply("bash", {"command": "echo ask forbidden"}, "call_3"),
        tool_reply("edit", {"path": "app.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}, "call_4"),
        text_reply("All done."),
    )
    editor = Editor()
    editor.answers = ["allow", "reject", "allow"]
    editor.buffers[str(target)] = "x = 1\ny = 0  # unsaved\n"
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        assert new.config_options and new.modes is not None
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("Fix app.py")])
    assert response.stop_reason == "end_turn", stderr_of(pi_project)
    assert "All done." in editor.text()
    assert "available_commands_update" in editor.kinds()

    # bash: announced with kind and title, run in the editor's terminal after the user allowed it
    start = editor.tool_updates("call_1")[0]
    assert start.session_update == "tool_call" and start.kind == "execute" and start.title == "`echo ask-first`"
    assert editor.commands[0][-1] == "echo ask-first" and len(editor.commands) == 1
    done = editor.tool_updates("call_1")[-1]
    assert done.status == "completed" and done.content[0].type == "terminal"
    assert "ask-first" in done.raw_output["content"]
    # the permission requests: allowed, rejected, allowed but blocked by the policy anyway
    assert [p[0].tool_call_id for p in editor.permissions] == ["call_1", "call_2", "call_3"]
    assert {o.kind for o in editor.permissions[0][1]} == {"allow_once", "allow_always", "reject_once"}
    rejected = editor.tool_updates("call_2")[-1]
    assert rejected.status == "failed" and "the user said no" in rejected.raw_output["content"]
    blocked = editor.tool_updates("call_3")[-1]
    assert blocked.status == "failed" and "forbidden commands never run" in blocked.raw_output["content"]

    # edit: read from the editor's unsaved buffer, written through fs/write_text_file, shown as a diff
    edit_start = editor.tool_updates("call_4")[0]
    assert edit_start.kind == "edit" and edit_start.locations[0].path == str(target)
    assert editor.reads == [str(target)]
    assert editor.writes == [(str(target), "x = 2\ny = 0  # unsaved\n")]
    diff = editor.tool_updates("call_4")[-1].content[0]
    assert diff.type == "diff" and diff.path == str(target)
    assert diff.old_text == "x = 1\ny = 0  # unsaved\n" and diff.new_text == "x = 2\ny = 0  # unsaved\n"


async def test_without_editor_capabilities_tools_run_locally_and_edits_still_show_diffs(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    (pi_project / "a.txt").write_text("one\n")
    wire.enqueue(
        tool_reply("bash", {"command": "echo local"}, "call_1"),
        tool_reply("write", {"path": "a.txt", "content": "two\n"}, "call_2"),
        text_reply("ok"),
    )
    editor = Editor(fs=False, terminal=False)
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("go")])
    assert response.stop_reason == "end_turn"
    assert editor.commands == [] and editor.writes == [] and editor.reads == []
    assert (pi_project / "a.txt").read_text() == "two\n"
    assert "local" in editor.tool_updates("call_1")[-1].raw_output["content"]
    diff = editor.tool_updates("call_2")[-1].content[0]
    assert (diff.type, diff.old_text, diff.new_text) == ("diff", "one\n", "two\n")


async def test_cancel_mid_run(wire: WireServer, model: str, pi_project: Path) -> None:
    wire.enqueue(tool_reply("bash", {"command": "sleep 30"}, "call_1"))
    editor = Editor(terminal=False)
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        running = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[acp.text_block("wait")]))
        await asyncio.wait_for(editor.tool_call_seen.wait(), 30)
        await conn.cancel(session_id=new.session_id)
        response = await asyncio.wait_for(running, 20)
        assert response.stop_reason == "cancelled"
        # the session still serves
        wire.enqueue(text_reply("again"))
        again = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("hello")])
        assert again.stop_reason == "end_turn" and "again" in editor.text()


async def test_load_replays_history_in_a_fresh_process_and_list_finds_it(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    wire.enqueue(tool_reply("bash", {"command": "echo hi"}, "call_1"), text_reply("It printed hi."))
    first = Editor(terminal=False)
    async with open_pi(first, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("say hi")])
    second = Editor()
    async with open_pi(second, *_args(model), cwd=pi_project) as conn:
        listed = await conn.list_sessions(cwd=str(pi_project))
        assert [s.session_id for s in listed.sessions] == [new.session_id]
        assert listed.sessions[0].title == "say hi" and listed.sessions[0].cwd == str(pi_project)
        await conn.load_session(cwd=str(pi_project), session_id=new.session_id, mcp_servers=[])
        replay = list(second.updates)
        assert second.text("user_message_chunk") == "say hi"
        assert "It printed hi." in second.text()
        calls = [u for u in replay if getattr(u, "tool_call_id", None) == "call_1"]
        assert calls[0].session_update == "tool_call" and calls[0].title == "`echo hi`"
        assert calls[-1].status == "completed" and "hi" in calls[-1].raw_output["content"]
        # and the conversation goes on with its history
        wire.enqueue(text_reply("still here"))
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("more")])
        assert response.stop_reason == "end_turn"
    sent = wire.requests[-1].body["messages"]
    assert any(m["role"] == "user" and "say hi" in json.dumps(m["content"]) for m in sent)
    with pytest.raises(acp.RequestError):
        async with open_pi(Editor(), *_args(model), cwd=pi_project) as conn:
            await conn.load_session(cwd=str(pi_project), session_id="no-such-session", mcp_servers=[])


async def test_an_mcp_server_passed_by_the_client_is_used_by_the_model(
    wire: WireServer, model: str, pi_project: Path
) -> None:
    wire.enqueue(tool_reply("mcp__fixture__echo", {"text": "through mcp"}, "call_1"), text_reply("done"))
    editor = Editor()
    server = McpServerStdio(name="fixture", command=sys.executable, args=[str(MCP_FIXTURE)], env=[])
    async with open_pi(editor, *_args(model), cwd=pi_project, env={"PI_EXTENSIONS": "mcp"}) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[server])
        response = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("use mcp")])
    assert response.stop_reason == "end_turn", stderr_of(pi_project)
    tools = [t["function"]["name"] for t in wire.requests[0].body["tools"]]
    assert "mcp__fixture__echo" in tools
    done = editor.tool_updates("call_1")[-1]
    assert done.status == "completed" and "through mcp" in done.raw_output["content"]
    assert editor.tool_updates("call_1")[0].title == "echo (fixture)"


async def test_prompt_content_resources_images_and_modes(
    wire: WireServer, pi_agent_dir: Path, pi_project: Path
) -> None:
    model = configure_local_endpoint(wire.url, input=["text", "image"])
    wire.enqueue(text_reply("seen"))
    editor = Editor()
    notes = pi_project / "notes.md"
    async with open_pi(editor, *_args(model), cwd=pi_project) as conn:
        new = await conn.new_session(cwd=str(pi_project), mcp_servers=[])
        thinking = next(o for o in new.config_options if o.id == "thinking")
        assert thinking.category == "thought_level"
        changed = await conn.set_config_option(config_id="thinking", session_id=new.session_id, value="off")
        assert next(o for o in changed.config_options if o.id == "thinking").current_value == "off"
        await conn.set_session_mode(session_id=new.session_id, mode_id="off")
        with pytest.raises(acp.RequestError):
            await conn.set_session_mode(session_id=new.session_id, mode_id="turbo")
        prompt = [
            acp.text_block("Read "),
            ResourceContentBlock(type="resource_link", uri=notes.as_uri(), name="notes.md"),
            acp.text_block(" and this:"),
            EmbeddedResourceContentBlock(
                type="resource", resource=TextResourceContents(uri="file:///tmp/snippet.py", text="print(1)")
            ),
            acp.image_block("iVBORw0KGgo=", "image/png"),
        ]
        await conn.prompt(session_id=new.session_id, prompt=prompt)
    user = wire.requests[0].body["messages"][-1]
    text = json.dumps(user["content"])
    assert f"@{notes}" in text and '<file name=\\"/tmp/snippet.py\\">\\nprint(1)\\n</file>' in text
    assert "image_url" in text
