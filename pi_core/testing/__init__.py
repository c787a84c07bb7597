"""Testing pi plugins: a pytest plugin (entry point ``pytest11``) and a harness.

Installing pluggable-pi makes the ``pi`` fixture available to every pytest run::

    from pi_core.testing import call

    def test_policy_blocks_rm(pi):
        pi.use(MyPolicy)                                  # the plugin under test
        pi.script(call("bash", command="rm -rf /"), "I could not do that.")
        run = pi.prompt("clean the disk")
        assert run.tool_results[0].is_error
        assert "not allowed" in run.tool_results[0].text
        assert run.requests[1].messages[-1].role == "toolResult"   # what the model saw
        assert run.text == "I could not do that."

The model is pi's scripted model: each request takes the next scripted reply — a
string (a text answer), :func:`call` / :func:`calls` (tool calls), :data:`ECHO` (repeat
the last tool result as text), a :class:`~pi_core.ai.FauxResponse`, or a callable
receiving the request. Everything else is the real runtime: plugin loading, hooks,
built-in tools, the session file (in a temporary agent directory).

The harness is synchronous (it runs its own event loop), so plugin tests need nothing
but pytest; ``await pi.aprompt(...)`` is there for async tests.

Before the first prompt a test may also set:

* user settings with ``pi.configure(**keys)``, the project's ``.pi/settings.json`` with
  ``pi.configure_project(**keys)``, and trust the project with ``pi.trust_project()``
  (like ``pi --approve``; untrusted, the project's settings and plugins are ignored);
* what the command line would: plugin flags with ``pi.flag("dry-run")`` /
  ``pi.flag("level", "high")`` (``ctx.get_flag``), other options of
  :func:`~pi_core.runtime.create_agent_session` with ``pi.set_options(tools=[...])``;
* the mode with ``pi.set_mode("tui")`` (``ctx.mode``; ``tui``/``rpc``/``acp`` make
  ``ctx.has_ui`` true);
* dialog answers with ``pi.ui.answer("confirm", True)``; every ``ctx.ui`` call is
  recorded in ``pi.ui.calls`` (:class:`~pi_core.testing.ui.RecordingUI`)::

    pi.use(MyPlugin).set_mode("tui")
    pi.ui.answer("select", "staging")
    pi.prompt("deploy")
    assert pi.ui.of("select")[0].args["options"] == ["staging", "production"]
    assert ("info", "deployed to staging") in pi.ui.notifications
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    LlmContext,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
)

from ..ai import FauxResponse, FauxScript, current_system_prompt, current_tools, faux_model
from ..runtime import create_agent_session
from .ui import RecordingUI, UICall

ECHO = "__pi_echo_last_tool_result__"
"""A scripted reply that answers with the text of the last tool result."""


def call(tool: str, /, **arguments: Any) -> Any:
    """A scripted reply calling one tool."""
    return FauxResponse(tool_calls=[(tool, arguments)])


def calls(*pairs: tuple[str, dict[str, Any]]) -> Any:
    """A scripted reply calling several tools at once (``("read", {"path": "a"})`` …)."""
    return FauxResponse(tool_calls=list(pairs))


def _echo(context: LlmContext) -> Any:
    for message in reversed(context.messages):
        if isinstance(message, ToolResultMessage):
            return FauxResponse(text="".join(b.text for b in message.content if isinstance(b, TextContent)))
    return FauxResponse(text="(no tool result to echo)")


@dataclass
class ToolOutcome:
    """A tool result as the model received it."""

    tool_name: str
    tool_call_id: str
    is_error: bool
    text: str
    details: Any
    message: ToolResultMessage


@dataclass
class Run:
    """What one prompt did."""

    events: list[Any] = field(default_factory=list)
    requests: list[LlmContext] = field(default_factory=list)
    """Every model request of the run, exactly as the provider received it."""
    messages: list[Any] = field(default_factory=list)
    """The messages the run added to the session."""
    disposition: str = ""

    @property
    def event_types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def tool_results(self) -> list[ToolOutcome]:
        return [
            ToolOutcome(
                m.tool_name,
                m.tool_call_id,
                m.is_error,
                "".join(b.text for b in m.content if isinstance(b, TextContent)),
                m.details,
                m,
            )
            for m in self.messages
            if isinstance(m, ToolResultMessage)
        ]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for m in self.messages if isinstance(m, AssistantMessage) for c in m.tool_calls()]

    @property
    def text(self) -> str:
        """The text of the last assistant message."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text()
        return ""


class PiHarness:
    """One pi session for a test: plugins, a scripted model, a project folder."""

    def __init__(self, agent_dir: Path, project: Path) -> None:
        self.agent_dir = agent_dir
        self.project = project
        self.plugins: list[Any] = []
        self.tools: list[Any] = []
        self.settings: dict[str, Any] = {}
        """User settings (``settings.json`` in the agent folder), set with :meth:`configure`."""
        self.project_settings: dict[str, Any] = {}
        """The project's ``.pi/settings.json``, set with :meth:`configure_project`."""
        self.options: dict[str, Any] = {}
        """Keyword arguments of :func:`~pi_core.runtime.create_agent_session` (see
        :meth:`set_options`, :meth:`trust_project`, :meth:`flag`, :meth:`set_mode`)."""
        self.ui = RecordingUI()
        """``ctx.ui``: records every call and answers dialogs from :meth:`RecordingUI.answer`."""
        self._replies: list[Any] = []
        self._script: Any = None
        self._runtime: Any = None
        self._loop = asyncio.new_event_loop()
        self._events: list[Any] = []

    # ------------------------------------------------------------------ setup

    def use(self, *plugins: Any) -> PiHarness:
        """Load these plugins (modules, classes or instances) for this test."""
        self._before_start("use")
        self.plugins.extend(plugins)
        return self

    def tool(self, *definitions: ToolDefinition | Callable[..., Any]) -> PiHarness:
        """Add tools of the test itself (like the SDK's ``custom_tools``)."""
        self._before_start("tool")
        self.tools.extend(definitions)
        return self

    def configure(self, **settings: Any) -> PiHarness:
        """User settings (``settings.json`` keys, camelCase)."""
        self._before_start("configure")
        self.settings.update(settings)
        return self

    def configure_project(self, **settings: Any) -> PiHarness:
        """The project's ``.pi/settings.json`` keys (camelCase). They count only once the
        project is trusted (:meth:`trust_project`)."""
        self._before_start("configure_project")
        self.project_settings.update(settings)
        return self

    def trust_project(self, trusted: bool = True) -> PiHarness:
        """Trust the project (``pi --approve``), or with ``False`` refuse it
        (``--no-approve``). Without a call nobody answers the trust question, so the
        project stays untrusted."""
        self._before_start("trust_project")
        self.options["approve"] = trusted
        return self

    def flag(self, name: str, value: Any = True) -> PiHarness:
        """Set a plugin flag as ``pi --NAME [VALUE]`` would (read with ``ctx.get_flag``)."""
        self._before_start("flag")
        self.options.setdefault("flags", {})[name.removeprefix("--")] = value
        return self

    def set_mode(self, mode: str) -> PiHarness:
        """``ctx.mode`` of the session (default ``sdk``); with ``tui``, ``rpc`` or ``acp``
        ``ctx.has_ui`` is true, so plugins open their dialogs (answered by ``pi.ui``)."""
        self._before_start("set_mode")
        self.options["mode"] = mode
        return self

    def set_options(self, **options: Any) -> PiHarness:
        """Other options of :func:`~pi_core.runtime.create_agent_session`, the command
        line's counterparts: ``tools=["read", "bash"]`` (``--tools``),
        ``exclude_tools=[...]``, ``no_tools=True``, ``thinking_level="high"``,
        ``extensions=["path/to/plugin.py"]`` (``-e``)."""
        self._before_start("set_options")
        self.options.update(options)
        return self

    def script(self, *replies: Any) -> PiHarness:
        """Append scripted model replies (consumed one per request)."""
        entries = [_echo if r == ECHO else r for r in replies]
        if self._script is not None:
            self._script.add(*entries)
        else:
            self._replies.extend(entries)
        return self

    def write(self, relative: str, text: str) -> Path:
        """Create a file in the project folder."""
        path = self.project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def _before_start(self, what: str) -> None:
        if self._runtime is not None:
            raise RuntimeError(f"pi.{what}() must be called before the first prompt")

    # ------------------------------------------------------------------ running

    async def astart(self) -> Any:
        """Start the session (done by the first prompt)."""
        if self._runtime is not None:
            return self._runtime
        if self.settings:
            (self.agent_dir / "settings.json").write_text(json.dumps(self.settings))
        if self.project_settings:
            (self.project / ".pi").mkdir(exist_ok=True)
            (self.project / ".pi" / "settings.json").write_text(json.dumps(self.project_settings))
        self._script = FauxScript(self._replies, fallback=lambda ctx: "(the test scripted no more replies)")
        options = {"installed_plugins": False, "ui": self.ui, **self.options}
        self._runtime = await create_agent_session(
            cwd=self.project,
            model=faux_model(self._script),
            plugins=list(self.plugins),
            custom_tools=list(self.tools),
            **options,
        )
        self._runtime.subscribe(self._events.append)
        return self._runtime

    async def aprompt(self, text: str, **options: Any) -> Run:
        runtime = await self.astart()
        session = runtime.session
        first_event = len(self._events)
        first_request = len(self._script.contexts)
        before = len(session.messages)
        disposition = await session.prompt(text, **options)
        run = Run(
            events=self._events[first_event:],
            requests=list(self._script.contexts[first_request:]),
            messages=list(session.messages[before:]),
            disposition=disposition,
        )
        return run

    def prompt(self, text: str, **options: Any) -> Run:
        """Send one prompt and wait until the session settles."""
        return self._loop.run_until_complete(self.aprompt(text, **options))

    def run(self, coroutine: Any) -> Any:
        """Run a coroutine on the harness's loop (e.g. ``pi.run(pi.session.compact())``)."""
        return self._loop.run_until_complete(coroutine)

    # ------------------------------------------------------------------ inspecting

    @property
    def session(self) -> Any:
        """The AgentSession (starts it if needed)."""
        if self._runtime is None:
            self._loop.run_until_complete(self.astart())
        return self._runtime.session

    @property
    def session_manager(self) -> Any:
        """The session's :class:`~pi_hookspecs.SessionView` (what plugins see as
        ``ctx.session_manager``): ``get_session_name()``, ``get_entries()`` …"""
        return self.session.sm

    @property
    def events(self) -> list[Any]:
        return list(self._events)

    @property
    def requests(self) -> list[LlmContext]:
        """Every model request so far."""
        return list(self._script.contexts) if self._script is not None else []

    def declared_tools(self, request: LlmContext) -> list[str]:
        """The tool names a request declared to the model."""
        return [t.name for t in (current_tools(request.messages) or request.tools)]

    def system_prompt(self, request: LlmContext) -> str:
        return current_system_prompt(request.messages) or request.system_prompt or ""

    def session_entries(self) -> list[dict[str, Any]]:
        """The session file's lines as JSON (the header first)."""
        path = self.session.session_file
        if not path or not Path(path).exists():
            return []
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]

    @property
    def plugin_errors(self) -> list[Any]:
        """Hook errors reported so far (a handler raised or returned something invalid)."""
        return list(self.session.runner.errors)

    @property
    def diagnostics(self) -> list[Any]:
        """Plugin load diagnostics (import errors, bad signatures, conflicts …)."""
        return list(self.session.plugins.diagnostics)

    async def aclose(self) -> None:
        """End the session (its ``session_shutdown`` hooks run); for async tests, whose
        own loop must dispose of it. The fixture calls :meth:`close` at teardown."""
        if self._runtime is not None:
            runtime, self._runtime = self._runtime, None
            await runtime.dispose()

    def close(self) -> None:
        if self._runtime is not None:
            self._loop.run_until_complete(self.aclose())
        self._loop.close()


def pi_harness(agent_dir: Path, project: Path) -> Iterator[PiHarness]:
    harness = PiHarness(agent_dir, project)
    try:
        yield harness
    finally:
        harness.close()


__all__ = ["ECHO", "PiHarness", "RecordingUI", "Run", "ToolOutcome", "UICall", "call", "calls", "pi_harness"]
