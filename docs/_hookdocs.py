"""Render ``docs/hooks.md`` from the hookspecs: their sections (``HOOK_GROUPS``), typed
signatures, rules and docstrings, all declared in ``pi_hookspecs/specs.py``; and
``docs/context.md`` from the context protocols (``docs/_contextdocs.py``).

    uv run python docs/_hookdocs.py          # rewrite docs/hooks.md and docs/context.md
    uv run python docs/_hookdocs.py --check  # exit 1 when one is out of date (nothing written)

``tests/test_hookspec_docs.py`` and ``tests/test_context_docs.py`` fail when the files
and the docstrings drift apart.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from pi_hookspecs import EVENTS, HOOK_GROUPS, REGISTRATIONS, Rule, specs

TARGET = Path(__file__).with_name("hooks.md")


def hook_names() -> list[str]:
    """Every hookspec of pi_hookspecs.specs (pluggy's marker), in definition order."""
    return [name for name, value in vars(specs).items() if callable(value) and hasattr(value, "pi_spec")]


def signature(name: str) -> str:
    """``name(event, ctx)``: the heading (and the anchor other pages link to)."""
    params = ", ".join(inspect.signature(getattr(specs, name)).parameters)
    return f"{name}({params})"


def typed_signature(name: str) -> str:
    """``name(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None``."""
    sig = inspect.signature(getattr(specs, name))
    params = ", ".join(f"{p.name}: {_type_name(p.annotation)}" for p in sig.parameters.values())
    return f"{name}({params}) -> {_type_name(sig.return_annotation)}"


def _clean(text: str) -> str:
    return re.sub(r":(?:class|meth|func|data):`~?([^`]+)`", r"`\1`", text)


def _type_name(annotation: object) -> str:
    if annotation is None or annotation is type(None):
        return "None"
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
        "`async`. A handler may return the result model or a plain dict with its fields. Under each",
        "heading: the hookspec's typed signature (annotate an implementation the same way and an editor",
        "completes `event.`) and the rule that combines the results of several handlers.",
        "",
        "Handlers of one event run one at a time in pluggy's call order: `tryfirst` implementations,",
        "then the most recently loaded plugin first, then `trylast` ones. Plugins load in the order",
        "built-in, installed (entry points), user files, settings `extensions`, project files, `-e`, SDK.",
        "pluggy wrappers (`wrapper=True`, `hookwrapper=True`) of these hooks are refused when a plugin",
        "loads, with a diagnostic naming it (see [plugins.md](plugins.md#wrappers)).",
        "",
        "| rule | meaning |",
        "|---|---|",
    ]
    for rule in Rule:
        out.append(f"| {rule.value} | {rule_text(rule)} |")
    out.append("")
    for title, names in HOOK_GROUPS.items():
        out += [f"## {title}", ""]
        for name in names:
            func = getattr(specs, name)
            out += [f"### `{signature(name)}`", ""]
            spec = EVENTS.get(name)
            if spec is not None:
                closed = " · fails closed" if spec.fail_closed else ""
                in_place = " · changed in place (checked)" if spec.in_place else ""
                out += [f"`{typed_signature(name)}` · *rule* {spec.rule.value}{closed}{in_place}", ""]
                combined = spec.compose.describe()
                if combined:
                    out += [f"*Combined:* {combined}.", ""]
            elif name in REGISTRATIONS:
                out += [f"`{typed_signature(name)}` · each plugin's implementation in load order", ""]
            out += [_clean(inspect.cleandoc(func.__doc__ or "")), ""]
            if spec is not None:
                table = fields_table(spec.event)
                if table:
                    out += [f"`{spec.event.__name__}` fields:", "", *table, ""]
                if spec.result is not None:
                    table = fields_table(spec.result)
                    if table:
                        out += [f"`{spec.result.__name__}` fields:", "", *table, ""]
    return "\n".join(out).rstrip() + "\n"


_RULE_TEXT = {
    "notification": "return values are ignored; an exception is reported and the next handler runs",
    "chained": (
        "each handler receives the previous handler's output; an exception is reported and the previous value kept"
    ),
    "mutation": "handlers change the event in place and later handlers see it; an exception is reported",
    "gate": "the first decisive result stops the walk; {fail_closed} fail closed on an exception",
    "cancellable": "the first `cancel` wins; otherwise the last non-empty result replaces the whole result",
    "aggregate": "results are collected in call order; an exception is reported",
    "boundary": "each handler sees the entries and continuation proposed so far; a failing handler's draft is dropped",
}


def rule_text(rule: Rule) -> str:
    closed = [f"`{spec.name}`" for spec in EVENTS.values() if spec.fail_closed]
    fail_closed = ", ".join(closed[:-1]) + f" and {closed[-1]}" if len(closed) > 1 else "".join(closed)
    return _RULE_TEXT[rule.value].format(fail_closed=fail_closed)


def main(argv: list[str] | None = None) -> int:
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _contextdocs

    parser = argparse.ArgumentParser(
        prog="docs/_hookdocs.py",
        description="Regenerate docs/hooks.md (from the hookspecs) and docs/context.md (from the ctx protocols).",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 and name the stale files when one is out of date"
    )
    args = parser.parse_args(argv)
    pages = {TARGET: render(), _contextdocs.TARGET: _contextdocs.render()}
    stale = [path for path, text in pages.items() if (path.read_text() if path.exists() else "") != text]
    if args.check:
        for path in stale:
            print(f"{path} is out of date: run python docs/_hookdocs.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(pages[path])
        print(f"wrote {path}")
    if not stale:
        print("docs/hooks.md and docs/context.md are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
