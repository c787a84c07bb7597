"""Dialogs drawn inline under the transcript: pickers, yes/no, text input, an editor.

Only one prompt_toolkit application can own the terminal at a time. A dialog asks the
input loop (:class:`PromptHost`) to take the input line off the screen first (what was
typed is kept), runs, and gives the terminal back. Dialogs wait for each other.

:class:`TerminalUI` is the ``ctx.ui`` plugins see in interactive mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import Output
from prompt_toolkit.shortcuts import PromptSession
from prompt_toolkit.styles import Style
from rich.text import Text

from ...extensions.ui import PromptSpan
from ...resources.trust import TrustAnswer, trust_requiring_project_resources
from .output import Transcript, plain

ESCAPE_TIMEOUT = 0.05
"""How long a lone Esc waits for the rest of an escape sequence in a dialog (terminals
send a sequence in one write). prompt_toolkit's 0.5 s kept a dialog open after Esc, and
an Enter typed meanwhile was read as part of Esc (Alt+Enter) and lost."""

T = TypeVar("T")

STYLE = Style.from_dict(
    {
        "title": "bold",
        "question": "ansicyan bold",
        "dim": "ansibrightblack",
        "cursor": "ansicyan bold",
        "hotkey": "ansiyellow",
        "filter": "ansiyellow",
    }
)
MAX_ROWS = 12


@dataclass(frozen=True)
class Option(Generic[T]):
    """One choice of a picker: ``label`` is shown, ``value`` returned; ``detail``
    is shown dimmed after the label; ``key`` is a single-key shortcut."""

    value: T
    label: str
    detail: str = ""
    key: str | None = None


@dataclass(frozen=True)
class Picked(Generic[T]):
    """What :meth:`Dialogs.pick` returns: ``action`` is ``"select"`` (Enter) or the name
    of an extra key's action; ``value`` the option under the cursor (``None`` when the
    list shows nothing); ``query`` the filter typed so far."""

    action: str
    value: T | None
    query: str = ""
    index: int = 0


class PromptHost(Protocol):
    """The input loop, as dialogs see it."""

    async def suspend_prompt(self) -> None:
        """Take the input line off the screen (keeping its text) until resumed."""
        ...

    def resume_prompt(self) -> None: ...


class Chooser(Generic[T]):
    """An inline list: arrows move, Enter picks, Esc or Ctrl+C cancels (``None``);
    digits pick directly; with ``filterable`` typing narrows the list."""

    def __init__(
        self,
        title: str,
        options: Sequence[Option[T]],
        *,
        message: str = "",
        default: int = 0,
        filterable: bool = False,
        output: Output | None = None,
        actions: Sequence[tuple[Sequence[str], str, str]] = (),
        query: str = "",
        style: Style | None = None,
    ) -> None:
        self.title = title
        self.message = message
        self.options = list(options)
        self.filterable = filterable
        self.query = query
        self.cursor = max(0, min(default, len(self.options) - 1))
        self.actions = list(actions)
        """Extra keys: ``(prompt_toolkit keys, action name, hint)``; pressing one ends the
        dialog with that action (see :class:`Picked`)."""
        self.action = "select"
        self.app: Application[Option[T] | None] = Application(
            layout=Layout(
                HSplit([Window(FormattedTextControl(self._fragments, show_cursor=False), dont_extend_height=True)])
            ),
            key_bindings=self._bindings(),
            style=style or STYLE,
            full_screen=False,
            erase_when_done=True,
            output=output,
        )
        self.app.ttimeoutlen = ESCAPE_TIMEOUT

    # ------------------------------------------------------------------ state

    def visible(self) -> list[Option[T]]:
        if not self.query:
            return self.options
        words = self.query.lower().split()
        return [o for o in self.options if all(w in f"{o.label} {o.detail}".lower() for w in words)]

    def _move(self, delta: int) -> None:
        count = len(self.visible())
        if count:
            self.cursor = (self.cursor + delta) % count

    def _pick(self, option: Option[T] | None, action: str = "select") -> None:
        if self.app.is_running and not self.app.is_done:
            self.action = action
            self.app.exit(result=option)

    def update(self, options: Sequence[Option[T]] | None = None, *, message: str | None = None) -> None:
        """Change the list (and/or the line under the title) while the dialog is open:
        the cursor stays on the option it was on when that is still there."""
        if options is not None:
            shown = self.visible()
            current = shown[self.cursor].value if shown and self.cursor < len(shown) else None
            self.options = list(options)
            shown = self.visible()
            values = [o.value for o in shown]
            self.cursor = values.index(current) if current is not None and current in values else 0
        if message is not None:
            self.message = message
        if self.app.is_running:
            self.app.invalidate()

    # ------------------------------------------------------------------ drawing

    def _fragments(self) -> StyleAndTextTuples:
        out: StyleAndTextTuples = [("class:question", "? "), ("class:title", self.title), ("", "\n")]
        for line in self.message.splitlines():
            out += [("class:dim", f"  {line}"), ("", "\n")]
        if self.filterable:
            out += [("class:dim", "  filter: "), ("class:filter", self.query or ""), ("class:dim", "▏"), ("", "\n")]
        shown = self.visible()
        if not shown:
            out += [("class:dim", "  (nothing matches)"), ("", "\n")]
        self.cursor = min(self.cursor, max(0, len(shown) - 1))
        start = max(0, min(self.cursor - MAX_ROWS // 2, len(shown) - MAX_ROWS))
        for index in range(start, min(len(shown), start + MAX_ROWS)):
            option = shown[index]
            selected = index == self.cursor
            marker = "❯ " if selected else "  "
            number = f"{index + 1}. " if not self.filterable and index < 9 else ""
            style = "class:cursor" if selected else ""
            out += [(style, f"{marker}{number}{option.label}")]
            if option.key:
                out += [("class:hotkey", f" [{option.key}]")]
            if option.detail:
                out += [("class:dim", f"  {option.detail}")]
            out.append(("", "\n"))
        if len(shown) > MAX_ROWS:
            out += [("class:dim", f"  ({self.cursor + 1}/{len(shown)})"), ("", "\n")]
        hint = "↑↓ move · Enter select · Esc cancel" + (" · type to filter" if self.filterable else "")
        extra = " · ".join(h for _, _, h in self.actions if h)
        out.append(("class:dim", f"  {hint}" + (f"\n  {extra}" if extra else "")))
        return out

    # ------------------------------------------------------------------ keys

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("up")
        @kb.add("c-p")
        def _up(event: KeyPressEvent) -> None:
            self._move(-1)

        @kb.add("down")
        @kb.add("c-n")
        @kb.add("tab")
        def _down(event: KeyPressEvent) -> None:
            self._move(1)

        @kb.add("pageup")
        def _page_up(event: KeyPressEvent) -> None:
            self.cursor = max(0, self.cursor - MAX_ROWS)

        @kb.add("pagedown")
        def _page_down(event: KeyPressEvent) -> None:
            self.cursor = min(len(self.visible()) - 1, self.cursor + MAX_ROWS)

        @kb.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            shown = self.visible()
            if shown:
                self._pick(shown[self.cursor])

        @kb.add("escape", eager=True)
        @kb.add("c-c")
        @kb.add("c-d")
        def _cancel(event: KeyPressEvent) -> None:
            self._pick(None)

        @kb.add("backspace")
        def _backspace(event: KeyPressEvent) -> None:
            if self.filterable:
                self.query = self.query[:-1]
                self.cursor = 0

        for keys, action, _hint in self.actions:
            kb.add(*keys)(self._action_handler(action))

        @kb.add(Keys.Any)
        def _key(event: KeyPressEvent) -> None:
            char = event.data
            shown = self.visible()
            for option in shown:
                if option.key and char.lower() == option.key.lower() and not self.query:
                    self._pick(option)
                    return
            if self.filterable:
                if char.isprintable():
                    self.query += char
                    self.cursor = 0
            elif char.isdigit() and 0 < int(char) <= min(9, len(shown)):
                self._pick(shown[int(char) - 1])

        return kb

    def _action_handler(self, action: str) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            shown = self.visible()
            self._pick(shown[self.cursor] if shown else None, action)

        return handler

    async def run(self, timeout: float | None = None, *, allow_empty: bool = False) -> Option[T] | None:
        if not self.options and not allow_empty:
            return None
        picked: Option[T] | None = await _run_with_timeout(self.app, timeout, lambda: self._pick(None))
        return picked


async def _run_with_timeout(app: Application[Any], timeout: float | None, on_timeout: Callable[[], None]) -> Any:
    handle = None
    if timeout is not None and timeout > 0:
        handle = asyncio.get_running_loop().call_later(timeout, on_timeout)
    try:
        return await app.run_async(handle_sigint=False)
    finally:
        if handle is not None:
            handle.cancel()


class Dialogs:
    """Runs dialogs one at a time, each with the terminal to itself."""

    def __init__(self, transcript: Transcript, output: Output | None = None) -> None:
        self.transcript = transcript
        self.output = output
        self.host: PromptHost | None = None
        self._lock: asyncio.Lock | None = None
        self.style: Style = STYLE

    async def exclusive(self, run: Callable[[], Awaitable[T]]) -> T:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            host = self.host
            if host is not None:
                await host.suspend_prompt()
            self.transcript.flush()
            try:
                return await run()
            finally:
                if host is not None:
                    host.resume_prompt()

    def _record(self, title: str, answer: str) -> None:
        self.transcript.print(Text.assemble(("? ", "cyan"), (title, "bold"), (" · ", "dim"), (answer, "")))

    async def choose(
        self,
        title: str,
        options: Sequence[Option[T]],
        *,
        message: str = "",
        default: int = 0,
        filterable: bool | None = None,
        timeout: float | None = None,
        record: bool = True,
        live: Callable[[Chooser[T]], Awaitable[None]] | None = None,
    ) -> T | None:
        """The value of the option the user picks, ``None`` when cancelled or timed out.
        ``live(chooser)`` runs while the dialog is open and may change it
        (:meth:`Chooser.update`); it is cancelled when the dialog closes."""

        async def run() -> Option[T] | None:
            chooser = Chooser(
                title,
                options,
                message=message,
                default=default,
                filterable=len(options) > 9 if filterable is None else filterable,
                output=self.output,
                style=self.style,
            )
            if live is None:
                return await chooser.run(timeout)
            updater = asyncio.ensure_future(live(chooser))
            try:
                return await chooser.run(timeout, allow_empty=True)
            finally:
                updater.cancel()

        picked = await self.exclusive(run)
        if record:
            self._record(title, picked.label if picked is not None else "(cancelled)")
        return picked.value if picked is not None else None

    async def pick(
        self,
        title: str,
        options: Sequence[Option[T]],
        *,
        actions: Sequence[tuple[Sequence[str], str, str]],
        message: str = "",
        default: int = 0,
        query: str = "",
        filterable: bool = True,
        live: Callable[[Chooser[T]], Awaitable[None]] | None = None,
    ) -> Picked[T] | None:
        """A picker with extra keys (``actions``: prompt_toolkit keys, action name, hint):
        the caller acts and usually opens it again. ``None`` when cancelled. ``live`` as
        for :meth:`choose`."""
        result: list[Picked[T] | None] = []

        async def run() -> None:
            chooser = Chooser(
                title,
                options,
                message=message,
                default=default,
                filterable=filterable,
                output=self.output,
                actions=actions,
                query=query,
                style=self.style,
            )
            updater = asyncio.ensure_future(live(chooser)) if live is not None else None
            try:
                option = await chooser.run(allow_empty=True)
            finally:
                if updater is not None:
                    updater.cancel()
            if chooser.action == "select" and option is None:
                result.append(None)
                return
            shown = chooser.visible()
            index = shown.index(option) if option is not None and option in shown else 0
            result.append(Picked(chooser.action, option.value if option is not None else None, chooser.query, index))

        await self.exclusive(run)
        return result[0] if result else None

    async def confirm(
        self, title: str, message: str = "", *, timeout: float | None = None, record: bool = True
    ) -> bool:
        options: list[Option[bool]] = [Option(True, "Yes", key="y"), Option(False, "No", key="n")]
        answer: bool | None = await self.choose(
            title, options, message=message, timeout=timeout, filterable=False, record=record
        )
        return bool(answer)

    async def text(
        self,
        title: str,
        *,
        placeholder: str = "",
        default: str = "",
        timeout: float | None = None,
        password: bool = False,
        record: bool = True,
    ) -> str | None:
        """One line of text; ``None`` when cancelled (Esc, Ctrl+C) or timed out.
        ``password``: shown as ``*`` and not recorded in the transcript."""

        async def run() -> str | None:
            kb = KeyBindings()

            @kb.add("escape", eager=True)
            @kb.add("c-c")
            def _cancel(event: KeyPressEvent) -> None:
                event.app.exit(result=None)

            session: PromptSession[str | None] = PromptSession(
                [("class:question", "? "), ("class:title", title), ("", "\n"), ("class:cursor", "› ")],
                key_bindings=kb,
                style=self.style,
                erase_when_done=True,
                output=self.output,
                placeholder=[("class:dim", placeholder)] if placeholder else None,
                is_password=password,
            )
            session.app.ttimeoutlen = ESCAPE_TIMEOUT

            def expire() -> None:
                if session.app.is_running and not session.app.is_done:
                    session.app.exit(result=None)

            handle = asyncio.get_running_loop().call_later(timeout, expire) if timeout else None
            try:
                return await session.prompt_async(default=default, handle_sigint=False)
            except (EOFError, KeyboardInterrupt):
                return None
            finally:
                if handle is not None:
                    handle.cancel()

        answer = await self.exclusive(run)
        shown = "(hidden)" if password and answer else answer
        if record:
            self._record(title, shown if shown is not None else "(cancelled)")
        return answer

    async def editor(self, title: str, prefill: str = "") -> str | None:
        """Several lines of text: Enter adds a line, Alt+Enter (or Esc then Enter)
        submits, Ctrl+C cancels (``None``)."""

        async def run() -> str | None:
            kb = KeyBindings()

            @kb.add("c-c")
            def _cancel(event: KeyPressEvent) -> None:
                event.app.exit(result=None)

            session: PromptSession[str | None] = PromptSession(
                [
                    ("class:question", "? "),
                    ("class:title", title),
                    ("class:dim", "  (Alt+Enter submits, Ctrl+C cancels)"),
                    ("", "\n"),
                ],
                multiline=True,
                key_bindings=kb,
                style=self.style,
                erase_when_done=True,
                output=self.output,
                prompt_continuation="",
            )
            try:
                return await session.prompt_async(default=prefill, handle_sigint=False)
            except (EOFError, KeyboardInterrupt):
                return None

        answer = await self.exclusive(run)
        shown = "(cancelled)" if answer is None else f"{len(answer.splitlines())} line(s)"
        self._record(title, shown)
        return answer


Level = Literal["info", "warning", "error"]
_NOTIFY_STYLE = {"info": ("ℹ", "blue"), "warning": ("⚠", "yellow"), "error": ("✖", "red")}


Placement = Literal["aboveEditor", "belowEditor"]


class TerminalUI:
    """``ctx.ui`` in interactive mode (the :class:`pi_hookspecs.UIContext` protocol)."""

    def __init__(self, dialogs: Dialogs, on_change: Callable[[], None] | None = None) -> None:
        self.dialogs = dialogs
        self.on_change = on_change
        self.statuses: dict[str, str] = {}
        self.widgets: dict[str, list[str]] = {}
        """Widgets above the input line."""
        self.widgets_below: dict[str, list[str]] = {}
        self.header: list[str] | None = None
        self.footer: list[str] | None = None
        self.working_message: str | None = None
        self.prompts = PromptSpan()
        self.editor_text: Callable[[], str] = lambda: ""
        self.put_editor_text: Callable[[str], None] = lambda text: None
        self.write_terminal: Callable[[str], None] = lambda text: None
        self.component_context: Callable[[], tuple[Any, Any]] = lambda: (None, None)
        """``(theme, keymap)`` for ``custom()`` components (set by the app)."""

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        self.prompts.start("confirm", title)
        try:
            return await self.dialogs.confirm(title, message, timeout=timeout)
        finally:
            self.prompts.end()

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        self.prompts.start("select", title)
        try:
            return await self.dialogs.choose(title, [Option(o, o) for o in options], timeout=timeout)
        finally:
            self.prompts.end()

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        self.prompts.start("input", title)
        try:
            return await self.dialogs.text(title, placeholder=placeholder, timeout=timeout)
        finally:
            self.prompts.end()

    async def editor(self, title: str, prefill: str = "") -> str | None:
        self.prompts.start("editor", title)
        try:
            return await self.dialogs.editor(title, prefill)
        finally:
            self.prompts.end()

    async def custom(self, factory: Callable[..., Any], *, overlay: bool = False, **options: Any) -> Any:
        """A plugin's component in place of the input line until it calls ``done(value)``
        (:mod:`.custom_ui`); ``None`` when it fails, which is said in one line naming the
        plugin. ``blocked={"kind": ..., "message": ...}`` reports pi as waiting for the user
        (``ui_prompt_start`` / ``ui_prompt_end``); ``overlay`` and pi 1.6.0's other options
        change nothing here: components are drawn inline."""
        from ...extensions.runner import current_plugin
        from .custom_ui import ComponentError, run_component

        theme, keymap = self.component_context()
        blocked = options.get("blocked")
        waiting = blocked.get("message") if isinstance(blocked, dict) else None

        async def run() -> Any:
            return await run_component(
                factory, theme=theme, keymap=keymap, output=self.dialogs.output, style=self.dialogs.style
            )

        if blocked is not None:  # the component waits for an answer: pi is blocked on the user
            self.prompts.start("custom", waiting if isinstance(waiting, str) else None)
        try:
            return await self.dialogs.exclusive(run)
        except ComponentError as exc:
            plugin = current_plugin()
            who = f" of plugin {plugin}" if plugin else ""
            self.dialogs.transcript.line(f"✖ ctx.ui.custom(){who} failed: {exc}", "red")
            return None
        finally:
            if blocked is not None:
                self.prompts.end()

    def notify(self, message: str, level: Level = "info") -> None:
        icon, color = _NOTIFY_STYLE.get(level, _NOTIFY_STYLE["info"])
        self.dialogs.transcript.print(Text.assemble((f"{icon} ", color), (message, color if level != "info" else "")))

    def set_status(self, key: str, text: str | None) -> None:
        if text:
            self.statuses[key] = text
        else:
            self.statuses.pop(key, None)
        self._changed()

    def set_widget(self, key: str, lines: Sequence[str] | None, *, placement: Placement = "aboveEditor") -> None:
        self.widgets.pop(key, None)
        self.widgets_below.pop(key, None)
        if lines:
            table = self.widgets_below if placement == "belowEditor" else self.widgets
            table[key] = [str(line) for line in lines]
        self._changed()

    def set_title(self, title: str) -> None:
        self.write_terminal(f"\x1b]0;{plain(title)}\x07")

    def set_header(self, lines: str | Sequence[str] | None) -> None:
        self.header = _lines(lines)

    def set_footer(self, lines: str | Sequence[str] | None) -> None:
        self.footer = _lines(lines)
        self._changed()

    def set_working_message(self, message: str | None = None) -> None:
        self.working_message = message or None
        self._changed()

    def get_editor_text(self) -> str:
        return self.editor_text()

    def set_editor_text(self, text: str) -> None:
        self.put_editor_text(text)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()


def _lines(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return str(value).splitlines() if isinstance(value, str) else [str(line) for line in value]


def trust_asker(dialogs: Dialogs) -> Callable[[str], Awaitable[Any]]:
    """The ``ask_user_trust`` callable: asks once per folder and process (``/reload``
    and new sessions reuse the answer)."""
    answers: dict[str, TrustAnswer | None] = {}

    async def ask(cwd: str) -> TrustAnswer | None:
        if cwd in answers:
            return answers[cwd]
        found = trust_requiring_project_resources(cwd)
        listed = ", ".join(str(p.relative_to(cwd)) if p.is_relative_to(cwd) else str(p) for p in found[:6])
        options = [
            Option(TrustAnswer(True), "Yes, for this session", key="y"),
            Option(TrustAnswer(True, remember=True), "Yes, and remember this folder", key="a"),
            Option(TrustAnswer(False), "No: ignore the project's own files", key="n"),
        ]
        answer = await dialogs.choose(
            f"Trust {cwd}?",
            options,
            message=f"It has project files that can run code or change settings: {listed}",
            filterable=False,
        )
        answers[cwd] = answer
        return answer

    return ask
