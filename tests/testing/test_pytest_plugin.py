"""pi_core.testing: the pytest plugin plugin authors use (this file uses it too)."""

from __future__ import annotations

from typing import Any

import pi_hookspecs as h
from pi_core.testing import ECHO, PiHarness, call, calls
from pi_hookspecs import hookimpl


class Policy:
    @hookimpl(trylast=True)
    def tool_call(self, event: Any) -> Any:
        if event.tool_name == "bash" and "rm -rf" in event.input["command"]:
            return {"block": True, "reason": "rm -rf is not allowed"}
        return None

    @hookimpl
    def tool_result(self, event: Any) -> Any:
        text = "".join(b.text for b in event.content if b.type == "text")
        if "SECRET" in text:
            return {"content": [{"type": "text", "text": text.replace("SECRET", "[redacted]")}]}
        return None


def test_the_fixture_runs_a_real_session_on_the_scripted_model(pi: PiHarness) -> None:
    pi.use(Policy)
    pi.write("notes.txt", "the SECRET is 42\n")
    pi.script(calls(("read", {"path": "notes.txt"}), ("bash", {"command": "rm -rf /"})), ECHO)
    run = pi.prompt("read the notes, then clean up")
    read, bash = run.tool_results
    assert read.tool_name == "read" and "[redacted] is 42" in read.text and not read.is_error
    assert bash.is_error and bash.text == "rm -rf is not allowed"
    assert run.text == "rm -rf is not allowed"  # ECHO repeats the last tool result
    assert [c.name for c in run.tool_calls] == ["read", "bash"]
    assert run.requests[1].messages[-1].role == "toolResult"
    assert pi.declared_tools(run.requests[0]) == ["read", "bash", "edit", "write"]
    assert "tool_execution_end" in run.event_types and run.disposition == "started"
    entries = pi.session_entries()
    assert entries[0]["type"] == "session" and sum(e["type"] == "message" for e in entries) == 6


def test_custom_tools_settings_and_errors(pi: PiHarness) -> None:
    @h.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    class Broken:
        @hookimpl
        def turn_start(self) -> None:
            raise RuntimeError("boom")

    pi.use(Broken).tool(add).configure(defaultTools=["read"])
    pi.script(call("add", a=2, b=3), "five")
    run = pi.prompt("2+3?")
    assert run.tool_results[0].text == "5"
    assert pi.declared_tools(run.requests[0]) == ["read", "add"]
    assert pi.plugin_errors and pi.plugin_errors[0].plugin == "Broken"
    assert pi.session.tools.active_names == ["read", "add"]
