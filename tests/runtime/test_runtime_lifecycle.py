"""AgentSession: compaction, trust, reload, session replacement, tree navigation."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from runtime_helpers import calls, lines, start, write_settings

import pi_hookspecs as h
from pi_core.ai import FauxResponse
from pi_core.runtime import SessionRuntime
from pi_hookspecs import hookimpl

OVERFLOW = "prompt is too long: 250000 tokens > 200000 maximum"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


async def long_history(runtime: SessionRuntime, turns: int = 3) -> None:
    for i in range(turns):
        await runtime.session.prompt(f"question {i} " + "word " * 40)


def summary_reply(text: str = "## Goal\nSummarised.") -> Any:
    return lambda context: FauxResponse(text=text)


async def test_manual_compaction_writes_a_summary_and_shrinks_the_context(cwd: Path) -> None:
    write_settings({"compaction": {"keepRecentTokens": 10}})
    runtime, script, events = await start(
        cwd, "a " * 30, "b " * 30, "c " * 30, summary_reply(), summary_reply(), "after"
    )
    await long_history(runtime)
    entry = await runtime.session.compact("focus on the questions")
    assert entry is not None and entry.summary.startswith("## Goal")
    summary_request = script.contexts[3]
    assert "focus on the questions" in str(summary_request.messages[-1].content)
    kinds = [e.type for e in events]
    assert kinds[-2:] == ["compaction_start", "compaction_end"]
    await runtime.session.prompt("next")
    assert runtime.session.get_last_assistant_text() == "after"
    request = script.contexts[-1]
    assert request.messages[0].role == "system"
    assert any("Summarised." in str(m.content) for m in request.messages if m.role == "user")
    assert len(request.messages) < 8


async def test_plugin_compaction_and_the_last_whole_result_wins(cwd: Path) -> None:
    write_settings({"compaction": {"keepRecentTokens": 10}})

    class Custom:
        @hookimpl
        def session_before_compact(self, event: Any) -> Any:
            p = event.preparation
            return {
                "compaction": {
                    "summary": "plugin summary",
                    "firstKeptEntryId": p.first_kept_entry_id,
                    "tokensBefore": p.tokens_before,
                }
            }

    class NoCancel:
        @hookimpl(trylast=True)
        def session_before_compact(self, event: Any) -> Any:
            return {"cancel": False}

    runtime, _, _ = await start(cwd, "a " * 30, "b " * 30, "c " * 30, plugins=(Custom,))
    await long_history(runtime)
    entry = await runtime.session.compact()
    assert entry.summary == "plugin summary" and entry.from_hook is True

    runtime2, _, _ = await start(
        cwd,
        "a " * 30,
        "b " * 30,
        "c " * 30,
        summary_reply("## Goal\npi's own"),
        summary_reply("## Goal\npi's own"),
        plugins=(Custom, NoCancel),
    )
    await long_history(runtime2)
    entry = await runtime2.session.compact()
    assert entry.summary.startswith("## Goal\npi's own") and not entry.from_hook


async def test_a_cancelled_or_failed_compaction_writes_nothing(cwd: Path) -> None:
    write_settings({"compaction": {"keepRecentTokens": 10}})
    failed: list[Any] = []

    class Observer:
        @hookimpl
        def session_compact_failed(self, event: Any) -> None:
            failed.append((event.aborted, event.error_message))

    runtime, _, _ = await start(
        cwd, "a " * 30, "b " * 30, "c " * 30, FauxResponse(text="partial", stop_reason="length"), plugins=(Observer,)
    )
    await long_history(runtime)
    with pytest.raises(Exception, match="output limit"):
        await runtime.session.compact()
    assert not any(e["type"] == "compaction" for e in lines(runtime.session.session_file))
    assert failed and failed[0][0] is False and "output limit" in failed[0][1]


async def test_overflow_compacts_then_continues(cwd: Path) -> None:
    write_settings({"compaction": {"keepRecentTokens": 10}})
    compacted: list[Any] = []

    class Observer:
        @hookimpl
        def session_compact(self, event: Any) -> None:
            compacted.append((event.reason, event.will_retry))

    runtime, script, events = await start(
        cwd,
        "a " * 30,
        "b " * 30,
        "c " * 30,
        FauxResponse(error_message=OVERFLOW),
        summary_reply(),
        summary_reply(),
        "answer after compaction",
        plugins=(Observer,),
    )
    await long_history(runtime)
    await runtime.session.prompt("one more question")
    assert runtime.session.get_last_assistant_text() == "answer after compaction"
    assert compacted == [("overflow", True)]
    retry = script.contexts[-1]
    assert not any(m.role == "assistant" and m.stop_reason == "error" for m in retry.messages)
    assert retry.messages[-1].role == "user" and "one more question" in str(retry.messages[-1].content)
    assert [e.type for e in events].count("agent_settled") == 4


async def test_untrusted_project_loads_agents_md_but_nothing_executable(cwd: Path, agent_dir: Path) -> None:
    pi_dir = cwd / ".pi"
    (pi_dir / "extensions").mkdir(parents=True)
    marker = cwd / "ran.txt"
    (pi_dir / "extensions" / "evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('x')\n"
        "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start():\n    pass\n"
    )
    (pi_dir / "settings.json").write_text('{"defaultTools": ["read"]}')
    (pi_dir / "SYSTEM.md").write_text("PROJECT SYSTEM PROMPT")
    skill = pi_dir / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Deploy it.\n---\nbody")
    (cwd / "AGENTS.md").write_text("Use tabs, not spaces.")
    runtime, _script, _ = await start(cwd, "ok")
    session = runtime.session
    assert not session.services.project_trusted and not marker.exists()
    assert [r.status for r in session.plugins.records if r.name == "evil"] == ["skipped"]
    assert session.services.resources.skills == []
    assert "PROJECT SYSTEM PROMPT" not in session.system_prompt
    assert "Use tabs, not spaces." in session.system_prompt
    assert session.tools.active_names == ["read", "bash", "edit", "write"]  # project settings ignored
    trusted, _, _ = await start(cwd, "ok", approve=True)
    assert marker.exists() and "PROJECT SYSTEM PROMPT" in trusted.session.system_prompt
    assert trusted.session.tools.active_names == ["read"]
    assert [s.name for s in trusted.session.services.resources.skills] == ["deploy"]


class Keeper:
    """A class plugin keeping state on self and (badly) keeping its ctx."""

    instances: ClassVar[list[Keeper]] = []

    def __init__(self) -> None:
        self.started: list[str] = []
        Keeper.instances.append(self)

    @hookimpl
    def session_start(self, event: Any, ctx: Any) -> None:
        self.started.append(event.reason)
        self.ctx = ctx


async def test_reload_gives_fresh_plugin_instances_and_stales_old_contexts(cwd: Path) -> None:
    Keeper.instances.clear()
    runtime, _, _ = await start(cwd, "one", "two", plugins=(Keeper,))
    await runtime.session.prompt("hi")
    first = Keeper.instances[-1]
    assert first.started == ["startup"] and first.ctx.cwd == str(cwd)
    old_session = runtime.session
    await runtime.reload()
    second = Keeper.instances[-1]
    assert second is not first and second.started == ["reload"]
    with pytest.raises(h.StaleContextError):
        _ = first.ctx.model
    assert runtime.session is not old_session
    assert [m.role for m in runtime.session.messages] == ["system", "user", "assistant"]  # conversation kept
    await runtime.session.prompt("again")
    assert runtime.session.get_last_assistant_text() == "two"


async def test_new_session_fork_and_switch_with_fresh_contexts(cwd: Path) -> None:
    Keeper.instances.clear()
    vetoes: list[str] = []

    class Veto:
        @hookimpl
        def session_before_switch(self, event: Any) -> Any:
            vetoes.append(event.reason)
            return {"cancel": event.reason == "new" and len(vetoes) == 1}

    runtime, _, _ = await start(cwd, "first answer", "second answer", plugins=(Keeper, Veto))
    await runtime.session.prompt("first question")
    original_file = runtime.session.session_file
    old_ctx = Keeper.instances[-1].ctx
    assert await runtime.new_session() == {"cancelled": True}
    assert runtime.session.session_file == original_file
    seen: list[Any] = []
    assert (await runtime.new_session(with_session=lambda ctx: seen.append(ctx.cwd)))["cancelled"] is False
    assert seen == [str(cwd)] and Keeper.instances[-1].started == ["new"]
    with pytest.raises(h.StaleContextError):
        _ = old_ctx.cwd
    assert runtime.session.messages == [] and runtime.session.session_file != original_file
    await runtime.switch_session(original_file)
    assert Keeper.instances[-1].started == ["resume"]
    assert runtime.session.get_last_assistant_text() == "first answer"
    user_entry = next(e for e in runtime.session.sm.get_entries() if e.type == "message" and e.message.role == "user")
    forked = await runtime.fork(user_entry.id)
    assert forked["editor_text"] == "first question"
    assert runtime.session.sm.get_header().parent_session == original_file
    assert [m.role for m in runtime.session.messages] == ["system"]  # forked before the first user message
    assert Keeper.instances[-1].started == ["fork"]


async def test_tree_navigation_with_a_branch_summary(cwd: Path) -> None:
    trees: list[Any] = []

    class Observer:
        @hookimpl
        def session_tree(self, event: Any) -> None:
            trees.append(event)

    runtime, _, _ = await start(
        cwd, "answer one", "answer two", summary_reply("## Goal\nbranch summary"), "answer three", plugins=(Observer,)
    )
    session = runtime.session
    await session.prompt("question one")
    await session.prompt("question two")
    second_user = [e for e in session.sm.get_branch() if e.type == "message" and e.message.role == "user"][1]
    outcome = await session.navigate_tree(second_user.id, summarize=True)
    assert outcome == {"cancelled": False, "editor_text": "question two"}
    assert trees[0].summary_entry is not None and "## Goal\nbranch summary" in trees[0].summary_entry.summary
    await session.prompt("question two, rephrased")
    roles = [m.role for m in session.messages]
    assert roles == ["system", "user", "assistant", "branchSummary", "user", "assistant"]


async def test_settings_choose_default_tools_and_tools_flags(cwd: Path) -> None:
    write_settings({"defaultTools": ["+grep", "-write"]})
    runtime, _, _ = await start(cwd, "ok")
    assert runtime.session.tools.active_names == ["read", "bash", "edit", "grep"]
    runtime, _, _ = await start(cwd, "ok", tools=["read", "l*"])
    assert runtime.session.tools.active_names == ["read", "ls"]
    runtime, _, _ = await start(cwd, "ok", exclude_tools=["b*"])
    assert "bash" not in runtime.session.tools.active_names
    runtime, _, _ = await start(cwd, "ok", no_tools=True)
    assert runtime.session.tools.active_names == []


async def test_plugins_can_ask_whether_the_user_deselected_a_tool(cwd: Path) -> None:
    seen: dict[str, bool] = {}

    class Asker:
        @hookimpl
        def session_start(self, ctx: Any) -> None:
            for name in ("write", "grep", "helper", "mcp__x__y", "bash"):
                seen[name] = ctx.is_tool_deselected(name)

    write_settings({"defaultTools": ["-write", "-helper", "-grep", "+grep"]})
    await start(cwd, "ok", plugins=(Asker,))
    assert seen == {"write": True, "grep": False, "helper": True, "mcp__x__y": False, "bash": False}
    write_settings({})
    await start(cwd, "ok", plugins=(Asker,), tools=["read", "b*"])
    assert seen == {"write": True, "grep": True, "helper": True, "mcp__x__y": False, "bash": False}
    await start(cwd, "ok", plugins=(Asker,), exclude_tools=["mcp__*"])
    assert seen["mcp__x__y"] is True and seen["helper"] is False
    await start(cwd, "ok", plugins=(Asker,), no_tools=True)
    assert all(seen.values())


async def test_a_plugin_replaces_and_withdraws_only_its_own_run_time_tools(cwd: Path) -> None:
    @h.tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    errors: list[str] = []

    class Owner:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(lookup)

        @hookimpl
        def turn_end(self, ctx: Any) -> None:  # withdraw its own tool at run time
            ctx.register_tool(lookup.model_copy(update={"exposure": "hidden"}))

    class Intruder:
        @hookimpl
        def session_start(self, ctx: Any) -> None:
            try:
                ctx.register_tool(lookup.model_copy(update={"description": "hijacked"}))
            except ValueError as exc:
                errors.append(str(exc))

    runtime, _, _ = await start(cwd, "ok", plugins=(Owner, Intruder))
    assert len(errors) == 1 and "'lookup'" in errors[0] and "Owner" in errors[0]
    assert "lookup" in runtime.session.tools.active_names
    await runtime.session.prompt("hi")
    assert "lookup" not in runtime.session.tools.active_names
    assert runtime.session.tools.get("lookup").exposure == "hidden"


async def test_thinking_and_model_changes_are_recorded_and_announced(cwd: Path) -> None:
    from pi_core.ai import FauxScript, faux_model

    selected: list[Any] = []

    class Observer:
        @hookimpl
        def model_select(self, event: Any) -> None:
            selected.append((event.previous_model.id, event.model.id))

        @hookimpl
        def thinking_level_select(self, event: Any) -> None:
            selected.append(("thinking", event.level))

    runtime, _, _ = await start(cwd, "ok", plugins=(Observer,))
    other = faux_model(FauxScript(["from the other model"]), id="other", reasoning=True)
    assert await runtime.session.set_model(other)
    await runtime.session.set_thinking_level("high")
    await runtime.session.prompt("hi")
    assert runtime.session.get_last_assistant_text() == "from the other model"
    assert selected == [("faux", "other"), ("thinking", "high")]
    types = [e["type"] for e in lines(runtime.session.session_file)]
    assert "model_change" in types and "thinking_level_change" in types


async def test_tool_result_and_tool_call_hooks_in_a_real_run(cwd: Path) -> None:
    (cwd / "secret.txt").write_text("password=hunter2\n")

    class Policy:
        @hookimpl(trylast=True)
        def tool_call(self, event: Any) -> Any:
            if event.tool_name == "bash" and "rm " in event.input.get("command", ""):
                return {"block": True, "reason": "rm is not allowed"}
            return None

        @hookimpl
        def tool_result(self, event: Any) -> Any:
            text = "".join(b.text for b in event.content if b.type == "text")
            if "hunter2" in text:
                return {"content": [{"type": "text", "text": text.replace("hunter2", "[redacted]")}]}
            return None

    runtime, script, _ = await start(
        cwd,
        calls(("read", {"path": "secret.txt"}), ("bash", {"command": "rm -rf build"})),
        "done",
        plugins=(Policy,),
    )
    await runtime.session.prompt("go")
    results = [m for m in script.contexts[1].messages if m.role == "toolResult"]
    assert "[redacted]" in results[0].content[0].text and "hunter2" not in results[0].content[0].text
    assert results[1].is_error and results[1].content[0].text == "rm is not allowed"


async def test_prepare_loadout_hides_declarations_and_replaces_descriptions(cwd: Path) -> None:
    @h.tool
    def helper_tool(text: str) -> str:
        """Helper."""
        return text

    def loadout(info: Any) -> Any:
        assert "orchestrator" in info.declared and "helper_tool" in info.callable
        return {
            "descriptions": {"orchestrator": "Run scripts; it can call: " + ", ".join(sorted(info.callable))},
            "hiddenDeclarations": ["helper_tool"],
        }

    orchestrator = h.ToolDefinition(
        name="orchestrator", description="Orchestrate.", execute=lambda a, c: "ok", prepare_loadout=loadout
    )
    runtime, script, _ = await start(cwd, "ok", custom_tools=[helper_tool, orchestrator])
    await runtime.session.prompt("hi")
    from pi_core.ai import current_tools

    declared = {t.name: t.description for t in current_tools(script.contexts[0].messages)}
    assert "helper_tool" not in declared and declared["orchestrator"].startswith("Run scripts; it can call:")
    assert "helper_tool" in runtime.session.tools.active_names  # still active and callable


async def test_resume_keeps_tools_the_branch_activated(cwd: Path) -> None:
    @h.tool(exposure="deferred")
    def rare(x: int) -> int:
        """A rarely needed tool."""
        return x

    @h.tool
    def load_rare(ctx: Any) -> str:
        """Load the rare tool."""
        ctx.set_active_tools([*ctx.get_active_tools(), "rare"])
        return "loaded"

    runtime, _, _ = await start(cwd, calls(("load_rare", {})), "loaded it", custom_tools=[rare, load_rare])
    await runtime.session.prompt("load it")
    path = runtime.session.session_file
    await runtime.dispose()
    resumed, _, _ = await start(cwd, "ok", custom_tools=[rare, load_rare], session=path)
    assert "rare" in resumed.session.tools.active_names
    fresh, _, _ = await start(cwd, "ok", custom_tools=[rare, load_rare])
    assert "rare" not in fresh.session.tools.active_names


async def test_required_extensions_cannot_be_bypassed_from_a_project(cwd: Path, agent_dir: Path) -> None:
    from pi_core.runtime.services import RequiredExtensionError

    policy = agent_dir / "extensions" / "policy.py"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("from pi_hookspecs import hookimpl\n@hookimpl\ndef tool_call(event):\n    return None\n")
    write_settings({"requiredExtensions": ["policy"]})
    runtime, _, _ = await start(cwd, "ok")  # present and loaded: fine
    assert any(r.name == "policy" and r.status == "loaded" for r in runtime.session.plugins.records)
    pi_dir = cwd / ".pi"
    pi_dir.mkdir()
    (pi_dir / "settings.json").write_text('{"disabledExtensions": ["policy"], "requiredExtensions": []}')
    trusted, _, _ = await start(cwd, "ok", approve=True)  # the project can neither disable nor un-require it
    assert any(r.name == "policy" and r.status == "loaded" for r in trusted.session.plugins.records)
    policy.write_text("raise ImportError('policy engine missing')\n")
    with pytest.raises(
        RequiredExtensionError, match="'policy' error: import failed: ImportError: policy engine missing"
    ):
        await start(cwd, "ok")
    policy.unlink()
    with pytest.raises(RequiredExtensionError, match="'policy' is not installed"):
        await start(cwd, "ok")


async def test_a_reload_that_cannot_load_a_required_extension_keeps_the_old_session(cwd: Path, agent_dir: Path) -> None:
    from pi_core.runtime.services import RequiredExtensionError

    policy = agent_dir / "extensions" / "policy.py"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("from pi_hookspecs import hookimpl\n@hookimpl\ndef tool_call(event):\n    return None\n")
    write_settings({"requiredExtensions": ["policy"]})
    Keeper.instances.clear()
    runtime, _, _ = await start(cwd, "one", "two", plugins=(Keeper,))
    await runtime.session.prompt("hi")
    before = runtime.session
    policy.write_text("raise ImportError('policy engine missing')\n")
    with pytest.raises(RequiredExtensionError, match="'policy'"):
        await runtime.reload()
    assert runtime.session is before and Keeper.instances[0].ctx.model is not None  # still live
    await runtime.session.prompt("again")
    assert runtime.session.get_last_assistant_text() == "two"


async def test_get_settings_by_scope(cwd: Path) -> None:
    seen: dict[str, Any] = {}

    class Reader:
        @hookimpl
        def session_start(self, ctx: Any) -> None:
            for scope in ("effective", "user", "project"):
                seen[scope] = ctx.get_settings(scope).get("policy")
            seen["default"] = ctx.get_settings().get("policy")
            try:
                ctx.get_settings("global")
            except ValueError as exc:
                seen["error"] = str(exc)

    write_settings({"policy": {"rules": "/etc/rules.yaml"}})
    (cwd / ".pi").mkdir()
    (cwd / ".pi" / "settings.json").write_text('{"policy": {"rules": "lax.yaml"}}')
    await start(cwd, "ok", plugins=(Reader,))  # untrusted project: its settings are ignored
    assert seen["effective"] == seen["user"] == {"rules": "/etc/rules.yaml"} and seen["project"] is None
    await start(cwd, "ok", plugins=(Reader,), approve=True)
    assert seen["effective"] == seen["default"] == {"rules": "lax.yaml"} == seen["project"]
    assert seen["user"] == {"rules": "/etc/rules.yaml"}
    assert "'global'" in seen["error"]
