"""pi's ``PluginManager`` finds the hook implementations pluggy's own finds, for every
plugin of the workspace and for the unusual spellings pluggy supports (a ``specname``
on a private method, static and class methods, a module as plugin); it only skips
the dunder names every object has."""

from __future__ import annotations

import types
from typing import Any

import pluggy
import pytest

from pi_core._entrypoints import entry_points
from pi_core.extensions._manager import PluginManager
from pi_hookspecs import ENTRY_POINT_GROUP, PROJECT_NAME, hookimpl
from pi_hookspecs import specs as core_specs


def _found(manager_class: type[pluggy.PluginManager], plugin: Any) -> list[tuple[str, Any, dict[str, Any]]]:
    pm = manager_class(PROJECT_NAME)
    pm.add_hookspecs(core_specs)
    pm.register(plugin, "p")
    return sorted(
        (caller.name, impl.function, dict(impl.opts))
        for caller in pm.get_hookcallers(plugin) or []
        for impl in caller.get_hookimpls()
    )


class _Unusual:
    @hookimpl(specname="tool_call")
    async def _guard(self, event: Any, ctx: Any) -> None:
        return None

    @staticmethod
    @hookimpl
    def agent_start(event: Any, ctx: Any) -> None:
        return None

    @classmethod
    @hookimpl(trylast=True)
    def turn_end(cls, event: Any, ctx: Any) -> None:
        return None

    def __call__(self) -> None:  # a dunder: never a hook implementation
        return None


def _module_plugin() -> types.ModuleType:
    module = types.ModuleType("a_plugin_module")

    @hookimpl
    def session_start(ctx: Any) -> None:
        return None

    module.session_start = session_start  # type: ignore[attr-defined]
    return module


def _workspace_plugins() -> list[Any]:
    plugins: list[Any] = []
    for point in entry_points(ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
        except Exception:  # an optional dependency missing here
            continue
        plugins.append(loaded() if isinstance(loaded, type) else loaded)
    return plugins


PLUGINS = [*_workspace_plugins(), _Unusual(), _module_plugin()]


@pytest.mark.parametrize(
    "plugin", PLUGINS, ids=lambda p: type(p).__qualname__ if not isinstance(p, types.ModuleType) else p.__name__
)
def test_the_same_hooks_as_pluggy(plugin: Any) -> None:
    assert _found(PluginManager, plugin) == _found(pluggy.PluginManager, plugin)


def test_the_workspace_plugins_and_the_unusual_spellings_are_there() -> None:
    assert len(PLUGINS) > 8
    names = [name for name, _, _ in _found(PluginManager, _Unusual())]
    assert names == ["agent_start", "tool_call", "turn_end"]
