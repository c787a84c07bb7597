"""The rules file: YAML, validated with pydantic, every error named with its line.

.. code-block:: yaml

    bash:
      deny:                                   # regular expressions searched in the command
        - pattern: '\\brm\\s+-rf\\s+/(\\s|$)'
          reason: never delete the root
        - '\\bcurl\\b.*\\|\\s*(ba)?sh\\b'     # a bare string is a pattern
    write:
      allow: ["src/**", "tests/**", "*.md"]   # globs relative to the project
      tools: [write, edit]                    # the default
    redact:
      - pattern: 'AKIA[0-9A-Z]{16}'
        replacement: '[aws key]'
      - 'ghp_[A-Za-z0-9]{36}'                 # replaced by [redacted]

Without ``write.allow`` the policy does not restrict paths; with it (even empty), the
listed tools may only write inside the project, to paths matching one of the globs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # no stubs needed: safe_load and YAMLError only
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import PolicyError

REDACTED = "[redacted]"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    return pattern


def _bare_pattern(value: Any) -> Any:
    return {"pattern": value} if isinstance(value, str) else value


class DenyRule(_Strict):
    pattern: str
    reason: str | None = None

    check_pattern = field_validator("pattern")(_check_regex)
    accept_bare_pattern = model_validator(mode="before")(_bare_pattern)


class RedactRule(_Strict):
    pattern: str
    replacement: str = REDACTED

    check_pattern = field_validator("pattern")(_check_regex)
    accept_bare_pattern = model_validator(mode="before")(_bare_pattern)


class BashRules(_Strict):
    deny: list[DenyRule] = Field(default_factory=list)


class WriteRules(_Strict):
    allow: list[str] | None = None
    tools: list[str] = Field(default_factory=lambda: ["write", "edit"])


class Rules(_Strict):
    bash: BashRules = Field(default_factory=BashRules)
    write: WriteRules = Field(default_factory=WriteRules)
    redact: list[RedactRule] = Field(default_factory=list)


@dataclass(frozen=True)
class LoadedRules:
    """The rules of one file, with their regular expressions compiled once."""

    path: Path
    rules: Rules
    deny: tuple[re.Pattern[str], ...]
    redact: tuple[tuple[re.Pattern[str], str], ...]

    @classmethod
    def build(cls, path: Path, rules: Rules) -> LoadedRules:
        return cls(
            path=path,
            rules=rules,
            deny=tuple(re.compile(rule.pattern) for rule in rules.bash.deny),
            redact=tuple((re.compile(rule.pattern), rule.replacement) for rule in rules.redact),
        )


# --------------------------------------------------------------------------- parsing


def _node_at(node: yaml.Node | None, loc: tuple[Any, ...]) -> yaml.Node | None:
    """The YAML node a pydantic error location points at, as deep as the path goes (the
    key, for a mapping entry: that is the line a reader looks for)."""
    for depth, part in enumerate(loc, start=1):
        if isinstance(node, yaml.MappingNode):
            entry = next(((key, value) for key, value in node.value if key.value == part), None)
            if entry is None:
                return node
            if depth == len(loc):
                return entry[0]
            node = entry[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return node
    return node


def _describe(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def parse_rules(text: str, path: Path) -> Rules:
    """Validate the YAML ``text`` of ``path``; raise :class:`PolicyError` with the line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        problem = exc.problem or exc.context or "invalid YAML"
        raise PolicyError(f"the rules file {path} is not valid YAML: {where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"the rules file {path} is not valid YAML: {exc}") from None
    if data is None:
        return Rules()
    if not isinstance(data, dict):
        raise PolicyError(f"the rules file {path}: line 1: expected a mapping (bash, write, redact)")
    try:
        return Rules.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            node = _node_at(root, loc)
            line = f"line {node.start_mark.line + 1}: " if node is not None else ""
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{line}{_describe(loc)}: {message}")
        raise PolicyError(f"invalid rules in {path}: " + "; ".join(problems)) from None


class RulesFile:
    """The rules of one file, read again whenever the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._loaded: LoadedRules | str | None = None

    def load(self) -> LoadedRules:
        """The current rules; raise :class:`PolicyError` when the file is missing or invalid."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise PolicyError(f"the rules file {self.path} does not exist") from None
        except OSError as exc:
            raise PolicyError(f"cannot read the rules file {self.path}: {exc.strerror or exc}") from None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp != self._stamp or self._loaded is None:
            self._stamp, self._loaded = stamp, self._read()
        if isinstance(self._loaded, str):
            raise PolicyError(self._loaded)
        return self._loaded

    def _read(self) -> LoadedRules | str:
        """The rules, or the message of what is wrong with the file."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"cannot read the rules file {self.path}: {exc}"
        try:
            return LoadedRules.build(self.path, parse_rules(text, self.path))
        except PolicyError as exc:
            return str(exc)
