"""The pieces of a session that need no process: dialogs as permission requests,
plans, MCP server configs."""

from __future__ import annotations

import asyncio
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    RequestPermissionResponse,
    SseMcpServer,
)

from pi_acp.convert import plan_entries, tool_kind, tool_title
from pi_acp.session import (
    Capabilities,
    ClientError,
    EditorUI,
    Link,
    _current_call,
    client_reason,
    mcp_config,
)


class Client:
    def __init__(self, *answers: str | None, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.asked: list[Any] = []
        self.delay = delay

    async def request_permission(self, session_id: str, tool_call: Any, options: Any) -> RequestPermissionResponse:
        self.asked.append((tool_call, [o.option_id for o in options]))
        if self.delay:
            await asyncio.sleep(self.delay)
        answer = self.answers.pop(0)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))


async def test_confirm_asks_once_per_question_when_always_allowed_and_select_maps_options() -> None:
    client = Client("always", "reject", "option-1")
    ui = EditorUI(Link(client=client, capabilities=Capabilities(), cwd="/", session_id="s"))
    _current_call.set(("call_1", "bash"))
    assert await ui.confirm("Run it?", "rm -rf build") is True
    _current_call.set(("call_2", "bash"))
    assert await ui.confirm("Run it?", "rm -rf dist") is True  # "always": not asked again
    assert await ui.confirm("Push?", "git push") is False
    assert [asked[0].tool_call_id for asked in client.asked] == ["call_1", "call_2"]
    assert client.asked[0][1] == ["allow", "always", "reject"]
    _current_call.set(None)
    assert await ui.select("Pick one", ["red", "green"]) == "green"
    assert client.asked[-1][0].title == "Pick one" and client.asked[-1][0].tool_call_id.startswith("pi-dialog-")
    assert await ui.input("Name?") is None and await ui.editor("Text") is None


async def test_a_dialog_that_times_out_answers_its_default() -> None:
    ui = EditorUI(Link(client=Client("allow", delay=5), capabilities=Capabilities(), cwd="/", session_id="s"))
    assert await ui.confirm("Slow?", timeout=0.05) is False


def test_plans_mcp_configs_and_tool_names() -> None:
    plan = plan_entries(
        {"plan": ["write tests", {"content": "ship", "status": "in_progress", "priority": "high"}, {"nope": 1}]}
    )
    assert plan is not None and [(e.content, e.status, e.priority) for e in plan] == [
        ("write tests", "pending", "medium"),
        ("ship", "in_progress", "high"),
    ]
    assert plan_entries({"other": 1}) is None and plan_entries(None) is None
    stdio = McpServerStdio(name="fs", command="npx", args=["server"], env=[EnvVariable(name="TOKEN", value="t")])
    assert mcp_config(stdio) == {"command": "npx", "args": ["server"], "env": {"TOKEN": "t"}, "exposure": "direct"}
    http = HttpMcpServer(
        type="http", name="web", url="https://x.example/mcp", headers=[HttpHeader(name="A", value="b")]
    )
    assert mcp_config(http) == {"url": "https://x.example/mcp", "headers": {"A": "b"}, "exposure": "direct"}
    assert mcp_config(SseMcpServer(type="sse", name="old", url="https://x.example/sse", headers=[])) is None
    assert (
        tool_kind("grep") == "search"
        and tool_kind("mcp__a__b", read_only=True) == "fetch"
        and tool_kind("x") == "other"
    )
    assert tool_title("bash", {"command": "pytest -q\necho done"}) == "`pytest -q`"
    assert tool_title("read", {"path": "a.py"}) == "Read a.py" and tool_title("mcp__gh__search", {}) == "search (gh)"


def test_client_errors_carry_the_clients_reason() -> None:
    assert client_reason(RequestError.internal_error({"details": "no terminals here"})) == (
        "Internal error (no terminals here)"
    )
    assert client_reason(RequestError.resource_not_found("/a/b.txt")) == "Resource not found (uri: /a/b.txt)"
    assert client_reason(RequestError(-32000, "denied", "by policy")) == "denied (by policy)"
    assert client_reason(RequestError(-32000, "", None)) == "error -32000"
    assert client_reason(RequestError(-32000, "same", {"message": "same"})) == "same"
    assert len(client_reason(RequestError(-32000, "long", {"details": "x" * 5000}))) == 1000
    error = ClientError("terminal/create", RequestError.internal_error({"details": "off"}))
    assert str(error) == "the editor answered terminal/create with an error: Internal error (off)"
