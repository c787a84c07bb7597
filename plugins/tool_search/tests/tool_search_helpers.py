"""Helpers for tool_search tests: real sessions on pi's scripted model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pi_tool_search import ToolSearchPlugin

from pi_core.ai import FauxResponse, FauxScript, current_system_prompt, current_tools, faux_model
from pi_core.runtime import SessionRuntime, create_agent_session
from pi_hookspecs import LlmContext, ToolDefinition, ToolExposure, ToolNamespace

GITHUB = ToolNamespace(name="mcp__github", aliases=["github"], description="GitHub: issues, pull requests, code")
TICKETS = ToolNamespace(name="mcp__tickets", aliases=["tickets"], description="Helpdesk support tickets")

SERVER_TOOLS: list[tuple[str, str, ToolNamespace]] = [
    ("mcp__github__create_issue", "Create a new issue in a GitHub repository.", GITHUB),
    ("mcp__github__list_issues", "List issues in a GitHub repository, with filters.", GITHUB),
    ("mcp__github__close_issue", "Close an issue in a GitHub repository.", GITHUB),
    ("mcp__github__merge_pull_request", "Merge a pull request.", GITHUB),
    ("mcp__github__create_pull_request", "Create a new pull request in a GitHub repository.", GITHUB),
    ("mcp__github__search_code", "Search for code across GitHub repositories.", GITHUB),
    ("mcp__tickets__createTicket", "Open a new support ticket for a customer.", TICKETS),
    ("mcp__tickets__assignTicket", "Assign a ticket to a support agent.", TICKETS),
]


class Recorder:
    """Server tools whose calls are recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tool(
        self, name: str, description: str, namespace: ToolNamespace | None = None, exposure: ToolExposure = "deferred"
    ) -> ToolDefinition:
        def execute(args: dict[str, Any], ctx: Any) -> str:
            self.calls.append((name, dict(args)))
            return f"{name} done"

        return ToolDefinition(
            name=name,
            description=description,
            parameters={"type": "object", "properties": {"title": {"type": "string", "description": "A title"}}},
            execute=execute,
            exposure=exposure,
            namespace=namespace,
        )

    def server(self, exposure: ToolExposure = "deferred") -> list[ToolDefinition]:
        return [self.tool(name, description, namespace, exposure) for name, description, namespace in SERVER_TOOLS]


def call(tool: str, **arguments: Any) -> FauxResponse:
    return FauxResponse(tool_calls=[(tool, arguments)])


async def start(
    cwd: Path,
    *responses: Any,
    plugins: Sequence[Any] = (ToolSearchPlugin,),
    **options: Any,
) -> tuple[SessionRuntime, FauxScript]:
    script = FauxScript(list(responses), fallback="(no more scripted replies)")
    options.setdefault("installed_plugins", False)
    runtime = await create_agent_session(cwd=cwd, model=faux_model(script), plugins=list(plugins), **options)
    return runtime, script


def declared(request: LlmContext) -> list[str]:
    """The tool names a request declared to the model."""
    return [tool.name for tool in current_tools(request.messages)]


def system_prompt(request: LlmContext) -> str:
    return current_system_prompt(request.messages) or ""


def plugin_of(runtime: SessionRuntime) -> ToolSearchPlugin:
    [found] = [p for p in runtime.session.plugins.pm.get_plugins() if isinstance(p, ToolSearchPlugin)]
    return found


def tool_results(runtime: SessionRuntime) -> list[Any]:
    return [m for m in runtime.session.messages if m.role == "toolResult"]


def text_of(message: Any) -> str:
    return "".join(getattr(block, "text", "") for block in message.content)
