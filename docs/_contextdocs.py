"""Render ``docs/context.md`` from the context protocols of ``pi_hookspecs/context.py``:
every property, method and attribute with its signature as written there and its
docstring. Run through ``docs/_hookdocs.py`` (which writes both generated pages);
``tests/test_context_docs.py`` fails when a member has no docstring or the page is stale.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pi_hookspecs.context as contract

TARGET = Path(__file__).with_name("context.md")
SOURCE = Path(contract.__file__)

CLASSES: dict[str, str] = {
    # protocol -> how plugin code reaches it
    "ExtensionContext": "ctx",
    "ToolContext": "ctx",
    "CommandContext": "ctx",
    "ProjectTrustContext": "ctx",
    "UIContext": "ctx.ui",
    "SessionView": "ctx.session_manager",
    "ModelRegistryView": "ctx.model_registry",
    "ContextUsage": "usage",
}
"""The protocols documented, in page order (``StaleContextError`` and ``Mode`` are in the
introduction)."""

TITLES = {
    "ExtensionContext": "`ExtensionContext`: every hook's `ctx`",
    "ToolContext": "`ToolContext`: a tool's `ctx`",
    "CommandContext": "`CommandContext`: a command handler's `ctx`",
    "ProjectTrustContext": "`ProjectTrustContext`: a `project_trust` handler's `ctx`",
    "UIContext": "`UIContext`: `ctx.ui`",
    "SessionView": "`SessionView`: `ctx.session_manager`",
    "ModelRegistryView": "`ModelRegistryView`: `ctx.model_registry`",
    "ContextUsage": "`ContextUsage`: `ctx.get_context_usage()`",
}


@dataclass
class Member:
    cls: str
    name: str
    kind: str
    """``property``, ``method``, ``async method`` or ``attribute``."""
    signature: str
    doc: str


def _clean(text: str) -> str:
    return re.sub(r":(?:class|meth|func|data|attr):`~?([^`]+)`", r"`\1`", text)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    args = node.args
    node.args = ast.arguments(
        posonlyargs=args.posonlyargs,
        args=[a for a in args.args if a.arg != "self"],
        vararg=args.vararg,
        kwonlyargs=args.kwonlyargs,
        kw_defaults=args.kw_defaults,
        kwarg=args.kwarg,
        defaults=args.defaults,
    )
    try:
        text = ast.unparse(node.args)
    finally:
        node.args = args
    return text


def members(source: str | None = None) -> list[Member]:
    """Every member the documented protocols declare themselves (inherited ones are
    documented once, where they are declared), in source order; ``doc`` is ``""`` when
    the member has no docstring."""
    tree = ast.parse(source if source is not None else SOURCE.read_text(encoding="utf-8"))
    out: list[Member] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name not in CLASSES:
            continue
        prefix = CLASSES[node.name]
        body = node.body
        for i, item in enumerate(body):
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                if item.name.startswith("_"):
                    continue
                doc = ast.get_docstring(item) or ""
                returns = f" -> {ast.unparse(item.returns)}" if item.returns is not None else ""
                if any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                    out.append(Member(node.name, item.name, "property", f"{prefix}.{item.name}{returns}", doc))
                    continue
                is_async = isinstance(item, ast.AsyncFunctionDef)
                call = f"{'await ' if is_async else ''}{prefix}.{item.name}({_parameters(item)}){returns}"
                out.append(Member(node.name, item.name, "async method" if is_async else "method", call, doc))
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                following = body[i + 1] if i + 1 < len(body) else None
                doc = ""
                if (
                    isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                ):
                    doc = inspect.cleandoc(following.value.value)
                out.append(
                    Member(
                        node.name,
                        item.target.id,
                        "attribute",
                        f"{prefix}.{item.target.id}: {ast.unparse(item.annotation)}",
                        doc,
                    )
                )
    return out


def render() -> str:
    module_doc = _clean(inspect.cleandoc(contract.__doc__ or ""))
    out = [
        "# The context: `ctx`",
        "",
        "<!-- Generated from pi_hookspecs/context.py by docs/_hookdocs.py; do not edit by hand. -->",
        "",
        module_doc,
        "",
        "A hook implementation names `ctx` among its parameters to receive it; annotate it with the",
        "protocol (`from pi_hookspecs import ExtensionContext`) and an editor completes `ctx.`.",
        f"`ctx.mode` is one of {', '.join(f'`{m}`' for m in contract.Mode.__args__)}. See",
        "[plugins.md](plugins.md#the-context) for how plugins use it and [hooks.md](hooks.md) for which",
        "context each hook receives.",
        "",
        "| protocol | reached as | members |",
        "|---|---|---|",
    ]
    found = members()
    for name, prefix in CLASSES.items():
        own = [m for m in found if m.cls == name]
        anchor = re.sub(r"[^a-z0-9 _-]", "", TITLES[name].lower()).replace(" ", "-")
        out.append(f"| [`{name}`](#{anchor}) | `{prefix}` | {len(own)} |")
    out.append("")
    classes = {node.__name__: node for node in vars(contract).values() if isinstance(node, type)}
    for name in CLASSES:
        cls = classes[name]
        bases = [b.__name__ for b in cls.__bases__ if b.__name__ in CLASSES]
        out += [f"## {TITLES[name]}", ""]
        class_doc = _clean(inspect.cleandoc(cls.__doc__ or "")) if "__doc__" in vars(cls) else ""
        if class_doc:
            out += [class_doc, ""]
        if bases:
            out += [f"Everything of {', '.join(f'`{b}`' for b in bases)}, and:", ""]
        for member in (m for m in found if m.cls == name):
            out += [f"### `{member.signature}`", "", _clean(member.doc) or "(undocumented)", ""]
    return "\n".join(out).rstrip() + "\n"
