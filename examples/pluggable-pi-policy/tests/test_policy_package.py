"""The package: its entry point and the rules example of its README."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

from pi_policy import PolicyPlugin, parse_rules

PROJECT = Path(__file__).resolve().parents[1]


def test_the_entry_point_policy_names_the_plugin_class() -> None:
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    module, _, attribute = pyproject["project"]["entry-points"]["pi.extensions"]["policy"].partition(":")
    assert getattr(importlib.import_module(module), attribute) is PolicyPlugin


def test_the_readme_rules_are_valid() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    rules = parse_rules(example, PROJECT / "README.md")
    assert len(rules.bash.deny) == 3 and rules.write.allow == ["src/**", "tests/**", "*.md"]
    assert [r.replacement for r in rules.redact] == ["[aws key]", "[redacted]", "[redacted]"]
