"""pluggable-pi-mcp in real sessions on the scripted model."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_testkit import (
    TOOL_COUNT,
    WAIT,
    CaptureUI,
    alive,
    calls,
    connected,
    manager_of,
    read_pids,
    result_texts,
    start,
    stdio,
    tool_names,
    tools_changed,
    write_mcp_json,
)

from pi_hookspecs import SystemMessage, ToolDefinition, ToolResult, hookimpl
from pi_mcp import McpPlugin


def system_sections(runtime: Any) -> dict[str, Any]:
    """The system prompt sections as the transcript records them (patches applied)."""
    sections: dict[str, Any] = {}
    for entry in runtime.session.sm.get_branch():
        message = getattr(entry, "message", None)
        if isinstance(message, SystemMessage) and message.sections:
            for name, text in message.sections.items():
                if text is None:
                    sections.pop(name, None)
                else:
                    sections[name] = text
    return sections


def declared(runtime: Any) -> set[str]:
    names: set[str] = set()
    for entry in runtime.session.sm.get_branch():
        message = getattr(entry, "message", None)
        if isinstance(message, SystemMessage):
            names |= {t.name for t in message.tools_added or []}
            names -= {t.name for t in message.tools_removed or []}
    return names


class Orchestrator:
    """Stands in for pluggable-pi-codemode / pluggable-pi-tool-search: a model-only tool that declares
    ``reaches_tools`` and calls other tools through ``ctx.execute_tool``."""

    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def register_tools(self, register: Any) -> None:
        async def execute(args: dict[str, Any], ctx: Any) -> ToolResult:
            result = await ctx.execute_tool(args["tool"], args.get("args", {}))
            return ToolResult(
                content=result.content, structured_content=result.structured_content, is_error=result.is_error
            )

        register(
            ToolDefinition(
                name=self.name,
                description=f"{self.name} stand-in",
                parameters={"type": "object", "properties": {"tool": {"type": "string"}, "args": {"type": "object"}}},
                execute=execute,
                exposure="model-only",
                default_active=False,
                reaches_tools=lambda args: "all",
            )
        )


async def test_a_direct_tool_round_trips_in_a_real_session(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct", description="Fixture tools")})
    runtime, script = await start(pi_project, calls(("mcp__fx__add", {"a": 1, "b": 2})), "three")
    try:
        assert await runtime.session.prompt("add 1 and 2") == "started"
        assert result_texts(script, 1) == ['{\n  "total": 3\n}']
        assert runtime.session.get_last_assistant_text() == "three"
        assert "mcp__fx__add" in declared(runtime)  # declared in the first request
        assert "mcp_servers" not in system_sections(runtime)  # direct tools need no listing
        definition = runtime.session.tools.get("mcp__fx__add")
        assert definition is not None and definition.exposure == "direct"
        assert definition.output_schema and definition.output_schema["properties"]["total"]["type"] == "integer"
        assert definition.namespace is not None and definition.namespace.name == "mcp__fx"
        assert definition.namespace.description == "Fixture tools"
        lookup = runtime.session.tools.get("mcp__fx__lookup")
        assert lookup is not None and lookup.annotations is not None
        assert lookup.annotations.read_only_hint is True and lookup.annotations.title == "Look up"
        assert "mcp__fx__weird_name" in tool_names(runtime)
    finally:
        await runtime.dispose()


async def test_policy_plugins_gate_and_patch_mcp_calls(pi_agent_dir: Path, pi_project: Path) -> None:
    seen: list[str] = []

    class Policy:
        @hookimpl
        def tool_call(self, event: Any, ctx: Any) -> Any:
            hints = next((d.annotations for d in ctx.get_all_tools() if d.name == event.tool_name), None)
            seen.append(f"{event.tool_name}:{getattr(hints, 'read_only_hint', None)}")
            if event.tool_name == "mcp__fx__grow":
                return {"block": True, "reason": "growing is not allowed here"}
            return None

        @hookimpl
        def tool_result(self, event: Any) -> Any:
            if event.tool_name == "mcp__fx__echo":
                return {"content": [{"type": "text", "text": event.content[0].text.upper()}]}
            return None

    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct")})
    runtime, script = await start(
        pi_project,
        calls(
            ("mcp__fx__grow", {"tool": "fresh"}),
            ("mcp__fx__echo", {"text": "quiet"}),
            ("mcp__fx__lookup", {"key": "k"}),
        ),
        "done",
        plugins=(McpPlugin, Policy),
    )
    try:
        await runtime.session.prompt("go")
        assert result_texts(script, 1) == ["growing is not allowed here", "QUIET", "value of k"]
        assert seen == ["mcp__fx__grow:None", "mcp__fx__echo:None", "mcp__fx__lookup:True"]
        assert "mcp__fx__fresh" not in tool_names(runtime)  # the blocked call never reached the server
    finally:
        await runtime.dispose()


async def test_codemode_exposure_reaches_tools_through_an_orchestrator(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(description="Fixture tools for scripts", timeout=20)})
    runtime, script = await start(
        pi_project,
        calls(("codemode", {"tool": "mcp__fx__add", "args": {"a": 20, "b": 22}})),
        "done",
        plugins=(McpPlugin, Orchestrator("codemode")),
    )
    try:
        manager = manager_of(runtime)
        assert runtime.session.tools.get("codemode") is not None
        # the first prompt does not wait for codemode servers; the codemode call waits for them
        await runtime.session.prompt("use the fixture")
        assert result_texts(script, 1) == ['{\n  "total": 42\n}']
        assert tool_names(runtime)["mcp__fx__add"] == "deferred"
        assert "mcp__fx__add" not in runtime.session.tools.active_names
        assert "mcp__fx__add" not in declared(runtime)
        await asyncio.wait_for(asyncio.gather(*manager._tasks), WAIT)  # the post-startup checks
        assert "codemode" in runtime.session.tools.active_names  # activated for the codemode server
        section = system_sections(runtime)["mcp_servers"]
        assert "- fx (mcp__fx): Fixture tools for scripts" in section and "codemode scripts" in section
        # a user who turns codemode off keeps it off, also when the server's tools change
        runtime.session.set_active_tools([n for n in runtime.session.tools.active_names if n != "codemode"])
        manager._on_tools(manager.find("fx"))
        assert "codemode" not in runtime.session.tools.active_names
    finally:
        await runtime.dispose()


async def test_codemode_is_not_switched_on_when_the_user_deselected_it(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio()})
    runtime, _ = await start(pi_project, plugins=(McpPlugin, Orchestrator("codemode")), tools=["-codemode"])
    try:
        await connected(runtime, "fx")
        assert "codemode" not in runtime.session.tools.active_names
    finally:
        await runtime.dispose()


async def test_deferred_servers_activate_tool_search_and_unreachable_tools_warn(
    pi_agent_dir: Path, pi_project: Path
) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="deferred")})
    runtime, _ = await start(pi_project, plugins=(McpPlugin, Orchestrator("tool_search")))
    try:
        await connected(runtime, "fx")
        await asyncio.wait_for(asyncio.gather(*manager_of(runtime)._tasks), WAIT)
        assert "tool_search" in runtime.session.tools.active_names
    finally:
        await runtime.dispose()

    # autoEnableCodemode: false keeps codemode off; then nothing can reach the tools: a warning
    ui = CaptureUI()
    write_mcp_json(pi_agent_dir, {"fx": stdio()}, autoEnableCodemode=False)
    runtime, _ = await start(pi_project, plugins=(McpPlugin, Orchestrator("codemode")), ui=ui)
    try:
        await connected(runtime, "fx")
        await asyncio.wait_for(asyncio.gather(*manager_of(runtime)._tasks), WAIT)
        assert "codemode" not in runtime.session.tools.active_names
        assert any("neither codemode nor tool_search is active" in m for m in ui.texts("warning"))
    finally:
        await runtime.dispose()


async def test_tool_exposure_per_tool(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(
        pi_agent_dir,
        {"fx": stdio(exposure="hidden", toolExposure={"echo": "direct", "l*": "codemode", "lookup": "deferred"})},
    )
    runtime, _ = await start(pi_project)
    try:
        await connected(runtime, "fx")
        exposures = tool_names(runtime)
        assert exposures["mcp__fx__echo"] == "direct" and "mcp__fx__echo" in runtime.session.tools.active_names
        assert exposures["mcp__fx__lookup"] == "deferred" and exposures["mcp__fx__log"] == "deferred"
        assert exposures["mcp__fx__add"] == "hidden"
        assert manager_of(runtime).exposures["fx"]["mcp__fx__log"] == "codemode"
    finally:
        await runtime.dispose()


async def test_list_changed_adds_and_withdraws_tools(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct")})
    runtime, script = await start(
        pi_project,
        calls(("mcp__fx__grow", {"tool": "fresh"})),
        "grown",
        calls(("mcp__fx__fresh", {})),
        "ok",
        calls(("mcp__fx__shrink", {"tool": "fresh"})),
        "gone",
    )
    try:
        connection = await connected(runtime, "fx")
        changed = tools_changed(connection)
        await runtime.session.prompt("grow")
        await asyncio.wait_for(changed.wait(), WAIT)
        assert tool_names(runtime)["mcp__fx__fresh"] == "direct"
        await runtime.session.prompt("call it")
        assert result_texts(script, 3)[-1] == "I am fresh"
        assert "mcp__fx__fresh" in declared(runtime)
        changed = tools_changed(connection)
        await runtime.session.prompt("shrink")
        await asyncio.wait_for(changed.wait(), WAIT)
        assert tool_names(runtime)["mcp__fx__fresh"] == "hidden"
        assert "mcp__fx__fresh" not in runtime.session.tools.active_names
    finally:
        await runtime.dispose()


async def test_resource_tools(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio("--page-size", "2", exposure="direct")})
    runtime, script = await start(
        pi_project,
        calls(
            ("list_mcp_resources", {}),
            ("list_mcp_resources", {"server": "fx"}),
            ("list_mcp_resource_templates", {}),
            ("read_mcp_resource", {"server": "fx", "uri": "file:///notes.txt"}),
            ("read_mcp_resource", {"server": "fx", "uri": "file:///data.bin"}),
            ("read_mcp_resource", {"server": "nope", "uri": "x"}),
        ),
        "done",
    )
    try:
        await runtime.session.prompt("resources")
        import json

        everything, page, templates, text, binary, missing = result_texts(script, 1)
        assert [r["uri"] for r in json.loads(everything)["resources"]] == [
            "file:///notes.txt",
            "file:///pixel.png",
            "file:///data.bin",
        ]  # three pages merged, the MCP App resource left out
        first = json.loads(page)
        assert first["server"] == "fx" and len(first["resources"]) == 2 and first["nextCursor"] == "2"
        assert json.loads(templates)["resourceTemplates"][0]["uriTemplate"] == "file:///items/{item}"
        assert text == "alpha\nbeta"
        path = binary.split(" saved to ")[1].rstrip("]")
        assert Path(path).read_bytes() == b"\x00\x01\x02binary"
        assert 'no connected MCP server "nope" offers resources' in missing
        definition = runtime.session.tools.get("read_mcp_resource")
        assert definition is not None and definition.exposure == "direct"
        assert definition.annotations is not None and definition.annotations.read_only_hint is True
    finally:
        await runtime.dispose()


async def test_other_plugins_register_servers(pi_agent_dir: Path, pi_project: Path) -> None:
    outcomes: list[str] = []

    class Provider:
        @hookimpl
        def register_mcp_servers(self, register: Any) -> None:
            register("extra", stdio(exposure="direct", description="From a plugin"))
            register("fx", {"command": "shadowed-by-mcp-json"})
            for name, config in (("bad name", {"command": "x"}), ("broken", {"type": "sse", "url": "http://x"})):
                try:
                    register(name, config)
                except ValueError as exc:
                    outcomes.append(str(exc))

    class Greedy:
        @hookimpl
        def register_mcp_servers(self, register: Any) -> None:
            register("extra", {"command": "mine"})

    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct")})
    ui = CaptureUI()
    runtime, _ = await start(pi_project, plugins=(McpPlugin, Provider, Greedy), ui=ui)
    try:
        manager = manager_of(runtime)
        await connected(runtime, "extra")
        extra = manager.entry("extra")
        assert extra.source == "plugin Provider" and manager.find("extra").state == "connected"
        assert "mcp__extra__echo" in runtime.session.tools.active_names
        assert manager.entry("fx").source == str(pi_agent_dir / "mcp.json")
        assert [s.name for s in manager.config.shadowed] == ["fx"]
        # pi checks the name and the kind of server; pluggable-pi-mcp the rest of the entry
        assert outcomes == ['MCP server "bad name": a server name holds only letters, digits, "_" and "-"']
        assert any(e.startswith('plugin Provider: MCP server "broken": type "sse"') for e in manager.config.errors)
        assert manager.entry("broken") is None
        assert any(
            d.plugin == "Greedy"
            and 'register_mcp_servers failed: ValueError: MCP server "extra" is already registered by plugin "Provider"'
            in d.message
            for d in runtime.session.plugins.diagnostics
        )
        listed = [(s.name, s.plugin) for s in manager.ctx.get_mcp_servers()]
        assert listed == [("extra", "Provider"), ("fx", "Provider"), ("broken", "Provider")]
    finally:
        await runtime.dispose()


async def test_project_servers_need_trust(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"user": stdio(exposure="direct")})
    write_mcp_json(pi_project / ".pi", {"proj": stdio(exposure="direct")})
    runtime, _ = await start(pi_project, approve=False)
    try:
        assert set(manager_of(runtime).connections) == {"user"}
    finally:
        await runtime.dispose()
    runtime, _ = await start(pi_project, approve=True)
    try:
        assert set(manager_of(runtime).connections) == {"user", "proj"}
        await connected(runtime, "proj")
        assert "mcp__proj__echo" in tool_names(runtime)
    finally:
        await runtime.dispose()


async def test_failures_are_reported_and_do_not_hold_other_servers(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(
        pi_agent_dir,
        {
            "good": stdio(exposure="direct"),
            "stuck": stdio("--hang", timeout=30),
            "late": stdio("--hang", timeout=0.5),
            "bad": {"type": "sse", "url": "http://x/sse"},
        },
    )
    ui = CaptureUI()
    runtime, script = await start(pi_project, calls(("mcp__good__echo", {"text": "hi"})), "ok", ui=ui)
    try:
        started = time.monotonic()
        await runtime.session.prompt("go")
        assert time.monotonic() - started < 8  # the first prompt waits only for direct servers
        assert result_texts(script, 1) == ["hi"]
        assert manager_of(runtime).find("stuck").state == "connecting"
        late = await connected(runtime, "late")
        assert late.state == "failed" and "did not finish starting within 0.5s" in (late.error or "")
        warnings = ui.texts("warning")
        assert any(w.startswith(f'MCP config: {pi_agent_dir / "mcp.json"}: server "bad": type "sse"') for w in warnings)
    finally:
        await runtime.dispose()
    assert manager_of_closed(runtime)


def manager_of_closed(runtime: Any) -> bool:
    from mcp_testkit import plugin_of

    return plugin_of(runtime).manager is None


async def test_shutdown_stops_servers_and_their_children(pi_agent_dir: Path, pi_project: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    write_mcp_json(pi_agent_dir, {"fx": stdio("--pidfile", str(pids), "--child", exposure="direct")})
    runtime, _ = await start(pi_project)
    await connected(runtime, "fx")
    running = read_pids(pids)
    assert len(running) == 2 and all(alive(p) for p in running)
    await runtime.dispose()
    assert [p for p in running if alive(p)] == []


async def test_the_mcp_command(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct"), "off": stdio(enabled=False)})
    ui = CaptureUI()
    runtime, _ = await start(pi_project, ui=ui)
    try:
        await connected(runtime, "fx")
        await runtime.session.run_command("mcp", "")
        status = ui.texts("info")[-1]
        assert f"fx: connected, {TOOL_COUNT} tools, resources (direct) {pi_agent_dir / 'mcp.json'}" in status
        assert "    mcp__fx__echo" in status and "off: disabled" in status
        await runtime.session.run_command("mcp", "reconnect fx")
        assert ui.texts("info")[-1] == f'Reconnected to MCP server "fx" ({TOOL_COUNT} tools).'
        assert manager_of(runtime).find("fx").connects == 2
        await runtime.session.run_command("mcp", "login fx")
        assert "does not use OAuth" in ui.texts("error")[-1]
        await runtime.session.run_command("mcp", "reconnect nope")
        assert ui.texts("error")[-1] == 'No MCP server named "nope".'
        await runtime.session.run_command("mcp", "frobnicate")
        assert ui.texts("error")[-1].startswith("Usage: /mcp")
    finally:
        await runtime.dispose()


async def test_no_mcp_flag_disables_everything(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct")})

    class Ctx:
        def get_flag(self, name: str) -> Any:
            return name == "no-mcp"

    plugin = McpPlugin()
    await plugin.session_start(None, Ctx())
    assert plugin.manager is None and plugin.disabled is not None


async def test_the_mcp_servers_section_uses_the_server_instructions(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio("--instructions", "Tickets of the team.\nMore text.")})
    runtime, _ = await start(pi_project, "ok")
    try:
        await connected(runtime, "fx")
        await runtime.session.prompt("hi")
        section = system_sections(runtime).get("mcp_servers")
        assert (
            section is not None
            and "- fx (mcp__fx): Tickets of the team. Tools: call them from codemode scripts." in section
        )
        definition = runtime.session.tools.get("mcp__fx__echo")
        assert definition.namespace.instructions == "Tickets of the team.\nMore text."
    finally:
        await runtime.dispose()


async def test_a_crashed_server_reconnects_on_the_next_call_in_a_session(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="direct")})
    ui = CaptureUI()
    runtime, script = await start(
        pi_project, calls(("mcp__fx__crash", {})), "crashed", calls(("mcp__fx__echo", {"text": "back"})), "ok", ui=ui
    )
    try:
        connection = await connected(runtime, "fx")
        await runtime.session.prompt("crash it")
        assert 'MCP server "fx" disconnected' in result_texts(script, 1)[0]
        assert connection.state == "disconnected"
        await runtime.session.run_command("mcp", "")
        assert "fx: disconnected" in ui.texts("info")[-1]
        # the reconnect runs inside a tool call and registers the tools again, as this plugin's
        await runtime.session.prompt("again")
        assert result_texts(script, 3)[-1] == "back"
        assert connection.state == "connected" and connection.connects == 2
        assert not [w for w in ui.texts("warning") if "not registered" in w]
        assert tool_names(runtime)["mcp__fx__echo"] == "direct"
    finally:
        await runtime.dispose()


async def test_a_resumed_session_declares_the_mcp_tools_it_had_loaded(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="deferred")})
    runtime, _ = await start(pi_project, "loaded")
    try:
        await connected(runtime, "fx")
        runtime.session.tools.activate(["mcp__fx__lookup"])  # what tool_search does
        await runtime.session.prompt("load it")
        assert "mcp__fx__lookup" in declared(runtime)
        session_file = runtime.session.session_file
    finally:
        await runtime.dispose()
    resumed, _ = await start(pi_project, session=session_file)
    try:
        await connected(resumed, "fx")  # registered later than the transcript was read
        assert "mcp__fx__lookup" in resumed.session.tools.active_names
        assert "mcp__fx__echo" not in resumed.session.tools.active_names
    finally:
        await resumed.dispose()


async def test_tool_search_finds_a_deferred_server_tool_and_the_next_request_calls_it(
    pi_agent_dir: Path, pi_project: Path
) -> None:
    """pluggable-pi-mcp with the real pluggable-pi-tool-search: the deferred server switches tool_search on, the
    model's search loads the tool, and the next request of the same run declares and calls it."""
    from pi_tool_search import ToolSearchPlugin

    from pi_core.ai import current_tools

    write_mcp_json(pi_agent_dir, {"fx": stdio(exposure="deferred")})
    runtime, script = await start(
        pi_project,
        calls(("tool_search", {"query": "add two numbers", "limit": 1})),
        calls(("mcp__fx__add", {"a": 2, "b": 3})),
        "five",
        plugins=(McpPlugin, ToolSearchPlugin),
    )
    try:
        await runtime.session.prompt("add 2 and 3")
        first, second, third = ([t.name for t in current_tools(c.messages)] for c in script.contexts)
        assert "tool_search" in first and "mcp__fx__add" not in first
        assert "mcp__fx__add" in second and "mcp__fx__add" in third
        assert "mcp__fx__add" in result_texts(script, 1)[0]
        assert result_texts(script, 2)[-1] == '{\n  "total": 5\n}'
        assert runtime.session.get_last_assistant_text() == "five"
    finally:
        await runtime.dispose()


# a server being closed when the session ends is closed to the end (its process not left to the loop's end)
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
async def test_servers_registered_and_unregistered_during_the_session(pi_agent_dir: Path, pi_project: Path) -> None:
    changes: list[list[Any]] = []
    listed: list[list[tuple[str, str]]] = []

    class Toggle:  # a plugin's commands add and remove its server (ctx.register_mcp_server …)
        @hookimpl
        def register_commands(self, register: Any) -> None:
            register("late-on", self.on)
            register("late-off", self.off)

        def on(self, args: str, ctx: Any) -> None:
            name = args.strip() or "late"
            ctx.register_mcp_server(name, stdio(exposure="direct", description="Registered later"))
            listed.append([(s.name, s.plugin) for s in ctx.get_mcp_servers()])

        def off(self, args: str, ctx: Any) -> None:
            listed.append([("removed", str(ctx.unregister_mcp_server("late")))])

    class Watcher:  # a plugin that follows registrations (as another MCP connector would)
        @hookimpl
        def mcp_servers_change(self, event: Any) -> None:
            changes.append(list(event.servers))

        @hookimpl
        def register_commands(self, register: Any) -> None:
            register("steal", self.steal)

        def steal(self, args: str, ctx: Any) -> None:
            try:
                ctx.unregister_mcp_server("late")
            except ValueError as exc:
                listed.append([("refused", str(exc))])

    runtime, _ = await start(pi_project, plugins=(McpPlugin, Toggle, Watcher))
    try:
        manager = manager_of(runtime)
        assert manager.connections == {} and changes == []
        await runtime.session.prompt("/late-on")
        deadline = time.monotonic() + WAIT  # it connects in the background, right away
        while time.monotonic() < deadline and getattr(manager.find("late"), "state", None) != "connected":
            await asyncio.sleep(0.05)
        assert manager.find("late").state == "connected"
        assert manager.entry("late").source == "plugin Toggle"
        assert "mcp__late__echo" in runtime.session.tools.active_names
        assert listed == [[("late", "Toggle")]]
        assert [(s.name, s.plugin) for s in changes[0]] == [("late", "Toggle")]
        assert changes[0][0].config["exposure"] == "direct"

        first = manager.find("late")
        await runtime.session.prompt("/late-on second")  # another server: the first stays connected
        assert listed[-1] == [("late", "Toggle"), ("second", "Toggle")]
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and getattr(manager.find("second"), "state", None) != "connected":
            await asyncio.sleep(0.05)
        assert manager.find("second").state == "connected"
        assert manager.find("late") is first and first.state == "connected"
        assert "mcp__second__echo" in runtime.session.tools.active_names

        await runtime.session.prompt("/steal")
        assert listed[-1] == [("refused", 'MCP server "late" is registered by plugin "Toggle", not "Watcher"')]
        await runtime.session.prompt("/late-off")
        assert listed[-1] == [("removed", "True")]
        for _ in range(50):
            if manager.find("late") is None:
                break
            await asyncio.sleep(0.05)
        assert manager.find("late") is None and [s.name for s in changes[-1]] == ["second"]
        definition = next(d for d in manager.ctx.get_all_tools() if d.name == "mcp__late__echo")
        assert definition.exposure == "hidden"  # unreachable from now on
        await runtime.session.prompt("/late-off")
        assert listed[-1] == [("removed", "False")]
    finally:
        await runtime.dispose()
