"""Diagnostics: what went wrong while loading plugins, reported instead of raised."""

from __future__ import annotations

import traceback
from dataclasses import asdict
from typing import Any, Literal

from pi_hookspecs.record import dataclass

Level = Literal["error", "warning", "info"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem (or note) found while loading plugins, naming the plugin and source."""

    level: Level
    message: str
    plugin: str | None = None
    source: str | None = None
    """The source kind: builtin, entrypoint, user, settings, project, cli, sdk."""
    path: str | None = None

    def format(self) -> str:
        who = f"plugin {self.plugin!r}" if self.plugin else "plugins"
        where = f" ({self.path})" if self.path else ""
        return f"{self.level}: {who}{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class ExtensionLoadError(RuntimeError):
    """Raised instead of recording an error diagnostic when ``PI_EXTENSIONS_STRICT=1``."""

    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic
        super().__init__(diagnostic.format())


def describe_exception(exc: BaseException, *, location: bool = True) -> str:
    """``ExcType: message (file.py:12)`` — the innermost frame of the traceback
    (:func:`exception_location`); without it when ``location`` is false."""
    text = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return text + exception_location(exc) if location else text


def exception_location(exc: BaseException) -> str:
    """`` (file.py:12)``, where ``exc`` was raised (its innermost frame), or ``""``: for
    people reading pi's reports, never for text a model reads (paths of the machine)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({exc.filename}:{exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        return f" ({frames[-1].filename}:{frames[-1].lineno})"
    return ""
