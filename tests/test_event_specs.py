"""An event's behaviour is declared on its hookspec, and the runner follows the
declaration: a new chained event is its hookspec and nothing else.

The throwaway event ``shout`` below is declared the way pi's own are
(``@event_spec(Rule.CHAINED, compose=Chained("words"))``) and published by a plugin
with ``add_hookspecs``; pi's runner dispatches it, chains its results, reports a
failing handler and answers ``ctx.hook.shout(...)`` — without a line of the runner
knowing its name.
"""

from __future__ import annotations

import types
from typing import Any, Literal

import pytest

import pi_hookspecs as h
from conftest import load_host
from pi_hookspecs import Event, ExtensionContext, Rule, StrictModel, hookimpl
from pi_hookspecs.compose import BlockingGate, Chained, Composition
from pi_hookspecs.rules import event_spec


class ShoutEvent(Event):
    type: Literal["shout"] = "shout"
    words: list[str]


class ShoutResult(StrictModel):
    words: list[str]


def _shout_specs() -> types.ModuleType:
    def shout(event: ShoutEvent, ctx: ExtensionContext) -> ShoutResult | None:
        """A throwaway chained event: each handler gets the words the previous one left."""

    module = types.ModuleType("shout_specs")
    module.shout = event_spec(Rule.CHAINED, group="Test", compose=Chained("words"), in_place=True)(shout)  # type: ignore[attr-defined]
    return module


class Publisher:
    @hookimpl
    def add_hookspecs(self, add: Any) -> None:
        add(_shout_specs())


class Hello:
    @hookimpl(tryfirst=True)
    def shout(self, event: ShoutEvent) -> dict[str, Any]:
        return {"words": [*event.words, "hello"]}


class Louder:
    @hookimpl
    def shout(self, event: ShoutEvent) -> ShoutResult:
        return ShoutResult(words=[word.upper() for word in event.words])


class Broken:
    @hookimpl(trylast=True)
    def shout(self, event: ShoutEvent) -> None:
        event.words = "not a list"  # type: ignore[assignment]  # an invalid change in place: undone
        raise RuntimeError("no voice")


async def test_a_new_chained_event_needs_only_its_hookspec() -> None:
    host = await load_host(Publisher, Hello, Louder, Broken)
    event = ShoutEvent(words=["well"])
    assert await host.runner.emit("shout", event) == ["WELL", "HELLO"]
    (error,) = host.runner.errors
    assert (error.plugin, error.hook) == ("Broken", "shout") and "no voice" in error.message
    assert event.words == ["WELL", "HELLO"]  # the invalid change was put back
    # plugins call it as they call pi's events: through the runner, awaited
    assert await host.make_context().hook.shout({"words": ["ok"]}) == ["OK", "HELLO"]


async def test_without_handlers_the_chained_field_comes_back() -> None:
    host = await load_host(Publisher)
    assert await host.runner.emit("shout", ShoutEvent(words=["quiet"])) == ["quiet"]


def test_every_event_of_pi_declares_how_its_results_combine() -> None:
    """What the runner used to check with an import-time assert, as a test: every event
    has a composition, the rules that leave room declare one, and a fail-closed event's
    composition says what a failure answers."""
    for name, spec in h.EVENTS.items():
        assert isinstance(spec.compose, Composition), name
        if spec.rule in (Rule.CHAINED, Rule.GATE):
            assert type(spec.compose) is not Composition, name
        if spec.fail_closed:
            assert spec.compose.fails_closed, name
    assert {n for n, s in h.EVENTS.items() if s.fail_closed} == {"tool_call", "user_bash", "bash_spawn", "file_access"}


def test_a_declaration_that_leaves_out_how_results_combine_is_refused() -> None:
    def shout(event: ShoutEvent, ctx: ExtensionContext) -> ShoutResult | None:
        """No composition."""

    with pytest.raises(TypeError, match="a chained hook declares how its results combine"):
        event_spec(Rule.CHAINED, group="Test")(shout)
    with pytest.raises(TypeError, match="fail_closed needs a composition"):
        event_spec(Rule.CHAINED, group="Test", compose=Chained("words"), fail_closed=True)(shout)
    assert event_spec(Rule.GATE, group="Test", compose=BlockingGate(), fail_closed=True)


def test_the_hook_reference_says_how_each_chained_event_combines() -> None:
    from pathlib import Path

    reference = (Path(__file__).resolve().parents[1] / "docs" / "hooks.md").read_text(encoding="utf-8")
    for name, spec in h.EVENTS.items():
        summary = spec.compose.describe()
        if summary:
            assert summary in reference, name
