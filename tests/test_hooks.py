"""One test per hook (``test_hook_<name>``), enforced by ``test_hookspec_docs.py``.

Each test loads real plugins through :class:`PluginHost` and dispatches the hook the
way pi does, checking the hook's composition rule and its error policy. The helpers
take the rule, the event model and the result model from the hookspec
(``pi_hookspecs.EVENTS``), so a test cannot drift from the contract it checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pi_hookspecs as h
from conftest import load_host
from pi_core.extensions import Blocked, ExtensionContextImpl
from pi_hookspecs import hookimpl


def assistant(text: str = "done") -> h.AssistantMessage:
    return h.AssistantMessage(content=[h.TextContent(text=text)], provider="faux", api="faux", model="m")


async def check_notification(name: str, event: h.Event) -> list[Any]:
    """A notification hook: every handler sees the event and ctx, results are ignored,
    a raising handler is reported and the next one still runs."""
    spec = h.EVENTS[name]
    assert spec.rule is h.Rule.NOTIFICATION and isinstance(event, spec.event) and spec.result is None
    seen: list[Any] = []

    def make(label: str, fail: bool = False) -> Any:
        def handler(self: Any, event: Any, ctx: Any) -> Any:
            seen.append((label, event, ctx))
            if fail:
                raise RuntimeError(f"{label} broke")
            return {"ignored": True}

        return type(label, (), {name: hookimpl(handler)})

    host = await load_host(make("A"), make("B", fail=True), make("C"))
    assert await host.runner.emit(name, event) is None
    assert [label for label, _, _ in seen] == ["C", "B", "A"]
    assert all(e is event for _, e, _ in seen)
    assert all(isinstance(c, ExtensionContextImpl) for _, _, c in seen)
    errors = list(host.runner.errors)
    assert len(errors) == 1 and errors[0].plugin == "B" and errors[0].hook == name
    assert "B broke" in errors[0].message
    return seen


# =============================================================================== registration


async def test_hook_register_tools() -> None:
    @h.tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    class Tools:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(shout)

    class Other:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(shout)  # same name from another plugin: a conflict

    host = await load_host(Tools, Other)
    reg = host.registry.tools["shout"]
    assert reg.plugin == "Tools" and reg.value is shout
    assert any("already registered by plugin 'Tools'" in d.message for d in host.diagnostics)
    result = await reg.value.run({"text": "hi"}, None)
    assert result.text_content() == "HI"


async def test_hook_register_commands() -> None:
    calls: list[str] = []

    class Commands:
        @hookimpl
        def register_commands(self, register: Any) -> None:
            register("hello", lambda args, ctx: calls.append(args), description="Say hello")
            register(h.CommandDefinition(name="/bye", handler=lambda args, ctx: None))
            register("bad name!", lambda args, ctx: None)

    host = await load_host(Commands)
    assert set(host.registry.commands) == {"hello", "bye"}
    host.registry.commands["hello"].value.handler("world", None)
    assert calls == ["world"]
    assert any("command name 'bad name!'" in d.message for d in host.diagnostics)


async def test_hook_register_flags() -> None:
    class Flags:
        @hookimpl
        def register_flags(self, register: Any) -> None:
            register("plan", description="Start in plan mode")
            register("level", type="string", default="low")

    class Reader:
        @hookimpl
        def session_start(self, ctx: Any) -> None:
            self.values = (ctx.get_flag("plan"), ctx.get_flag("--level"))

    host = await load_host(Flags, Reader)
    assert host.registry.flags["plan"].value.type == "boolean"
    await host.runner.emit("session_start", h.SessionStartEvent())
    reader = next(r.plugin for r in host.records if r.name == "Reader")
    assert reader.values == (None, "low")


async def test_hook_register_providers() -> None:
    async def stream(model: Any, context: Any, options: Any) -> Any:
        yield h.DoneEvent(reason="stop", message=assistant())

    class Providers:
        @hookimpl
        def register_providers(self, register: Any) -> None:
            register(
                {
                    "name": "local",
                    "baseUrl": "http://127.0.0.1:1/v1",
                    "api": "openai-completions",
                    "models": [{"id": "tiny", "contextWindow": 4096}],
                }
            )
            register(h.ProviderDefinition(name="scripted", models=[h.Model(id="echo")], stream=stream))
            register(h.ApiDefinition(name="echo-api", stream="json:dumps"))
            register(42)

    host = await load_host(Providers)
    local = host.registry.providers["local"].value
    assert local.models[0].provider == "local" and local.models[0].api == "openai-completions"
    assert local.models[0].context_window == 4096
    assert host.registry.providers["scripted"].value.stream is stream
    assert host.registry.apis["echo-api"].value.stream == "json:dumps"
    assert any("takes a ProviderDefinition" in d.message for d in host.diagnostics)


async def test_hook_register_virtual_models(tmp_path: Path) -> None:
    def route(request: Any) -> Any:
        return h.Route(model="faux/offline-demo", state={"seen": request.reason})

    class Router:
        @hookimpl
        def register_virtual_models(self, register: Any) -> None:
            register(
                h.VirtualModelDefinition(provider="router", id="auto", thinking_levels=["low", "high"], route=route)
            )
            register({"provider": "router", "id": "dict-form", "route": route})
            register({"provider": "router", "id": "", "route": route})
            register({"provider": "router", "id": "x", "thinking_levels": ["huge"], "route": route})
            register(42)

    class Late:
        @hookimpl
        def register_virtual_models(self, register: Any) -> None:
            register({"provider": "router", "id": "auto", "route": route})

    host = await load_host(Router, Late)
    auto = host.registry.virtual_models["router/auto"]
    assert auto.plugin == "Router" and auto.value.thinking_levels == ["low", "high"] and auto.value.route is route
    assert host.registry.virtual_models["router/dict-form"].value.thinking_levels == ["off"]
    messages = [d.message for d in host.diagnostics]
    assert any("invalid virtual model: id" in m for m in messages)
    assert any("unknown thinking level(s) ['huge']" in m for m in messages)
    assert any("takes a VirtualModelDefinition" in m for m in messages)
    assert any("virtual model 'router/auto' is already registered by plugin 'Router'" in m for m in messages)
    from pi_core.ai import ModelRegistry

    registry = ModelRegistry(models_path=tmp_path / "models.json")
    assert registry.use_virtual_models(host.registry.virtual_model_registrations()) == []
    listed = registry.get("router", "auto")
    assert listed is not None and h.is_virtual_model(listed) and listed.reasoning
    target, level, state = await registry.route(listed, [], reason="user", thinking_level="high")
    assert (target.ref, level, state) == ("faux/offline-demo", "off", {"seen": "user"})


async def test_hook_register_cli_commands() -> None:
    class Cli:
        @hookimpl
        def register_cli_commands(self, register: Any) -> None:
            register("greet", lambda args: print("hi", *args) or 0, help="Say hi")
            register("Bad Name", lambda args: 0)

    host = await load_host(Cli)
    reg = host.registry.cli_commands["greet"]
    assert reg.plugin == "Cli" and reg.value.help == "Say hi" and reg.value.main(["there"]) == 0
    assert any("command name 'Bad Name'" in d.message for d in host.diagnostics)


async def test_hook_add_hookspecs() -> None:
    class DocsSpecs:
        @h.hookspec
        def register_doc_sources(self, register: Any) -> None:
            """Contribute documentation sources."""

    class Publisher:
        @hookimpl
        def add_hookspecs(self, add: Any) -> None:
            add(DocsSpecs)

        @hookimpl
        async def session_start(self, ctx: Any) -> None:
            servers: dict[str, Any] = {}
            ctx.hook.register_doc_sources(register=lambda name, cfg: servers.__setitem__(name, cfg))
            self.servers = servers

    class Contributor:
        @hookimpl
        def register_doc_sources(self, register: Any) -> None:
            register("docs", {"url": "http://127.0.0.1:9/mcp"})

    host = await load_host(Publisher, Contributor)
    assert not [d for d in host.diagnostics if "unknown hook" in d.message]
    await host.runner.emit("session_start", h.SessionStartEvent())
    publisher = next(r.plugin for r in host.records if r.name == "Publisher")
    assert publisher.servers == {"docs": {"url": "http://127.0.0.1:9/mcp"}}


# =============================================================================== startup


async def test_hook_project_trust() -> None:
    class Undecided:
        @hookimpl
        def project_trust(self, event: Any) -> Any:
            return {"trusted": "undecided"}

    class Broken:
        @hookimpl
        def project_trust(self, event: Any) -> Any:
            raise OSError("no network")

    class Decider:
        @hookimpl(tryfirst=True)
        def project_trust(self, event: Any, ctx: Any) -> Any:
            assert ctx.cwd and not ctx.has_ui
            return h.ProjectTrustResult(trusted="no", remember=True)

    host = await load_host(Undecided, Broken)
    assert await host.runner.emit("project_trust", h.ProjectTrustEvent(cwd="/x")) is None
    assert host.runner.errors[0].plugin == "Broken"
    host = await load_host(Undecided, Decider, Broken)
    result = await host.decide_project_trust()
    assert result is not None and result.trusted == "no" and result.remember


async def test_hook_cache_warming_decision() -> None:
    class Stop:
        @hookimpl
        def cache_warming_decision(self, event: Any) -> Any:
            return {"action": "stop"} if event.warm_cost > 0.5 else None

    class Broken:
        @hookimpl
        def cache_warming_decision(self, event: Any) -> Any:
            raise RuntimeError("no opinion")

    class Observer:
        @hookimpl(trylast=True)
        def cache_warming_decision(self, event: Any) -> None:
            self.saw = (event.action, event.miss_cost, event.continuation_probability)

    host = await load_host(Stop, Broken, Observer)
    event = h.CacheWarmingDecisionEvent(warm_cost=0.6, miss_cost=2.0, continuation_probability=1.0, action="warm")
    results = await host.runner.emit("cache_warming_decision", event)
    assert [r.action for r in results if r is not None] == ["stop"]  # the session takes the last action
    observer = next(r.plugin for r in host.records if r.name == "Observer")
    assert observer.saw == ("warm", 2.0, 1.0)
    assert host.runner.errors[0].plugin == "Broken"


async def test_hook_resources_discover() -> None:
    class Skills:
        @hookimpl
        def resources_discover(self, event: Any) -> Any:
            return {"skillPaths": [f"/skills/{event.reason}"]}

    class Prompts:
        @hookimpl
        async def resources_discover(self, event: Any) -> Any:
            return h.ResourcesDiscoverResult(prompt_paths=["/prompts"])

    class Broken:
        @hookimpl
        def resources_discover(self, event: Any) -> Any:
            return ["not", "a", "result"]

    host = await load_host(Skills, Broken, Prompts)
    results = await host.runner.emit("resources_discover", h.ResourcesDiscoverEvent(cwd="/", reason="reload"))
    assert [r.skill_paths for r in results] == [[], ["/skills/reload"]]
    assert [r.prompt_paths for r in results] == [["/prompts"], []]
    (error,) = host.runner.errors
    assert error.plugin == "Broken" and "ResourcesDiscoverResult" in error.message


# =============================================================================== session


async def test_hook_session_start() -> None:
    seen = await check_notification(
        "session_start", h.SessionStartEvent(reason="resume", previous_session_file="/a.jsonl")
    )
    assert seen[0][1].previous_session_file == "/a.jsonl"


async def test_hook_session_shutdown() -> None:
    await check_notification("session_shutdown", h.SessionShutdownEvent(reason="reload"))


async def test_hook_session_info_changed() -> None:
    seen = await check_notification("session_info_changed", h.SessionInfoChangedEvent(name="auth refactor"))
    assert seen[0][1].to_json() == {"type": "session_info_changed", "name": "auth refactor"}


async def test_hook_register_shortcuts() -> None:
    calls: list[Any] = []

    class Keys:
        @hookimpl
        def register_shortcuts(self, register: Any) -> None:
            register("Ctrl+Shift+P", lambda ctx: calls.append(ctx), description="Toggle plan mode")
            register(h.ShortcutDefinition(key="f5", handler=lambda ctx: None))
            register("ctrl+x")  # no handler

    host = await load_host(Keys)
    assert set(host.registry.shortcuts) == {"ctrl+shift+p", "f5"}
    assert host.registry.shortcuts["ctrl+shift+p"].value.description == "Toggle plan mode"
    host.registry.shortcuts["ctrl+shift+p"].value.handler("ctx")
    assert calls == ["ctx"]
    assert any("shortcut 'ctrl+x' needs a handler" in d.message for d in host.diagnostics)


async def test_hook_register_message_renderers() -> None:
    class Renderers:
        @hookimpl
        def register_message_renderers(self, register: Any) -> None:
            register("status", lambda message, options: f"[{message}] {options['expanded']}")
            register("", lambda message, options: None)

    host = await load_host(Renderers)
    render = host.registry.message_renderers["status"].value.render
    assert render("m", {"expanded": True}) == "[m] True"
    assert any("needs a custom_type" in d.message for d in host.diagnostics)


async def test_hook_register_entry_renderers() -> None:
    class First:
        @hookimpl
        def register_entry_renderers(self, register: Any) -> None:
            register("card", lambda entry, options: "first")

    class Second:
        @hookimpl
        def register_entry_renderers(self, register: Any) -> None:
            register("card", lambda entry, options: "second")

    host = await load_host(First, Second)
    assert host.registry.entry_renderers["card"].plugin == "First"
    assert any("entry renderer 'card' is already registered" in d.message for d in host.diagnostics)


async def test_hook_register_tool_renderers() -> None:
    class Tools:
        @hookimpl
        def register_tool_renderers(self, register: Any) -> None:
            register(lambda name, next: {"render_call": lambda args, options: name} if name == "ls" else next())
            register("not callable")

    host = await load_host(Tools)
    [registered] = host.registry.tool_renderers
    assert registered.value.resolve("ls", lambda: None)["render_call"]({}, {}) == "ls"
    assert registered.value.resolve("bash", lambda: "fallback") == "fallback"
    assert any("tool renderer must be a callable" in d.message for d in host.diagnostics)


async def test_hook_register_markdown_transformers() -> None:
    class Arrows:
        @hookimpl
        def register_markdown_transformers(self, register: Any) -> None:
            register(lambda text, context: text.replace("->", "=>"))
            register(lambda text, context: text.replace("-->", "→"))  # replaces the first, in its place
            register(print, message_types=["sidebar"])

    class Changelog:
        @hookimpl
        def register_markdown_transformers(self, register: Any) -> None:
            register(lambda text, context: text.upper(), message_types="changelog")

    host = await load_host(Arrows, Changelog)
    first, second = host.registry.markdown_transformers
    assert (first.plugin, second.plugin) == ("Arrows", "Changelog")
    context = h.MarkdownTransformContext(message_type="assistant", available_width=80)
    assert first.value.transform("a --> b", context) == "a → b"
    assert first.value.message_types == h.DEFAULT_MARKDOWN_MESSAGE_TYPES
    assert second.value.message_types == frozenset({"changelog"})
    assert any(
        d.plugin == "Arrows" and "invalid markdown transformer: message_types" in d.message for d in host.diagnostics
    )


async def test_hook_register_mcp_servers() -> None:
    outcomes: list[str] = []

    class Servers:
        @hookimpl
        def register_mcp_servers(self, register: Any) -> None:
            register("docs", {"url": "http://127.0.0.1:9/mcp", "exposure": "direct"})
            register("local-db", {"command": "uvx", "args": ["db-mcp"]})
            register("local-db", {"command": "uvx", "args": ["db-mcp", "--ro"]})  # replaces its own
            for name, config in (("bad name", {"command": "x"}), ("both", {"command": "x", "url": "http://x"})):
                try:
                    register(name, config)
                except ValueError as exc:
                    outcomes.append(str(exc))

    class Greedy:
        @hookimpl
        def register_mcp_servers(self, register: Any) -> None:
            register("local_db", {"command": "mine"})  # "-" and "_" name the same server

    host = await load_host(Servers, Greedy)
    listed = host.registry.mcp_server_list()
    assert [(s.name, s.plugin) for s in listed] == [("docs", "Servers"), ("local-db", "Servers")]
    assert listed[1].config == {"command": "uvx", "args": ["db-mcp", "--ro"]}
    assert outcomes == [
        'MCP server "bad name": a server name holds only letters, digits, "_" and "-"',
        'MCP server "both": an MCP server needs either "command" (stdio) or "url" (HTTP), not both',
    ]
    assert any(
        d.plugin == "Greedy" and 'MCP server "local_db" is already registered by plugin "Servers"' in d.message
        for d in host.diagnostics
    )


async def test_hook_mcp_servers_change() -> None:
    server = h.McpServerRegistration(name="docs", config={"url": "http://127.0.0.1:9/mcp"}, plugin="Servers")
    seen = await check_notification("mcp_servers_change", h.McpServersChangeEvent(servers=[server]))
    assert seen[0][1].to_json() == {
        "type": "mcp_servers_change",
        "servers": [{"name": "docs", "config": {"url": "http://127.0.0.1:9/mcp"}, "plugin": "Servers"}],
    }


async def test_hook_ui_prompt_start() -> None:
    seen = await check_notification("ui_prompt_start", h.UiPromptStartEvent(kind="confirm", title="Allow?"))
    assert seen[0][1].to_json() == {
        "type": "ui_prompt_start",
        "reason": "ui_prompt",
        "kind": "confirm",
        "title": "Allow?",
    }


async def test_hook_ui_prompt_end() -> None:
    seen = await check_notification("ui_prompt_end", h.UiPromptEndEvent(kind="input"))
    assert seen[0][1].kind == "input"


async def cancellable_case(name: str, event: h.Event) -> None:
    spec = h.EVENTS[name]
    assert spec.rule is h.Rule.CANCELLABLE and isinstance(event, spec.event) and spec.result is not None
    result_type = spec.result

    def plugin(label: str, result: Any) -> type:
        return type(label, (), {name: hookimpl(lambda self, event: result)})

    host = await load_host(plugin("A", {"cancel": True}), plugin("B", None), plugin("C", {"cancel": False}))
    outcome = await host.runner.emit(name, event)
    assert isinstance(outcome, result_type) and outcome.cancel  # C runs first, then B, then A cancels
    host = await load_host(plugin("A", {"cancel": False}), plugin("B", None))
    outcome = await host.runner.emit(name, event)
    assert isinstance(outcome, result_type) and not outcome.cancel


async def test_hook_session_before_switch() -> None:
    await cancellable_case(
        "session_before_switch",
        h.SessionBeforeSwitchEvent(reason="resume", target_session_file="/s.jsonl"),
    )


async def test_hook_session_before_fork() -> None:
    await cancellable_case("session_before_fork", h.SessionBeforeForkEvent(entry_id="ab12cd34"))


async def test_hook_session_before_compact() -> None:
    event = h.SessionBeforeCompactEvent(
        preparation=h.CompactionPreparation(first_kept_entry_id="e5", tokens_before=5000), reason="threshold"
    )

    class Custom:
        @hookimpl
        def session_before_compact(self, event: Any) -> Any:
            prep = event.preparation
            return {
                "compaction": {
                    "summary": "short",
                    "firstKeptEntryId": prep.first_kept_entry_id,
                    "tokensBefore": prep.tokens_before,
                }
            }

    class LaterNoCancel:
        @hookimpl(trylast=True)
        def session_before_compact(self, event: Any) -> Any:
            return {"cancel": False}

    host = await load_host(Custom)
    outcome = await host.runner.emit("session_before_compact", event)
    assert outcome.compaction.summary == "short" and outcome.compaction.first_kept_entry_id == "e5"
    # The later handler's whole result replaces the earlier one: the compaction is not kept.
    host = await load_host(Custom, LaterNoCancel)
    outcome = await host.runner.emit("session_before_compact", event)
    assert outcome.compaction is None and outcome.cancel is False


async def test_hook_session_compact() -> None:
    entry = h.CompactionEntry(id="c1", parent_id="p", summary="s", first_kept_entry_id="k", tokens_before=10)
    seen = await check_notification("session_compact", h.SessionCompactEvent(compaction_entry=entry, reason="overflow"))
    assert seen[0][1].compaction_entry.summary == "s"


async def test_hook_session_compact_failed() -> None:
    await check_notification("session_compact_failed", h.SessionCompactFailedEvent(error_message="boom"))


async def test_hook_session_before_tree() -> None:
    await cancellable_case(
        "session_before_tree",
        h.SessionBeforeTreeEvent(preparation=h.TreePreparation(target_id="t1", user_wants_summary=True)),
    )

    class Summary:
        @hookimpl
        def session_before_tree(self, event: Any) -> Any:
            return {"summary": {"summary": "explored A"}, "label": "checkpoint"}

    host = await load_host(Summary)
    out = await host.runner.emit(
        "session_before_tree", h.SessionBeforeTreeEvent(preparation=h.TreePreparation(target_id="t"))
    )
    assert out.summary.summary == "explored A" and out.label == "checkpoint"


async def test_hook_session_tree() -> None:
    await check_notification("session_tree", h.SessionTreeEvent(new_leaf_id="n", old_leaf_id="o"))


# =============================================================================== agent runs


async def test_hook_before_agent_start() -> None:
    class Persona:
        @hookimpl
        def before_agent_start(self, event: Any) -> Any:
            event.system_prompt_options.sections["persona"] = "Speak like a pirate."
            return {"systemPrompt": event.system_prompt + " +persona"}

    class Reminder:
        @hookimpl
        async def before_agent_start(self, event: Any) -> Any:
            return {"message": {"customType": "reminder", "content": f"saw: {event.system_prompt}"}}

    host = await load_host(Reminder, Persona)  # Persona registered last: it runs first
    event = h.BeforeAgentStartEvent(prompt="hi", system_prompt="base")
    results = await host.runner.emit("before_agent_start", event)
    assert event.system_prompt == "base +persona"
    assert event.system_prompt_options.sections == {"persona": "Speak like a pirate."}
    assert [r.message.content for r in results if r.message] == ["saw: base +persona"]


async def test_hook_agent_start() -> None:
    await check_notification("agent_start", h.AgentStartEvent())


async def test_hook_agent_end() -> None:
    seen = await check_notification("agent_end", h.AgentEndEvent(messages=[assistant()]))
    assert seen[0][1].messages[0].text() == "done"


async def test_hook_agent_before_settle() -> None:
    class Reminder:
        @hookimpl
        def agent_before_settle(self, event: Any) -> Any:
            return {
                "entries": [
                    *event.entries,
                    {"type": "custom_message", "customType": "review", "content": "Review the diff."},
                ],
                "continue": True,
            }

    class Observer:
        @hookimpl(trylast=True)
        def agent_before_settle(self, event: Any) -> Any:
            self.saw = ([e.custom_type for e in event.entries], event.continue_, len(event.context.context_messages))

    class Broken:
        @hookimpl(tryfirst=True)
        def agent_before_settle(self, event: Any) -> Any:
            return {"entries": [{"type": "message"}]}  # not an allowed draft type

    host = await load_host(Observer, Reminder, Broken)
    event = h.AgentBeforeSettleEvent()
    outcome = await host.runner.emit_boundary(
        "agent_before_settle",
        event,
        build_context=lambda entries: h.BoundaryContext(context_messages=[h.UserMessage(content="x")] * len(entries)),
    )
    assert [e.custom_type for e in outcome.entries] == ["review"] and outcome.continue_ is True
    observer = next(r.plugin for r in host.records if r.name == "Observer")
    assert observer.saw == (["review"], True, 1)
    assert host.runner.errors[0].plugin == "Broken"


async def test_hook_agent_settled() -> None:
    seen = await check_notification("agent_settled", h.AgentSettledEvent(aborted=True))
    assert seen[0][1].aborted


async def test_hook_turn_start() -> None:
    await check_notification("turn_start", h.TurnStartEvent(turn_index=3, timestamp=1))


async def test_hook_turn_end() -> None:
    class Retry:
        @hookimpl
        def turn_end(self, event: Any) -> Any:
            if event.outcome != "completed" or event.tool_results:
                return None
            return {
                "entries": [
                    *event.entries,
                    {"type": "context_edit", "targetId": event.message_entry_id, "replacement": None},
                ],
                "continue": True,
            }

    class KeepGoing:
        @hookimpl
        def turn_end(self, event: Any) -> Any:
            return {"continue": False}  # only replaces the continuation, keeps the entries

    host = await load_host(KeepGoing, Retry)
    event = h.TurnEndEvent(message=assistant(), message_entry_id="m1")
    outcome = await host.runner.emit("turn_end", event)
    assert outcome.entries[0].target_id == "m1" and outcome.entries[0].replacement is None
    assert outcome.continue_ is False


# =============================================================================== messages


async def test_hook_message_start() -> None:
    await check_notification("message_start", h.MessageStartEvent(message=h.UserMessage(content="hi")))


async def test_hook_message_update() -> None:
    partial = assistant("he")
    delta = h.TextDeltaEvent(content_index=0, delta="he", partial=partial)
    seen = await check_notification(
        "message_update", h.MessageUpdateEvent(message=partial, assistant_message_event=delta)
    )
    assert seen[0][1].assistant_message_event.delta == "he"


async def test_hook_message_end() -> None:
    class Price:
        @hookimpl
        def message_end(self, event: Any) -> Any:
            if event.message.role != "assistant":
                return None
            message = event.message.model_copy(deep=True)
            message.usage.cost.total = 0.123
            return {"message": message}

    class WrongRole:
        @hookimpl(trylast=True)
        def message_end(self, event: Any) -> Any:
            return {"message": {"role": "user", "content": "nope"}}

    host = await load_host(Price, WrongRole)
    final = await host.runner.emit("message_end", h.MessageEndEvent(message=assistant()))
    assert final.role == "assistant" and final.usage.cost.total == 0.123
    assert "must keep the role" in host.runner.errors[0].message


# =============================================================================== tools


async def test_hook_tool_execution_start() -> None:
    seen = await check_notification(
        "tool_execution_start", h.ToolExecutionStartEvent(tool_call_id="c1", tool_name="bash", args={"command": "ls"})
    )
    assert seen[0][1].args == {"command": "ls"}


async def test_hook_tool_execution_update() -> None:
    await check_notification(
        "tool_execution_update",
        h.ToolExecutionUpdateEvent(tool_call_id="c1", tool_name="bash", partial_result=h.ToolResult.text("..")),
    )


async def test_hook_tool_execution_end() -> None:
    await check_notification(
        "tool_execution_end",
        h.ToolExecutionEndEvent(tool_call_id="c1", tool_name="bash", result=h.ToolResult.text("ok"), duration_ms=1.5),
    )


async def test_hook_tool_call() -> None:
    class Rewrite:
        @hookimpl(tryfirst=True)
        def tool_call(self, event: Any) -> None:
            event.input["command"] = "set -e\n" + event.input["command"]

    class Gate:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            if "rm -rf" in event.input["command"]:
                return {"block": True, "reason": "dangerous"}
            return None

    class Crashes:
        @hookimpl(trylast=True)
        def tool_call(self, event: Any) -> Any:
            raise KeyError("policy table missing")

    host = await load_host(Gate, Rewrite)
    event = h.ToolCallEvent(tool_name="bash", tool_call_id="1", input={"command": "ls"})
    assert await host.runner.emit("tool_call", event) is None
    assert event.input["command"] == "set -e\nls"
    blocked = await host.runner.emit(
        "tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="2", input={"command": "rm -rf /"})
    )
    assert blocked.block and blocked.reason == "dangerous"
    # A raising handler fails closed: the call is blocked and the reason names the plugin.
    host = await load_host(Crashes)
    blocked = await host.runner.emit("tool_call", h.ToolCallEvent(tool_name="read", tool_call_id="3"))
    assert blocked.block and "'Crashes'" in blocked.reason and "policy table missing" in blocked.reason


async def test_hook_tool_result() -> None:
    class Redact:
        @hookimpl
        def tool_result(self, event: Any) -> Any:
            text = event.content[0].text.replace("s3cr3t", "***")
            return {"content": [{"type": "text", "text": text}], "details": {"redacted": True}}

    class MarkError:
        @hookimpl(trylast=True)
        def tool_result(self, event: Any) -> Any:
            assert event.details == {"redacted": True}
            return h.ToolResultPatch(is_error=True)

    host = await load_host(Redact, MarkError)
    event = h.ToolResultEvent(
        tool_name="bash",
        tool_call_id="1",
        content=[h.TextContent(text="key=s3cr3t")],
        structured_content={"key": "s3cr3t"},
    )
    out = await host.runner.emit("tool_result", event)
    assert out.content[0].text == "key=***" and out.details == {"redacted": True} and out.is_error
    assert out.structured_content is None  # replaced content drops the stale structured content


# =============================================================================== model requests


async def test_hook_context() -> None:
    class Window:
        @hookimpl
        def context(self, event: Any) -> Any:
            return {"messages": event.messages[-1:]}

    host = await load_host(Window)
    messages = [h.UserMessage(content="old"), h.UserMessage(content="new")]
    out = await host.runner.emit("context", h.ContextEvent(messages=messages))
    assert [m.content for m in out] == ["new"]


async def test_hook_context_with_system() -> None:
    class Drop:
        @hookimpl
        def context_with_system(self, event: Any) -> Any:
            return {"messages": [m for m in event.messages if m.role != "custom"]}

    host = await load_host(Drop)
    messages = [
        h.SystemMessage(content="sys"),
        h.CustomMessage(custom_type="x", content="c"),
        h.UserMessage(content="u"),
    ]
    out = await host.runner.emit("context_with_system", h.ContextWithSystemEvent(messages=messages))
    assert [m.role for m in out] == ["system", "user"]


async def test_hook_before_provider_headers() -> None:
    class Headers:
        @hookimpl
        def before_provider_headers(self, event: Any, ctx: Any) -> None:
            event.headers["x-session-id"] = "s1"
            event.headers["X-Title"] = None

    class Later:
        @hookimpl(tryfirst=True)
        def before_provider_headers(self, event: Any) -> None:
            event.headers["x-first"] = "1"

    host = await load_host(Headers, Later)
    event = h.BeforeProviderHeadersEvent(headers={"X-Title": "pi"}, provider="openai")
    assert await host.runner.emit("before_provider_headers", event) is None
    assert event.headers == {"X-Title": None, "x-session-id": "s1", "x-first": "1"}


async def test_hook_before_provider_request() -> None:
    class Temperature:
        @hookimpl
        def before_provider_request(self, event: Any) -> Any:
            return {"payload": {**event.payload, "temperature": 0}}

    class Inspect:
        @hookimpl(trylast=True)
        def before_provider_request(self, event: Any) -> None:
            self.seen = dict(event.payload)

    host = await load_host(Inspect, Temperature)
    out = await host.runner.emit("before_provider_request", h.BeforeProviderRequestEvent(payload={"model": "m"}))
    assert out == {"model": "m", "temperature": 0}
    inspect_plugin = next(r.plugin for r in host.records if r.name == "Inspect")
    assert inspect_plugin.seen == out


async def test_hook_after_provider_response() -> None:
    await check_notification(
        "after_provider_response", h.AfterProviderResponseEvent(status=429, headers={"retry-after": "2"})
    )


async def test_hook_provider_stream_event() -> None:
    await check_notification(
        "provider_stream_event", h.ProviderStreamEvent(provider="anthropic", data={"type": "ping"})
    )


async def test_hook_model_select() -> None:
    event = h.ModelSelectEvent(model=h.Model(id="b", provider="p"), previous_model=h.Model(id="a", provider="p"))
    seen = await check_notification("model_select", event)
    assert seen[0][1].model.ref == "p/b"


async def test_hook_thinking_level_select() -> None:
    await check_notification("thinking_level_select", h.ThinkingLevelSelectEvent(level="high", previous_level="low"))


# =============================================================================== user input


async def test_hook_user_bash() -> None:
    class Remote:
        async def exec(self, command: str, cwd: str, **options: Any) -> h.BashResult:
            return h.BashResult(output=f"remote: {command}", exit_code=0)

    class Ssh:
        @hookimpl
        def user_bash(self, event: Any) -> Any:
            return {"operations": Remote()}

    class Recorded:
        @hookimpl(tryfirst=True)
        def user_bash(self, event: Any) -> Any:
            if event.command == "date":
                return {"result": {"output": "Mon", "exitCode": 0}}
            return None

    class Broken:
        @hookimpl
        def user_bash(self, event: Any) -> Any:
            return {"operations": Remote(), "result": {"output": ""}}

    host = await load_host(Ssh, Recorded)
    out = await host.runner.emit("user_bash", h.UserBashEvent(command="date"))
    assert out.result.output == "Mon"
    out = await host.runner.emit("user_bash", h.UserBashEvent(command="ls"))
    assert (await out.operations.exec("ls", "/")).output == "remote: ls"
    host = await load_host(Ssh, Broken)  # Broken runs first and is invalid: fail closed
    out = await host.runner.emit("user_bash", h.UserBashEvent(command="ls"))
    assert isinstance(out, Blocked) and out.plugin == "Broken"


async def test_hook_bash_spawn(tmp_path: Any) -> None:
    from pi_core.testing import PiHarness, call

    exits: list[str] = []

    class Wrap:
        @hookimpl(tryfirst=True)
        def bash_spawn(self, event: Any) -> None:
            event.env["WRAPPED_BY"] = "Wrap"
            event.argv[-1] = "echo wrapped $WRAPPED_BY; " + event.argv[-1]
            event.on_exit.append(lambda: exits.append(f"{event.source}:{event.command}"))

    class Gate:
        @hookimpl
        async def bash_spawn(self, event: Any) -> Any:
            if "forbidden" in event.command:
                return {"block": True, "reason": "gate: not here"}
            return None

    class Broken:
        @hookimpl(trylast=True)
        def bash_spawn(self, event: Any) -> Any:
            if "crash" in event.command:
                raise OSError("no launcher")

    host = await load_host(Wrap, Gate, Broken)
    event = h.BashSpawnEvent(command="ls", argv=["sh", "-c", "ls"], cwd="/", env={})
    assert await host.runner.emit("bash_spawn", event) is None
    assert event.argv == ["sh", "-c", "echo wrapped $WRAPPED_BY; ls"] and event.env == {"WRAPPED_BY": "Wrap"}
    blocked = await host.runner.emit(
        "bash_spawn", h.BashSpawnEvent(command="forbidden", argv=["sh", "-c", "x"], cwd="/", env={})
    )
    assert isinstance(blocked, Blocked) and blocked.plugin == "Gate" and blocked.reason == "gate: not here"
    # A raising handler fails closed: the command does not start.
    failed = await host.runner.emit(
        "bash_spawn", h.BashSpawnEvent(command="crash", argv=["sh", "-c", "x"], cwd="/", env={})
    )
    assert isinstance(failed, Blocked) and failed.plugin == "Broken" and "no launcher" in failed.reason

    # In a session: the bash tool and the user's !command start what the handlers left.
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    pi = PiHarness(agent, project)
    try:
        pi.use(Wrap, Gate, Broken)
        pi.script(
            call("bash", command="echo tool"),
            call("bash", command="echo forbidden"),
            call("bash", command="crash"),
            "done",
        )
        run = await pi.aprompt("go")
        ok, gated, crashed = run.tool_results
        assert ok.text.rstrip() == "wrapped Wrap\ntool"
        assert gated.is_error and gated.text == "Blocked: gate: not here"
        assert crashed.is_error and "'Broken'" in crashed.text and "no launcher" in crashed.text
        user = await pi.session.execute_bash("echo mine")
        assert user.output == "wrapped Wrap\nmine\n" and user.exit_code == 0
        refused = await pi.session.execute_bash("echo forbidden")
        assert refused.output == "Blocked: gate: not here" and refused.cancelled
        # on_exit ran once per command, also for the blocked ones
        assert exits == ["tool:echo tool", "tool:echo forbidden", "tool:crash", "user:echo mine", "user:echo forbidden"]
    finally:
        if pi._runtime is not None:  # the harness's own loop is not the one running here
            await pi._runtime.dispose()
            pi._runtime = None
        pi.close()


async def test_bash_spawn_launch_runs_the_command_elsewhere(tmp_path: Any) -> None:
    """``event.launch`` replaces the local process: it sees the argv every handler left,
    streams output, returns the status; an abort cancels it."""
    import asyncio

    from pi_core.testing import PiHarness, call

    launched: list[list[str]] = []
    cancelled: list[str] = []

    async def remote(event: Any, on_data: Any) -> int:
        launched.append(list(event.argv))
        if "hang" in event.command:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(event.command)
                raise
        on_data(f"remote ran {event.command}\n".encode())
        return -9 if "kill" in event.command else 3 if "fail" in event.command else 0

    class Wrap:
        @hookimpl
        def bash_spawn(self, event: Any) -> None:
            event.argv[:0] = ["wrapper"]

    class Terminal:
        @hookimpl(trylast=True)
        def bash_spawn(self, event: Any) -> None:
            event.launch = remote

    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    pi = PiHarness(agent, project)
    try:
        pi.use(Wrap, Terminal)
        pi.script(
            call("bash", command="echo hi"),
            call("bash", command="fail"),
            call("bash", command="kill"),
            call("bash", command="hang", timeout=0.2),
            "done",
        )
        run = await pi.aprompt("go")
        ok, failed, killed, hung = run.tool_results
        assert ok.text == "remote ran echo hi\n" and not ok.is_error
        assert failed.is_error and "Command exited with code 3" in failed.text
        assert killed.is_error and "killed by signal SIGKILL" in killed.text
        assert hung.is_error and "timed out after 0.2 seconds" in hung.text and cancelled == ["hang"]
        assert launched[0][0] == "wrapper" and launched[0][-1] == "echo hi"
        user = await pi.session.execute_bash("echo mine")
        assert user.output == "remote ran echo mine\n" and user.exit_code == 0
    finally:
        if pi._runtime is not None:
            await pi._runtime.dispose()
            pi._runtime = None
        pi.close()


async def test_hook_file_access(tmp_path: Any) -> None:
    from pi_core.testing import PiHarness, call

    buffers: dict[str, str] = {}
    seen: list[tuple[str, str, str]] = []

    class Editor:
        """Serves reads from unsaved buffers and keeps writes in them."""

        @hookimpl
        def file_access(self, event: Any, ctx: Any) -> Any:
            seen.append((event.operation, event.tool_name, event.path.rsplit("/", 1)[-1]))
            if event.operation == "read":
                return {"content": buffers[event.path]} if event.path in buffers else None
            buffers[event.path] = event.content
            return {"handled": True}

    class Broken:
        @hookimpl(tryfirst=True)
        def file_access(self, event: Any) -> Any:
            if event.path.endswith("broken.txt"):
                raise OSError("editor gone")
            if event.path.endswith("invalid.txt"):
                return {"handled": True} if event.operation == "read" else {"content": "x"}
            return None

    host = await load_host(Editor, Broken)
    outcome = await host.runner.emit(
        "file_access", h.FileAccessEvent(operation="read", path="/x/broken.txt", tool_name="read")
    )
    assert isinstance(outcome, Blocked) and outcome.plugin == "Broken" and "editor gone" in outcome.reason
    outcome = await host.runner.emit(
        "file_access", h.FileAccessEvent(operation="write", path="/x/invalid.txt", content="y", tool_name="write")
    )
    assert isinstance(outcome, Blocked) and "handled=True" in outcome.reason
    outcome = await host.runner.emit(
        "file_access", h.FileAccessEvent(operation="read", path="/x/none.txt", tool_name="read")
    )
    assert outcome is None  # nobody took it: pi reads the local file

    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    (project / "a.txt").write_text("on disk\n")
    (project / "b.txt").write_text("x = 1\n")
    (project / "broken.txt").write_text("data\n")
    buffers[str(project / "a.txt")] = "unsaved buffer\n"
    pi = PiHarness(agent, project)
    try:
        pi.use(Editor, Broken)
        pi.script(
            call("read", path="a.txt"),
            call("edit", path="a.txt", edits=[{"oldText": "unsaved", "newText": "edited"}]),
            call("write", path="new/c.txt", content="fresh\n"),
            call("edit", path="b.txt", edits=[{"oldText": "1", "newText": "2"}]),
            call("read", path="broken.txt"),
            "done",
        )
        run = await pi.aprompt("go")
        read, edited, written, local_edit, broken = run.tool_results
        assert read.text == "unsaved buffer\n"
        assert not edited.is_error and buffers[str(project / "a.txt")] == "edited buffer\n"
        assert (project / "a.txt").read_text() == "on disk\n"  # the editor wrote, not pi
        assert not written.is_error and buffers[str(project / "new" / "c.txt")] == "fresh\n"
        assert not (project / "new" / "c.txt").exists()
        # b.txt is in no buffer: read locally, the write still goes through the editor
        assert buffers[str(project / "b.txt")] == "x = 2\n" and "firstChangedLine" in local_edit.details
        assert broken.is_error and "'Broken'" in broken.text and "editor gone" in broken.text
        assert ("read", "read", "a.txt") in seen and ("write", "edit", "a.txt") in seen
        assert ("write", "write", "c.txt") in seen
    finally:
        if pi._runtime is not None:
            await pi._runtime.dispose()
            pi._runtime = None
        pi.close()


async def test_hook_file_access_block() -> None:
    """``block`` refuses the operation: a ``Blocked`` with the handler's reason (not a
    failure), the walk stops (an editor after the gate never serves the file), and
    ``hook_outcome`` says ``blocked``."""
    served: list[str] = []
    outcomes: list[tuple[str, str, str | None]] = []

    class Gate:
        @hookimpl(tryfirst=True)
        def file_access(self, event: Any) -> Any:
            if event.path.endswith("secret.txt"):
                return h.FileAccessResult(block=True, reason="policy: not this file")
            if event.path.endswith("bare.txt"):
                return {"block": True, "content": "ignored"}  # a block wins over a result
            return None

    class Editor:
        @hookimpl
        def file_access(self, event: Any) -> Any:
            served.append(event.path)
            return {"content": "buffer"} if event.operation == "read" else {"handled": True}

    class Audit:
        @hookimpl
        def hook_outcome(self, event: Any) -> None:
            outcomes.append((event.plugin, event.outcome, event.message))

    host = await load_host(Gate, Editor, Audit)
    for operation in ("read", "write"):
        event = h.FileAccessEvent(operation=operation, path="/x/secret.txt", content="y", tool_name=operation)
        outcome = await host.runner.emit("file_access", event)
        assert outcome == Blocked("Gate", "policy: not this file")
    outcome = await host.runner.emit(
        "file_access", h.FileAccessEvent(operation="read", path="/x/bare.txt", tool_name="read")
    )
    assert outcome == Blocked("Gate", "blocked by plugin 'Gate'")
    assert served == []
    outcome = await host.runner.emit(
        "file_access", h.FileAccessEvent(operation="read", path="/x/ok.txt", tool_name="read")
    )
    assert isinstance(outcome, h.FileAccessResult) and outcome.content == "buffer" and not outcome.block
    assert outcomes[:3] == [("Gate", "blocked", "policy: not this file")] * 2 + [
        ("Gate", "blocked", "blocked by plugin 'Gate'")
    ]
    assert outcomes[3] == ("Editor", "handled", None)


async def test_hook_input() -> None:
    def suffix(n: int) -> type:
        return type(
            f"P{n}", (), {"input": hookimpl(lambda self, event: {"action": "transform", "text": f"{event.text}[{n}]"})}
        )

    class Raises:
        @hookimpl
        def input(self, event: Any) -> Any:
            raise ValueError("bad")

    class Handled:
        @hookimpl(trylast=True)
        def input(self, event: Any) -> Any:
            return {"action": "handled"} if event.text == "ping" else None

    host = await load_host(suffix(2), Raises, suffix(1))  # call order: P1, Raises, P2
    out = await host.runner.emit("input", h.InputEvent(text="X"))
    assert out.action == "transform" and out.text == "X[1][2]"
    assert host.runner.errors[0].plugin == "Raises"
    host = await load_host(Handled)
    assert (await host.runner.emit("input", h.InputEvent(text="ping"))).action == "handled"
    assert (await host.runner.emit("input", h.InputEvent(text="pong"))).action == "continue"


# =============================================================================== observing plugins


async def test_hook_hook_outcome() -> None:
    seen: list[tuple[str, str, str, str | None, str | None]] = []

    class Audit:
        @hookimpl
        def hook_outcome(self, event: Any, ctx: Any) -> None:
            assert isinstance(ctx, ExtensionContextImpl)
            seen.append((event.hook, event.plugin, event.outcome, event.message, event.tool_call_id))
            raise RuntimeError("audit broke")  # reported, and never reported to itself

    class Gate:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            return {"block": True, "reason": "no rm"} if "rm" in event.input["command"] else None

    class Crashes:
        @hookimpl
        def turn_start(self) -> None:
            raise ValueError("oops")

    class Redact:
        @hookimpl
        def tool_result(self, event: Any) -> Any:
            return {"content": [{"type": "text", "text": "***"}]} if event.tool_name == "read" else None

    class Cancel:
        @hookimpl
        def session_before_switch(self) -> Any:
            return {"cancel": True}

    class Handle:
        @hookimpl
        def input(self, event: Any) -> Any:
            return {"action": "handled"} if event.text == "/x" else {"action": "continue"}

    class NoCurl:
        @hookimpl
        def bash_spawn(self, event: Any) -> Any:
            return {"block": True, "reason": "no curl"} if "curl" in event.command else None

    host = await load_host(Audit, Gate, Crashes, Redact, Cancel, Handle, NoCurl)
    runner = host.runner
    assert (
        await runner.emit("tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="c1", input={"command": "ls"}))
        is None
    )
    await runner.emit("tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="c2", input={"command": "rm x"}))
    await runner.emit("turn_start", h.TurnStartEvent())
    await runner.emit("tool_result", h.ToolResultEvent(tool_name="bash", tool_call_id="c3"))  # None: not reported
    await runner.emit("tool_result", h.ToolResultEvent(tool_name="read", tool_call_id="c4"))
    await runner.emit("session_before_switch", h.SessionBeforeSwitchEvent(reason="new"))
    await runner.emit("input", h.InputEvent(text="hello"))  # "continue": not reported
    await runner.emit("input", h.InputEvent(text="/x"))
    await runner.emit(
        "bash_spawn",
        h.BashSpawnEvent(command="curl x", argv=["sh", "-c", "curl x"], cwd="/", env={}, tool_call_id="c6"),
    )
    assert seen[1][3] is not None and seen[1][3].startswith("handler raised ValueError: oops")
    assert seen == [
        ("tool_call", "Gate", "blocked", "no rm", "c2"),
        ("turn_start", "Crashes", "failed", seen[1][3], None),
        ("tool_result", "Redact", "transformed", None, "c4"),
        ("session_before_switch", "Cancel", "cancelled", None, None),
        ("input", "Handle", "handled", None, None),
        ("bash_spawn", "NoCurl", "blocked", "no curl", "c6"),
    ]
    # Each failure of the audit handler is an extension error, and none fired hook_outcome again.
    assert [e.plugin for e in runner.errors].count("Audit") == len(seen)
    # A fail-closed gate: the failure is the outcome (the call is blocked as well).
    seen.clear()

    class Broken:
        @hookimpl
        def tool_call(self) -> Any:
            return 42

    host = await load_host(Audit, Broken)
    blocked = await host.runner.emit("tool_call", h.ToolCallEvent(tool_name="read", tool_call_id="c5"))
    assert blocked.block
    assert seen == [("tool_call", "Broken", "failed", seen[0][3], "c5")] and "returned int" in (seen[0][3] or "")
    # Without a hook_outcome handler nothing is built.
    host = await load_host(Gate)
    assert not host.runner.has_handlers("hook_outcome")


@pytest.mark.parametrize("name", sorted(h.EVENTS))
async def test_every_event_with_no_handlers_is_a_no_op(name: str) -> None:
    host = await load_host()
    assert not host.runner.has_handlers(name)
