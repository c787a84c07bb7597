"""The UI seen by plugins when there is none (print and json modes, tests)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

import pi_hookspecs


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

    async def custom(self, factory: Callable[..., Any], *, overlay: bool = False, **options: Any) -> Any:
        """No terminal to draw a component on: ``None`` at once (``factory`` is not called)."""
        return None

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None:
        self.notifications.append((level, message))
        if self.echo and level != "info":
            print(f"[{level}] {message}", file=sys.stderr)

    def set_status(self, key: str, text: str | None) -> None:
        pass

    def set_widget(
        self, key: str, lines: Sequence[str] | None, *, placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor"
    ) -> None:
        pass

    def set_title(self, title: str) -> None:
        pass

    def set_header(self, lines: str | Sequence[str] | None) -> None:
        pass

    def set_footer(self, lines: str | Sequence[str] | None) -> None:
        pass

    def set_working_message(self, message: str | None = None) -> None:
        pass

    def get_editor_text(self) -> str:
        return ""

    def set_editor_text(self, text: str) -> None:
        pass


class PromptSpan:
    """``ui_prompt_start`` / ``ui_prompt_end`` around plugins' dialogs: nested or
    overlapping dialogs make one span. ``emit(name, event)`` is set by the mode (its
    events go to the session's plugins, not awaited)."""

    def __init__(self) -> None:
        self.depth = 0
        self.emit: Callable[[str, Any], None] | None = None
        self._first: tuple[str, str | None] = ("select", None)

    def start(self, kind: str, title: str | None) -> None:
        self.depth += 1
        if self.depth == 1:
            self._first = (kind, title)
            self._send("ui_prompt_start", "UiPromptStartEvent", kind, title)

    def end(self) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth == 0:
            self._send("ui_prompt_end", "UiPromptEndEvent", *self._first)

    def _send(self, name: str, model: str, kind: str, title: str | None) -> None:
        if self.emit is not None:
            try:  # the event models are occasional ones: made at the first dialog
                self.emit(name, getattr(pi_hookspecs, model)(kind=kind, title=title))
            except Exception:  # best effort: a broken listener never blocks a dialog
                pass
