"""Entry points of the installed distributions, found without ``importlib.metadata``.

Every ``pi`` run looks up its plugins (group ``pi.extensions``), and ``pi NAME`` its fast
subcommands (``pi.cli_commands``). ``importlib.metadata`` answers both, but importing it
pulls in the ``email`` package (≈ 5 ms) and asking a distribution its name parses its
whole ``METADATA`` file. This module reads what the lookup needs and nothing more: the
``*.dist-info`` / ``*.egg-info`` folders of each ``sys.path`` directory, their
``entry_points.txt``, and, for a distribution that has one of the groups asked for, the
``Name:`` and ``Version:`` header lines of its metadata.

Before pi imports a plugin, :func:`requirements_on` reads that distribution's
``Requires-Dist`` lines on pi's plugin contract from the same folder (the headers only).

It follows ``importlib.metadata``'s rules: a distribution found twice (two ``sys.path``
entries) counts once, the first one on the path; entry points keep their file order.
When a ``sys.path`` entry is not a plain folder (a zip archive, an egg file), the answer
comes from ``importlib.metadata`` itself.
"""

from __future__ import annotations

import importlib
import os
import re
import stat
import sys
import types
from typing import TYPE_CHECKING, Any

from pi_hookspecs.record import dataclass

if TYPE_CHECKING:
    from collections.abc import Iterator

_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """An installed distribution's entry point, as the start-up walk found it."""

    name: str
    value: str
    """``module`` or ``module:attr.path``, optionally followed by ``[extras]``."""
    group: str
    distribution: str | None = None
    version: str | None = None

    def load(self) -> Any:
        """Import the module and return the object the entry point names."""
        target = self.value.split("[", 1)[0].strip()
        module_name, _, attrs = target.partition(":")
        obj: Any = importlib.import_module(module_name.strip())
        for part in attrs.strip().split(".") if attrs.strip() else ():
            obj = getattr(obj, part)
        return obj


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(text: str, groups: frozenset[str]) -> list[tuple[str, str, str]]:
    """``(group, name, value)`` of the wanted groups in an ``entry_points.txt``."""
    found: list[tuple[str, str, str]] = []
    group: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[" and line[-1] == "]":
            group = line[1:-1].strip()
            continue
        if group in groups:
            name, sep, value = line.partition("=")
            if sep:
                found.append((group, name.strip(), value.strip()))
    return found


def _header(folder: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the first lines of a distribution's metadata."""
    found = _headers(folder, ("Name", "Version"))
    return found.get("Name"), found.get("Version")


def _header_lines(folder: str) -> Iterator[tuple[str, str]]:
    """``(key, value)`` of each header line of a distribution's metadata (``METADATA``,
    else ``PKG-INFO``), up to the blank line that ends the headers."""
    for filename in ("METADATA", "PKG-INFO"):
        try:
            fh = open(os.path.join(folder, filename), encoding="utf-8", errors="replace")
        except OSError:
            continue
        with fh:
            for line in fh:
                if not line.strip():
                    break  # the headers end at the first blank line
                key, _, value = line.partition(":")
                yield key, value.strip()
        return


def _headers(folder: str, keys: tuple[str, ...]) -> dict[str, str]:
    """The first value of each of ``keys`` among a distribution's metadata headers."""
    found: dict[str, str] = {}
    for key, value in _header_lines(folder):
        if key in keys and key not in found:
            found[key] = value
            if len(found) == len(keys):
                break
    return found


def _from_folder_name(entry: str) -> tuple[str, str | None]:
    """``pi_mcp-0.1.0.dist-info`` -> (``pi_mcp``, ``0.1.0``)."""
    stem = entry.rsplit(".", 1)[0]
    name, _, rest = stem.partition("-")
    version = rest.split("-", 1)[0] or None
    return name, version


_Folders = tuple[tuple[str, int], ...]
_last: tuple[_Folders, frozenset[str], list[EntryPoint]] | None = None


def _folders() -> _Folders | None:
    """The ``sys.path`` folders with their modification times; ``None`` when an entry
    is not a folder (then :mod:`importlib.metadata` must answer)."""
    folders: list[tuple[str, int]] = []
    for path in sys.path:
        directory = path or "."
        try:
            st = os.stat(directory)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            return None
        folders.append((directory, st.st_mtime_ns))
    return tuple(folders)


def entry_points(*groups: str) -> list[EntryPoint]:
    """Entry points of the given groups, in ``sys.path`` order.

    A process asks more than once (pydantic's plugins, pi's plugins, a plugin's
    subcommand): the last walk is reused while ``sys.path`` and the modification times of
    its folders are unchanged (installing or removing a distribution adds or removes a
    folder in one of them)."""
    global _last
    wanted = frozenset(groups)
    folders = _folders()
    if folders is None:
        return _from_importlib(wanted)
    if _last is not None and _last[0] == folders and wanted <= _last[1]:
        return [ep for ep in _last[2] if ep.group in wanted]
    found = _walk(folders, wanted)
    _last = (folders, wanted, found)
    return found


_installed: dict[str, str] = {}
"""Normalised distribution name -> its metadata folder, from the last walk."""

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def requirement_name(value: str) -> str:
    """The distribution name a requirement (``pluggable-pi-hookspecs<2,>=1.0``) begins with,
    normalised; plain string work, as a compiled regex costs more than all the lines it
    would read at a start."""
    value = value.lstrip()
    end = 0
    while end < len(value) and value[end] in _NAME_CHARS:
        end += 1
    return _normalize(value[:end]) if end else ""


def requirements_on(distribution: str, required: str) -> tuple[str, ...]:
    """The ``Requires-Dist`` values of the installed ``distribution`` that name the
    distribution ``required`` (``('pluggable-pi-hookspecs<2,>=1.0',)``), read from the
    metadata folder the last walk found it in: the header lines of one small file, no
    ``importlib.metadata``. An ``.egg-info`` folder keeps its requirements elsewhere: none
    are reported for it."""
    wanted = _normalize(required)
    folder = _installed.get(_normalize(distribution))
    if folder is None:
        return _requirements_from_importlib(distribution, wanted)
    return tuple(
        value for key, value in _header_lines(folder) if key == "Requires-Dist" and requirement_name(value) == wanted
    )


def _requirements_from_importlib(distribution: str, wanted: str) -> tuple[str, ...]:
    """:func:`requirements_on` for a distribution the walk did not see (a zip archive on
    ``sys.path``)."""
    from importlib import metadata

    try:
        requires = metadata.distribution(distribution).requires or []
    except metadata.PackageNotFoundError:
        return ()
    return tuple(value for value in requires if requirement_name(value) == wanted)


def _walk(folders: _Folders, wanted: frozenset[str]) -> list[EntryPoint]:
    seen: dict[str, str] = {}
    found: list[EntryPoint] = []
    for directory, _mtime in folders:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for entry in names:
            if not entry.endswith(_SUFFIXES):
                continue
            folder_name, folder_version = _from_folder_name(entry)
            key = _normalize(folder_name)
            if key in seen:
                continue
            folder = seen[key] = os.path.join(directory, entry)
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
            if not any(f"[{group}]" in text for group in wanted):
                continue
            rows = _parse(text, wanted)
            if not rows:
                continue
            name, version = _header(folder)
            for group, ep_name, value in rows:
                found.append(EntryPoint(ep_name, value, group, name or folder_name, version or folder_version))
    _installed.clear()
    _installed.update(seen)
    return found


DISCOVERY_GROUPS = ("pi.extensions", "pi.cli_commands", "pydantic")
"""What one walk at the start of ``pi`` answers: its plugins, their fast subcommands and
pydantic's plugins."""


def prepare() -> None:
    """Walk the installed distributions once at the start of a ``pi`` command, before the
    first pydantic schema is built and before ``httpx2`` is imported (see
    :func:`settle_pydantic_plugins` and :func:`settle_httpx_version`): neither then
    imports ``importlib.metadata`` (with ``email``, ``zipfile`` and ``csv``: ≈ 8 ms of a
    ``pi -p`` run) to ask what this walk already knows."""
    settle_pydantic_plugins(entry_points(*DISCOVERY_GROUPS))
    settle_httpx_version()


def _from_importlib(groups: frozenset[str]) -> list[EntryPoint]:
    from importlib import metadata

    found: list[EntryPoint] = []
    for group in sorted(groups):
        for ep in metadata.entry_points(group=group):
            dist = getattr(ep, "dist", None)
            found.append(
                EntryPoint(
                    ep.name,
                    ep.value,
                    group,
                    dist.metadata["Name"] if dist is not None else None,
                    dist.version if dist is not None else None,
                )
            )
    return found


def settle_pydantic_plugins(found: list[EntryPoint]) -> None:
    """Answer pydantic's own plugin lookup from a scan that included the group
    ``pydantic``: when no installed distribution declares a pydantic plugin, pydantic is
    told so, instead of walking every distribution's metadata again when it builds its
    first schema (≈ 3 ms of each start, more in large environments). When there are
    pydantic plugins, pydantic loads them itself, as always."""
    if any(ep.group == PYDANTIC_GROUP for ep in found) or _PYDANTIC_LOADER in sys.modules:
        return
    # pydantic's loader module imports importlib.metadata only to find the plugins this
    # walk says are absent: it is answered by a module with the same interface.
    loader = types.ModuleType(_PYDANTIC_LOADER, "pydantic's plugin loader, answered by pi_core._entrypoints")
    loader.PYDANTIC_ENTRY_POINT_GROUP = PYDANTIC_GROUP  # type: ignore[attr-defined]
    loader._plugins = {}  # type: ignore[attr-defined]
    loader._loading_plugins = False  # type: ignore[attr-defined]
    loader.get_plugins = _no_pydantic_plugins  # type: ignore[attr-defined]
    sys.modules[_PYDANTIC_LOADER] = loader


_PYDANTIC_LOADER = "pydantic.plugin._loader"


def _no_pydantic_plugins() -> Any:
    return {}.values()


_HTTPX_VERSION = "httpx2.__version__"


def settle_httpx_version() -> None:
    """Answer ``httpx2``'s question about its own version from the walk.

    ``httpx2.__version__`` calls ``importlib.metadata.version("httpx2")`` when imported.
    When the walk found httpx2's metadata folder, that module is provided instead with
    the same three names: ``__title__``, ``__version__`` (the ``Version`` header, the
    value importlib.metadata returns) and ``__description__`` (the ``Summary`` header).
    Any other name is read from the real module, loaded on that first access."""
    if "httpx2" in sys.modules or _HTTPX_VERSION in sys.modules:
        return
    folder = _installed.get("httpx2")
    if folder is None or not folder.endswith(".dist-info"):
        return
    headers = _headers(folder, ("Name", "Version", "Summary"))
    if _normalize(headers.get("Name", "")) != "httpx2" or not headers.get("Version"):
        return
    module = types.ModuleType(_HTTPX_VERSION, "httpx2's version, answered by pi_core._entrypoints")
    module.__title__ = "httpx2"  # type: ignore[attr-defined]
    module.__version__ = headers["Version"]  # type: ignore[attr-defined]
    module.__description__ = headers.get("Summary", "")  # type: ignore[attr-defined]
    source = os.path.join(os.path.dirname(folder), "httpx2", "__version__.py")
    setattr(module, "__getattr__", lambda name: _from_real_module(source, name))  # noqa: B010
    sys.modules[_HTTPX_VERSION] = module


def _from_real_module(path: str, name: str) -> Any:
    import importlib.util

    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)  # dunder probes (copy, pickle, inspect) are not forwarded
    spec = importlib.util.spec_from_file_location(f"{_HTTPX_VERSION}.__real__", path)
    if spec is None or spec.loader is None:
        raise AttributeError(name)
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    return getattr(real, name)


PYDANTIC_GROUP = "pydantic"
"""The entry-point group of pydantic plugins (see :func:`settle_pydantic_plugins`)."""
