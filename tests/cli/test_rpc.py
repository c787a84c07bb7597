"""``pi --mode rpc`` end to end: the real command in a subprocess, driven by an RPC
client, against the offline faux model and against a local OpenAI-compatible endpoint
(the real ``openai`` SDK talking to :mod:`wire_server` over loopback)."""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rpc_client import RpcProcess, of_type, session_records

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from wire_server import Canned, WireServer, chat_chunks, use_server

NO_KEYS = {name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}

# --------------------------------------------------------------------------- plugins

GATE_PLUGIN = """
from pi_hookspecs import hookimpl


class Gate:
    @hookimpl
    async def tool_call(self, event, ctx):
        ctx.ui.set_status("gate", "asking")
        allowed = await ctx.ui.confirm("Run " + event.tool_name + "?", event.input.get("command", ""))
        ctx.ui.notify(f"has_ui={ctx.has_ui} mode={ctx.mode} allowed={allowed}", "warning")
        if not allowed:
            return {"block": True, "reason": "denied over RPC"}
"""

ASK_PLUGIN = """
import json
import os

from pi_hookspecs import hookimpl


class Ask:
    @hookimpl
    def register_commands(self, register):
        register("ask", self.ask, description="Ask the user things")
        register("bye", self.bye, description="Shut pi down")

    async def ask(self, args, ctx):
        choice = await ctx.ui.select("Pick one", ["red", "green"])
        name = await ctx.ui.input("Your name", "type it")
        text = await ctx.ui.editor("Edit", "prefilled")
        cancelled = await ctx.ui.confirm("Cancel me")
        late = await ctx.ui.confirm("Nobody answers this", timeout=0.2)
        ctx.ui.set_widget("ask", ["done"], placement="belowEditor")
        ctx.ui.set_working_message("asking")  # needs a terminal: nothing is sent, as in pi 1.6.0
        ctx.ui.set_footer(["footer"])
        ctx.ui.notify(json.dumps([choice, name, text, cancelled, late, ctx.ui.get_editor_text()]))

    def bye(self, args, ctx):
        ctx.shutdown()

    @hookimpl
    def turn_start(self, event):
        if os.environ.get("RPC_TEST_FAIL"):
            raise RuntimeError("boom in turn_start")

    @hookimpl
    def session_shutdown(self, event):
        with open(os.environ["RPC_TEST_MARK"], "a") as fh:
            fh.write("shutdown " + event.reason + "\\n")

    @hookimpl
    def ui_prompt_start(self, event):
        with open(os.environ["RPC_TEST_MARK"], "a") as fh:
            fh.write(f"waiting {event.kind} {event.title}\\n")

    @hookimpl
    def ui_prompt_end(self, event):
        with open(os.environ["RPC_TEST_MARK"], "a") as fh:
            fh.write(f"answered {event.kind}\\n")
"""

HANG_PLUGIN = """
import asyncio

from pi_hookspecs import hookimpl


@hookimpl
async def session_shutdown(event, ctx):
    ctx.ui.notify("stuck in session_shutdown", "warning")
    await asyncio.Event().wait()
"""


def write_plugin(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    return root


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def pi(cwd: Path, *args: str, **env: str) -> RpcProcess:
    """``pi --mode rpc`` without keys, on the offline demo model (it answers only when
    named) unless ``args`` name a model."""
    model = () if "--model" in args else ("--model", "faux/offline-demo")
    return RpcProcess("--no-extensions", *model, *args, cwd=cwd, env={**NO_KEYS, **env})


def configure_endpoint(wire: WireServer, *models: dict[str, Any]) -> None:
    agent_dir = Path(os.environ["PI_CODING_AGENT_DIR"])
    models = models or ({"id": "local-model"},)
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"contextWindow": 32000, "maxTokens": 1024, **m} for m in models],
    }
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"local": provider}}))


def text_reply(text: str) -> Canned:
    pieces = [{"content": text[i : i + 6]} for i in range(0, len(text), 6)]
    return chat_chunks(pieces, usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


def held_reply(text: str) -> Canned:
    """Streams ``text`` and then keeps the response open (a model that is still going)."""
    return Canned(body=chat_chunks([{"content": text}], finish_reason=None, done=False).body, hold=True)


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [])


# --------------------------------------------------------------------------- faux model


def test_prompt_streams_events_and_state(cwd: Path) -> None:
    with pi(cwd) as rpc:
        state = rpc.ok("get_state")
        assert state["model"]["provider"] == "faux" and state["model"]["id"] == "offline-demo"
        assert state["isStreaming"] is False and state["messageCount"] == 0 and state["pendingMessageCount"] == 0
        assert state["steeringMode"] == "one-at-a-time" and state["autoCompactionEnabled"] is True

        run = rpc.prompt_and_settle("What is here?")
        kinds = [r["type"] for r in run]
        assert kinds[0] == "agent_start" and kinds[-1] == "agent_settled"  # the response came first
        assert "response" not in kinds
        for expected in (
            "turn_start",
            "message_start",
            "message_update",
            "tool_execution_start",
            "tool_execution_end",
            "turn_end",
            "agent_end",
        ):
            assert expected in kinds
        deltas = [r for r in run if r["type"] == "message_update"]
        assert all("partial" not in r["assistantMessageEvent"] and "message" not in r for r in deltas)
        assert run[-1] == {"type": "agent_settled", "aborted": False}

        messages = rpc.ok("get_messages")["messages"]
        roles = [m["role"] for m in messages if m["role"] != "system"]
        assert roles == ["user", "assistant", "toolResult", "assistant"]
        assert messages[-1]["content"][0]["text"].startswith("The `ls` command listed")
        text = rpc.ok("get_last_assistant_text")["text"]
        assert text == messages[-1]["content"][0]["text"]
        state = rpc.ok("get_state")
        assert state["messageCount"] == len(messages) and Path(state["sessionFile"]).is_file()


def test_protocol_errors_framing_and_images(cwd: Path) -> None:
    with pi(cwd) as rpc:
        rpc.send_raw(b"this is not json\n")
        error = rpc.wait_for(of_type("response"))
        assert error == {
            "type": "response",
            "command": "parse",
            "success": False,
            "error": "Failed to parse command: Expecting value: line 1 column 1 (char 0)",
        }
        rpc.send_raw(b"[1, 2]\n")
        assert "expected a JSON object" in rpc.wait_for(of_type("response", command="parse"))["error"]
        rpc.send_raw(b'{"id": "crlf", "type": "get_state"}\r\n')
        assert rpc.response("crlf")["success"] is True
        unknown = rpc.call("frobnicate")
        assert unknown["success"] is False and unknown["error"] == "Unknown command: frobnicate"
        assert unknown["command"] == "frobnicate" and unknown["id"].startswith("req-")
        rpc.send({"id": "notype"})
        assert rpc.response("notype")["error"] == "Command has no type"
        assert rpc.call("prompt")["error"] == 'prompt needs a string "message"'
        bad = rpc.call("prompt", message="x", images=[{"type": "image"}])
        assert bad["success"] is False and "images[0]" in bad["error"]
        missing = rpc.call("set_model", provider="nope", modelId="nothing")
        assert missing == {
            "id": missing["id"],
            "type": "response",
            "command": "set_model",
            "success": False,
            "error": "Model not found: nope/nothing",
        }
        assert rpc.call("export_html")["error"] == "Nothing to export yet - start a conversation first"

        # U+2028 / U+2029 are not record boundaries; images reach the user message
        image = {"type": "image", "data": base64.b64encode(b"\x89PNG\r\n\x1a\n").decode(), "mimeType": "image/png"}
        rpc.prompt_and_settle("line\u2028separator\u2029paragraph", images=[image])
        user = next(m for m in rpc.ok("get_messages")["messages"] if m["role"] == "user")
        assert user["content"][0]["text"] == "line\u2028separator\u2029paragraph"
        assert user["content"][1]["mimeType"] == "image/png"


def test_session_commands(cwd: Path) -> None:
    agent_dir = Path(os.environ["PI_CODING_AGENT_DIR"])
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))
    with pi(cwd, "--name", "first name") as rpc:
        assert rpc.ok("get_state")["sessionName"] == "first name"
        assert rpc.call("set_session_name", name="  ")["error"] == "Session name cannot be empty"
        rpc.ok("set_session_name", name="My work")
        assert rpc.seen(of_type("session_info_changed"))[-1]["name"] == "My work"  # before the response
        assert rpc.ok("get_state")["sessionName"] == "My work"

        rpc.prompt_and_settle("first question")
        forks = rpc.ok("get_fork_messages")["messages"]
        assert [f["text"] for f in forks] == ["first question"]

        stats = rpc.ok("get_session_stats")
        assert (stats["userMessages"], stats["assistantMessages"], stats["toolCalls"], stats["toolResults"]) == (
            1,
            2,
            1,
            1,
        )
        assert stats["tokens"]["total"] > 0 and stats["tokens"]["output"] > 0
        assert stats["contextUsage"]["contextWindow"] == 128000

        entries = rpc.ok("get_entries")
        ids = [e["id"] for e in entries["entries"]]
        assert entries["leafId"] == ids[-1]
        assert [e["id"] for e in rpc.ok("get_entries", since=ids[1])["entries"]] == ids[2:]
        assert rpc.call("get_entries", since="nope")["error"] == "Entry not found: nope"  # pi 1.6.0's words
        tree = rpc.ok("get_tree")
        node, chain = tree["tree"][0], []
        while True:
            chain.append(node["entry"]["id"])
            if not node["children"]:
                break
            node = node["children"][0]
        assert chain == ids and tree["leafId"] == ids[-1]

        compacted = rpc.ok("compact", customInstructions="Keep it short")
        assert compacted["summary"] and compacted["tokensBefore"] > 0 and compacted["firstKeptEntryId"]
        end = rpc.seen(of_type("compaction_end"))[-1]
        assert end["reason"] == "manual" and end["result"]["summary"] == compacted["summary"]

        assert rpc.call("fork", entryId=ids[-1])["error"] == "Invalid entry ID for forking"
        first = rpc.ok("get_state")
        assert rpc.ok("clone") == {"cancelled": False}
        cloned = rpc.ok("get_state")
        assert cloned["sessionId"] != first["sessionId"] and cloned["messageCount"] == first["messageCount"]

        assert rpc.ok("fork", entryId=forks[0]["entryId"]) == {"text": "first question", "cancelled": False}
        forked = rpc.ok("get_state")
        assert forked["sessionId"] not in (first["sessionId"], cloned["sessionId"])
        assert [m for m in rpc.ok("get_messages")["messages"] if m["role"] == "user"] == []
        assert rpc.call("fork", entryId="missing")["error"] == "Invalid entry ID for forking"

        # as pi 1.6.0: a path without a file is a new session, saved there with its first answer
        assert rpc.ok("switch_session", sessionPath=str(cwd / "nope.jsonl")) == {"cancelled": False}
        fresh = rpc.ok("get_state")
        assert fresh["sessionFile"] == str(cwd / "nope.jsonl") and fresh["messageCount"] == 0
        assert rpc.ok("switch_session", sessionPath=first["sessionFile"]) == {"cancelled": False}
        back = rpc.ok("get_state")
        assert back["sessionId"] == first["sessionId"] and back["sessionName"] == "My work"


def test_new_session_rebinds_events(cwd: Path) -> None:
    with pi(cwd) as rpc:
        rpc.prompt_and_settle("one")
        before = rpc.ok("get_state")
        assert rpc.ok("new_session") == {"cancelled": False}
        after = rpc.ok("get_state")
        assert after["sessionId"] != before["sessionId"] and after["messageCount"] == 0
        run = rpc.prompt_and_settle("two")  # events of the new session reach the client
        assert any(r["type"] == "tool_execution_end" for r in run)
        assert rpc.ok("get_state")["sessionId"] == after["sessionId"]
        assert session_records(before["sessionFile"])[0]["id"] == before["sessionId"]


def test_bash_streams_updates_and_abort_bash(cwd: Path) -> None:
    with pi(cwd) as rpc:
        command_id = rpc.command("bash", command="printf 'one\\n'; printf 'two\\n'")
        response = rpc.response(command_id)
        updates = [r for r in rpc.records if r["type"] == "bash_execution_update"]
        assert updates and all(u["id"] == command_id for u in updates)
        assert "".join(u["delta"] for u in updates) == "one\ntwo\n"
        assert response["data"] == {"output": "one\ntwo\n", "exitCode": 0, "cancelled": False, "truncated": False}

        long_id = rpc.command("bash", command="echo started; sleep 30", excludeFromContext=True)
        rpc.wait_for(lambda r: r["type"] == "bash_execution_update" and "started" in r["delta"])
        rpc.ok("abort_bash")
        aborted = rpc.response(long_id)["data"]
        assert aborted["cancelled"] is True and aborted["output"].startswith("started")

        bash_messages = [m for m in rpc.ok("get_messages")["messages"] if m["role"] == "bashExecution"]
        assert [m["command"] for m in bash_messages] == ["printf 'one\\n'; printf 'two\\n'", "echo started; sleep 30"]
        assert bash_messages[1]["excludeFromContext"] is True


def test_extension_ui_confirm_decides_the_tool_call(cwd: Path, tmp_path: Path) -> None:
    plugin = write_plugin(tmp_path, "gate", GATE_PLUGIN)
    with pi(cwd, "-e", plugin) as rpc:
        for allow in (False, True):
            rpc.command("prompt", message="list the files")
            rpc.wait_for(of_type("extension_ui_request", method="setStatus"))
            request = rpc.wait_for(of_type("extension_ui_request", method="confirm"))
            assert request["title"] == "Run bash?" and request["message"] == "ls" and "timeout" not in request
            rpc.send({"type": "extension_ui_response", "id": request["id"], "confirmed": allow})
            note = rpc.wait_for(of_type("extension_ui_request", method="notify"))
            assert note["message"] == f"has_ui=True mode=rpc allowed={allow}" and note["notifyType"] == "warning"
            end = rpc.wait_for(of_type("tool_execution_end"))
            assert end["isError"] is (not allow)
            assert ("denied over RPC" in end["result"]["content"][0]["text"]) is (not allow)
            rpc.wait_for(of_type("agent_settled"))

        # abort while the dialog is open: the dialog resolves to its default, the run stops
        rpc.command("prompt", message="list again")
        rpc.wait_for(of_type("extension_ui_request", method="confirm"))
        abort_id = rpc.command("abort")
        assert rpc.wait_for(of_type("agent_settled"))["aborted"] is True
        assert rpc.response(abort_id)["success"] is True

        # stdin closed while the dialog is open: it resolves to its default, pi exits 0
        rpc.command("prompt", message="and again")
        rpc.wait_for(of_type("extension_ui_request", method="confirm"))
        rpc.close_stdin()
        rest = rpc.rest()
        assert rpc.wait() == 0
    assert any(r.get("message") == "has_ui=True mode=rpc allowed=False" for r in rest)
    assert rest[-1] == {"type": "agent_settled", "aborted": False}


def test_extension_ui_dialogs_commands_and_errors(cwd: Path, tmp_path: Path) -> None:
    plugin = write_plugin(tmp_path, "ask", ASK_PLUGIN)
    template = tmp_path / "review.md"
    template.write_text("---\ndescription: Review the code\n---\nReview $@\n")
    mark = tmp_path / "mark.txt"
    with pi(cwd, "-e", plugin, "--prompt-template", str(template), RPC_TEST_MARK=str(mark), RPC_TEST_FAIL="1") as rpc:
        commands = {c["name"]: c for c in rpc.ok("get_commands")["commands"]}
        assert commands["ask"]["source"] == "extension" and commands["ask"]["description"] == "Ask the user things"
        assert commands["ask"]["sourceInfo"]["path"] == plugin
        assert commands["review"]["source"] == "prompt" and commands["review"]["description"] == "Review the code"

        command_id = rpc.command("prompt", message="/ask")
        select = rpc.wait_for(of_type("extension_ui_request", method="select"))
        assert select["options"] == ["red", "green"]
        rpc.send({"type": "extension_ui_response", "id": select["id"], "value": "green"})
        ask = rpc.wait_for(of_type("extension_ui_request", method="input"))
        assert ask["placeholder"] == "type it"
        rpc.send({"type": "extension_ui_response", "id": ask["id"], "value": "Ada"})
        editor = rpc.wait_for(of_type("extension_ui_request", method="editor"))
        assert editor["prefill"] == "prefilled"
        rpc.send({"type": "extension_ui_response", "id": editor["id"], "value": "edited"})
        cancel = rpc.wait_for(of_type("extension_ui_request", method="confirm", title="Cancel me"))
        rpc.send({"type": "extension_ui_response", "id": cancel["id"], "cancelled": True})
        late = rpc.wait_for(of_type("extension_ui_request", method="confirm", title="Nobody answers this"))
        assert late["timeout"] == 200
        widget = rpc.wait_for(of_type("extension_ui_request", method="setWidget"))
        assert widget["widgetKey"] == "ask" and widget["widgetLines"] == ["done"]
        assert widget["widgetPlacement"] == "belowEditor"
        note = rpc.wait_for(of_type("extension_ui_request", method="notify"))
        assert json.loads(note["message"]) == ["green", "Ada", "edited", False, False, ""]
        assert rpc.response(command_id)["data"] == {"disposition": "handled"}
        rpc.send({"type": "extension_ui_response", "id": late["id"], "confirmed": True})  # too late: ignored

        steer = rpc.call("steer", message="/ask")
        assert steer["success"] is False and "not allowed with steer" in steer["error"]

        rpc.command("prompt", message="fail please")
        error = rpc.wait_for(of_type("extension_error"))
        assert error["event"] == "turn_start" and "boom in turn_start" in error["error"]
        assert error["extensionPath"] == plugin
        rpc.wait_for(of_type("agent_settled"))

        bye = rpc.call("prompt", message="/bye")  # ctx.shutdown(): pi exits once idle
        assert bye["data"] == {"disposition": "handled"}
        assert rpc.rest() == []
        assert rpc.wait() == 0
    assert mark.read_text().splitlines() == [
        "waiting select Pick one",
        "answered select",
        "waiting input Your name",
        "answered input",
        "waiting editor Edit",
        "answered editor",
        "waiting confirm Cancel me",
        "answered confirm",
        "waiting confirm Nobody answers this",
        "answered confirm",
        "shutdown quit",
    ]


# --------------------------------------------------------------------------- shutdown


def test_stdin_eof_finishes_the_run_and_closes_the_session(cwd: Path, tmp_path: Path) -> None:
    plugin = write_plugin(tmp_path, "ask", ASK_PLUGIN)
    mark = tmp_path / "mark.txt"
    with pi(cwd, "-e", plugin, RPC_TEST_MARK=str(mark)) as rpc:
        session_file = rpc.ok("get_state")["sessionFile"]
        rpc.command("prompt", message="hello")
        rpc.close_stdin()  # right away: the accepted prompt still runs to the end
        rest = rpc.rest()
        assert rpc.wait() == 0
    assert rest[-1] == {"type": "agent_settled", "aborted": False}
    assert mark.read_text() == "shutdown quit\n"
    records = session_records(session_file)
    messages = [r["message"] for r in records if r["type"] == "message"]
    assert [m["role"] for m in messages if m["role"] != "system"] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[-1]["stopReason"] == "stop" and "offline demo" in text_of(messages[-1])


def test_sigterm_aborts_and_exits_and_a_second_signal_exits_at_once(
    cwd: Path, tmp_path: Path, wire: WireServer
) -> None:
    configure_endpoint(wire)
    wire.enqueue(held_reply("streaming for ever "))
    with pi(cwd, "--model", "local/local-model") as rpc:
        session_file = rpc.ok("get_state")["sessionFile"]
        rpc.command("prompt", message="go")
        rpc.wait_for(lambda r: r["type"] == "message_update" and r["assistantMessageEvent"]["type"] == "text_delta")
        rpc.send_signal(signal.SIGTERM)
        rest = rpc.rest()
        assert rpc.wait() == 128 + signal.SIGTERM  # the conventional status of a signal
    assert {"type": "agent_settled", "aborted": True} in rest
    last = [r["message"] for r in session_records(session_file) if r["type"] == "message"][-1]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"

    plugin = write_plugin(tmp_path, "hang", HANG_PLUGIN)
    with pi(cwd, "-e", plugin) as rpc:
        rpc.ok("get_state")
        rpc.send_signal(signal.SIGTERM)
        rpc.wait_for(of_type("extension_ui_request", method="notify"))  # shutdown has started and hangs
        rpc.send_signal(signal.SIGTERM)
        assert rpc.wait() == 128 + signal.SIGTERM


# --------------------------------------------------------------------------- openai-compatible endpoint


def test_abort_mid_stream_then_a_second_prompt_completes(cwd: Path, wire: WireServer) -> None:
    configure_endpoint(wire)
    wire.enqueue(held_reply("thinking about it "), text_reply("second answer"))
    with pi(cwd, "--model", "local/local-model") as rpc:
        assert rpc.ok("prompt", message="first") == {"disposition": "started"}
        delta = rpc.wait_for(
            lambda r: r["type"] == "message_update" and r["assistantMessageEvent"]["type"] == "text_delta"
        )
        assert delta["assistantMessageEvent"]["delta"] == "thinking about it "

        busy = rpc.call("prompt", message="no behaviour")
        assert busy["success"] is False and "streamingBehavior" in busy["error"]
        assert rpc.ok("follow_up", message="later") == {"disposition": "queued"}
        assert rpc.ok("prompt", message="turn", streamingBehavior="steer") == {"disposition": "queued"}
        queue = rpc.seen(of_type("queue_update"))[-1]  # emitted before the response
        assert (queue["steering"], queue["followUp"]) == (["turn"], ["later"])
        state = rpc.ok("get_state")
        assert state["isStreaming"] is True and state["pendingMessageCount"] == 2
        assert rpc.ok("clear_queue") == {"steering": ["turn"], "followUp": ["later"]}

        abort_id = rpc.command("abort")
        settled = rpc.wait_for(of_type("agent_settled"))
        assert settled["aborted"] is True
        assert rpc.response(abort_id)["success"] is True  # answered once the session is idle

        rpc.prompt_and_settle("second")
        assert rpc.ok("get_last_assistant_text") == {"text": "second answer"}
        assert rpc.ok("get_state")["pendingMessageCount"] == 0
    assert len(wire.requests) == 2 and wire.requests[1].path == "/v1/chat/completions"
    sent = wire.requests[1].body["messages"]
    assert sent[-1]["role"] == "user" and "second" in json.dumps(sent[-1])


def test_models_thinking_and_toggles(cwd: Path, wire: WireServer) -> None:
    configure_endpoint(wire, {"id": "local-model", "reasoning": True}, {"id": "other-model"})
    with pi(cwd, "--model", "local/local-model") as rpc:
        models = {f"{m['provider']}/{m['id']}" for m in rpc.ok("get_available_models")["models"]}
        assert {"local/local-model", "local/other-model"} <= models
        levels = rpc.ok("get_available_thinking_levels")["levels"]
        assert levels == ["off", "minimal", "low", "medium", "high"]
        rpc.ok("set_thinking_level", level="high")
        assert rpc.seen(of_type("thinking_level_changed")) == [{"type": "thinking_level_changed", "level": "high"}]
        assert rpc.ok("get_state")["thinkingLevel"] == "high"
        # an unknown level is clamped like any unsupported one (the model's first), as pi 1.6.0
        rpc.ok("set_thinking_level", level="extreme")
        assert rpc.ok("get_state")["thinkingLevel"] == "off"
        assert rpc.ok("cycle_thinking_level") == {"level": "minimal"}

        chosen = rpc.ok("set_model", provider="local", modelId="other-model")
        assert chosen["id"] == "other-model" and chosen["baseUrl"] == f"{wire.url}/v1"
        assert rpc.ok("get_state")["model"]["id"] == "other-model"
        assert rpc.ok("get_available_thinking_levels") == {"levels": ["off"]}
        assert rpc.ok("cycle_thinking_level") is None
        cycled = rpc.ok("cycle_model")
        assert cycled["isScoped"] is False and cycled["model"]["id"] != "other-model"

        rpc.ok("set_steering_mode", mode="all")
        rpc.ok("set_follow_up_mode", mode="all")
        assert "Invalid mode" in rpc.call("set_steering_mode", mode="sometimes")["error"]
        rpc.ok("set_auto_compaction", enabled=False)
        rpc.ok("set_auto_retry", enabled=False)
        assert "true or false" in rpc.call("set_auto_retry", enabled="no")["error"]
        rpc.ok("abort_retry")
        state = rpc.ok("get_state")
        assert (state["steeringMode"], state["followUpMode"]) == ("all", "all")
        assert (state["autoCompactionEnabled"], state["autoRetryEnabled"]) == (False, False)
        rpc.ok("new_session")  # the choices carry over to the next session
        state = rpc.ok("get_state")
        assert (state["steeringMode"], state["autoCompactionEnabled"], state["autoRetryEnabled"]) == (
            "all",
            False,
            False,
        )
