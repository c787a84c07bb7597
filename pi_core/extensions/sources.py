"""Where plugins come from, and how one is imported.

Load order (also the registration order in pluggy):

1. ``builtin``    — pi's own plugins (the built-in tools), always loaded;
2. ``entrypoint`` — installed distributions, entry-point group ``pi.extensions``;
3. ``user``       — ``<agent-dir>/extensions/*.py`` and ``<dir>/__init__.py``;
4. ``settings``   — paths and modules listed in settings ``extensions``;
5. ``project``    — ``.pi/extensions/`` (only once the project is trusted);
6. ``cli``        — ``-e PATH|MODULE|NAME``;
7. ``sdk``        — plugin objects passed in by a program embedding pi.

Each source is imported inside its own ``try``: an error becomes a diagnostic and the
next source loads.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import marshal
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from pi_hookspecs import ENTRY_POINT_GROUP, PROJECT_NAME
from pi_hookspecs.record import dataclass

from .._entrypoints import entry_points
from .diagnostics import Diagnostic

SourceKind = Literal["builtin", "entrypoint", "user", "settings", "project", "cli", "sdk"]
SOURCE_ORDER: tuple[SourceKind, ...] = ("builtin", "entrypoint", "user", "settings", "project", "cli", "sdk")
IMPL_ATTR = f"{PROJECT_NAME}_impl"
FOREIGN_SUFFIXES = (".ts", ".js", ".mjs", ".cjs", ".mts", ".cts")


class PluginLoadError(Exception):
    """A source could not be turned into a plugin object."""


@dataclass
class PluginSource:
    """Where a plugin comes from (entry point, module, file, SDK object) and how to load it."""

    name: str
    kind: SourceKind
    origin: str
    """What is loaded: ``module:attr`` for an entry point, a module name, a file path,
    or ``<object>`` for SDK objects."""
    loader: Callable[[], Any] = field(repr=False)
    path: str | None = None
    distribution: str | None = None
    version: str | None = None
    settings_scope: Literal["user", "project"] | None = None

    @property
    def explicit(self) -> bool:
        """Asked for by name on this run (``-e``, SDK): filters do not apply."""
        return self.kind in ("cli", "sdk", "builtin")


# --------------------------------------------------------------------------- plugin objects


def has_hookimpls(obj: Any) -> bool:
    for name in dir(obj):
        if name.startswith("__"):
            continue
        try:
            attr = getattr(obj, name)
        except Exception:
            continue
        if callable(attr) and hasattr(attr, IMPL_ATTR):
            return True
    return False


def resolve_plugin(obj: Any, origin: str) -> Any:
    """Turn a loaded object into the object to register: a module with hookimpls as it
    is, a class instantiated (fresh per session runtime), an instance as it is."""
    if isinstance(obj, types.ModuleType):
        if has_hookimpls(obj):
            return obj
        chosen = getattr(obj, "__pi_plugin__", None)
        if chosen is not None:
            return resolve_plugin(chosen, origin)
        classes = [
            value
            for value in vars(obj).values()
            if inspect.isclass(value)
            and (value.__module__ == obj.__name__ or value.__module__.startswith(obj.__name__ + "."))
            and has_hookimpls(value)
        ]
        if len(classes) == 1:
            return resolve_plugin(classes[0], origin)
        if len(classes) > 1:
            names = ", ".join(c.__name__ for c in classes)
            raise PluginLoadError(
                f"{origin} defines several plugin classes ({names}); name one with __pi_plugin__ = ..."
            )
        raise PluginLoadError(f"{origin} is not a pi plugin: it defines no @hookimpl functions")
    if inspect.isclass(obj):
        if not has_hookimpls(obj):
            raise PluginLoadError(f"{origin} is not a pi plugin: class {obj.__name__} has no @hookimpl methods")
        try:
            return obj()
        except Exception as exc:
            raise PluginLoadError(f"{origin}: creating {obj.__name__}() failed: {type(exc).__name__}: {exc}") from exc
    if inspect.isfunction(obj) or inspect.isbuiltin(obj) or isinstance(obj, str | int | float | bool | type(None)):
        raise PluginLoadError(
            f"{origin} is not a pi plugin: expected a module or a class with @hookimpl methods, "
            f"got {type(obj).__name__}"
        )
    if not has_hookimpls(obj):
        raise PluginLoadError(f"{origin} is not a pi plugin: {type(obj).__name__} has no @hookimpl methods")
    return obj


# --------------------------------------------------------------------------- importing files

_file_cache: dict[str, tuple[bytes, types.ModuleType]] = {}
_MODULE_PREFIX = "pi_extensions."
"""The package every plugin file is imported under (``pi_extensions.<kind>.<name>``)."""

_CHECKED_HASH = (0b11).to_bytes(4, "little")
"""A ``.pyc``'s flags (PEP 552): validated by the hash of its source, always checked."""


class _SourceHashLoader(importlib.machinery.SourceFileLoader):
    """The loader of a plugin file and of its package's modules: their bytecode is
    validated by a hash of the source (a PEP 552 checked-hash ``.pyc``), never by the
    file's modification time.

    CPython's own loader trusts a ``.pyc`` whose recorded modification time (in whole
    seconds) and size match the source: a plugin edited within the second of its last
    import, to the same size, would run its old code after ``/reload``. Hashing the
    source costs microseconds (a plugin file is small); the ``.pyc`` is still written
    (unless ``sys.dont_write_bytecode``) and read, so a start does not compile an
    unchanged plugin. CPython's loader checks the files written here by the same hash."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        source = self.get_data(path)
        header = importlib.util.MAGIC_NUMBER + _CHECKED_HASH + importlib.util.source_hash(source)
        try:
            bytecode_path: str | None = importlib.util.cache_from_source(path)
        except (NotImplementedError, ValueError):  # no bytecode caching in this interpreter
            bytecode_path = None
        if bytecode_path is not None:
            try:
                with open(bytecode_path, "rb") as handle:
                    data = handle.read()
            except OSError:
                data = b""
            if data[: len(header)] == header:
                try:
                    code = marshal.loads(memoryview(data)[len(header) :])
                except (EOFError, ValueError, TypeError):  # damaged: compiled again
                    code = None
                if isinstance(code, types.CodeType):
                    return code
        code = self.source_to_code(source, path)
        if bytecode_path is not None and not sys.dont_write_bytecode:
            self.set_data(bytecode_path, header + marshal.dumps(code))  # failures are ignored
        return code


class _PluginModuleFinder:
    """Gives the modules of a plugin package (``pi_extensions.*``, imported from the
    package's folder) the plugin files' loader; every other import is not its business."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is None or not fullname.startswith(_MODULE_PREFIX):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader and spec.origin:
            spec.loader = _SourceHashLoader(fullname, spec.origin)
        return spec


_finder = _PluginModuleFinder()


def _module_name_for(path: Path, kind: str) -> str:
    stem = re.sub(r"\W", "_", path.stem if path.name != "__init__.py" else path.parent.name)
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return f"{_MODULE_PREFIX}{kind}.{stem}_{digest}"


def _add_parent_packages(name: str) -> None:
    """Empty packages ``pi_extensions`` and ``pi_extensions.<kind>`` in ``sys.modules``: a
    plugin package's nested import (``from .parts.helpers import x``) imports its parents
    by ``__import__``, which also imports the top-level package of the name."""
    parts = name.split(".")
    for end in range(1, len(parts)):
        parent = ".".join(parts[:end])
        if parent not in sys.modules:
            module = types.ModuleType(parent, "The plugin files pi imported.")
            module.__path__ = []  # holds only the modules pi puts in sys.modules itself
            module.__spec__ = importlib.machinery.ModuleSpec(parent, None, is_package=True)
            sys.modules[parent] = module


def _fingerprint(path: Path) -> bytes:
    """What a plugin's module is executed from: a digest of the file's contents, or of
    the names and contents of every ``.py`` file of its package (contents, not
    modification times, which a quick edit or a coarse file system can leave equal)."""
    if path.name != "__init__.py":
        return hashlib.sha1(path.read_bytes()).digest()
    digest = hashlib.sha1()
    for root, dirs, files in os.walk(path.parent):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                file = Path(root) / name
                digest.update(f"{file.relative_to(path.parent)}\0".encode())
                digest.update(hashlib.sha1(file.read_bytes()).digest())
    return digest.digest()


def import_file(path: Path, kind: str, *, fresh: bool = False) -> types.ModuleType:
    """Import ``path`` (a ``.py`` file or a package's ``__init__.py``) as a module of its
    own, always from its current source (:class:`_SourceHashLoader`). The module is
    cached while its files' contents are unchanged; ``fresh`` re-executes it."""
    path = path.resolve()
    key = str(path)
    fingerprint = _fingerprint(path)
    cached = _file_cache.get(key)
    if cached and not fresh and cached[0] == fingerprint:
        return cached[1]
    name = _module_name_for(path, kind)
    for stale in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[stale]
    package = path.name == "__init__.py"
    if package:
        _add_parent_packages(name)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
    spec = importlib.util.spec_from_file_location(
        name,
        path,
        loader=_SourceHashLoader(name, str(path)),
        submodule_search_locations=[str(path.parent)] if package else None,
    )
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _file_cache[key] = (fingerprint, module)
    return module


# --------------------------------------------------------------------------- discovery


def entry_point_sources(diagnostics: list[Diagnostic]) -> list[PluginSource]:
    """Installed plugins: entry points of group ``pi.extensions`` (first one of a name
    wins; importing happens later, one at a time)."""
    sources: list[PluginSource] = []
    seen: dict[str, str] = {}
    for ep in entry_points(ENTRY_POINT_GROUP):
        dist_name = ep.distribution
        if ep.name in seen:
            if seen[ep.name] != ep.value:
                diagnostics.append(
                    Diagnostic(
                        "warning",
                        f"entry point {ep.name!r} ({ep.value}) of {dist_name} ignored: "
                        f"the name is already provided by {seen[ep.name]}",
                        plugin=ep.name,
                        source="entrypoint",
                    )
                )
            continue
        seen[ep.name] = ep.value
        sources.append(
            PluginSource(
                name=ep.name,
                kind="entrypoint",
                origin=ep.value,
                loader=ep.load,
                distribution=dist_name,
                version=ep.version,
            )
        )
    return sources


def _file_source(path: Path, kind: SourceKind, name: str | None = None) -> PluginSource:
    entry = path / "__init__.py" if path.is_dir() else path
    plugin_name = name or (path.name if path.is_dir() else path.stem)
    return PluginSource(
        name=plugin_name,
        kind=kind,
        origin=str(entry),
        path=str(entry),
        loader=lambda: import_file(entry, kind),
    )


def directory_sources(directory: Path, kind: SourceKind, diagnostics: list[Diagnostic]) -> list[PluginSource]:
    """Plugins in an extensions directory: ``*.py`` files and packages (one level)."""
    if not directory.is_dir():
        return []
    sources = []
    for entry in sorted(directory.iterdir(), key=lambda p: p.name):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_file() and entry.suffix == ".py":
            sources.append(_file_source(entry, kind))
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            sources.append(_file_source(entry, kind))
        elif (entry.is_file() and entry.suffix in FOREIGN_SUFFIXES) or (
            entry.is_dir() and any((entry / f).exists() for f in ("index.ts", "index.js", "package.json"))
        ):
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "skipped: TypeScript/JavaScript extensions of the TypeScript pi do not run "
                    "in this pi; write a Python plugin (see docs/plugins.md)",
                    plugin=entry.stem if entry.is_file() else entry.name,
                    source=kind,
                    path=str(entry),
                )
            )
    return sources


def _looks_like_path(spec: str) -> bool:
    return spec.startswith((".", "/", "~")) or os.sep in spec or spec.endswith(".py") or spec.endswith(FOREIGN_SUFFIXES)


def spec_sources(
    specs: Iterable[str],
    kind: SourceKind,
    base_dir: Path,
    diagnostics: list[Diagnostic],
    *,
    entry_points: dict[str, PluginSource] | None = None,
    settings_scope: Literal["user", "project"] | None = None,
) -> list[PluginSource]:
    """Plugins named by settings ``extensions`` or ``-e``: a file or directory path
    (relative to ``base_dir``), an installed entry point's name, or a module
    (``package.module`` or ``package.module:Class``)."""
    sources = []
    for raw in specs:
        spec = str(raw).strip()
        if not spec:
            continue
        if _looks_like_path(spec):
            path = Path(os.path.expanduser(spec))
            if not path.is_absolute():
                path = base_dir / path
            if path.suffix in FOREIGN_SUFFIXES:
                diagnostics.append(
                    Diagnostic(
                        "warning",
                        "skipped: TypeScript/JavaScript extensions do not run in this pi",
                        plugin=path.stem,
                        source=kind,
                        path=str(path),
                    )
                )
                continue
            if not path.exists() or (path.is_dir() and not (path / "__init__.py").is_file()):
                what = "no such file" if not path.exists() else "a directory without __init__.py"
                diagnostics.append(
                    Diagnostic("error", f"cannot load {spec!r}: {what}", plugin=path.stem, source=kind, path=str(path))
                )
                continue
            source = _file_source(path, kind)
        elif entry_points and spec in entry_points:
            ep = entry_points[spec]
            source = PluginSource(
                name=ep.name,
                kind=kind,
                origin=ep.origin,
                loader=ep.loader,
                distribution=ep.distribution,
                version=ep.version,
            )
        else:
            module_name, _, attr = spec.partition(":")

            def load(module_name: str = module_name, attr: str = attr) -> Any:
                module = importlib.import_module(module_name)
                obj: Any = module
                for part in filter(None, attr.split(".")):
                    obj = getattr(obj, part)
                return obj

            source = PluginSource(name=spec, kind=kind, origin=spec, loader=load)
        source.settings_scope = settings_scope
        sources.append(source)
    return sources


def object_source(obj: Any, kind: SourceKind, name: str | None = None) -> PluginSource:
    """A plugin object handed over directly (built-ins, SDK)."""
    if name is None:
        if isinstance(obj, types.ModuleType):
            name = obj.__name__.rsplit(".", 1)[-1]
        elif inspect.isclass(obj):
            name = obj.__name__
        else:
            name = type(obj).__name__
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    path = getattr(sys.modules.get(module or ""), "__file__", None)
    return PluginSource(name=name, kind=kind, origin=f"<{kind}:{name}>", loader=lambda: obj, path=path)


# --------------------------------------------------------------------------- a project's disabledExtensions


def ignored_project_disables(
    project_settings: dict[str, Any],
    loaded: Iterable[tuple[str, PluginSource, bool]],
    required: set[str],
    path: str | None,
) -> list[Diagnostic]:
    """A trusted project's ``disabledExtensions`` switches off only the project's own
    plugins (``.pi/extensions``, its settings ``extensions``), and never a plugin the user
    settings require: those load before the project is trusted and stay loaded. Each name
    that is ignored for that reason gets one warning, so the project's author sees it.

    ``loaded``: ``(name, source, running)`` of every plugin found."""
    names = project_settings.get("disabledExtensions")
    if not isinstance(names, list):
        return []
    out = []
    for name in dict.fromkeys(n for n in names if isinstance(n, str)):
        found = [(source, running) for plugin, source, running in loaded if plugin == name]
        running = [source for source, ok in found if ok]
        if not running:
            continue
        source = running[0]
        if name in required:
            why = "the user settings require it (requiredExtensions)"
        elif source.kind == "project" or source.settings_scope == "project":
            continue  # cannot happen: the project's own plugins are disabled by it
        else:
            what = {
                "entrypoint": "installed",
                "user": "a user extension",
                "settings": "listed in user settings",
                "builtin": "built in",
                "cli": "asked for with -e",
                "sdk": "passed in by the program",
            }
            why = f"a project switches off only its own plugins, and {name!r} is {what.get(source.kind, source.kind)}"
        out.append(
            Diagnostic(
                "warning",
                f"disabledExtensions of the project ignored for {name!r}: {why}",
                plugin=name,
                source="settings",
                path=path,
            )
        )
    return out
