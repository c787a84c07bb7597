"""The UI seen by plugins when there is none (print and json modes, tests)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal


class NoUI:
    """Dialogs answer their non-interactive default at once; notifications go to
    stderr so they are never lost and never mixed into stdout."""

    def __init__(self, *, echo: bool = True) -> None:
        self.echo = echo
        self.notifications: list[tuple[str, str]] = []

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        return False

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        return None

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        return None

    async def editor(self, title: str, prefill: str = "") -> str | None:
        return None

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None:
        self.notifications.append((level, message))
        if self.echo and level != "info":
            print(f"[{level}] {message}", file=sys.stderr)

    def set_status(self, key: str, text: str | None) -> None:
        pass

    def set_widget(self, key: str, lines: Sequence[str] | None) -> None:
        pass
