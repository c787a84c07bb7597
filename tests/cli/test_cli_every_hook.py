"""Every hook fires in the real ``pi`` command (a plugin loaded with ``-e`` logs each
call to a file), not only in unit tests of the runner."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir, configure_local_endpoint, run_pi, text_reply, tool_reply
from wire_server import WireServer, use_server

import pi_hookspecs as h

TOUR_PLUGIN = '''
import asyncio
import os

from pi_hookspecs import EVENTS, hookimpl, tool

LOG = os.environ["HOOK_LOG"]


def log(name):
    with open(LOG, "a") as fh:
        fh.write(name + "\\n")


async def wait_for(flag, seconds=10.0):
    for _ in range(int(seconds * 100)):
        if flag:
            return
        await asyncio.sleep(0.01)


class Tour:
    def __init__(self):
        self.compactions = 0

    @hookimpl
    def register_tools(self, register):
        log("register_tools")

        @tool
        def progress(ctx) -> str:
            """Report progress, then finish."""
            ctx.update("working")
            return "progress done"

        register(progress)

    @hookimpl
    def register_commands(self, register):
        log("register_commands")
        register("tour-settings", self.settings)
        register("tour-compact", self.compact)
        register("tour-tree", self.tree)
        register("tour-replace", self.replace)
        register("tour-ask", self.ask)
        register("tour-mcp", self.mcp)

    @hookimpl
    def register_shortcuts(self, register):
        log("register_shortcuts")
        register("ctrl+shift+y", lambda ctx: None, description="the tour's key")

    @hookimpl
    def register_message_renderers(self, register):
        log("register_message_renderers")

    @hookimpl
    def register_entry_renderers(self, register):
        log("register_entry_renderers")

    @hookimpl
    def register_tool_renderers(self, register):
        log("register_tool_renderers")

    @hookimpl
    def register_markdown_transformers(self, register):
        log("register_markdown_transformers")

    @hookimpl
    def register_mcp_servers(self, register):
        log("register_mcp_servers")

    @hookimpl
    def register_flags(self, register):
        log("register_flags")
        register("tour-flag", description="a flag of the tour plugin")

    @hookimpl
    def register_providers(self, register):
        log("register_providers")

    @hookimpl
    def register_virtual_models(self, register):
        log("register_virtual_models")

    @hookimpl
    def add_hookspecs(self, add):
        log("add_hookspecs")

    @hookimpl
    def register_cli_commands(self, register):
        log("register_cli_commands")
        register("tour-cli", lambda args: log("tour-cli-ran:" + ",".join(args)) or 0, help="the tour's command")

    async def settings(self, args, ctx):
        ctx.set_session_name("tour")
        ctx.set_thinking_level("high")
        await ctx.set_model(ctx.model)

    def mcp(self, args, ctx):
        # a server registered during the session: mcp_servers_change (this plugin's
        # handler of it makes it one that connects MCP servers)
        ctx.register_mcp_server("tour-server", {"command": "tour-mcp-server"})

    async def ask(self, args, ctx):
        # a dialog nobody answers in time: ui_prompt_start, then ui_prompt_end
        await ctx.ui.confirm("Continue the tour?", timeout=0.05)

    async def compact(self, args, ctx):
        for _ in range(2):
            done = []
            ctx.compact(on_complete=lambda entry: done.append(entry),
                        on_error=lambda exc: (done.append(exc), log("compact-error:" + str(exc).replace(" ", "_"))))
            await wait_for(done)

    async def tree(self, args, ctx):
        first_user = next(e for e in ctx.session_manager.get_branch()
                          if e.type == "message" and e.message.role == "user")
        await ctx.navigate_tree(first_user.id)

    async def replace(self, args, ctx):
        entry = ctx.session_manager.get_branch()[-1]

        async def then(new_ctx):
            await new_ctx.new_session()

        await ctx.fork(entry.id, position="at", with_session=then)

    def session_before_compact_impl(self, event):
        self.compactions += 1
        if self.compactions == 1:
            return {"cancel": True}
        prep = event.preparation
        return {"compaction": {"summary": "tour summary", "firstKeptEntryId": prep.first_kept_entry_id,
                               "tokensBefore": prep.tokens_before}}


def _handler(name):
    def handler(self, event, ctx):
        log(name)
        if name == "session_before_compact":
            return self.session_before_compact_impl(event)
        return None

    handler.__name__ = name
    return hookimpl(handler)


for _name in EVENTS:
    setattr(Tour, _name, _handler(_name))
'''


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def test_every_hook_fires_in_a_real_pi_run(wire: WireServer, tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    (cwd / ".pi").mkdir(parents=True)
    (cwd / ".pi" / "settings.json").write_text(json.dumps({"defaultThinkingLevel": "low"}))  # needs trust
    plugin = tmp_path / "tour.py"
    plugin.write_text(textwrap.dedent(TOUR_PLUGIN))
    log = tmp_path / "hooks.log"
    model = configure_local_endpoint(wire.url, reasoning=True)
    (agent_dir() / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 10}}))
    wire.enqueue(
        tool_reply("progress", {}),
        tool_reply("read", {"path": ".pi/settings.json"}, "call_2"),  # file_access: the read tool's text
        text_reply("All done, the progress tool reported back. " * 3),
    )
    out = run_pi(
        "-p",
        "-e",
        str(plugin),
        "--model",
        model,
        "--tour-flag",
        "/tour-settings",
        "/tour-mcp",
        "go",
        "/tour-compact",
        "/tour-tree",
        "/tour-replace",
        cwd=cwd,
        env={"HOOK_LOG": str(log)},
    )
    assert out.returncode == 0, out.stderr
    # plugin subcommands come from installed or user plugins: install the tour as a user file
    user_ext = agent_dir() / "extensions"
    user_ext.mkdir(parents=True, exist_ok=True)
    (user_ext / "tour.py").write_text(plugin.read_text())
    sub = run_pi("tour-cli", "a", "b", cwd=cwd, env={"HOOK_LOG": str(log), "PI_EXTENSIONS": "tour"})
    assert sub.returncode == 0, sub.stderr
    # user_bash fires for a user's shell command: the RPC bash command
    from rpc_client import RpcProcess

    with RpcProcess("-e", str(plugin), "--no-session", cwd=cwd, env={"HOOK_LOG": str(log), "PI_EXTENSIONS": ""}) as rpc:
        assert rpc.ok("bash", command="echo from-user")["output"].strip() == "from-user"
        rpc.command("prompt", message="/tour-ask")
        rpc.wait_for(lambda r: r.get("type") == "extension_ui_request" and r.get("method") == "confirm")
        rpc.ok("get_state")  # after the dialog timed out and the command ended
        rpc.close_stdin()
        assert rpc.wait() == 0
    # cache_warming_decision: a model that declares an 11-second cache lifetime gets its
    # refresh decision one second after the request
    cached = configure_local_endpoint(wire.url, model="cached-model", promptCache={"short": 11})
    wire.enqueue(text_reply("cached answer"), text_reply(""))
    env = {"HOOK_LOG": str(log), "PI_EXTENSIONS": ""}
    with RpcProcess("-e", str(plugin), "--no-session", "--model", cached, cwd=cwd, env=env) as rpc:
        rpc.prompt_and_settle("hello")
        deadline = time.monotonic() + 10
        while "cache_warming_decision" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        rpc.close_stdin()
        assert rpc.wait() == 0
    fired = set(log.read_text().split())
    assert "tour-cli-ran:a,b" in fired
    expected = set(h.EVENTS) | set(h.REGISTRATION_HOOKS)
    missing = sorted(expected - fired)
    assert not missing, (
        f"hooks that never fired in a real run: {missing}\nstderr:\n{out.stderr}\nlog:\n{log.read_text()}"
    )
