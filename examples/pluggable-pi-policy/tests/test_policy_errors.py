"""Failing closed: broken rules, settings or audit log block every tool call, with a
reason naming the file (and the line); nothing is ever silently allowed."""

from __future__ import annotations

import json

from pi_core.testing import ECHO, PiHarness, call

from pi_policy import PolicyPlugin

from .support import audit, with_rules

MALFORMED = """
bash:
  deny:
    - 'rm -rf'
   - 'curl'
"""


def test_malformed_yaml_blocks_with_the_file_and_the_line(pi: PiHarness) -> None:
    rules = with_rules(pi, MALFORMED)
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert result.is_error
    assert result.text.startswith(f"policy: the rules file {rules} is not valid YAML: line 4, column 4:")
    (startup,) = [e for e in pi.plugin_errors if e.hook == "session_start"]  # reported at startup too
    assert startup.plugin == "PolicyPlugin" and str(rules) in startup.message and "line 4" in startup.message
    record = audit(pi)[0]
    assert record["verdict"] == "block" and record["rule"] == "rules" and record["input"] == "(withheld: no rules)"


def test_an_invalid_rule_blocks_with_its_line(pi: PiHarness) -> None:
    rules = with_rules(pi, "redact:\n  - 'ok'\n  - pattern: '(unclosed'\n")
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert result.is_error
    assert result.text == (
        f"policy: invalid rules in {rules}: line 3: redact.1.pattern: invalid regular expression '(unclosed': "
        "missing ), unterminated subpattern at position 0"
    )


def test_a_missing_rules_file_blocks(pi: PiHarness) -> None:
    pi.use(PolicyPlugin)
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert result.is_error and result.text == f"policy: the rules file {pi.agent_dir / 'policy.yaml'} does not exist"


def test_invalid_settings_block_naming_the_settings_file(pi: PiHarness) -> None:
    pi.use(PolicyPlugin).configure(policy={"rulesFile": 3, "audit": "x"})
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert result.is_error
    assert f"policy: invalid settings in {pi.agent_dir / 'settings.json'}: " in result.text
    assert "policy.rulesFile: Input should be a valid string" in result.text
    assert "policy.audit: Extra inputs are not permitted" in result.text


def test_the_settings_name_the_rules_file_and_the_audit_log(pi: PiHarness) -> None:
    rules = pi.project.parent / "org" / "rules.yaml"
    rules.parent.mkdir()
    rules.write_text("bash:\n  deny: ['echo']\n")
    pi.use(PolicyPlugin).configure(policy={"rulesFile": str(rules), "auditLog": "logs/audit.jsonl"})
    pi.script(call("bash", command="echo hi"), ECHO)
    assert pi.prompt("say hi").tool_results[0].is_error
    assert json.loads((pi.agent_dir / "logs" / "audit.jsonl").read_text())["verdict"] == "block"


def test_a_project_cannot_point_the_policy_at_rules_of_its_own(pi: PiHarness) -> None:
    with_rules(pi, "bash:\n  deny: ['echo']\n")
    pi.write("permissive.yaml", "")
    pi.write(".pi/settings.json", json.dumps({"policy": {"rulesFile": str(pi.project / "permissive.yaml")}}))
    pi.options["approve"] = True  # the project is trusted: its settings load
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert pi.session.plugins.project_trusted
    assert result.is_error and "rule bash.deny[0]" in result.text


def test_an_unwritable_audit_log_blocks(pi: PiHarness) -> None:
    with_rules(pi, "")
    (pi.agent_dir / "audit-dir").mkdir()
    pi.configure(policy={"auditLog": "audit-dir"})
    pi.script(call("bash", command="echo hi"), ECHO)
    result = pi.prompt("say hi").tool_results[0]
    assert result.is_error and result.text.startswith(
        f"policy: cannot write the audit log {pi.agent_dir / 'audit-dir'}"
    )


def test_the_rules_are_read_again_when_the_file_changes(pi: PiHarness) -> None:
    rules = with_rules(pi, MALFORMED)
    pi.script(call("bash", command="echo hi"), ECHO)
    assert pi.prompt("say hi").tool_results[0].is_error
    rules.write_text("bash:\n  deny: ['rm']\n")
    pi.script(call("bash", command="echo hi"), ECHO)
    assert pi.prompt("say hi again").tool_results[0].text == "hi\n"


def test_output_is_withheld_when_the_rules_break_while_the_tool_runs(pi: PiHarness) -> None:
    rules = with_rules(pi, "redact: ['SECRET']\n")
    pi.script(call("bash", command=f"echo SECRET; printf 'bash: [' > {rules}"), ECHO)
    result = pi.prompt("go").tool_results[0]
    assert result.is_error
    assert result.text.startswith(f"policy: tool output withheld: the rules file {rules} is not valid YAML")
    saved = [e["message"] for e in pi.session_entries() if e.get("message", {}).get("role") == "toolResult"]
    assert len(saved) == 1 and "SECRET" not in str(saved)
