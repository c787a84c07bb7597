"""Installed plugins imported when they are first needed.

An installed plugin (entry point, group ``pi.extensions``) that the run does not need
should cost (close to) nothing. pi learns which hooks such a plugin implements without
importing it, from an index it keeps in ``<agent-dir>/cache/plugin-index.json``: for
each entry point the distribution's name and version, the entry point's value, the
hooks with their options and argument names, and the size and modification time of
every file the plugin's hooks come from (its top-level package's modules loaded when it
was imported, and the modules of its class and of its hook functions). The entry is
written the first time the plugin is imported, and used while all of that is unchanged.

A plugin whose index entry is valid is registered as a stand-in (:func:`stand_in`) with
the same hook implementations (names, argument names, ``tryfirst``/``trylast``, sync or
async), so pluggy and pi's runner order it exactly as the plugin itself; the plugin is
imported the first time one of its hooks is called (pi's runner imports it on the event
loop's thread just before an event first reaches it), and every call is forwarded to it.
Registration hooks whose results are read on demand (:data:`~.registry.ON_DEMAND`:
slash commands, ``pi NAME`` subcommands, shortcuts, renderers) are called when their
table is first read; a plugin implementing any other registration hook (tools, flags,
providers, ``add_hookspecs``, hooks added to the contract later) is imported at start.

When the stand-in's plugin is imported its hooks are compared with the index: a
difference re-indexes it, and hooks the index did not know are reported (one warning)
and registered from then on. A plugin is never deferred when the hooks it has depend on
more than its files: a class whose ``__new__`` returns another class, or an instance
given hook implementations in ``__init__``, is marked eager in the index.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import sys
import threading
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pluggy

from pi_hookspecs import EVENTS, PROJECT_NAME, REGISTRATIONS

from ._manager import PluginManager
from .sources import IMPL_ATTR, PluginSource

INDEX_VERSION = 1
INDEX_NAME = "plugin-index.json"

Hook = dict[str, Any]
"""One hook implementation of an indexed plugin: ``attr`` (its attribute), ``hook`` (the
hook's name), ``args`` (argument names), ``async``, ``opts`` (pluggy's hookimpl options)."""


def index_path(agent_dir: Path) -> Path:
    return agent_dir / "cache" / INDEX_NAME


def hooks_of(plugin: Any) -> list[Hook]:
    """The hook implementations of a plugin object, as pluggy finds them."""
    pm = PluginManager(PROJECT_NAME)
    found: list[Hook] = []
    for attr in dir(plugin):
        opts = pm.parse_hookimpl_opts(plugin, attr)
        if opts is None:
            continue
        function = getattr(plugin, attr)
        args, _ = pluggy._hooks.varnames(function)
        found.append(
            {
                "attr": attr,
                "hook": opts.get("specname") or attr,
                "args": list(args),
                "async": inspect.iscoroutinefunction(function),
                "opts": {key: value for key, value in opts.items() if value},
            }
        )
    return found


def deferrable(hooks: Iterable[Hook], on_demand: Iterable[str]) -> bool:
    """Whether a plugin with these hooks can wait for its first hook call: no pluggy
    wrapper, no registration hook whose result every start needs (only those read on
    demand; events and hooks other plugins publish are called when needed), and no
    fail-closed event (``tool_call``, ``user_bash`` …): a guard whose import fails must
    be reported before anything runs, never found missing at the call it should judge."""
    later = set(on_demand)
    for hook in hooks:
        opts = hook.get("opts") or {}
        if opts.get("wrapper") or opts.get("hookwrapper"):
            return False
        name = hook["hook"]
        spec = EVENTS.get(name)
        if spec is not None and spec.fail_closed:
            return False
        if name in REGISTRATIONS and (name not in later or hook.get("async")):
            return False  # needed at start, or an async registration (called when a table is read)
        if name not in EVENTS and name not in REGISTRATIONS and name.startswith("register_"):
            # a registration hook of the contract this pi does not know (a newer
            # pi_hookspecs): treated as needed at start
            return False
    return True


def _files(paths: Iterable[str]) -> list[list[Any]] | None:
    out: list[list[Any]] = []
    for path in sorted(set(paths)):
        try:
            st = os.stat(path)
        except OSError:
            return None
        out.append([path, st.st_mtime_ns, st.st_size])
    return out


def _source_files(origin: str, plugin: Any, hooks: list[Hook]) -> list[list[Any]] | None:
    """What the plugin's hooks are defined by: the files of its top-level package's
    loaded modules, of the modules of its class (and bases) and of its hook functions."""
    top = origin.split("[", 1)[0].split(":", 1)[0].strip().split(".", 1)[0]
    names = {name for name in list(sys.modules) if name == top or name.startswith(top + ".")}
    if not isinstance(plugin, types.ModuleType):
        names.update(cls.__module__ for cls in type(plugin).__mro__ if cls is not object)
    for hook in hooks:
        names.add(getattr(getattr(plugin, hook["attr"], None), "__module__", None) or top)
    paths = []
    for name in names:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            paths.append(path)
        elif module is not None and name == top and getattr(module, "__path__", None) is None:
            return None  # a module without a file: nothing to check it by
    return _files(paths) if paths else None


def is_static(loaded: Any, plugin: Any) -> bool:
    """Whether the plugin's hooks follow from its files alone: a module, or an instance
    of the class the entry point names (or the one class its module defines), without
    hook implementations of its own set on the instance."""
    if isinstance(plugin, types.ModuleType):
        return True
    expected = named_class(loaded)
    if expected is None or type(plugin) is not expected:
        return False
    own = vars(plugin) if hasattr(plugin, "__dict__") else {}
    return not any(callable(value) and hasattr(value, IMPL_ATTR) for value in own.values())


def named_class(loaded: Any) -> type | None:
    """The class :func:`~.sources.resolve_plugin` instantiates for ``loaded`` (``None``:
    an object or a module registered as it is)."""
    from .sources import has_hookimpls

    if inspect.isclass(loaded):
        return loaded
    if isinstance(loaded, types.ModuleType):
        if has_hookimpls(loaded):
            return None
        chosen = getattr(loaded, "__pi_plugin__", None)
        if chosen is not None:
            return named_class(chosen)
        classes = [
            value
            for value in vars(loaded).values()
            if inspect.isclass(value)
            and (value.__module__ == loaded.__name__ or value.__module__.startswith(loaded.__name__ + "."))
            and has_hookimpls(value)
        ]
        return classes[0] if len(classes) == 1 else None
    return None


def _well_formed(hooks: Any) -> bool:
    """Whether an index entry's hooks are what :func:`hooks_of` writes (a damaged or
    hand-edited entry is not used: the plugin is imported and indexed again)."""
    return isinstance(hooks, list) and all(
        isinstance(hook, dict)
        and isinstance(hook.get("attr"), str)
        and hook["attr"].isidentifier()
        and isinstance(hook.get("hook"), str)
        and isinstance(hook.get("args"), list)
        and all(isinstance(arg, str) and arg.isidentifier() for arg in hook["args"])
        and isinstance(hook.get("async"), bool)
        and isinstance(hook.get("opts", {}), dict)
        for hook in hooks
    )


class PluginIndex:
    """The index file: read once when first asked, written when an entry changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, Any] | None = None
        self._dirty = False
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            entries = data.get("plugins") if isinstance(data, dict) and data.get("version") == INDEX_VERSION else None
            self._entries = entries if isinstance(entries, dict) else {}
        return self._entries

    def lookup(self, source: PluginSource) -> dict[str, Any] | None:
        """The index entry of ``source`` when it is still valid (same distribution,
        version and entry point; every file unchanged), else ``None``."""
        entry = self._read().get(source.name)
        if not isinstance(entry, dict):
            return None
        if (entry.get("distribution"), entry.get("version"), entry.get("value")) != (
            source.distribution,
            source.version,
            source.origin,
        ):
            return None
        files = entry.get("files")
        if not isinstance(files, list) or not files or not _well_formed(entry.get("hooks")):
            return None
        for item in files:
            try:
                path, mtime, size = item
                st = os.stat(path)
            except (OSError, TypeError, ValueError):
                return None
            if st.st_mtime_ns != mtime or st.st_size != size:
                return None
        return entry

    def store(self, source: PluginSource, loaded: Any, plugin: Any, hooks: list[Hook] | None = None) -> None:
        """Index ``source`` from its imported plugin (a no-op when the entry would not
        change, or when its files cannot be found). Indexing never fails a load: a
        plugin it cannot describe is left out (imported at every start)."""
        try:
            hooks = hooks_of(plugin) if hooks is None else hooks
            files = _source_files(source.origin, plugin, hooks)
            static = is_static(loaded, plugin)
        except Exception:
            hooks, files, static = [], None, False
        with self._lock:
            entries = self._read()
            if files is None:
                if entries.pop(source.name, None) is not None:
                    self._dirty = True
                return
            entry = {
                "distribution": source.distribution,
                "version": source.version,
                "value": source.origin,
                "static": static,
                "hooks": hooks,
                "files": files,
            }
            if entries.get(source.name) != entry:
                entries[source.name] = entry
                self._dirty = True

    def save(self) -> None:
        """Write the index when it changed (a failure only costs the next start time)."""
        with self._lock:
            if not self._dirty or self._entries is None:
                return
            self._dirty = False
            data = json.dumps({"version": INDEX_VERSION, "plugins": self._entries}, indent=1, sort_keys=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            with contextlib.suppress(OSError):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(data, encoding="utf-8")
                os.replace(tmp, self.path)
            with contextlib.suppress(OSError):
                tmp.unlink()


class StandIn:
    """The object registered for a plugin that is not imported yet (see :func:`stand_in`)."""

    __pi_stand_in__ = True

    def __init__(self, name: str, target: Callable[..., Any]) -> None:
        self._pi_name = name
        self._pi_target = target

    def _pi_import(self, hook: str) -> None:
        """Import the plugin now (the runner does, on the event loop's thread, before
        event ``hook`` first reaches one of its handlers)."""
        self._pi_target(None, hook)

    def __repr__(self) -> str:
        return f"<plugin {self._pi_name!r}, imported on its first hook call>"


@functools.cache
def _forwarder_factory(args: tuple[str, ...], is_async: bool) -> Callable[[str], Callable[..., Any]]:
    """``make(attr)``: a method taking ``args`` that forwards to the plugin's ``attr``
    (compiled once per argument list, not once per hook)."""
    if any(not name.isidentifier() or name.startswith("_pi_") for name in args):
        raise ValueError(f"bad argument names {args!r}")
    params = ", ".join(args)
    head = "async def" if is_async else "def"
    body = "        _pi_found = self._pi_target(_pi_attr)\n        if _pi_found is None:\n            return None\n"
    if is_async:
        body += (
            f"        _pi_result = _pi_found({params})\n"
            "        return (await _pi_result) if _pi_awaitable(_pi_result) else _pi_result\n"
        )
    else:
        body += f"        return _pi_found({params})\n"
    source = (
        f"def make(_pi_attr):\n    {head} forward(self{', ' if params else ''}{params}):\n{body}    return forward\n"
    )
    namespace: dict[str, Any] = {"_pi_awaitable": inspect.isawaitable}
    exec(source, namespace)
    make: Callable[[str], Callable[..., Any]] = namespace["make"]
    return make


def _forwarder(attr: str, args: list[str], is_async: bool) -> Callable[..., Any]:
    function = _forwarder_factory(tuple(args), is_async)(attr)
    function.__name__ = function.__qualname__ = attr
    return function


def stand_in_for(
    name: str, entry: dict[str, Any], target: Callable[..., Any], on_demand: Iterable[str]
) -> StandIn | None:
    """The stand-in of an indexed plugin that can wait for its first hook call, else
    ``None`` (it is imported at start): its hooks need it at start, it is not static, or
    its index entry is not one this pi can use."""
    try:
        hooks = entry["hooks"]
        if not entry.get("static") or not deferrable(hooks, on_demand):
            return None
        return stand_in(name, hooks, target)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def stand_in(name: str, hooks: list[Hook], target: Callable[..., Any]) -> StandIn:
    """An object implementing ``hooks`` as the indexed plugin does; each call imports
    the plugin once (``target(attr)``: the plugin's attribute, or ``None`` when it could
    not be imported or no longer has it) and forwards the call."""
    marker = pluggy.HookimplMarker(PROJECT_NAME)
    namespace: dict[str, Any] = {}
    for hook in hooks:
        function = _forwarder(hook["attr"], list(hook["args"]), bool(hook["async"]))
        namespace[hook["attr"]] = marker(**(hook.get("opts") or {}))(function)
    cls = type(f"StandIn_{''.join(c if c.isalnum() else '_' for c in name)}", (StandIn,), namespace)
    return cls(name, target)  # type: ignore[no-any-return]


def same_hooks(indexed: list[Hook], found: list[Hook]) -> bool:
    def key(hook: Hook) -> tuple[Any, ...]:
        return (
            hook["attr"],
            hook["hook"],
            tuple(hook["args"]),
            bool(hook["async"]),
            sorted((hook["opts"] or {}).items()),
        )

    return sorted(map(key, indexed)) == sorted(map(key, found))
