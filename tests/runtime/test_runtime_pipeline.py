"""AgentSession: the prompt pipeline, the event bridge and persistence."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import calls, lines, start, write_settings

import pi_hookspecs as h
from pi_core.ai import FauxResponse
from pi_core.runtime import SessionBusyError
from pi_core.session import SessionManager
from pi_hookspecs import hookimpl


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


async def test_a_tool_session_is_persisted_in_the_typescript_format(cwd: Path) -> None:
    runtime, script, _ = await start(cwd, calls(("read", {"path": "notes.txt"})), "It says alpha and beta.")
    assert await runtime.session.prompt("what is in notes.txt?") == "started"
    records = lines(runtime.session.session_file)
    header, model_change, thinking, *entries = records
    assert header["type"] == "session" and header["version"] == 3 and header["cwd"] == str(cwd)
    # a new session opens with the model and thinking level it started with, as pi 1.6.0
    assert (model_change["type"], model_change["provider"]) == ("model_change", "faux")
    assert thinking["type"] == "thinking_level_change" and thinking["parentId"] == model_change["id"]
    roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
    assert roles == ["system", "user", "assistant", "toolResult", "assistant"]
    system = entries[0]["message"]
    assert list(system["sections"])[:2] == ["preamble", "tools"]
    assert {t["name"] for t in system["toolsAdded"]} == {"read", "bash", "edit", "write"}
    assert entries[2]["message"]["content"][0]["type"] == "toolCall"
    assert entries[3]["message"]["toolCallId"] == entries[2]["message"]["content"][0]["id"]
    assert "alpha" in entries[3]["message"]["content"][0]["text"]
    assert [e["parentId"] for e in entries[1:]] == [e["id"] for e in entries[:-1]]
    # the second request sent the tool result; both declared the tools via the system message
    assert script.contexts[1].messages[-1].role == "toolResult"
    await runtime.dispose()
    reopened = SessionManager.open(runtime.session.session_file)
    assert [m.role for m in reopened.build_session_context().messages] == roles


async def test_async_message_end_cannot_reorder_persistence_and_tool_call_sees_the_assistant(cwd: Path) -> None:
    seen: list[Any] = []

    class Slow:
        @hookimpl
        async def message_end(self, event: Any) -> None:
            for _ in range(5):
                await asyncio.sleep(0)

        @hookimpl
        def tool_call(self, event: Any, ctx: Any) -> None:
            last = ctx.session_manager.get_branch()[-1]
            seen.append((last.message.role, last.message.tool_calls()[0].id == event.tool_call_id))

    runtime, _, _ = await start(
        cwd, calls(("read", {"path": "notes.txt"}), ("bash", {"command": "echo x"})), "ok", plugins=(Slow,)
    )
    await runtime.session.prompt("go")
    assert seen == [("assistant", True), ("assistant", False)]
    roles = [e["message"]["role"] for e in lines(runtime.session.session_file)[1:] if e["type"] == "message"]
    assert roles == ["system", "user", "assistant", "toolResult", "toolResult", "assistant"]


async def test_message_end_replacement_reaches_state_host_and_file(cwd: Path) -> None:
    class Redact:
        @hookimpl
        def message_end(self, event: Any) -> Any:
            if event.message.role == "assistant":
                message = event.message.model_copy(deep=True)
                message.content = [h.TextContent(text=message.text().replace("secret", "******"))]
                return {"message": message}
            return None

    runtime, _, events = await start(cwd, "the secret is 42", plugins=(Redact,))
    await runtime.session.prompt("tell me")
    assert runtime.session.get_last_assistant_text() == "the ****** is 42"
    ends = [e for e in events if e.type == "message_end" and e.message.role == "assistant"]
    assert ends[0].message.text() == "the ****** is 42"
    stored = [e for e in lines(runtime.session.session_file) if e["type"] == "message"][-1]
    assert stored["message"]["content"][0]["text"] == "the ****** is 42"


async def test_commands_input_hook_skills_and_templates(cwd: Path, agent_dir: Path) -> None:
    ran: list[str] = []
    skill = agent_dir / "skills" / "review" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: review\ndescription: Review code carefully.\n---\nCheck every line.\n")
    (agent_dir / "prompts").mkdir()
    (agent_dir / "prompts" / "fix.md").write_text("---\ndescription: Fix an issue\n---\nFix issue $1 in $2")

    class Plugin:
        @hookimpl
        def register_commands(self, register: Any) -> None:
            register("hello", lambda args, ctx: ran.append(f"hello {args}"))

        @hookimpl
        def input(self, event: Any) -> Any:
            if event.text == "ping":
                return {"action": "handled"}
            if event.text.startswith("?"):
                return {"action": "transform", "text": "Briefly: " + event.text[1:]}
            return None

    runtime, script, _ = await start(cwd, "a", "b", "c", plugins=(Plugin,))
    session = runtime.session
    assert await session.prompt("/hello world") == "handled" and ran == ["hello world"]
    assert await session.prompt("ping") == "handled"
    await session.prompt("?why")
    await session.prompt("/skill:review the parser")
    await session.prompt("/fix 42 parser.py")
    users = [c.messages[-1].content[0].text for c in script.contexts]
    assert users[0] == "Briefly: why"
    assert "Check every line." in users[1] and "the parser" in users[1] and 'name="review"' in users[1]
    assert users[2] == "Fix issue 42 in parser.py"
    assert script.requests == 3


async def test_busy_session_needs_steer_or_follow_up(cwd: Path) -> None:
    release = asyncio.Event()

    @h.tool
    async def wait_here() -> str:
        """Wait until released."""
        await release.wait()
        return "released"

    runtime, _script, events = await start(
        cwd, calls(("wait_here", {})), "first done", "after follow-up", custom_tools=[wait_here]
    )
    session = runtime.session
    task = asyncio.create_task(session.prompt("start"))
    while not any(e.type == "tool_execution_start" for e in events):
        await asyncio.sleep(0)
    with pytest.raises(SessionBusyError, match="steering or as a follow-up"):
        await session.prompt("hey")
    assert await session.prompt("and then this", streaming_behavior="follow_up") == "queued"
    queue = [e for e in events if e.type == "queue_update"][-1]
    assert queue.follow_up == ["and then this"]
    release.set()
    await task
    assert session.get_last_assistant_text() == "after follow-up"
    assert [e for e in events if e.type == "queue_update"][-1].follow_up == []
    assert [e.type for e in events].count("agent_settled") == 1


async def test_before_agent_start_adds_messages_and_forces_the_prompt_for_one_run(cwd: Path) -> None:
    class Persona:
        @hookimpl
        def before_agent_start(self, event: Any) -> Any:
            return {"message": {"customType": "persona", "content": "Be terse."}, "systemPrompt": "You are a pirate."}

    runtime, script, _ = await start(cwd, "arr", "second", plugins=(Persona,))
    await runtime.session.prompt("hi")
    request = script.contexts[0]
    systems = [m for m in request.messages if m.role == "system"]
    assert len(systems) == 1 and systems[0].content == "You are a pirate."
    assert [m.role for m in request.messages if m.role != "system"] == ["user", "user"]  # custom -> user
    stored = [e for e in lines(runtime.session.session_file) if e["type"] in ("message", "custom_message")]
    assert stored[0]["message"]["sections"]["preamble"]  # the transcript keeps the real sections
    assert stored[2]["type"] == "custom_message" and stored[2]["customType"] == "persona"
    assert runtime.session.system_prompt != "You are a pirate."  # forced for that run only


async def test_tools_activated_during_a_run_are_declared_on_the_next_request(cwd: Path) -> None:
    @h.tool(exposure="deferred")
    def weather(city: str) -> str:
        """Look up the weather."""
        return f"sunny in {city}"

    @h.tool
    def load_weather(ctx: Any) -> str:
        """Make the weather tool available."""
        ctx.set_active_tools([*ctx.get_active_tools(), "weather"])
        return "loaded"

    runtime, script, _ = await start(
        cwd,
        calls(("load_weather", {})),
        calls(("weather", {"city": "Oslo"})),
        "done",
        custom_tools=[weather, load_weather],
    )
    await runtime.session.prompt("weather?")
    from pi_core.ai import current_tools

    declared = [[t.name for t in current_tools(c.messages)] for c in script.contexts]
    assert "weather" not in declared[0] and "weather" in declared[1]
    results = [m for m in runtime.session.messages if m.role == "toolResult"]
    assert results[-1].content[0].text == "sunny in Oslo"
    patches = [
        e["message"]
        for e in lines(runtime.session.session_file)
        if e["type"] == "message" and e["message"]["role"] == "system"
    ]
    assert len(patches) == 2 and [t["name"] for t in patches[1]["toolsAdded"]] == ["weather"]


async def test_turn_end_and_before_settle_drafts_are_committed(cwd: Path) -> None:
    seen: list[Any] = []

    class Boundary:
        def __init__(self) -> None:
            self.reminded = False

        @hookimpl
        def turn_end(self, event: Any) -> Any:
            seen.append(("turn_end", event.outcome, event.context.model_copy()))
            return {
                "entries": [
                    *event.entries,
                    {"type": "custom", "customType": "turn-log", "data": {"turn": event.turn_index}},
                ]
            }

        @hookimpl
        def agent_before_settle(self, event: Any) -> Any:
            seen.append(("agent_before_settle", event.outcome, event.context.model_copy()))
            if self.reminded:
                return None
            self.reminded = True
            return {
                "entries": [
                    {"type": "custom_message", "customType": "review", "content": "Review the diff.", "display": False}
                ],
                "continue": True,
            }

    class Late:
        @hookimpl(trylast=True)
        def agent_before_settle(self, event: Any) -> Any:
            seen.append(("late", event.outcome, event.context.model_copy()))

    runtime, script, _ = await start(cwd, "first answer", "reviewed", plugins=(Boundary, Late))
    await runtime.session.prompt("work")
    # the context preview, as pi 1.6.0's: entries with their messages, the model's view,
    # what waits, and whether a continuation could run
    name, outcome, context = seen[0]
    assert (name, outcome) == ("turn_end", "completed")
    assert [p.source_entry.type for p in context.context_entries][:2] == ["model_change", "thinking_level_change"]
    assert [p.messages for p in context.context_entries][:2] == [(), ()]
    assert [m.role for m in context.llm_messages] == ["system", "user", "assistant"]
    assert context.context_messages[-1].text() == "first answer"
    assert context.pending_messages == [] and context.can_continue is False
    _, _, settle_before = seen[1]
    _, _, settle_after = seen[2]  # the draft custom message makes a continuation possible
    assert settle_before.can_continue is False
    assert settle_after.can_continue is True and settle_after.llm_messages[-1].role == "user"
    assert script.requests == 2 and runtime.session.get_last_assistant_text() == "reviewed"
    assert script.contexts[1].messages[-1].content[0].text == "Review the diff."
    kinds = [(e["type"], e.get("customType")) for e in lines(runtime.session.session_file)[1:]]
    assert ("custom", "turn-log") in kinds and ("custom_message", "review") in kinds


async def test_a_boundary_handler_without_the_event_gets_no_preview_built(cwd: Path, monkeypatch: Any) -> None:
    """``turn_end(ctx)`` never sees the event: its context preview (a conversion of the
    whole history) is not built; its ``continue`` still works."""
    from pi_core.runtime import bridge

    built: list[str] = []
    real = bridge.EventBridge.preview

    def counting(self: Any, entries: list[Any], boundary: str = "turn_end") -> Any:
        built.append(boundary)
        return real(self, entries, boundary)

    monkeypatch.setattr(bridge.EventBridge, "preview", counting)
    calls_seen: list[str] = []

    class CtxOnly:
        @hookimpl
        def turn_end(self, ctx: Any) -> None:
            calls_seen.append("turn_end")

    runtime, _script, _ = await start(cwd, "an answer", plugins=(CtxOnly,))
    await runtime.session.prompt("work")
    assert calls_seen == ["turn_end"] and built == []


async def test_retry_waits_for_the_whole_new_tool_loop(cwd: Path) -> None:
    write_settings({"retry": {"baseDelayMs": 1}})
    runtime, script, events = await start(
        cwd,
        FauxResponse(error_message="429 Too Many Requests: rate limit exceeded"),
        calls(("read", {"path": "notes.txt"})),
        "finished after retry",
    )
    await runtime.session.prompt("go")
    assert runtime.session.get_last_assistant_text() == "finished after retry"
    kinds = [e.type for e in events]
    assert kinds.count("agent_settled") == 1 and kinds.index("auto_retry_start") < kinds.index("agent_settled")
    end = next(e for e in events if e.type == "auto_retry_end")
    assert end.success and end.attempt == 1
    ends = [e for e in events if e.type == "agent_end"]
    assert ends[0].will_retry and not ends[-1].will_retry
    # the failed attempt stays in the file but leaves the model's context
    entries = lines(runtime.session.session_file)
    assert any(e["type"] == "context_edit" and e["replacement"] is None for e in entries)
    assert all(m.role != "assistant" or m.stop_reason != "error" for m in script.contexts[1].messages)


async def test_a_non_retryable_error_settles_with_the_error(cwd: Path) -> None:
    runtime, _, events = await start(cwd, FauxResponse(error_message="invalid request: bad field"))
    await runtime.session.prompt("go")
    last = runtime.session.last_assistant()
    assert last.stop_reason == "error" and "bad field" in last.error_message
    assert not any(e.type == "auto_retry_start" for e in events)


async def test_no_model_is_a_clear_error_before_anything_runs(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime, _, events = await start(cwd, "x")
    runtime.session.agent.state.model = None
    from pi_core.runtime import NoModelError

    with pytest.raises(NoModelError, match="No model"):
        await runtime.session.prompt("hi")
    assert not events and not runtime.session.is_busy


async def test_send_message_entries_labels_and_session_name(cwd: Path) -> None:
    class Actions:
        @hookimpl
        def register_commands(self, register: Any) -> None:
            async def note(args: str, ctx: Any) -> None:
                entry = ctx.append_entry("note", {"text": args})
                ctx.set_label(entry, "bookmark")
                await ctx.send_message({"customType": "note", "content": f"Remember: {args}"})

            register("note", note)

    runtime, script, events = await start(cwd, "ok", plugins=(Actions,))
    session = runtime.session
    await session.prompt("/note buy milk")
    await session.set_session_name("groceries")
    await session.prompt("what should I remember?")
    assert any("Remember: buy milk" in str(m.content) for m in script.contexts[0].messages if m.role == "user")
    entries = [e for e in lines(session.session_file) if e["type"] not in ("model_change", "thinking_level_change")]
    assert [e["type"] for e in entries[1:4]] == ["custom", "label", "custom_message"]
    assert entries[2]["label"] == "bookmark" and entries[2]["targetId"] == entries[1]["id"]
    assert any(e.type == "session_info_changed" and e.name == "groceries" for e in events)
    assert session.sm.get_session_name() == "groceries"
    # as pi 1.6.0: a message stored while idle is announced to clients, start then end
    announced = [
        (e.type, e.message.custom_type)
        for e in events
        if e.type in ("message_start", "message_end") and getattr(e.message, "role", None) == "custom"
    ]
    assert announced == [("message_start", "note"), ("message_end", "note")]


async def test_user_bash_and_its_hook(cwd: Path) -> None:
    class Remote:
        @hookimpl
        def user_bash(self, event: Any) -> Any:
            if event.command == "whoami":
                return {"result": {"output": "remote-user", "exitCode": 0}}
            if event.command == "boom":
                raise RuntimeError("ssh down")
            return None

    runtime, script, _ = await start(cwd, "seen", plugins=(Remote,))
    session = runtime.session
    chunks: list[str] = []
    local = await session.execute_bash("echo local-run", on_data=chunks.append)
    assert local.output.strip() == "local-run" and local.exit_code == 0 and "local-run" in "".join(chunks)
    remote = await session.execute_bash("whoami")
    assert remote.output == "remote-user"
    blocked = await session.execute_bash("boom")
    assert blocked.cancelled and "Blocked" in blocked.output and "ssh down" in blocked.output
    hidden = await session.execute_bash("echo secret", exclude_from_context=True)
    assert hidden.exclude_from_context
    await session.prompt("what did I run?")
    texts = [m.content for m in script.contexts[0].messages if m.role == "user"]
    assert any("local-run" in str(t) for t in texts) and not any("secret" in str(t) for t in texts)


async def test_nested_tool_calls_go_through_the_pipeline(cwd: Path) -> None:
    seen: list[Any] = []

    class Gate:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            seen.append((event.tool_name, event.parent_tool_call_id))
            if event.tool_name == "bash":
                return {"block": True, "reason": "no shell for scripts"}
            return None

    @h.tool
    async def orchestrate(ctx: Any) -> str:
        """Read a file and try a shell command through other tools."""
        read = await ctx.execute_tool("read", {"path": "notes.txt"})
        shell = await ctx.execute_tool("bash", {"command": "ls"})
        missing = await ctx.execute_tool("nope", {})
        return f"{read.text_content().splitlines()[0]} | {shell.text_content()} | {missing.text_content()}"

    runtime, _, events = await start(
        cwd, calls(("orchestrate", {})), "done", plugins=(Gate,), custom_tools=[orchestrate]
    )
    await runtime.session.prompt("go")
    result = next(m for m in runtime.session.messages if m.role == "toolResult")
    assert result.content[0].text.startswith("alpha | no shell for scripts | Tool nope not found")
    parent = result.tool_call_id
    assert seen == [("orchestrate", None), ("read", parent), ("bash", parent)]
    nested = [e for e in events if e.type == "tool_execution_end" and e.parent_tool_call_id == parent]
    assert [e.tool_call_id for e in nested] == [f"{parent}/1", f"{parent}/2", f"{parent}/3"]
    # a bounded record of the nested calls rides on the caller's result, in the file too
    record = result.nested_calls
    assert record is not None and record.complete
    assert [(c.id, c.name, c.status) for c in record.calls] == [
        (f"{parent}/1", "read", "ok"),
        (f"{parent}/2", "bash", "error"),
        (f"{parent}/3", "nope", "error"),
    ]
    assert record.calls[0].arguments == {"path": "notes.txt"} and record.calls[0].duration_ms is not None
    assert record.calls[1].error == "no shell for scripts"
    saved = [
        e["message"]
        for e in lines(runtime.session.session_file)
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert [c["name"] for c in saved[0]["nestedCalls"]["calls"]] == ["read", "bash", "nope"]
    assert "content" not in saved[0]["nestedCalls"]["calls"][0]  # never results


async def test_nested_usage_counts_for_the_caller_and_the_record_is_bounded(cwd: Path) -> None:
    from pi_core.runtime.nested import MAX_RECORDED_CALLS

    def priced(n: int) -> h.ToolResult:
        return h.ToolResult(
            content=[h.TextContent(text="ok")],
            usage=h.Usage(input=n, output=1, total_tokens=n + 1, cost=h.Cost(total=0.5)),
        )

    @h.tool(exposure="codemode")
    def model_call(n: int) -> h.ToolResult:
        """A tool that did model work of its own."""
        return priced(n)

    @h.tool(exposure="codemode")
    async def inner(ctx: Any) -> h.ToolResult:
        """Calls model_call, and reports its own usage too."""
        await ctx.execute_tool("model_call", {"n": 10})
        return priced(1)

    @h.tool
    async def outer(ctx: Any, many: bool = False) -> str:
        """Calls inner, or model_call very many times."""
        if many:
            await ctx.execute_tool("model_call", {"n": 0, "pad": "x" * 9000})  # arguments too large to keep
            for _ in range(MAX_RECORDED_CALLS + 5):
                await ctx.execute_tool("model_call", {"n": 0})
            return "many"
        await ctx.execute_tool("inner", {})
        return "done"

    runtime, _, _ = await start(
        cwd, calls(("outer", {})), calls(("outer", {"many": True})), "ok", custom_tools=[model_call, inner, outer]
    )
    await runtime.session.prompt("go")
    first, second = [m for m in runtime.session.messages if m.role == "toolResult"]
    assert first.usage is not None and (first.usage.input, first.usage.output) == (11, 2)  # every depth
    assert first.usage.cost.total == 1.0
    assert [c.name for c in first.nested_calls.calls] == ["inner", "model_call"]
    assert first.nested_calls.calls[1].id == f"{first.tool_call_id}/1/1"
    assert len(second.nested_calls.calls) == MAX_RECORDED_CALLS and second.nested_calls.complete is False
    big = second.nested_calls.calls[0]
    assert big.arguments is None and big.arguments_bytes > 9000 and big.status == "ok"


async def test_tools_a_before_agent_start_handler_registers_through_ctx_stay_active(cwd: Path) -> None:
    @h.tool(prompt_snippet="Look up a word in the glossary")
    def glossary(word: str) -> str:
        """Look a word up."""
        return f"{word}: a thing"

    class LateServer:
        @hookimpl
        def before_agent_start(self, ctx: Any) -> None:  # like an MCP server that just connected
            ctx.register_tool(glossary)

    class Chooser:
        @hookimpl
        def before_agent_start(self, event: Any) -> None:  # options edited: they decide
            if event.prompt == "no shell":
                event.system_prompt_options.selected_tools.remove("bash")

    runtime, script, _ = await start(
        cwd, calls(("glossary", {"word": "pi"})), "done", "ok", plugins=(LateServer, Chooser)
    )
    await runtime.session.prompt("define pi")
    from pi_core.ai import current_system_prompt, current_tools

    assert "glossary" in [t.name for t in current_tools(script.contexts[0].messages)]
    assert "Look up a word in the glossary" in current_system_prompt(script.contexts[0].messages)
    assert next(m for m in runtime.session.messages if m.role == "toolResult").content[0].text == "pi: a thing"
    await runtime.session.prompt("no shell")
    assert "bash" not in runtime.session.tools.active_names and "glossary" in runtime.session.tools.active_names


async def test_a_custom_message_sent_during_a_run_without_a_turn_is_stored_at_the_turn_end(cwd: Path) -> None:
    """``send_message(..., trigger_turn=False)`` during a run, as pi 1.6.0: stored after
    the turn's tool results (not between a call and its result), announced to clients,
    in the next request of the same run, and no turn of its own."""

    class Noter:
        @hookimpl
        async def tool_call(self, event: Any, ctx: Any) -> None:
            await ctx.send_message({"customType": "note", "content": "a side note"}, trigger_turn=False)

    runtime, script, events = await start(cwd, calls(("read", {"path": "notes.txt"})), "done", plugins=(Noter,))
    await runtime.session.prompt("read it")
    assert script.requests == 2
    roles = [
        e["message"]["role"] if e["type"] == "message" else e["type"]
        for e in lines(runtime.session.session_file)
        if e["type"] in ("message", "custom_message")
    ]
    assert roles[-4:] == ["assistant", "toolResult", "custom_message", "assistant"]
    second = [m.role for m in script.contexts[1].messages]
    assert second[-3:] == ["assistant", "toolResult", "user"]  # the note, in the model's view
    announced = [
        e.type
        for e in events
        if e.type in ("message_start", "message_end") and getattr(e.message, "role", None) == "custom"
    ]
    assert announced == ["message_start", "message_end"]
