"""Contexts read live state and go stale when their runtime is replaced."""

from __future__ import annotations

from typing import Any

import pytest

import pi_hookspecs as h
from conftest import load_host
from pi_core.extensions import ContextHost
from pi_hookspecs import hookimpl


class Keeper:
    """A badly behaved plugin that keeps the ctx it was given."""

    @hookimpl
    def session_start(self, ctx: Any) -> None:
        self.kept = ctx


async def test_context_properties_are_live() -> None:
    host = await load_host(Keeper)
    await host.runner.emit("session_start", h.SessionStartEvent())
    ctx = next(r.plugin for r in host.records if r.name == "Keeper").kept
    assert ctx.thinking_level == "off" and ctx.model is None
    host.context_host.thinking_level = "high"
    host.context_host.model = h.Model(id="m", provider="p")
    assert ctx.thinking_level == "high" and ctx.model.ref == "p/m"


async def test_stale_context_after_invalidation() -> None:
    host = await load_host(Keeper)
    await host.runner.emit("session_start", h.SessionStartEvent())
    ctx = next(r.plugin for r in host.records if r.name == "Keeper").kept
    assert ctx.cwd
    host.invalidate("reload")
    with pytest.raises(h.StaleContextError, match="reload"):
        _ = ctx.cwd
    with pytest.raises(h.StaleContextError):
        ctx.append_entry("x", {})


async def test_session_actions_before_a_session_exists_say_so() -> None:
    host = await load_host()
    ctx = host.make_context()
    with pytest.raises(RuntimeError, match=r"ctx.append_entry is not available here: no session is running"):
        ctx.append_entry("x")
    with pytest.raises(RuntimeError, match="session_manager"):
        _ = ctx.session_manager


async def test_a_bound_host_supplies_the_actions() -> None:
    class SessionHost(ContextHost):
        def __init__(self) -> None:
            super().__init__(cwd="/work")
            self.entries: list[Any] = []

        def action_append_entry(self, custom_type: str, data: Any) -> str:
            self.entries.append((custom_type, data))
            return "e1"

    host = await load_host(Keeper)
    session = SessionHost()
    host.bind(session)
    await host.runner.emit("session_start", h.SessionStartEvent())
    ctx = next(r.plugin for r in host.records if r.name == "Keeper").kept
    assert ctx.append_entry("todo", {"n": 1}) == "e1" and session.entries == [("todo", {"n": 1})]
    assert ctx.hook is host.hooks and ctx.hook.agent_start.get_hookimpls() == host.pm.hook.agent_start.get_hookimpls()
    assert ctx.get_settings() == {} and ctx.get_settings() is not ctx.get_settings()
