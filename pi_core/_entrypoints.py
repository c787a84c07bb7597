"""Entry points of the installed distributions, found without ``importlib.metadata``.

Every ``pi`` run looks up its plugins (group ``pi.extensions``), and ``pi NAME`` its fast
subcommands (``pi.cli_commands``). ``importlib.metadata`` answers both, but importing it
pulls in the ``email`` package (≈ 5 ms) and asking a distribution its name parses its
whole ``METADATA`` file. This module reads what the lookup needs and nothing more: the
``*.dist-info`` / ``*.egg-info`` folders of each ``sys.path`` directory, their
``entry_points.txt``, and, for a distribution that has one of the groups asked for, the
``Name:`` and ``Version:`` header lines of its metadata.

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
from dataclasses import dataclass
from typing import Any

_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True, slots=True)
class EntryPoint:
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
    name = version = None
    for filename in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, filename), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if not line.strip():
                        break  # the headers end at the first blank line
                    key, _, value = line.partition(":")
                    if key == "Name":
                        name = value.strip()
                    elif key == "Version":
                        version = value.strip()
                    if name and version:
                        break
            return name, version
        except OSError:
            continue
    return name, version


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


def _walk(folders: _Folders, wanted: frozenset[str]) -> list[EntryPoint]:
    seen: set[str] = set()
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
            seen.add(key)
            folder = os.path.join(directory, entry)
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
    return found


DISCOVERY_GROUPS = ("pi.extensions", "pi.cli_commands", "pydantic")
"""What one walk at the start of ``pi`` answers: its plugins, their fast subcommands and
pydantic's plugins."""


def prepare() -> None:
    """Walk the installed distributions once at the start of a ``pi`` command, before the
    first pydantic schema is built (see :func:`settle_pydantic_plugins`)."""
    settle_pydantic_plugins(entry_points(*DISCOVERY_GROUPS))


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
    if any(ep.group == PYDANTIC_GROUP for ep in found):
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # pragma: no cover - a pydantic without plugin support
        return
    if getattr(_loader, "_plugins", False) is None and not os.environ.get("PYDANTIC_DISABLE_PLUGINS"):
        _loader._plugins = {}


PYDANTIC_GROUP = "pydantic"
"""The entry-point group of pydantic plugins (see :func:`settle_pydantic_plugins`)."""

