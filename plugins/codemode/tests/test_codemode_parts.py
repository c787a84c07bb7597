"""The parts on their own: source options, names, stubs, store, output, description."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pi_codemode import CatalogCache, build_description, reaches_tools, read_store, to_identifier
from pi_codemode.naming import assign_identifiers
from pi_codemode.output import Outcome, Output, render_result
from pi_codemode.source import ScriptOptions, SourceError, parse_source
from pi_codemode.store import MAX_VALUE_CHARS, ScriptStore
from pi_codemode.stubs import annotation, build_stub

from pi_hookspecs import CustomEntry, ToolDefinition, ToolNamespace


def _tool(name: str, parameters: dict[str, Any] | None = None, **fields: Any) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=fields.pop("description", f"The {name} tool."),
        execute=lambda a, c: "",
        parameters=parameters or {"type": "object", "properties": {}},
        **fields,
    )


def test_source_options_and_fences() -> None:
    code, options = parse_source('# @options: {"max_output_tokens": 2000, "timeout_ms": 60000}\nx = 1')
    assert options == ScriptOptions(max_output_tokens=2000, timeout_ms=60000)
    assert code.startswith("# @options")  # kept as a comment: line numbers stay
    assert parse_source("```py\nx = 1\n```")[0] == "x = 1"
    assert parse_source("x = '```'")[0] == "x = '```'"
    for bad, message in [
        ("# @options: [1]", "JSON object"),
        ("# @options: {nope}", "not a JSON object"),
        ('# @options: {"timeout_ms": 0}', "positive integer"),
        ('# @options: {"timeout_ms": true}', "positive integer"),
        ('x = 1\n# @options: {"timeout_ms": 5}', "first line"),
    ]:
        with pytest.raises(SourceError, match=message):
            parse_source(bad)


def test_identifiers() -> None:
    assert to_identifier("mcp__dev-radius__search") == "mcp__dev_radius__search"
    assert to_identifier("import") == "import_"
    assert to_identifier("9lives") == "t9lives"
    assert to_identifier("_private") == "t_private"
    assert assign_identifiers(["a-b", "a_b", "a.b"]) == {"a-b": "a_b", "a_b": "a_b_2", "a.b": "a_b_3"}


def test_annotations_from_json_schema() -> None:
    assert annotation({"type": "string"}) == "str"
    assert annotation({"type": ["string", "null"]}) == "str | None"
    assert annotation({"enum": ["a", "b"]}) == "Literal['a', 'b']"
    assert annotation({"enum": ["a", None]}) == "Literal['a'] | None"
    assert annotation({"enum": [1.5]}) == "Any"
    assert annotation({"type": "array", "items": {"type": "integer"}}) == "list[int]"
    assert annotation({"anyOf": [{"type": "integer"}, {"type": "number"}]}) == "int | float"
    assert annotation({"type": "object", "additionalProperties": {"type": "string"}}) == "dict[str, str]"
    assert annotation({"$ref": "#/defs/X"}) == "Any"


def test_stubs_map_names_defaults_and_nulls() -> None:
    schema = {
        "type": "object",
        "properties": {
            "from": {"type": "string", "description": "Start\n  date."},
            "max-results": {"type": "integer", "default": 10},
            "mode": {"enum": ["fast", "slow"], "default": "fast"},
            "note": {"type": ["string", "null"]},
        },
        "required": ["from"],
    }
    stub = build_stub(_tool("find_events", schema), "find_events")
    assert stub.signature() == (
        "def find_events(*, from_: str, max_results: int = 10, mode: Literal['fast', 'slow'] = 'fast', "
        "note: str | None = None) -> str:"
    )
    assert stub.to_arguments({"from_": "mon", "max_results": None, "note": None}) == {"from": "mon", "note": None}
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        stub.to_arguments({"nope": 1})
    assert "    from_: Start date." in stub.document("Find events.")
    free = build_stub(_tool("anything", {"type": "object"}), "anything")
    assert free.signature() == "def anything(**kwargs: Any) -> str:"
    nested = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "description": "Changes.",
                "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
                    "required": ["old"],
                },
            }
        },
    }
    assert "edits: Changes. Shape: [{old: str, new?: str}, ...]" in build_stub(_tool("e", nested), "e").document("E.")
    structured = build_stub(_tool("calc", output_schema={"type": "object", "properties": {}}), "calc")
    assert structured.returns == "dict[str, Any]"


def test_store_branch_replay_and_limits() -> None:
    def entry(data: Any, custom_type: str = "codemode-store") -> CustomEntry:
        return CustomEntry(id="e", custom_type=custom_type, data=data)

    branch = [
        entry({"set": {"a": 1, "b": 2}, "delete": []}),
        entry({"set": {"x": 1}}, custom_type="other"),
        entry({"set": {"a": 3}, "delete": ["b"]}),
        entry("garbage"),
    ]
    assert read_store(branch) == {"a": 3}
    store = ScriptStore({"a": 3})
    store.store("big", "x" * (MAX_VALUE_CHARS - 10))
    with pytest.raises(ValueError, match="at most"):
        store.store("too-big", "x" * MAX_VALUE_CHARS)
    with pytest.raises(ValueError, match="the store would hold"):
        for i in range(5):
            store.store(f"k{i}", "y" * (MAX_VALUE_CHARS - 10))
    store.store("a", None)
    assert store.load("a", "gone") == "gone"
    changes = store.changes()
    assert changes is not None and changes["delete"] == ["a"] and "big" in changes["set"]
    loaded = store.load("big")
    loaded += "!"  # a copy: the stored value does not change
    assert store.load("big") != loaded


def test_output_rendering_truncates_to_a_file(tmp_path: Path) -> None:
    output = Output()
    output.text("A" * 300)
    output.text(["list", 1])
    outcome = Outcome(True, 0.5, output, [("stdout", "hello\n"), ("stderr", "warn\n")])
    result = render_result(outcome, max_output_tokens=25)
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Script completed\nWall time: 0.500 s\n\n==> text 1/2 <==\nAAAA")
    assert "characters omitted" in text and "[stderr] warn\n</console_output>" in text
    assert Path(result.details["full_output_path"]).read_text().count("A") == 300
    failed = render_result(Outcome(False, 0.1, Output(), [], "boom"), 100)
    assert failed.is_error and failed.content[0].text.endswith("Script error:\nboom")  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="remote URLs"):
        Output().image("https://example.com/x.png")
    with pytest.raises(ValueError, match="not supported"):
        Output().image("data:image/tiff;base64,AAAA")


def test_reaches_tools() -> None:
    assert reaches_tools({"code": "tools.mcp__docs__search(q='x')\nprint(1)"}) == [
        "mcp__docs__search",
        "print",
        "q",
        "tools",
        "x",
    ]
    assert reaches_tools({"code": "search_tools('jira')"}) == "all"
    assert reaches_tools({"code": "call_tool(name)"}) == "all"
    assert reaches_tools({}) == []


def test_budget_selection_shows_every_namespace_before_completing_one() -> None:
    a = ToolNamespace(name="alpha", description="First server")
    b = ToolNamespace(name="beta")
    tools = [_tool(f"a{i}", namespace=a, exposure="codemode") for i in range(4)]
    tools += [_tool(f"b{i}", namespace=b, exposure="codemode") for i in range(4)]
    catalog = CatalogCache().get(tools)
    full = build_description(catalog.tools, 100_000)
    assert full.count("\ndef ") == 8 and "## alpha\nFirst server" in full
    small = build_description(catalog.tools, 20)
    assert "## alpha (some tools not listed)" in small and "## beta (some tools not listed)" in small
    assert "def a0(" in small and "def b0(" in small
    assert "6 more tool(s) are not listed" in small


def test_catalog_cache_reuses_by_identity() -> None:
    cache = CatalogCache()
    tools = [_tool("one"), _tool("two")]
    first = cache.get(tools)
    assert cache.get(list(tools)) is first
    changed = cache.get([tools[0], _tool("two", description="Changed.")])
    assert changed is not first and changed.key != first.key
    assert changed.by_ident["one"].stub is first.by_ident["one"].stub
