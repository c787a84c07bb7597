"""Render ``docs/hooks.md`` from the hookspec docstrings and the event table.

    uv run python docs/_hookdocs.py          # rewrite docs/hooks.md
    uv run python docs/_hookdocs.py --check  # exit 1 when it is out of date

``tests/test_hookspec_docs.py`` fails when the file and the docstrings drift apart.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from pi_hookspecs import EVENTS, REGISTRATION_HOOKS, specs

TARGET = Path(__file__).with_name("hooks.md")

GROUPS = [
    ("Registration", list(REGISTRATION_HOOKS)),
    ("Startup and resources", ["project_trust", "resources_discover"]),
    (
        "Session",
        [
            "session_start", "session_shutdown", "session_info_changed", "session_before_switch",
            "session_before_fork", "session_before_compact", "session_compact", "session_compact_failed",
            "session_before_tree", "session_tree",
        ],
    ),
    (
        "Agent runs",
        ["before_agent_start", "agent_start", "agent_end", "agent_before_settle", "agent_settled",
         "turn_start", "turn_end"],
    ),
    ("Messages", ["message_start", "message_update", "message_end"]),
    ("Tools", ["tool_execution_start", "tool_execution_update", "tool_execution_end", "tool_call", "tool_result",
               "bash_spawn"]),
    (
        "Model requests",
        ["context", "context_with_system", "before_provider_headers", "before_provider_request",
         "after_provider_response", "provider_stream_event", "model_select", "thinking_level_select"],
    ),
    ("User input", ["user_bash", "input"]),
    ("Observing plugins", ["hook_outcome"]),
]


def hook_names() -> list[str]:
    return [name for name, value in vars(specs).items() if callable(value) and hasattr(value, "pi_spec")]


def signature(name: str) -> str:
    func = getattr(specs, name)
    params = ", ".join(inspect.signature(func).parameters)
    return f"{name}({params})"


def _clean(text: str) -> str:
    return re.sub(r":(?:class|meth|func|data):`~?([^`]+)`", r"`\1`", text)


def _type_name(annotation: object) -> str:
    text = str(annotation) if not isinstance(annotation, type) else annotation.__name__
    text = text.replace("typing.", "").replace("pi_hookspecs.", "")
    text = re.sub(r"\b(?:[a-z_]+\.)+([A-Z]\w*)", r"\1", text)
    return text.replace("NoneType", "None")


def fields_table(model: type[BaseModel]) -> list[str]:
    hints = typing.get_type_hints(model)
    rows = ["| field | type |", "|---|---|"]
    for field in model.model_fields:
        if field == "type":
            continue
        type_text = _type_name(hints.get(field, object)).replace("|", "\\|")
        rows.append(f"| `{field}` | `{type_text}` |")
    return rows if len(rows) > 2 else []


def render() -> str:
    out = [
        "# Hook reference",
        "",
        "<!-- Generated from pi_hookspecs by docs/_hookdocs.py; do not edit by hand. -->",
        "",
        "Every hook is a pluggy hookspec of the project `pi` in `pi_hookspecs`. Implement one with",
        "`@hookimpl` on a module-level function or a plugin class method. Event hooks take `(event, ctx)`;",
        "an implementation may name any subset (`def tool_call(self, event)`). Handlers may be sync or",
        "`async`. A handler may return the result model or a plain dict with its fields.",
        "",
        "Handlers of one event run one at a time in pluggy's call order: `tryfirst` implementations,",
        "then the most recently loaded plugin first, then `trylast` ones. Plugins load in the order",
        "built-in, installed (entry points), user files, settings `extensions`, project files, `-e`, SDK.",
        "",
        "| rule | meaning |",
        "|---|---|",
    ]
    from pi_hookspecs import Rule

    for rule in Rule:
        out.append(f"| {rule.value} | {_RULE_TEXT[rule.value]} |")
    out.append("")
    seen = set()
    for title, names in GROUPS:
        out += [f"## {title}", ""]
        for name in names:
            seen.add(name)
            func = getattr(specs, name)
            out += [f"### `{signature(name)}`", ""]
            spec = EVENTS.get(name)
            if spec is not None:
                result = f"`{spec.result.__name__}`" if spec.result else "nothing"
                closed = " · fails closed" if spec.fail_closed else ""
                out += [f"*Event* `{spec.event.__name__}` · *returns* {result} · *rule* {spec.rule.value}{closed}", ""]
            out += [_clean(inspect.cleandoc(func.__doc__ or "")), ""]
            if spec is not None:
                table = fields_table(spec.event)
                if table:
                    out += [f"`{spec.event.__name__}` fields:", "", *table, ""]
                if spec.result is not None:
                    table = fields_table(spec.result)
                    if table:
                        out += [f"`{spec.result.__name__}` fields:", "", *table, ""]
    missing = sorted(set(hook_names()) - seen)
    if missing:
        raise SystemExit(f"hooks missing from docs/_hookdocs.py GROUPS: {missing}")
    return "\n".join(out).rstrip() + "\n"


_RULE_TEXT = {
    "notification": "return values are ignored; an exception is reported and the next handler runs",
    "chained": "each handler receives the previous handler's output; an exception is reported and the previous value kept",
    "mutation": "handlers change the event in place and later handlers see it; an exception is reported",
    "gate": "the first decisive result stops the walk; `tool_call` and `user_bash` fail closed on an exception",
    "cancellable": "the first `cancel` wins; otherwise the last non-empty result replaces the whole result",
    "aggregate": "results are collected in call order; an exception is reported",
    "boundary": "each handler sees the entries and continuation proposed so far; a failing handler's draft is dropped",
}


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        current = TARGET.read_text() if TARGET.exists() else ""
        sys.exit(0 if current == text else 1)
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
