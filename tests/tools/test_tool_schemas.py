"""The built-in tools' argument schemas are generated ahead (pi_core/tools/_schemas.py):
the generated module must match the argument models it is derived from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from pi_core.tools._common import json_schema
from pi_core.tools._schemas import PARAMETERS
from pi_core.tools.plugin import builtin_tools

ROOT = Path(__file__).resolve().parents[2]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_tool_schemas", ROOT / "tools" / "gen_tool_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_schemas_match_the_argument_models() -> None:
    tools = builtin_tools()
    assert sorted(PARAMETERS) == sorted(t.name for t in tools)
    for tool in tools:
        assert tool.args_model is not None
        assert PARAMETERS[tool.name] == json_schema(tool.args_model), (
            f"{tool.name}: its argument model changed; run `python tools/gen_tool_schemas.py`"
        )
        assert tool.parameters == PARAMETERS[tool.name]


def test_the_generated_module_is_what_the_generator_writes() -> None:
    text = (ROOT / "pi_core" / "tools" / "_schemas.py").read_text()
    assert text == _generator().render(), "run `python tools/gen_tool_schemas.py`"


def test_each_definition_gets_its_own_copy() -> None:
    first, second = builtin_tools()[0], builtin_tools()[0]
    first.parameters["properties"]["path"]["description"] = "changed by a plugin"
    assert second.parameters["properties"]["path"]["description"] != "changed by a plugin"
    assert PARAMETERS[first.name]["properties"]["path"]["description"] != "changed by a plugin"


def test_argument_models_are_built_when_a_tool_first_runs() -> None:
    """Defining the built-in tools builds no validator (defer_build): a text-only run
    never pays for the seven argument models."""
    import subprocess

    code = (
        "from pi_core.tools.plugin import builtin_tools\n"
        "tools = builtin_tools()\n"
        "print(sum(t.args_model.__pydantic_complete__ for t in tools))\n"
        "tools[0].args_model.model_validate({'path': 'x'})\n"
        "print(tools[0].args_model.__pydantic_complete__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "True"]
