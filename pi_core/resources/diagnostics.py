"""Diagnostics of resource loading: one problem with one file, never an exception.

Loading skills, prompt templates, context files or the trust store never stops
startup; what went wrong is collected as :class:`ResourceDiagnostic` values that the
caller shows (``str(diagnostic)`` starts with the file it is about).
"""

from __future__ import annotations

from typing import Literal

from pi_hookspecs.record import dataclass

DiagnosticLevel = Literal["warning", "error"]
DiagnosticKind = Literal["skill", "prompt", "context", "system-prompt", "settings", "trust", "collision"]


@dataclass(frozen=True)
class ResourceDiagnostic:
    """A problem found while loading a resource.

    ``path`` names the file (or directory) the message is about. For a name
    collision (``kind == "collision"``) ``path`` is the resource that lost and
    ``winner_path`` the one that was kept.
    """

    level: DiagnosticLevel
    message: str
    path: str | None = None
    kind: DiagnosticKind = "skill"
    winner_path: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


__all__ = ["DiagnosticKind", "DiagnosticLevel", "ResourceDiagnostic"]
