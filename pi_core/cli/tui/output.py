"""The transcript: everything interactive mode prints goes through here.

While a prompt_toolkit application (the input line or a dialog) is on screen, text is
written with ``run_in_terminal``: the application is erased, the text printed, the
application drawn again below it. Otherwise it is written at once. Writes stay in
order either way (a write made while an earlier one waits for the terminal joins it).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import shutil
import sys
import threading
from typing import Any, TextIO

from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.application.current import get_app_or_none
from rich.console import Console
from rich.text import Text

_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|[\x00-\x08\x0b-\x1f\x7f]")


def plain(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (tabs and
    newlines kept): command output and model text must not move the cursor."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


_first_size: list[int] = []


def terminal_width(default: int = 100) -> int:
    """The terminal's columns: ``COLUMNS`` when it is set, until the terminal is resized
    (then its real size: a shell's exported ``COLUMNS`` goes stale)."""
    try:
        real = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ is not None else None
    except (OSError, ValueError):
        real = None
    if real is not None and real > 0:
        if not _first_size:
            _first_size.append(real)
        if real != _first_size[0]:
            return max(20, real)
    return max(20, shutil.get_terminal_size((default, 24)).columns)


class Transcript:
    """Ordered output above whatever prompt_toolkit shows."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._queue: list[str] = []
        self._waiting = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._theme: Any = None
        self.console = self._console(None)
        self.pane: Any = None
        """Fullscreen mode's :class:`~.fullscreen.TranscriptPane`: what is written goes
        there instead of to the terminal (``None``: regular mode)."""
        self.margin = 0
        """Columns kept free on the right (the fullscreen pane's scrollbar)."""

    def _console(self, true_color: bool | None) -> Console:
        color = not os.environ.get("NO_COLOR")
        systems: dict[bool | None, Any] = {True: "truecolor", False: "256", None: "auto"}
        return Console(
            file=io.StringIO(),
            force_terminal=color and self.stream.isatty(),
            no_color=not color,
            color_system=systems[true_color],
            highlight=False,
            emoji=False,
            soft_wrap=False,
            width=terminal_width(),
        )

    # ------------------------------------------------------------------ raw text

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Writes from other threads are handed to ``loop`` (the one drawing the UI)."""
        self.loop, self._loop_thread = loop, threading.get_ident()

    def write(self, text: str) -> None:
        if not text:
            return
        if self._on_other_thread():
            assert self.loop is not None
            self.loop.call_soon_threadsafe(self.write, text)
            return
        if self.pane is not None:
            from .fullscreen import is_control_only

            if is_control_only(text):  # a copy to the clipboard, progress in the tab: the terminal's
                self.stream.write(text)
                self.stream.flush()
            else:
                self.pane.append(text)
            return
        self._queue.append(text)
        if self._waiting:
            return
        app = get_app_or_none()
        if app is not None and app.is_running and not app.is_done:
            self._waiting = True
            try:
                run_in_terminal(self._drain, in_executor=False)
            except RuntimeError:  # no running event loop (shutting down)
                self._drain()
        else:
            self._drain()

    def _drain(self) -> None:
        self._waiting = False
        text = "".join(self._queue)
        self._queue.clear()
        if text:
            self.stream.write(text)
            self.stream.flush()

    def flush(self) -> None:
        """Write what is queued now (used before a dialog replaces the prompt)."""
        app = get_app_or_none()
        if self._queue and (app is None or not app.is_running):
            self._drain()

    # ------------------------------------------------------------------ rich

    def set_true_color(self, enabled: bool | None) -> None:
        """``terminal.trueColor``: 24-bit colours (``True``), the 256-colour palette
        (``False``) or what the terminal announces (``None``)."""
        self.console = self._console(enabled)
        if self._theme is not None:
            self.console.push_theme(self._theme.rich_theme())

    def set_theme(self, theme: Any) -> None:
        """Colours of a :class:`~pi_core.cli.tui.theme.Theme` for what is printed next."""
        if self._theme is not None:
            self.console.pop_theme()
        self.console.push_theme(theme.rich_theme())
        self._theme = theme

    def render(self, *renderables: Any, **options: Any) -> str:
        """``renderables`` as terminal text (ANSI styles unless NO_COLOR)."""
        width = options.pop("width", None)  # a narrower width than the terminal's (the live area)
        return self.render_at(terminal_width() - self.margin if width is None else width, *renderables, **options)

    def render_at(self, width: int, *renderables: Any, **options: Any) -> str:
        """``renderables`` as terminal text ``width`` columns wide."""
        console = self.console
        console.width = max(20, width)
        with console.capture() as capture:
            console.print(*renderables, **options)
        return _TRAILING.sub(r"\1", capture.get())

    def print(self, *renderables: Any, **options: Any) -> None:
        """Print ``renderables``; in fullscreen mode they are kept, to be laid out again
        when the terminal's width changes."""
        if self.pane is None:
            self.write(self.render(*renderables, **options))
        elif self._on_other_thread():
            assert self.loop is not None
            self.loop.call_soon_threadsafe(lambda: self.print(*renderables, **options))
        elif self.pane is not None:
            self.pane.add_rendered(lambda width: self.render_at(width, *renderables, **options))

    def image(self, image: Any) -> None:
        """A :class:`~.fullscreen.PaneImage` into the fullscreen pane."""
        if self._on_other_thread():
            assert self.loop is not None
            self.loop.call_soon_threadsafe(self.image, image)
        elif self.pane is not None:
            self.pane.add_image(image)

    def _on_other_thread(self) -> bool:
        return self.loop is not None and threading.get_ident() != self._loop_thread and not self.loop.is_closed()

    def line(self, text: str, style: str = "") -> None:
        """Plain text (never markup), wrapped by the terminal rather than by rich, so
        paths and commands copy and paste whole."""
        self.print(Text(text, style=style), soft_wrap=True)


class StreamToTranscript(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` while interactive mode runs: stray prints (from
    plugins, warnings) land in the transcript instead of through the prompt."""

    def __init__(self, transcript: Transcript, original: TextIO, style: str = "") -> None:
        super().__init__()
        self.transcript = transcript
        self.original = original
        self.style = style
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = self._partial + text
        head, sep, self._partial = data.rpartition("\n")
        if sep:
            self.transcript.line(plain(head), self.style)
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self.transcript.line(plain(self._partial), self.style)
            self._partial = ""

    def isatty(self) -> bool:
        return self.original.isatty()

    def fileno(self) -> int:
        return self.original.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # typeshed: a writable attribute; io: a read-only property
        return getattr(self.original, "encoding", "utf-8")
