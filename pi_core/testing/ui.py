"""A UI for tests: every call recorded, dialogs answered from a script."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

DIALOGS = ("confirm", "select", "input", "editor", "custom")
DEFAULTS: dict[str, Any] = {"confirm": False, "select": None, "input": None, "editor": None, "custom": None}
"""What a dialog answers when the test scripted nothing: the answers of print mode."""


@dataclass
class UICall:
    """One call a plugin made on ``ctx.ui``."""

    method: str
    """The ``ctx.ui`` method: ``confirm``, ``select``, ``input``, ``editor``, ``notify``,
    ``set_status``, ``set_widget``, ``set_title`` …"""
    args: dict[str, Any]
    """The call's arguments by name (``title``, ``message``, ``options``, ``level`` …)."""
    answer: Any = None
    """What a dialog answered (``None`` for the other methods)."""

    @property
    def title(self) -> str | None:
        value = self.args.get("title")
        return value if isinstance(value, str) else None


Answer = Any | Callable[[UICall], Any]


@dataclass
class RecordingUI:
    """``ctx.ui`` in a :class:`~pi_core.testing.PiHarness`.

    Each dialog takes the next answer scripted for its method with :meth:`answer`
    (a value, or a callable receiving the :class:`UICall`); without one it answers like
    print mode (``confirm`` -> ``False``, the others ``None``). Every call, dialogs and
    ``notify``/``set_status``/``set_widget``/``set_title``/… alike, is appended to
    :attr:`calls`."""

    calls: list[UICall] = field(default_factory=list)
    editor_text: str = ""
    """The input line's text (``ctx.ui.set_editor_text`` / ``get_editor_text``); a test may set it."""
    _answers: dict[str, deque[Answer]] = field(default_factory=lambda: {m: deque() for m in DIALOGS})

    def answer(self, method: Literal["confirm", "select", "input", "editor"], *answers: Answer) -> RecordingUI:
        """Queue answers for the next ``method`` dialogs, in order."""
        if method not in DIALOGS:
            raise ValueError(f"answer: {method!r} is not a dialog; one of {', '.join(DIALOGS)}")
        self._answers[method].extend(answers)
        return self

    def unanswered(self) -> dict[str, int]:
        """Scripted answers no dialog has taken yet, per method."""
        return {method: len(queue) for method, queue in self._answers.items() if queue}

    # ------------------------------------------------------------------ queries

    def of(self, method: str) -> list[UICall]:
        """The calls of one method (``pi.ui.of("confirm")``)."""
        return [c for c in self.calls if c.method == method]

    @property
    def notifications(self) -> list[tuple[str, str]]:
        """``(level, message)`` of every ``notify`` call."""
        return [(c.args["level"], c.args["message"]) for c in self.of("notify")]

    @property
    def status(self) -> dict[str, str]:
        """The status texts currently set (``set_status``), by key."""
        out: dict[str, str] = {}
        for call in self.of("set_status"):
            if call.args["text"] is None:
                out.pop(call.args["key"], None)
            else:
                out[call.args["key"]] = call.args["text"]
        return out

    @property
    def widgets(self) -> dict[str, list[str]]:
        """The widgets currently shown (``set_widget``), by key."""
        out: dict[str, list[str]] = {}
        for call in self.of("set_widget"):
            if call.args["lines"] is None:
                out.pop(call.args["key"], None)
            else:
                out[call.args["key"]] = list(call.args["lines"])
        return out

    # ------------------------------------------------------------------ the UIContext protocol

    def _dialog(self, method: str, **args: Any) -> Any:
        call = UICall(method, args)
        queue = self._answers[method]
        answer = queue.popleft() if queue else DEFAULTS[method]
        call.answer = answer(call) if callable(answer) else answer
        self.calls.append(call)
        return call.answer

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        return bool(self._dialog("confirm", title=title, message=message, timeout=timeout))

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        answer = self._dialog("select", title=title, options=list(options), timeout=timeout)
        return None if answer is None else str(answer)

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        answer = self._dialog("input", title=title, placeholder=placeholder, timeout=timeout)
        return None if answer is None else str(answer)

    async def editor(self, title: str, prefill: str = "") -> str | None:
        answer = self._dialog("editor", title=title, prefill=prefill)
        return None if answer is None else str(answer)

    async def custom(self, factory: Any, *, overlay: bool = False, **options: Any) -> Any:
        """Records the call (``factory`` is not run: there is no terminal) and returns the
        queued answer (``ui.answer("custom", value)``), ``None`` by default."""
        return self._dialog("custom", factory=factory, overlay=overlay)

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None:
        self.calls.append(UICall("notify", {"message": message, "level": level}))

    def set_status(self, key: str, text: str | None) -> None:
        self.calls.append(UICall("set_status", {"key": key, "text": text}))

    def set_widget(
        self, key: str, lines: Sequence[str] | None, *, placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor"
    ) -> None:
        self.calls.append(
            UICall("set_widget", {"key": key, "lines": None if lines is None else list(lines), "placement": placement})
        )

    def set_title(self, title: str) -> None:
        self.calls.append(UICall("set_title", {"title": title}))

    def set_header(self, lines: str | Sequence[str] | None) -> None:
        self.calls.append(
            UICall("set_header", {"lines": lines if lines is None or isinstance(lines, str) else list(lines)})
        )

    def set_footer(self, lines: str | Sequence[str] | None) -> None:
        self.calls.append(
            UICall("set_footer", {"lines": lines if lines is None or isinstance(lines, str) else list(lines)})
        )

    def set_working_message(self, message: str | None = None) -> None:
        self.calls.append(UICall("set_working_message", {"message": message}))

    def get_editor_text(self) -> str:
        """The input line's text: what ``set_editor_text`` last put there (``""`` at first)."""
        self.calls.append(UICall("get_editor_text", {}, answer=self.editor_text))
        return self.editor_text

    def set_editor_text(self, text: str) -> None:
        self.calls.append(UICall("set_editor_text", {"text": text}))
        self.editor_text = text


__all__ = ["DEFAULTS", "DIALOGS", "RecordingUI", "UICall"]
