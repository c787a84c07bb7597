"""redact: secrets never reach the model, the session file or the audit log."""

from __future__ import annotations

from pi_core.testing import ECHO, PiHarness, call

from .support import audit, with_rules

RULES = r"""
redact:
  - pattern: 'AKIA[0-9A-Z]{16}'
    replacement: '[aws key]'
  - 'ghp_[A-Za-z0-9]{8,}'
"""
KEY = "AKIAABCDEFGHIJKLMNOP"


def test_a_file_read_is_redacted_before_the_model_sees_it(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.write("deploy.env", f"AWS_KEY={KEY}\nTOKEN=ghp_abcdefgh1234\n")
    pi.script(call("read", path="deploy.env"), ECHO)
    run = pi.prompt("show me the deploy settings")
    assert run.tool_results[0].text == "AWS_KEY=[aws key]\nTOKEN=[redacted]\n"  # read keeps the final newline
    sent = run.requests[1].messages[-1]  # the tool result as the provider received it
    assert sent.role == "toolResult" and KEY not in str(sent)
    assert KEY not in str(pi.session_entries())


def test_bash_output_and_details_are_redacted(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.script(call("bash", command=f"echo {KEY}"), ECHO)
    result = pi.prompt("print the key").tool_results[0]
    assert result.text == "[aws key]\n"
    assert KEY not in str(result.details) and KEY not in str(result.message)


def test_tool_inputs_are_redacted_in_the_audit_log(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.script(call("bash", command=f"echo {KEY} > /dev/null"), "ok")
    pi.prompt("use the key")
    (record,) = audit(pi)
    assert record["input"] == {"command": "echo [aws key] > /dev/null"} and record["verdict"] == "allow"


def test_results_without_secrets_are_left_alone(pi: PiHarness) -> None:
    with_rules(pi, RULES)
    pi.script(call("bash", command="echo nothing to hide"), ECHO)
    assert pi.prompt("go").tool_results[0].text == "nothing to hide\n"
