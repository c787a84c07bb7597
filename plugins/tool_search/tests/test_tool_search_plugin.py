"""tool_search in real sessions on the scripted model."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
from pi_tool_search import TOOL_NAME, ToolSearchPlugin
from tool_search_helpers import (
    GITHUB,
    Recorder,
    call,
    declared,
    plugin_of,
    start,
    system_prompt,
    text_of,
    tool_results,
)

from pi_core.ai import FauxResponse
from pi_hookspecs import ToolDefinition, hookimpl

CREATE_ISSUE = "mcp__github__create_issue"
ON = [f"+{TOOL_NAME}"]
"""The user's selection that turns tool_search on (``--tools +tool_search``)."""
SNIPPET = "Find and load tools that are not loaded yet"
GUIDELINE = "call tool_search with a few words"


@pytest.fixture
def cwd(pi_agent_dir: Path, pi_project: Path) -> Path:
    return pi_project


def assert_prompt_lines(request: Any, present: bool = True) -> None:
    """tool_search's snippet and guidelines are (or are not) in the request's system prompt."""
    prompt = system_prompt(request)
    assert (SNIPPET in prompt) is present and (GUIDELINE in prompt) is present


# ---------------------------------------------------------------------- registration & activation


async def test_tool_search_is_model_only_inactive_and_reaches_every_tool(cwd: Path) -> None:
    runtime, script = await start(cwd, "hi")
    registry = runtime.session.tools
    definition = registry.get(TOOL_NAME)
    assert definition is not None and definition.exposure == "model-only" and not definition.default_active
    assert definition.reaches_tools is not None and definition.reaches_tools({"query": "x"}) == "all"
    assert set(definition.parameters["properties"]) == {"query", "limit"}
    assert definition.parameters["required"] == ["query"]
    assert TOOL_NAME not in registry.active_names and TOOL_NAME not in registry.callable_names()
    await runtime.session.prompt("hello")
    assert TOOL_NAME not in declared(script.contexts[0])
    await runtime.dispose()


@pytest.mark.parametrize("exposure", ["deferred", "codemode", "direct", "hidden"])
async def test_registered_tools_alone_do_not_activate_tool_search(cwd: Path, exposure: Any) -> None:
    runtime, script = await start(cwd, "one", "two", custom_tools=Recorder().server(exposure))
    await runtime.session.prompt("hello")
    await runtime.session.prompt("again")
    assert TOOL_NAME not in runtime.session.tools.active_names
    for request in script.contexts:
        assert TOOL_NAME not in declared(request)
        assert_prompt_lines(request, present=False)
    await runtime.dispose()


class LateServer:
    """Registers a deferred tool while a run is going on, as an MCP server that connects
    late does (its ``connect`` tool stands for the connection finishing). With
    ``activate``, it also switches ``tool_search`` on, as pluggable-pi-mcp does for its deferred
    servers, unless the user deselected it."""

    def __init__(self, activate: bool = False) -> None:
        self.recorder = Recorder()
        self.activate = activate

    @hookimpl
    def register_tools(self, register: Any) -> None:
        def connect(args: dict[str, Any], ctx: Any) -> str:
            ctx.register_tool(self.recorder.tool(CREATE_ISSUE, "Create a new issue in a GitHub repository.", GITHUB))
            if self.activate and not ctx.is_tool_deselected(TOOL_NAME):
                ctx.set_active_tools([*ctx.get_active_tools(), TOOL_NAME])
            return "connected"

        register(ToolDefinition(name="connect", description="Connect the GitHub server.", execute=connect))


class PromptTimeServer:
    """Registers its deferred tools when the first prompt starts (pluggable-pi-mcp waits for its
    servers there)."""

    def __init__(self) -> None:
        self.recorder = Recorder()

    @hookimpl
    def before_agent_start(self, ctx: Any) -> None:
        if not any(t.name == CREATE_ISSUE for t in ctx.get_all_tools()):
            ctx.register_tool(self.recorder.tool(CREATE_ISSUE, "Create a new issue.", GITHUB))


@pytest.mark.parametrize(
    ("server", "responses"),
    [(LateServer, [call("connect"), "connected", "two"]), (PromptTimeServer, ["one", "two"])],
    ids=["during-a-run", "when-the-prompt-starts"],
)
async def test_deferred_tools_registered_later_do_not_activate_tool_search(
    cwd: Path, server: Any, responses: list[Any]
) -> None:
    runtime, script = await start(cwd, *responses, plugins=[ToolSearchPlugin, server])
    await runtime.session.prompt("hello")
    await runtime.session.prompt("again")
    assert runtime.session.tools.get(CREATE_ISSUE) is not None
    assert TOOL_NAME not in runtime.session.tools.active_names
    assert all(TOOL_NAME not in declared(c) for c in script.contexts)
    assert_prompt_lines(script.contexts[-1], present=False)
    await runtime.dispose()


@pytest.mark.parametrize("how", ["defaultTools", "--tools"])
async def test_the_user_turns_it_on_with_its_prompt_lines(cwd: Path, pi_agent_dir: Path, how: str) -> None:
    options: dict[str, Any] = {}
    if how == "defaultTools":
        (pi_agent_dir / "settings.json").write_text(json.dumps({"defaultTools": [f"+{TOOL_NAME}"]}))
    else:
        options["tools"] = [f"+{TOOL_NAME}"]
    runtime, script = await start(cwd, call(TOOL_NAME, query="anything"), "ok", **options)
    assert TOOL_NAME in runtime.session.tools.active_names
    assert "read" in runtime.session.tools.active_names  # "+" adds to the default tools
    await runtime.session.prompt("hello")
    assert TOOL_NAME in declared(script.contexts[0])
    assert_prompt_lines(script.contexts[0])
    [search] = tool_results(runtime)
    assert text_of(search).startswith("There are no tools left to load")
    await runtime.dispose()


async def test_a_plugin_that_activates_it_during_a_run_gets_it_declared_on_the_next_request(cwd: Path) -> None:
    runtime, script = await start(
        cwd,
        call("connect"),
        call(TOOL_NAME, query="open an issue"),
        call(CREATE_ISSUE, title="Bug"),
        "done",
        "later",
        plugins=[ToolSearchPlugin, LateServer(activate=True)],
    )
    await runtime.session.prompt("report the bug")
    requests = [declared(c) for c in script.contexts]
    assert TOOL_NAME not in requests[0]
    assert TOOL_NAME in requests[1] and CREATE_ISSUE not in requests[1]
    assert CREATE_ISSUE in requests[2]
    assert [m.tool_name for m in tool_results(runtime)] == ["connect", TOOL_NAME, CREATE_ISSUE]
    assert text_of(tool_results(runtime)[-1]) == f"{CREATE_ISSUE} done"
    assert_prompt_lines(script.contexts[0], present=False)
    # the system prompt of a run is settled when it starts: the prompt lines join at the next prompt
    await runtime.session.prompt("anything else?")
    assert TOOL_NAME in declared(script.contexts[-1])
    assert_prompt_lines(script.contexts[-1])
    await runtime.dispose()


class StartupActivator:
    """Switches tool_search on when the session starts or when a prompt starts, the two
    places where pluggable-pi-mcp switches it on for its deferred servers."""

    def __init__(self, hook: str) -> None:
        self.hook = hook

    def _activate(self, ctx: Any) -> None:
        active = ctx.get_active_tools()
        if TOOL_NAME not in active and not ctx.is_tool_deselected(TOOL_NAME):
            ctx.set_active_tools([*active, TOOL_NAME])

    @hookimpl
    def session_start(self, ctx: Any) -> None:
        if self.hook == "session_start":
            self._activate(ctx)

    @hookimpl
    def before_agent_start(self, ctx: Any) -> None:
        if self.hook == "before_agent_start":
            self._activate(ctx)


@pytest.mark.parametrize("hook", ["session_start", "before_agent_start"])
async def test_a_plugin_that_activates_it_at_startup_gets_it_with_its_prompt_lines(cwd: Path, hook: str) -> None:
    runtime, script = await start(
        cwd,
        call(TOOL_NAME, query="create an issue", limit=1),
        "ok",
        plugins=[ToolSearchPlugin, StartupActivator(hook)],
        custom_tools=Recorder().server(),
    )
    await runtime.session.prompt("hello")
    assert TOOL_NAME in declared(script.contexts[0]) and CREATE_ISSUE not in declared(script.contexts[0])
    assert_prompt_lines(script.contexts[0])
    [search] = tool_results(runtime)
    assert search.details["loaded"] == [CREATE_ISSUE]
    assert CREATE_ISSUE in declared(script.contexts[1])
    await runtime.dispose()


@pytest.mark.parametrize(
    "selection",
    [{"exclude_tools": [TOOL_NAME]}, {"tools": [f"-{TOOL_NAME}"]}, {"tools": ["read", "bash"]}, {"no_tools": True}],
    ids=["excluded", "minus-entry", "allowlist", "no-tools"],
)
async def test_a_plugin_that_respects_the_users_deselection_leaves_it_off(cwd: Path, selection: dict[str, Any]) -> None:
    runtime, script = await start(
        cwd,
        "hi",
        plugins=[ToolSearchPlugin, StartupActivator("session_start")],
        custom_tools=Recorder().server(),
        **selection,
    )
    await runtime.session.prompt("hello")
    assert TOOL_NAME not in runtime.session.tools.active_names
    assert TOOL_NAME not in declared(script.contexts[0])
    assert_prompt_lines(script.contexts[0], present=False)
    await runtime.dispose()


@pytest.mark.parametrize("tools", [None, [f"+{TOOL_NAME}"]], ids=["not-selected", "selected"])
async def test_the_entry_point_loads_the_plugin(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, tools: list[str] | None
) -> None:
    [entry] = [e for e in importlib.metadata.entry_points(group="pi.extensions") if e.name == "tool_search"]
    assert entry.value == "pi_tool_search:ToolSearchPlugin" and entry.load() is ToolSearchPlugin
    monkeypatch.setenv("PI_EXTENSIONS", "tool_search")
    runtime, _ = await start(
        cwd,
        "hi",
        plugins=(),
        installed_plugins=True,
        custom_tools=Recorder().server(),
        tools=tools,
    )
    assert any(isinstance(p, ToolSearchPlugin) for p in runtime.session.plugins.pm.get_plugins())
    assert runtime.session.tools.get(TOOL_NAME) is not None
    assert (TOOL_NAME in runtime.session.tools.active_names) is (tools is not None)
    await runtime.dispose()


# ---------------------------------------------------------------------- searching


async def test_search_activates_the_match_for_the_next_request_of_the_run(cwd: Path) -> None:
    recorder = Recorder()
    runtime, script = await start(
        cwd,
        call(TOOL_NAME, query="create an issue", limit=2),
        call(CREATE_ISSUE, title="Crash on start"),
        "Filed.",
        tools=ON,
        custom_tools=recorder.server(),
    )
    await runtime.session.prompt("file a bug about the crash")
    first, second, third = (declared(c) for c in script.contexts)
    assert TOOL_NAME in first and CREATE_ISSUE not in first
    assert CREATE_ISSUE in second and CREATE_ISSUE in third
    assert recorder.calls == [(CREATE_ISSUE, {"title": "Crash on start"})]
    search, created = tool_results(runtime)
    assert not search.is_error
    text = text_of(search)
    assert text.startswith("Loaded 2 tools") and f"- {CREATE_ISSUE}: Create a new issue in a GitHub repository." in text
    assert search.details["loaded"][0] == CREATE_ISSUE and len(search.details["loaded"]) == 2
    assert text_of(created) == f"{CREATE_ISSUE} done"
    # the core recorded the activation as a system patch in the transcript
    lines = [json.loads(line) for line in Path(runtime.session.session_file or "").read_text().splitlines()]
    patches = [e["message"] for e in lines if e["type"] == "message" and e["message"]["role"] == "system"]
    assert [t["name"] for t in patches[-1]["toolsAdded"]] == search.details["loaded"]
    await runtime.dispose()


async def test_limit_one_loads_only_the_best_match(cwd: Path) -> None:
    runtime, _ = await start(
        cwd, call(TOOL_NAME, query="merge the PR", limit=1), "ok", tools=ON, custom_tools=Recorder().server()
    )
    await runtime.session.prompt("merge it")
    [search] = tool_results(runtime)
    assert search.details["loaded"] == ["mcp__github__merge_pull_request"]
    assert text_of(search).startswith("Loaded 1 tool; call it directly")
    await runtime.dispose()


async def test_nothing_matches_gives_a_clear_message_and_activates_nothing(cwd: Path) -> None:
    runtime, _ = await start(
        cwd, call(TOOL_NAME, query="galaxy spaceship"), "ok", tools=ON, custom_tools=Recorder().server()
    )
    active = runtime.session.tools.active_names
    await runtime.session.prompt("fly")
    [search] = tool_results(runtime)
    assert not search.is_error
    assert text_of(search).startswith('No tool matches "galaxy spaceship" among the 8 tools that are not loaded yet.')
    assert runtime.session.tools.active_names == active
    await runtime.dispose()


async def test_loaded_tools_are_not_offered_again(cwd: Path) -> None:
    runtime, _ = await start(
        cwd,
        call(TOOL_NAME, query="close issue", limit=1),
        call(TOOL_NAME, query="close issue", limit=1),
        "ok",
        tools=ON,
        custom_tools=Recorder().server(),
    )
    await runtime.session.prompt("close it")
    first, second = tool_results(runtime)
    assert first.details["loaded"] == ["mcp__github__close_issue"]
    assert second.details["loaded"] and second.details["loaded"] != first.details["loaded"]
    await runtime.dispose()


async def test_with_nothing_left_to_load_the_message_says_so(cwd: Path) -> None:
    recorder = Recorder()
    only = recorder.tool(CREATE_ISSUE, "Create a new issue.", GITHUB)
    runtime, _ = await start(
        cwd,
        call(TOOL_NAME, query="issue"),
        call(TOOL_NAME, query="issue"),
        "ok",
        tools=ON,
        custom_tools=[only],
    )
    await runtime.session.prompt("go")
    first, second = tool_results(runtime)
    assert first.details["loaded"] == [CREATE_ISSUE]
    assert text_of(second).startswith("There are no tools left to load")
    await runtime.dispose()


async def test_parallel_searches_keep_both_activations(cwd: Path) -> None:
    both = FauxResponse(
        tool_calls=[
            (TOOL_NAME, {"query": "merge pull request", "limit": 1}),
            (TOOL_NAME, {"query": "assign ticket", "limit": 1}),
        ]
    )
    runtime, script = await start(cwd, both, "ok", tools=ON, custom_tools=Recorder().server())
    await runtime.session.prompt("do both")
    assert {"mcp__github__merge_pull_request", "mcp__tickets__assignTicket"} <= set(declared(script.contexts[1]))
    await runtime.dispose()


async def test_bad_arguments_are_errors_the_model_can_read(cwd: Path) -> None:
    runtime, _ = await start(
        cwd,
        call(TOOL_NAME, query="   "),
        call(TOOL_NAME, query="issue", limit=11),
        call(TOOL_NAME),
        "ok",
        tools=ON,
        custom_tools=Recorder().server(),
    )
    active = runtime.session.tools.active_names
    await runtime.session.prompt("go")
    blank, too_many, missing = tool_results(runtime)
    assert blank.is_error and "query must name what you need" in text_of(blank)
    assert too_many.is_error and "limit" in text_of(too_many)
    assert missing.is_error and "query" in text_of(missing)
    assert runtime.session.tools.active_names == active
    await runtime.dispose()


async def test_excluded_tools_are_never_loaded(cwd: Path) -> None:
    runtime, _ = await start(
        cwd,
        call(TOOL_NAME, query="merge pull request", limit=1),
        "ok",
        tools=ON,
        custom_tools=Recorder().server(),
        exclude_tools=["mcp__github__merge_pull_request"],
    )
    await runtime.session.prompt("merge")
    [search] = tool_results(runtime)
    # the excluded tool takes no place in the results: the next best one is loaded
    assert search.details["loaded"] == ["mcp__github__create_pull_request"]
    await runtime.dispose()


class Server:
    """Registers and withdraws deferred tools at run time, as pluggable-pi-mcp does when a server
    connects or announces a changed tool list."""

    def __init__(self) -> None:
        self.recorder = Recorder()

    @hookimpl
    def session_start(self, ctx: Any) -> None:
        for tool in self.recorder.server():
            ctx.register_tool(tool)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        def withdraw(args: dict[str, Any], ctx: Any) -> str:
            [tool] = [t for t in ctx.get_all_tools() if t.name == args["name"]]
            ctx.register_tool(tool.model_copy(update={"exposure": "hidden"}))
            return "withdrawn"

        def add(args: dict[str, Any], ctx: Any) -> str:
            ctx.register_tool(self.recorder.tool(args["name"], args["description"], GITHUB))
            return "added"

        register(ToolDefinition(name="withdraw", description="Withdraw a tool.", execute=withdraw))
        register(ToolDefinition(name="add_tool", description="Add a tool.", execute=add))


async def test_the_index_follows_registered_and_withdrawn_tools(cwd: Path) -> None:
    runtime, _ = await start(
        cwd,
        call("withdraw", name="mcp__github__merge_pull_request"),
        call(TOOL_NAME, query="merge pull request", limit=1),
        call("add_tool", name="mcp__github__list_commits", description="List the commits of a branch."),
        call(TOOL_NAME, query="list commits", limit=1),
        "ok",
        plugins=[ToolSearchPlugin, Server],
        tools=ON,
    )
    plugin = plugin_of(runtime)
    assert "mcp__github__merge_pull_request" in plugin.index
    assert TOOL_NAME not in plugin.index and "read" not in plugin.index  # only deferred / codemode tools
    await runtime.session.prompt("go")
    results = tool_results(runtime)
    merge_search, commits_search = results[1], results[3]
    assert "mcp__github__merge_pull_request" not in merge_search.details["loaded"]
    assert "mcp__github__merge_pull_request" not in plugin.index
    assert commits_search.details["loaded"] == ["mcp__github__list_commits"]
    await runtime.dispose()


# ---------------------------------------------------------------------- resume & fork


async def test_resume_and_fork_keep_the_loaded_tools_declared(cwd: Path) -> None:
    recorder = Recorder()
    runtime, _ = await start(
        cwd,
        call(TOOL_NAME, query="create an issue", limit=1),
        "Loaded it.",
        tools=ON,
        custom_tools=recorder.server(),
    )
    await runtime.session.prompt("get ready to file issues")
    path = runtime.session.session_file
    assert path is not None
    last_entry = runtime.session.sm.get_leaf_id()
    await runtime.dispose()

    resumed, script = await start(
        cwd,
        call(CREATE_ISSUE, title="Resumed"),
        "done",
        custom_tools=recorder.server(),
        session=path,
    )  # no --tools this time: the transcript brings tool_search back too
    assert CREATE_ISSUE in resumed.session.tools.active_names and TOOL_NAME in resumed.session.tools.active_names
    await resumed.session.prompt("file it now")
    assert {CREATE_ISSUE, TOOL_NAME} <= set(declared(script.contexts[0]))
    assert recorder.calls == [(CREATE_ISSUE, {"title": "Resumed"})]

    assert last_entry is not None
    await resumed.fork(last_entry, position="at")
    assert CREATE_ISSUE in resumed.session.tools.active_names
    await resumed.dispose()

    fresh, _ = await start(cwd, "hi", tools=ON, custom_tools=recorder.server())
    assert CREATE_ISSUE not in fresh.session.tools.active_names
    await fresh.dispose()
