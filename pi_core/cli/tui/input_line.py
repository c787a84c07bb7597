"""The input line under the transcript, and what it holds while it is off the screen.

The line is a prompt_toolkit ``PromptSession`` whose message is the live area (spinner,
streaming text, tools, widgets). Only one prompt_toolkit application can own the terminal,
so a dialog takes the line off the screen (:meth:`InputLine.suspend_prompt`) and gives it
back; what was typed is kept as the *draft*. Images pasted with Ctrl+V wait here for the
next message.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import DynamicKeyBindings, KeyBindingsBase
from prompt_toolkit.output import Output
from prompt_toolkit.styles import BaseStyle

from pi_hookspecs import ImageContent

from ..._paths import agent_dir
from .completion import wants_completion_while_typing
from .fullscreen import TranscriptPane, pane_container
from .output import terminal_width
from .render import LiveView

HISTORY_FILE = "interactive-history"
ESCAPE_TIMEOUT = 0.05
"""How long a lone Esc waits for the rest of an Alt+key sequence (terminals send those
in one write); prompt_toolkit's default of 0.5 s would make a double Esc impossible."""
PREFIX_TIMEOUT = 0.3
"""How long a key that starts a longer binding (Esc before Enter, Up …) waits."""
Mode = Literal["steer", "follow_up"]
"""How a message typed while pi works reaches the run: Enter steers, Alt+Enter follows up."""


class _Suspended(Exception):
    """The input line was taken off the screen (a dialog, or exiting)."""


class InputLine:
    """The prompt, the draft, the pasted images; the :class:`~.dialogs.PromptHost`
    dialogs take the terminal through."""

    def __init__(
        self,
        output: Output,
        live: LiveView,
        completer: Completer,
        key_bindings: Callable[[], KeyBindingsBase | None],
        *,
        style: BaseStyle,
        busy: Callable[[], bool],
    ) -> None:
        self.live = live
        self._busy = busy
        """A job is running (the spinner keeps turning)."""
        self.draft = ""
        """What was typed, while the line is off the screen."""
        self.images: list[ImageContent] = []
        """Images pasted with Ctrl+V, sent with the next message."""
        self.padding = 0
        """``editorPaddingX``: spaces before the input line."""
        self.mode: Mode = "steer"
        """Set by the key that submits the line."""
        self.active = False
        """The prompt is on the screen, reading keys."""
        self.closed = False
        """pi is exiting: the line is not shown again."""
        self._suspend_requested = False
        self._resume = asyncio.Event()
        self._resume.set()
        self._stopped = asyncio.Event()
        self._stopped.set()
        self._ticker: asyncio.Task[None] | None = None
        self.fullscreen = False
        """The prompt draws on the alternate screen, under the transcript pane."""
        self.prompt: PromptSession[str] = PromptSession(
            self._message,
            multiline=True,
            key_bindings=DynamicKeyBindings(key_bindings),
            history=self._history(),
            completer=completer,
            complete_while_typing=Condition(lambda: wants_completion_while_typing(self.prompt.default_buffer.text)),
            reserve_space_for_menu=6,
            style=style,
            erase_when_done=True,
            output=output,
            prompt_continuation=lambda width, line, wrap: [("class:dim", " " * (self.padding + 2))],
            enable_history_search=False,
        )
        self.prompt.app.ttimeoutlen = ESCAPE_TIMEOUT
        self.prompt.app.timeoutlen = PREFIX_TIMEOUT

    def enable_fullscreen(self, pane: TranscriptPane) -> None:
        """Fullscreen mode: the prompt draws on the alternate screen, under the transcript
        ``pane``, and stays there between two lines (pi leaves it when it exits:
        :meth:`leave_fullscreen`)."""
        app = self.prompt.app
        app.layout.container = pane_container(pane, app.layout.container)
        app.full_screen = True
        renderer = app.renderer
        renderer.full_screen = True
        reset, erase = renderer.reset, renderer.erase
        output = app.output

        def images_off() -> None:  # the screen is cleared, or a dialog takes it: placed again later
            commands = pane.forget_placements()
            if commands:
                output.write_raw(commands)

        def keep_screen_reset(_scroll: bool = False, leave_alternate_screen: bool = True) -> None:
            images_off()
            reset(_scroll=_scroll, leave_alternate_screen=False)

        def keep_screen_erase(leave_alternate_screen: bool = True) -> None:
            images_off()
            erase(leave_alternate_screen=False)

        def place_images(_app: object) -> None:  # after each draw: the kitty images where the pane shows them
            commands = pane.image_commands()
            if commands:
                output.write_raw(commands)
                output.flush()

        setattr(renderer, "reset", keep_screen_reset)  # noqa: B010  (an instance's method, replaced)
        setattr(renderer, "erase", keep_screen_erase)  # noqa: B010
        app.after_render += place_images
        self.prompt.mouse_support = Condition(lambda: self.fullscreen)
        self.fullscreen = True

    def leave_fullscreen(self, last: str = "") -> None:
        """Back to the normal screen (pi is exiting); ``last``: what the terminal gets
        before (the kitty images freed)."""
        if self.fullscreen:
            self.fullscreen = False
            output = self.prompt.app.output
            if last:
                output.write_raw(last)
            output.disable_mouse_support()
            output.quit_alternate_screen()
            output.flush()

    # ------------------------------------------------------------------ the prompt

    @staticmethod
    def _history() -> History:
        try:
            directory = agent_dir()
            directory.mkdir(parents=True, exist_ok=True)
            return FileHistory(str(directory / HISTORY_FILE))
        except OSError:
            return InMemoryHistory()

    def _message(self) -> StyleAndTextTuples:
        known = self.prompt.app.renderer.height_is_known
        fragments = self.live.fragments(terminal_width(), with_below=not known)
        return [*fragments, ("", " " * self.padding), ("class:prompt", "› ")]

    def below(self) -> StyleAndTextTuples:
        """The widgets and footer plugins put under the input line."""
        return self.live.below(terminal_width())

    def invalidate(self) -> None:
        """Redraw the line and the live area; while something animates, keep redrawing."""
        self.prompt.app.invalidate()
        if self.live.animating and (self._ticker is None or self._ticker.done()):
            with contextlib.suppress(RuntimeError):
                self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while self.live.animating or self._busy():
            self.prompt.app.invalidate()
            await asyncio.sleep(0.1)
        self.prompt.app.invalidate()

    async def read(self) -> tuple[str, Mode] | None:
        """Wait until no dialog holds the terminal, then read one line: its text and how it
        reaches an active run. ``None``: nothing was submitted (a dialog took the
        terminal, or pi is exiting). Raises ``EOFError`` when the input ends."""
        await self._resume.wait()
        if self.closed or not self._resume.is_set():  # exiting, or another dialog took the terminal
            return None
        self._suspend_requested = False
        self.active = True
        self._stopped.clear()
        try:
            text = await self.prompt.prompt_async(default=self.draft, pre_run=self._pre_run, handle_sigint=False)
        except _Suspended:
            return None
        finally:
            self.active = False
            self._stopped.set()
        self.draft = ""
        mode, self.mode = self.mode, "steer"
        return text, mode

    def _pre_run(self) -> None:
        if self._suspend_requested or self.closed:
            self._exit_prompt()

    def _exit_prompt(self) -> None:
        app = self.prompt.app
        future = app.future
        if future is not None and not future.done():
            self.draft = app.current_buffer.text
            app.exit(exception=_Suspended())

    def stop(self) -> None:
        """pi is exiting: take the line off the screen and end the wait for a line."""
        self.closed = True
        self._resume.set()
        if self.active:
            self._exit_prompt()

    # PromptHost: dialogs take the terminal through these two.

    async def suspend_prompt(self) -> None:
        self._resume.clear()
        if not self.active:
            return
        self._suspend_requested = True
        self._exit_prompt()
        await self._stopped.wait()

    def resume_prompt(self) -> None:
        self._resume.set()

    # ------------------------------------------------------------------ the draft

    def set_draft(self, text: str) -> None:
        if self.active:
            buffer = self.prompt.default_buffer
            buffer.text = text
            buffer.cursor_position = len(text)
            self.invalidate()
        else:
            self.draft = text

    def get_draft(self) -> str:
        return self.prompt.default_buffer.text if self.active else self.draft

    def insert(self, text: str) -> None:
        if self.active:
            self.prompt.default_buffer.insert_text(text)
        else:
            self.draft += text

    def take_images(self) -> list[ImageContent]:
        """The pasted images, for the message being sent (none are left)."""
        images, self.images = list(self.images), []
        return images
