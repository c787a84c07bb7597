"""Helpers of the policy tests: the rules file and the audit log in the test's agent dir."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from pi_core.testing import PiHarness

from pi_policy import PolicyPlugin


def with_rules(pi: PiHarness, rules: str, *plugins: Any) -> Path:
    """Load the policy (after ``plugins``) with ``rules`` as its rules file."""
    path = pi.agent_dir / "policy.yaml"
    path.write_text(textwrap.dedent(rules).lstrip(), encoding="utf-8")
    pi.use(*plugins, PolicyPlugin)
    return path


def audit(pi: PiHarness) -> list[dict[str, Any]]:
    path = pi.agent_dir / "policy-audit.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
