"""Incremental updates: add / update / remove / sync give what a fresh build gives."""

from __future__ import annotations

import random

import pytest
from pi_toolindex import ToolDocument, ToolIndex, document_for
from toolindex_catalogue import catalogue, definition, schema

from pi_hookspecs import ToolDefinition

QUERIES = [
    "create an issue",
    "merge the PR",
    "ticket comment",
    "list commits",
    "search code",
    "priority",
    "repository branch file",
    "customer support agent",
]


def fresh(tools: list[ToolDefinition]) -> ToolIndex:
    index = ToolIndex()
    for tool in tools:
        index.add_tool(tool)
    return index


def results(index: ToolIndex) -> dict[str, list[tuple[str, float]]]:
    return {q: [(h.name, round(h.score, 9)) for h in index.search(q, limit=30)] for q in QUERIES}


def test_add_makes_a_tool_findable_and_remove_forgets_it() -> None:
    index = ToolIndex()
    assert index.search("weather") == [] and len(index) == 0
    index.add("weather", ToolDocument(name="weather", description="Weather forecast"))
    assert "weather" in index and [h.name for h in index.search("forecast")] == ["weather"]
    assert index.remove("weather") is True
    assert index.remove("weather") is False
    assert "weather" not in index and index.search("forecast") == [] and index.names() == []


def test_update_replaces_the_document_and_needs_an_indexed_name() -> None:
    index = ToolIndex()
    index.add("t", ToolDocument(name="t", description="old words"))
    index.update("t", ToolDocument(name="t", description="new words"))
    assert index.search("old") == [] and [h.name for h in index.search("new")] == ["t"]
    with pytest.raises(KeyError):
        index.update("missing", ToolDocument(description="x"))


def test_random_changes_match_a_fresh_build() -> None:
    rng = random.Random(7)
    pool = catalogue()
    live: dict[str, ToolDefinition] = {}
    index = ToolIndex()
    for step in range(300):
        tool = rng.choice(pool)
        action = rng.random()
        if action < 0.5:
            index.add_tool(tool)
            live[tool.name] = tool
        elif action < 0.7 and tool.name in live:
            changed = tool.model_copy(update={"description": f"{tool.description} revision {step}"})
            index.update(tool.name, document_for(changed), source=changed)
            live[tool.name] = changed
        else:
            index.remove(tool.name)
            live.pop(tool.name, None)
        if step % 25 == 0:
            assert {n for n in index.names()} == set(live)
            expected = fresh(list(live.values()))
            assert _by_score(results(index)) == _by_score(results(expected))


def _by_score(found: dict[str, list[tuple[str, float]]]) -> dict[str, set[tuple[str, float]]]:
    # the order of equal scores depends on insertion order, which differs from a fresh build
    return {q: set(hits) for q, hits in found.items()}


def test_sync_indexes_new_and_reregistered_tools_and_drops_withdrawn_ones() -> None:
    tools = catalogue()
    index = ToolIndex()
    searchable = lambda t: t.exposure in ("deferred", "codemode")  # noqa: E731
    first = index.sync(tools, keep=searchable)
    assert len(first.added) == len(tools) and not first.updated and not first.removed
    assert not index.sync(tools, keep=searchable)  # nothing changed: identity checks only
    weather = definition("weather", "Weather forecast for a city.", schema())
    hidden = tools[0].model_copy(update={"exposure": "hidden"})
    renamed_description = tools[1].model_copy(update={"description": "Enumerate tickets of every kind."})
    changed = index.sync([hidden, renamed_description, *tools[2:-1], weather], keep=searchable)
    assert changed.added == ["weather"]
    assert changed.updated == [tools[1].name]
    assert set(changed.removed) == {tools[0].name, tools[-1].name}
    assert [h.name for h in index.search("weather")] == ["weather"]
    assert tools[0].name not in {h.name for h in index.search("create an issue", limit=30)}
    assert index.search("enumerate")[0].name == tools[1].name
    assert index.sync([], keep=searchable).removed and len(index) == 0
    assert index.search("weather") == []
