"""The policy among other plugins: its trylast gate judges the final input, the first
block wins, a raising gate blocks, and tool_result transforms chain into its redactor."""

from __future__ import annotations

from typing import Any

from pi_core.testing import ECHO, PiHarness, call
from pi_hookspecs import ToolCallEvent, ToolResultEvent, hookimpl

from .support import audit, with_rules

RULES = r"""
bash:
  deny:
    - pattern: '\brm\s+-rf\b'
      reason: no recursive deletes
redact:
  - 'SECRET-\d+'
"""


class Rewriter:
    """Rewrites bash commands in place (an ordinary, not trylast, tool_call handler)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    @hookimpl
    def tool_call(self, event: ToolCallEvent) -> None:
        if event.tool_name == "bash":
            event.input["command"] = event.input["command"].replace(self.old, self.new)


def test_the_gate_judges_the_input_as_other_plugins_rewrote_it(pi: PiHarness) -> None:
    with_rules(pi, RULES, Rewriter("echo cleanup", "rm -rf build"))
    pi.script(call("bash", command="echo cleanup"), ECHO)
    result = pi.prompt("clean").tool_results[0]
    assert result.is_error and result.text.startswith("policy: no recursive deletes")
    assert audit(pi)[0]["input"] == {"command": "rm -rf build"}  # what was judged


def test_a_rewrite_that_makes_a_command_acceptable_is_judged_after_the_rewrite(pi: PiHarness) -> None:
    with_rules(pi, RULES, Rewriter("rm -rf build", "echo would delete build"))
    pi.script(call("bash", command="rm -rf build"), ECHO)
    result = pi.prompt("clean").tool_results[0]
    assert (result.is_error, result.text) == (False, "would delete build\n")


class Veto:
    @hookimpl
    def tool_call(self, event: ToolCallEvent) -> Any:
        if "deploy" in event.input.get("command", ""):
            return {"block": True, "reason": "veto: no deploys on Fridays"}
        return None


class Broken:
    @hookimpl
    def tool_call(self, event: ToolCallEvent) -> None:
        if "crash" in event.input.get("command", ""):
            raise RuntimeError("the gate crashed")


def test_every_gate_must_pass_the_first_block_wins(pi: PiHarness) -> None:
    with_rules(pi, RULES, Veto)
    pi.script(call("bash", command="echo deploy"), ECHO)
    result = pi.prompt("deploy").tool_results[0]
    assert result.is_error and result.text == "veto: no deploys on Fridays"
    (record,) = audit(pi)  # the policy never judged it, but audited it
    assert record["verdict"] == "not-run" and record["reason"] == "veto: no deploys on Fridays"


def test_a_raising_gate_blocks_the_call(pi: PiHarness) -> None:
    with_rules(pi, RULES, Broken)
    pi.script(call("bash", command="echo crash"), ECHO)
    result = pi.prompt("go").tool_results[0]
    assert result.is_error and "Broken" in result.text and "the gate crashed" in result.text
    assert audit(pi)[0]["verdict"] == "not-run"


def test_unknown_tools_and_invalid_arguments_are_audited(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.script(call("nope"), call("bash"), "done")
    pi.prompt("go")
    assert [(r["tool"], r["verdict"]) for r in audit(pi)] == [("nope", "not-run"), ("bash", "not-run")]
    assert audit(pi)[0]["reason"] == "Tool nope not found"


class Annotator:
    """Adds a line to every result (an ordinary tool_result transform)."""

    @hookimpl
    def tool_result(self, event: ToolResultEvent) -> Any:
        text = "".join(block.text for block in event.content if block.type == "text")
        return {"content": [{"type": "text", "text": text + "deployed with SECRET-42"}]}


class Masker:
    """Another redactor, for its own secrets."""

    @hookimpl
    def tool_result(self, event: ToolResultEvent) -> Any:
        text = "".join(block.text for block in event.content if block.type == "text")
        return {"content": [{"type": "text", "text": text.replace("hunter2", "*******")}]}


def test_redactors_chain_and_the_policy_redacts_last(pi: PiHarness) -> None:
    with_rules(pi, RULES, Masker, Annotator)  # Annotator runs first (loaded last), then Masker, then the policy
    pi.script(call("bash", command="echo password hunter2"), ECHO)
    result = pi.prompt("go").tool_results[0]
    assert result.text == "password *******\ndeployed with [redacted]"
