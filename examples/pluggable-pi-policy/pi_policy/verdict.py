"""Judging one tool call against the rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .paths import matches, project_relative
from .rules import LoadedRules


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    rule: str | None = None
    """Which rule decided (``bash.deny[0]``, ``write.allow``), for the audit log."""
    reason: str | None = None


ALLOW = Verdict(True)


def judge(rules: LoadedRules, tool_name: str, arguments: dict[str, Any], cwd: str) -> Verdict:
    """Whether the call may run: denied bash patterns first, then the write allowlist."""
    if tool_name == "bash":
        command = str(arguments.get("command", ""))
        for index, (pattern, rule) in enumerate(zip(rules.deny, rules.rules.bash.deny, strict=True)):
            if pattern.search(command):
                why = rule.reason or f"the command matches {rule.pattern!r}"
                return Verdict(False, f"bash.deny[{index}]", f"{why} (rule bash.deny[{index}] of {rules.path})")
    allow = rules.rules.write.allow
    if allow is not None and tool_name in rules.rules.write.tools:
        path = arguments.get("path")
        if not isinstance(path, str) or not path:
            return Verdict(False, "write.allow", f"{tool_name} without a path cannot be checked against {rules.path}")
        relative = project_relative(path, cwd)
        if relative is None:
            return Verdict(False, "write.allow", f"{path} is outside the project (write.allow of {rules.path})")
        if matches(relative, allow) is None:
            return Verdict(
                False, "write.allow", f"{relative} is not in the write allowlist (write.allow of {rules.path})"
            )
    return ALLOW
