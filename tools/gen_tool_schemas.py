"""Regenerate ``pi_core/tools/_schemas.py``: the JSON Schema of each built-in tool's
arguments, as the model sees it.

The schemas are derived from the tools' pydantic argument models
(``pi_core.tools._common.json_schema``). Deriving them costs a few milliseconds of every
``pi`` start, so the result is kept in a generated module; ``tests/tools/test_tool_schemas.py``
fails when a model changes and this script was not run::

    .venv/bin/python tools/gen_tool_schemas.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "pi_core" / "tools" / "_schemas.py"

HEADER = '''"""The JSON Schema of each built-in tool's arguments (generated: do not edit).

Regenerate with ``python tools/gen_tool_schemas.py`` after changing an argument model;
``tests/tools/test_tool_schemas.py`` checks that this file matches the models."""

from typing import Any

PARAMETERS: dict[str, dict[str, Any]] = '''


def schemas() -> dict[str, dict[str, Any]]:
    from pi_core.tools._common import json_schema
    from pi_core.tools.plugin import builtin_tools

    out = {}
    for tool in builtin_tools():
        assert tool.args_model is not None, tool.name
        out[tool.name] = json_schema(tool.args_model)
    return out


LINE_LENGTH = 120  # ruff's line-length (pyproject.toml)


def long_string(value: str, indent: int) -> str:
    """A string too long for its line, as ruff formats it: in parentheses on a line of its
    own, or, when even that is too long, cut after spaces into implicitly concatenated
    parts that each fit (the value is the same)."""
    pad = "    " * (indent + 1)
    room = LINE_LENGTH - len(pad)
    whole = json.dumps(value, ensure_ascii=False)
    parts: list[str] = []
    if len(whole) <= room:
        parts.append(whole)
    else:
        words: list[str] = []
        for word in value.split(" "):
            if words and len(json.dumps(" ".join([*words, word, ""]), ensure_ascii=False)) > room:
                parts.append(json.dumps(" ".join([*words, ""]), ensure_ascii=False))
                words = []
            words.append(word)
        parts.append(json.dumps(" ".join(words), ensure_ascii=False))
    return "(\n" + "".join(f"{pad}{part}\n" for part in parts) + "    " * indent + ")"


def literal(value: Any, indent: int = 0) -> str:
    """``value`` as Python source, one key or item per line; a string too long for its
    line is wrapped (:func:`long_string`)."""
    pad = "    " * (indent + 1)
    if isinstance(value, dict) and value:
        items = []
        for key, item in value.items():
            line = f"{pad}{literal(key)}: {literal(item, indent + 1)},"
            if isinstance(item, str) and len(line) > LINE_LENGTH:
                line = f"{pad}{literal(key)}: {long_string(item, indent + 1)},"
            items.append(line)
        return "{\n" + "\n".join(items) + "\n" + "    " * indent + "}"
    if isinstance(value, list) and value and not all(isinstance(v, str) for v in value):
        items = [f"{pad}{literal(item, indent + 1)}," for item in value]
        return "[\n" + "\n".join(items) + "\n" + "    " * indent + "]"
    if isinstance(value, list):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def render() -> str:
    return HEADER + literal(schemas()) + "\n"


def main(argv: list[str]) -> int:
    if argv:
        print(__doc__)
        return 0 if argv[0] in ("-h", "--help") else 2
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
