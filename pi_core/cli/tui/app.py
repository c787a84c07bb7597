"""The interactive loop: read a line, dispatch it, repeat.

The input line stays on screen while pi works, so a message typed during a run
becomes steering (Enter) or a follow-up (Alt+Enter). Runs, user shell commands,
plugin commands and ``/compact`` run as a background *job* (one at a time; Ctrl+C or
Esc aborts it); the other built-in commands run in line, with the input line hidden.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.filters import Condition, has_completions
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import DynamicKeyBindings, KeyBindings, KeyPressEvent
from prompt_toolkit.output import ColorDepth, create_output
from prompt_toolkit.styles import Style
from rich.text import Text

from pi_hookspecs import AbortController, ImageContent

from ... import __version__
from ..._async import maybe_await
from ..._paths import agent_dir
from ...ai import supported_thinking_levels
from ...resources.settings import SettingsError
from ...runtime import AgentSession, NoModelError, SessionBusyError, SessionRuntime, no_model_message
from ...runtime.events import NoticeEvent
from ...session import SessionManager
from ...session.persistence import SessionFileEvent
from ..bootstrap import CliError, diagnostics_of, initial_input, open_runtime, start_runtime
from ..process import install_stop_signals, run_main, signal_status
from .base import JobKind, replay
from .commands import BUILTINS, builtin_argument_values, builtin_infos
from .completion import CommandInfo, PiCompleter, plugin_argument_values, wants_completion_while_typing
from .dialogs import Dialogs, TerminalUI, trust_asker
from .keys import KeyError_, external_editor_command, install_sequences, load_keymap, to_prompt_toolkit
from .output import StreamToTranscript, Transcript, plain, terminal_width
from .render import EventRenderer, LiveView
from .sessions_ui import SessionPicker, ask_missing_cwd
from .settings_ui import refresh_settings, write_setting
from .system import read_clipboard, run_editor
from .theme import load_theme

PROMPT_STYLE = Style.from_dict(
    {
        "prompt": "ansicyan bold",
        "live": "",
        "thinking": "ansibrightblack italic",
        "tool": "ansicyan",
        "dim": "ansibrightblack",
        "spinner": "ansiyellow",
        "hint": "ansiyellow",
        "completion-menu": "bg:ansibrightblack ansiwhite",
    }
)
HISTORY_FILE = "interactive-history"
DOUBLE_CTRL_C_SECONDS = 2.0
DOUBLE_ESCAPE_SECONDS = 0.5  # as pi 1.6.0
ESCAPE_TIMEOUT = 0.05
"""How long a lone Esc waits for the rest of an Alt+key sequence (terminals send those
in one write); prompt_toolkit's default of 0.5 s would make a double Esc impossible."""
PREFIX_TIMEOUT = 0.3
"""How long a key that starts a longer binding (Esc before Enter, Up …) waits."""
Mode = Literal["steer", "follow_up"]


class _Suspended(Exception):
    """The input line was taken off the screen (a dialog, or exiting)."""


@dataclass
class Job:
    task: asyncio.Task[Any]
    abort: Callable[[], None]
    kind: JobKind
    """``prompt``: input given to the session (a run, or a plugin command); ``bash``: a
    user shell command; ``command``: a built-in command working in the background."""


@dataclass
class PluginShortcut:
    id: str
    keys: list[str]
    prompt_keys: list[tuple[str, ...]]
    definition: Any
    plugin: str
    taken_by: str | None = None
    """pi's action that has the key (the shortcut is then not bound)."""


class InteractiveApp:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stdout = sys.stdout
        self.stderr = sys.stderr
        self.output = create_output(stdout=sys.stdout)
        self.out = Transcript(sys.stdout)
        self.dialogs = Dialogs(self.out, self.output)
        self._stop_file_events: Callable[[], None] | None = None
        self.live = LiveView()
        self.ui = TerminalUI(self.dialogs, on_change=self._ui_changed)
        self._runtime: SessionRuntime | None = None
        self.renderer = EventRenderer(self.out, self.live, lambda: self.session, self.invalidate)
        self.job: Job | None = None
        self.inline: asyncio.Task[Any] | None = None
        self.exiting = False
        self.draft = ""
        self._mode: Mode = "steer"
        self._ctrl_c_at = 0.0
        self._prompt_active = False
        self._suspend_requested = False
        self._resume = asyncio.Event()
        self._resume.set()
        self._prompt_stopped = asyncio.Event()
        self._prompt_stopped.set()
        self._ticker: asyncio.Task[None] | None = None
        self._escape_at = 0.0
        self._tasks: set[asyncio.Future[Any]] = set()
        self._entries_at_open = 0
        self._started = False
        self.editor_padding = 0
        """``editorPaddingX``: spaces before the input line."""
        self.images: list[ImageContent] = []
        """Images pasted with Ctrl+V, sent with the next message."""
        self._scoped_refs: list[str] | None = None
        self.theme_problems: list[str] = []
        self.theme = load_theme(args.theme, None, os.getcwd(), self.theme_problems)
        self.out.set_theme(self.theme)
        install_sequences()
        self.keymap = load_keymap()
        self._key_bindings = self._bindings()
        self.prompt: PromptSession[str] = self._make_prompt()
        self.prompt.app.ttimeoutlen = ESCAPE_TIMEOUT
        self.prompt.app.timeoutlen = PREFIX_TIMEOUT

    # ------------------------------------------------------------------ state

    @property
    def runtime(self) -> SessionRuntime:
        """The open runtime (from the start of :meth:`run` on)."""
        if self._runtime is None:
            raise RuntimeError("the interactive runtime is not open yet")
        return self._runtime

    @property
    def session(self) -> AgentSession:
        return self.runtime.session

    def set_draft(self, text: str) -> None:
        if self._prompt_active:
            buffer = self.prompt.default_buffer
            buffer.text = text
            buffer.cursor_position = len(text)
            self.invalidate()
        else:
            self.draft = text

    def get_draft(self) -> str:
        return self.prompt.default_buffer.text if self._prompt_active else self.draft

    # ------------------------------------------------------------------ settings, keys, models

    def settings_changed(self, key: str | None = None) -> None:
        """Re-read what the terminal takes from the settings (after ``/settings``,
        ``/reload``, a new session). A ``theme`` chosen in ``/settings`` wins over
        ``--theme``. Problems (a theme that cannot be read) are printed once started."""
        if self._runtime is None:
            return
        if key == "theme":
            self.args.theme = None
        settings = self.session.settings
        self.renderer.configure(settings)
        visible = settings.get("autocompleteMaxVisible")
        self.prompt.reserve_space_for_menu = visible if isinstance(visible, int) and 3 <= visible <= 20 else 5
        padding = settings.get("editorPaddingX")
        self.editor_padding = padding if isinstance(padding, int) and 0 <= padding <= 3 else 0
        true_color, _ = settings.lookup("terminal", "trueColor")
        self.out.set_true_color(true_color if isinstance(true_color, bool) else None)
        self.prompt.color_depth = (
            None if not isinstance(true_color, bool) else ColorDepth.TRUE_COLOR if true_color else ColorDepth.DEPTH_8_BIT
        )
        self.theme = load_theme(self.args.theme or settings.get("theme"), settings, self.session.cwd, self.theme_problems)
        self.apply_theme()
        if self._started:
            for problem in self.theme_problems:
                self.out.line(problem, "yellow")
            self.theme_problems.clear()

    def apply_theme(self) -> None:
        self.out.set_theme(self.theme)
        self.prompt.style = self.theme.prompt_style()
        self.dialogs.style = self.theme.dialog_style()
        self.invalidate()

    def reload_keys(self) -> None:
        """``keybindings.json`` and the plugins' shortcuts again (new session, ``/reload``)."""
        self.keymap = load_keymap()
        self._key_bindings = self._bindings()
        if self._started:
            for problem in self.keymap.problems:
                self.out.line(problem, "yellow")

    @property
    def scoped_models(self) -> list[tuple[Any, str | None]]:
        if self._runtime is None:
            return []
        registry = self.session.models
        available = {m.ref: m for m in registry.available(self.session.model)}
        if self._scoped_refs is not None:
            return [(available[r], None) for r in self._scoped_refs if r in available]
        patterns = self.args.models or self.session.settings.enabled_models
        if not patterns:
            return []
        selections, _warnings = registry.resolve_scope(patterns)
        return [(s.model, s.thinking_level) for s in selections if s.model.ref in available]

    def set_scoped_models(self, refs: list[str]) -> None:
        self._scoped_refs = refs or None

    async def cycle_model(self, step: int) -> None:
        session = self.session
        scoped = self.scoped_models
        candidates = scoped or [(m, None) for m in session.models.available(session.model)]
        if len(candidates) < 2:
            self.live.flash("Only one model to cycle through (/scoped-models)" if candidates else "No model available", 2.0)
            self.invalidate()
            return
        refs = [m.ref for m, _ in candidates]
        current = session.model.ref if session.model is not None else None
        index = refs.index(current) if current in refs else (-1 if step > 0 else 0)
        model, level = candidates[(index + step) % len(candidates)]
        if not await session.set_model(model, source="cycle"):
            self.out.line(f"✖ No API key for provider {model.provider!r}", "red")
            return
        if level is not None:
            await session.set_thinking_level(level)
        self.out.line(f"Model: {model.ref} (thinking {session.thinking_level})" + ("" if scoped else " · all models"), "green")

    async def cycle_thinking(self) -> None:
        session = self.session
        levels = supported_thinking_levels(session.model) if session.model is not None else ["off"]
        if len(levels) < 2:
            self.live.flash(f"{session.model.ref if session.model else 'This model'} has no thinking levels to cycle", 2.0)
            self.invalidate()
            return
        current = session.thinking_level
        index = levels.index(current) if current in levels else -1
        await session.set_thinking_level(levels[(index + 1) % len(levels)])

    def toggle_tool_output(self) -> None:
        expanded = self.renderer.toggle_expanded()
        self.out.line("Tool output: in full (Ctrl+O collapses)" if expanded else "Tool output: previews (Ctrl+O expands)", "dim")

    def toggle_thinking(self) -> None:
        """Ctrl+T: as pi 1.6.0, saved as ``hideThinkingBlock`` in the user settings."""
        hidden = self.renderer.toggle_thinking()
        self.out.line(f"Thinking blocks: {'hidden' if hidden else 'visible'}", "dim")
        if self._runtime is None:
            return
        try:
            write_setting(self.session.cwd, "user", "hideThinkingBlock", hidden)
            refresh_settings(self.session.settings)
        except (SettingsError, OSError) as exc:
            self.out.line(f"✖ hideThinkingBlock not saved: {exc}", "red")

    async def edit_externally(self) -> None:
        """Ctrl+G: the draft in the external editor; what it saves becomes the draft."""
        setting = self.session.settings.get("externalEditor") if self._runtime else None
        command = external_editor_command(setting)
        if command is None:
            self.live.flash("No external editor: set externalEditor in /settings, or $VISUAL / $EDITOR", 3.0)
            self.invalidate()
            return
        draft = self.get_draft()
        with tempfile.NamedTemporaryFile("w", suffix=".md", prefix="pi-draft-", delete=False, encoding="utf-8") as handle:
            handle.write(draft)
            path = handle.name
        try:
            code = await self.dialogs.exclusive(lambda: asyncio.to_thread(run_editor, command, path))
            if code != 0:
                self.out.line(f"✖ {command} exited with code {code}: the draft is unchanged", "red")
                return
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            self.set_draft(text[:-1] if text.endswith("\n") and not draft.endswith("\n") else text)
        except OSError as exc:
            self.out.line(f"✖ Cannot run the external editor {command!r}: {exc.strerror or exc}", "red")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    async def paste_from_clipboard(self) -> None:
        """Ctrl+V: an image on the clipboard is attached to the next message (``[image N]``
        marks it in the draft); else the clipboard's text is inserted."""
        clip = await asyncio.to_thread(read_clipboard)
        if clip.image is not None:
            data, mime = clip.image
            self.images.append(ImageContent(data=base64.b64encode(data).decode(), mime_type=mime))
            self._insert(f"[image {len(self.images)}]")
        elif clip.text:
            self._insert(clip.text)
        else:
            self.live.flash(clip.problem or "The clipboard is empty", 3.0)
            self.invalidate()

    def _insert(self, text: str) -> None:
        if self._prompt_active:
            self.prompt.default_buffer.insert_text(text)
        else:
            self.draft += text

    # ------------------------------------------------------------------ plugin shortcuts

    def plugin_shortcuts(self) -> list[PluginShortcut]:
        if self._runtime is None:
            return []
        out = []
        for key, registered in self.session.plugins.registry.shortcuts.items():
            shortcut = registered.value
            try:
                prompt_keys = [to_prompt_toolkit(key)]
            except KeyError_:
                continue
            taken_by = self.keymap.owner(prompt_keys[0])
            out.append(PluginShortcut(f"plugin:{registered.plugin}:{key}", [key], prompt_keys, shortcut, registered.plugin, taken_by))
        return out

    def _plugin_shortcut_handler(self, shortcut: PluginShortcut) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            async def run() -> None:
                ctx = self.session.context_host.command_context()
                try:
                    await maybe_await(shortcut.definition.handler(ctx))
                except Exception as exc:
                    self.out.line(f"✖ shortcut {shortcut.keys[0]} of plugin {shortcut.plugin}: {type(exc).__name__}: {exc}", "red")

            self._spawn(run())

        return handler

    def invalidate(self) -> None:
        self.prompt.app.invalidate()
        if self.live.animating and (self._ticker is None or self._ticker.done()):
            with contextlib.suppress(RuntimeError):
                self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while self.live.animating or self.job is not None:
            self.prompt.app.invalidate()
            await asyncio.sleep(0.1)
        self.prompt.app.invalidate()

    def _ui_changed(self) -> None:
        self.live.statuses = self.ui.statuses
        self.live.widgets = self.ui.widgets
        self.live.widgets_below = self.ui.widgets_below
        self.live.footer = self.ui.footer
        self.live.working_message = self.ui.working_message
        shown = bool(self.ui.widgets_below or self.ui.footer)
        self.prompt.bottom_toolbar = self._below if shown else None
        self.invalidate()

    def _below(self) -> StyleAndTextTuples:
        return self.live.below(terminal_width())

    # ------------------------------------------------------------------ the prompt

    def _history(self) -> History:
        try:
            directory = agent_dir()
            directory.mkdir(parents=True, exist_ok=True)
            return FileHistory(str(directory / HISTORY_FILE))
        except OSError:
            return InMemoryHistory()

    def _message(self) -> StyleAndTextTuples:
        known = self.prompt.app.renderer.height_is_known
        fragments = self.live.fragments(terminal_width(), with_below=not known)
        return [*fragments, ("", " " * self.editor_padding), ("class:prompt", "› ")]

    def _make_prompt(self) -> PromptSession[str]:
        completer = PiCompleter(self.command_infos, self.argument_values, lambda: self.session.cwd if self._runtime else os.getcwd())
        return PromptSession(
            self._message,
            multiline=True,
            key_bindings=DynamicKeyBindings(lambda: self._key_bindings),
            history=self._history(),
            completer=completer,
            complete_while_typing=Condition(lambda: wants_completion_while_typing(self.prompt.default_buffer.text)),
            reserve_space_for_menu=6,
            style=self.theme.prompt_style(),
            erase_when_done=True,
            output=self.output,
            prompt_continuation=lambda width, line, wrap: [("class:dim", " " * (self.editor_padding + 2))],
            enable_history_search=False,
        )

    def _bindings(self) -> KeyBindings:
        """The input line's keys, from the keymap (``keybindings.json``) and the plugins'
        shortcuts; rebuilt by :meth:`reload_keys`."""
        kb = KeyBindings()
        handlers: dict[str, Callable[[KeyPressEvent], None]] = {
            "tui.input.submit": self._key_submit,
            "tui.input.newLine": lambda event: event.current_buffer.insert_text("\n"),
            "app.message.followUp": self._key_follow_up,
            "app.message.dequeue": self._key_dequeue,
            "app.interrupt": self._key_escape,
            "app.clear": self._key_ctrl_c,
            "app.exit": self._key_ctrl_d,
            "app.suspend": self._key_suspend,
            "app.thinking.cycle": lambda event: self._spawn(self.cycle_thinking()),
            "app.model.cycleForward": lambda event: self._spawn(self.cycle_model(1)),
            "app.model.cycleBackward": lambda event: self._spawn(self.cycle_model(-1)),
            "app.model.select": lambda event: self._key_command("model"),
            "app.tools.expand": lambda event: self.toggle_tool_output(),
            "app.thinking.toggle": lambda event: self.toggle_thinking(),
            "app.editor.external": lambda event: self._spawn(self.edit_externally()),
            "app.message.copy": lambda event: self._key_command("copy"),
            "app.clipboard.pasteImage": lambda event: self._spawn(self.paste_from_clipboard()),
            "app.session.new": lambda event: self._key_command("new"),
            "app.session.tree": lambda event: self._key_command("tree"),
            "app.session.fork": lambda event: self._key_command("fork"),
            "app.session.resume": lambda event: self._key_command("resume"),
        }
        menu_closed = ~has_completions  # Shift+Tab / Tab move through an open completion menu
        for action, handler in handlers.items():
            for keys in self.keymap.keys(action):
                kb.add(*keys, filter=menu_closed if keys in (("s-tab",), ("tab",)) else True)(handler)
        for shortcut in self.plugin_shortcuts():
            if shortcut.taken_by is None:  # a key of pi's own actions stays pi's
                for keys in shortcut.prompt_keys:
                    kb.add(*keys)(self._plugin_shortcut_handler(shortcut))
        return kb

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(self._guard(coroutine))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _key_command(self, name: str) -> None:
        builtin = BUILTINS[name]
        if self.job is not None and not builtin.while_busy:
            self.live.flash(f"/{name} waits for the current work", 2.0)
            self.invalidate()
            return
        self._spawn(builtin.handler(self, ""))

    def _key_submit(self, event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        self._mode = "steer"
        buffer.validate_and_handle()

    def _key_follow_up(self, event: KeyPressEvent) -> None:
        if self.job is not None:
            self._mode = "follow_up"
            event.current_buffer.validate_and_handle()
        else:
            event.current_buffer.insert_text("\n")

    def _key_dequeue(self, event: KeyPressEvent) -> None:
        if self._runtime is None:
            return
        steering, follow_up = self.session.clear_queue()
        queued = [*steering, *follow_up]
        if not queued:
            self.live.flash("No queued messages", 1.5)
            self.invalidate()
            return
        buffer = event.current_buffer
        text = "\n\n".join([*queued, buffer.text] if buffer.text.strip() else queued)
        buffer.text = text
        buffer.cursor_position = len(text)
        self.live.steering, self.live.follow_up = [], []
        self.live.flash(f"{len(queued)} queued message(s) back in the input line", 2.0)
        self.invalidate()

    def _key_escape(self, event: KeyPressEvent) -> None:
        if self.job is not None:
            self.abort_job()
            return
        if event.current_buffer.text:
            return
        now = time.monotonic()
        if now - self._escape_at < DOUBLE_ESCAPE_SECONDS:
            self._escape_at = 0.0
            action = self.session.settings.get("doubleEscapeAction") if self._runtime else None
            action = action if action in ("tree", "fork", "none") else "tree"
            if action != "none":
                self._key_command(action)
        else:
            self._escape_at = now

    def _key_ctrl_c(self, event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if self.job is not None:
            self.abort_job()
        elif buffer.text:
            buffer.reset()
            self.images.clear()
            self._ctrl_c_at = 0.0
        elif time.monotonic() - self._ctrl_c_at < DOUBLE_CTRL_C_SECONDS:
            self.request_exit()
        else:
            self._ctrl_c_at = time.monotonic()
            self.live.flash("Press Ctrl+C again to exit", DOUBLE_CTRL_C_SECONDS)
            self.invalidate()

    def _key_suspend(self, event: KeyPressEvent) -> None:
        if hasattr(signal, "SIGTSTP"):
            event.app.suspend_to_background()
        else:
            self.live.flash("Suspending is not supported on this platform", 2.0)

    def _key_ctrl_d(self, event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.delete()
        else:
            self.request_exit()

    # PromptHost: dialogs take the terminal through these two.

    async def suspend_prompt(self) -> None:
        self._resume.clear()
        if not self._prompt_active:
            return
        self._suspend_requested = True
        self._exit_prompt()
        await self._prompt_stopped.wait()

    def resume_prompt(self) -> None:
        self._resume.set()

    def _exit_prompt(self) -> None:
        app = self.prompt.app
        future = app.future
        if future is not None and not future.done():
            self.draft = app.current_buffer.text
            app.exit(exception=_Suspended())

    def _pre_run(self) -> None:
        if self._suspend_requested or self.exiting:
            self._exit_prompt()

    async def read_loop(self) -> None:
        while not self.exiting:
            await self._resume.wait()
            if self.exiting:
                break
            if not self._resume.is_set():  # another dialog took the terminal meanwhile
                continue
            self._suspend_requested = False
            self._prompt_active = True
            self._prompt_stopped.clear()
            try:
                text = await self.prompt.prompt_async(default=self.draft, pre_run=self._pre_run, handle_sigint=False)
            except _Suspended:
                continue
            except EOFError:
                self.request_exit()
                break
            finally:
                self._prompt_active = False
                self._prompt_stopped.set()
            self.draft = ""
            mode, self._mode = self._mode, "steer"
            await self.submit(text, mode)

    def request_exit(self) -> None:
        self.exiting = True
        self._resume.set()
        if self._prompt_active:
            self._exit_prompt()

    # ------------------------------------------------------------------ dispatch

    def command_infos(self) -> list[CommandInfo]:
        infos = builtin_infos()
        if self._runtime is None:
            return infos
        session = self.session
        taken = {i.name for i in infos}
        for name, registered in session.plugins.registry.commands.items():
            if name not in taken:
                infos.append(CommandInfo(name, registered.value.description, f"plugin {registered.plugin}"))
                taken.add(name)
        resources = session.services.resources
        for template in resources.prompt_templates:
            if template.name not in taken:
                infos.append(CommandInfo(template.name, template.description, "prompt template"))
                taken.add(template.name)
        for skill in resources.skills:
            infos.append(CommandInfo(f"skill:{skill.name}", skill.description, "skill"))
        return infos

    def argument_values(self, name: str, prefix: str) -> list[tuple[str, str]]:
        if self._runtime is None:
            return []
        if name in BUILTINS:
            return builtin_argument_values(self, name, prefix)
        registered = self.session.plugins.registry.commands.get(name)
        if registered is not None:
            return plugin_argument_values(registered.value.get_argument_completions, prefix)
        return []

    async def submit(self, text: str, mode: Mode) -> None:
        stripped = text.strip()
        if not stripped:
            return
        if stripped.startswith("!"):
            await self._bash(stripped)
            return
        if stripped.startswith("/"):
            name, _, args = stripped[1:].partition(" ")
            builtin = BUILTINS.get(name)
            if builtin is not None:
                self.out.print(Text(stripped, style="bold cyan"))
                if not builtin.while_busy:
                    await self._await_prompt_job()
                if self.job is not None and not builtin.while_busy:
                    self.out.line(f"/{name} waits for the current work: let it finish or press Ctrl+C", "yellow")
                    return
                if builtin.job:
                    self.start_job(builtin.handler(self, args), kind="command", status=f"/{name}")
                else:
                    await self._inline(builtin.handler(self, args))
                return
        await self._prompt(text.strip("\n"), mode)

    async def _prompt(self, text: str, mode: Mode) -> None:
        session = self.session
        await self._await_prompt_job()
        if self.job is not None:
            if not session.is_busy:
                self.out.line("pi is busy with a command: wait for it or press Ctrl+C", "yellow")
                self.draft = text
                return
            label = "steering" if mode == "steer" else "follow-up"
            self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold"), (f"  ({label}, queued)", "dim")))
            self.renderer.echoed.append(text)
            try:
                await session.prompt(text, source="interactive", streaming_behavior=mode)
            except Exception as exc:
                self._report(exc)
            return
        self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold")))
        self.renderer.echoed.append(text)
        images, self.images = list(self.images), []
        self.start_job(
            session.prompt(text, images=images, source="interactive", streaming_behavior="steer"), kind="prompt", status="Working"
        )

    async def _await_prompt_job(self) -> None:
        """A run starting or settling, or a plugin command: new input waits until the run
        is under way (then it steers or is stored after the run) or the job is over."""
        while self.job is not None and self.job.kind == "prompt" and not self.session.is_busy:
            await asyncio.wait([self.job.task], timeout=0.05)

    async def _bash(self, line: str) -> None:
        exclude = line.startswith("!!")
        command = line[2:].strip() if exclude else line[1:].strip()
        if not command:
            self.out.line("Usage: !command (output sent to the model) or !!command (kept out of the context)", "yellow")
            return
        await self._await_prompt_job()
        if self.job is not None and not self.session.is_busy:
            self.out.line("pi is busy with a command: wait for it or press Ctrl+C", "yellow")
            self.draft = line
            return

        controller = AbortController()
        note = "  (kept out of the context)" if exclude else ""
        self.out.print(Text.assemble(("$ ", "bold green"), (command, "bold"), (note, "dim")))
        pending = [""]
        streamed = [False]

        def on_data(chunk: str) -> None:
            streamed[0] = True
            head, sep, pending[0] = (pending[0] + chunk).rpartition("\n")
            if sep:
                self.out.write(self.out.render(Text(plain(head))))

        async def run() -> None:
            message = await self.session.execute_bash(
                command, exclude_from_context=exclude, on_data=on_data, signal=controller.signal
            )
            if pending[0]:
                self.out.line(plain(pending[0]))
            if not streamed[0] and message.output:
                self.out.line(plain(message.output.rstrip("\n")))
            if message.cancelled:
                self.out.line("(cancelled)", "yellow")
            elif message.exit_code not in (0, None):
                self.out.line(f"(exit code {message.exit_code})", "red")
            if message.truncated and message.full_output_path:
                self.out.line(f"(output truncated; full output: {message.full_output_path})", "dim")

        if self.job is not None:  # a run is active: the result is stored after it
            self.session.spawn(self._guard(run()))
            return
        self.start_job(run(), kind="bash", status=f"$ {command}", abort=controller.abort)

    async def _inline(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(self._guard(coroutine))
        self.inline = task
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        finally:
            self.inline = None

    # ------------------------------------------------------------------ jobs

    def start_job(
        self,
        coroutine: Coroutine[Any, Any, Any],
        *,
        kind: JobKind,
        status: str | None = None,
        abort: Callable[[], None] | None = None,
    ) -> None:
        """Run ``coroutine`` in the background (one job at a time); ``abort`` stops it
        (default: abort the session's run, else cancel the task)."""
        task = asyncio.ensure_future(self._guard(coroutine))
        self.job = Job(task, abort or self._abort_run, kind)
        if status:
            self.live.set_status(status)
        task.add_done_callback(self._job_done)
        self.invalidate()

    def _abort_run(self) -> None:
        session = self.session
        if session.is_busy:
            session.abort()
        elif self.job is not None:
            self.job.task.cancel()

    def abort_job(self) -> None:
        if self.job is not None:
            self.live.flash("Aborting…", 1.0)
            self.job.abort()
            self.invalidate()

    def _job_done(self, task: asyncio.Task[Any]) -> None:
        if self.job is not None and self.job.task is task:
            self.job = None
        self.renderer.echoed.clear()
        if self._runtime is not None:
            self.renderer.scan_entries()  # entries a plugin command appended
        if self._runtime is not None and not self.session.is_busy:
            self.live.set_status(None)
            self.live.tools.clear()
            self.live.text = self.live.thinking = ""
        self.invalidate()

    async def _guard(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        try:
            await coroutine
        except asyncio.CancelledError:
            self.out.line("Cancelled", "yellow")
        except Exception as exc:
            self._report(exc)

    def _report(self, exc: BaseException) -> None:
        if isinstance(exc, (NoModelError, SessionBusyError, CliError)):
            self.out.line(f"✖ {exc}", "red")
        else:
            self.out.line(f"✖ {type(exc).__name__}: {exc}", "red")

    def _on_sigint(self) -> None:
        """Ctrl+C while no prompt_toolkit application reads the keys (in-line commands)."""
        if self.inline is not None:
            self.inline.cancel()
        elif self.job is not None:
            self.abort_job()

    # ------------------------------------------------------------------ start and end

    async def run(self) -> int:
        self.dialogs.host = self
        self.out.bind(asyncio.get_running_loop())
        if self.args.resume and not await self._pick_startup_session():
            return 0
        if not await self._check_session_cwd():
            return 0
        try:
            self._runtime = await open_runtime(
                self.args, mode="tui", ui=self.ui, ask_user_trust=trust_asker(self.dialogs), start=False
            )
            initial = initial_input(self.args.messages, stdin_text=None, cwd=self.session.cwd)
        except CliError as exc:
            self.out.line(f"pi: {exc}", "red")
            return 1
        self.runtime.subscribe(self.renderer)
        self.runtime.on_rebind.append(self._bind_session)
        self.ui.editor_text = self.get_draft
        self.ui.put_editor_text = self.set_draft
        self.ui.write_terminal = self.out.write
        self.ui.prompts.emit = self._emit_ui_event
        self._bind_session(self.session)
        self.theme_problems.clear()
        self.settings_changed()
        self._entries_at_open = self.session.sm.get_entry_count()
        await start_runtime(self.runtime, self.args)
        self._header()
        for line in [*diagnostics_of(self.runtime), *self.theme_problems, *self.keymap.problems]:
            self.out.line(line, "yellow")
        replay(self)
        self.renderer.seen_entries = self.session.sm.get_entry_count()
        self.theme_problems.clear()
        self._started = True
        if initial.prompts:
            self.start_job(self._initial(initial.prompts, initial.images), kind="prompt", status="Working")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        stop_signals = install_stop_signals(loop, self._on_stop_signal)  # SIGTERM, SIGHUP
        try:
            await self.read_loop()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            stop_signals()
            await self._shutdown()
        return signal_status(self.stop_signum, 0)

    stop_signum: int | None = None

    def _on_stop_signal(self, signum: int) -> None:
        """SIGTERM or SIGHUP: abort the run (bash commands stopped), then leave as
        /quit does; the exit status is ``128 + signum``."""
        self.stop_signum = signum
        if self.job is not None:
            self.abort_job()
        self.request_exit()

    async def _initial(self, prompts: list[str], images: list[Any]) -> None:
        for index, text in enumerate(prompts):
            self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold")))
            self.renderer.echoed.append(text)
            await self.session.prompt(text, images=images if index == 0 else (), source="interactive")

    async def _pick_startup_session(self) -> bool:
        if not SessionManager.list(os.getcwd(), self.args.session_dir):
            self.out.line("No saved sessions in this folder: starting a new one", "yellow")
            self.args.resume = False
            return True
        picker = SessionPicker(self.dialogs, os.getcwd(), self.args.session_dir, self.keymap)
        path = await picker.run()
        if path is None:
            return False
        self.args.session, self.args.resume = path, False
        return True

    async def _check_session_cwd(self) -> bool:
        """``--session`` (or a picked session) whose working folder is gone: Continue here
        / Fork / Cancel (``False``: exit)."""
        path = self.args.session
        if not path or not os.path.isfile(path):
            return True
        from ...session.listing import session_info

        info = session_info(path)
        if info is None or not info.cwd or os.path.isdir(info.cwd):
            return True
        choice = await ask_missing_cwd(self.dialogs, path, info.cwd)
        if choice is None:
            return False
        if choice == "fork":
            self.args.fork, self.args.session = path, None
        else:
            self.args.session_cwd = os.getcwd()
        return True

    def _bind_session(self, session: Any) -> None:
        session.on_shutdown = self.request_exit
        if self._stop_file_events is not None:
            self._stop_file_events()
        self._stop_file_events = session.sm.add_file_listener(self._on_session_file)
        if self._runtime is not None and self.prompt is not None:
            self.renderer.seen_entries = session.sm.get_entry_count()
            self.settings_changed()
            self.reload_keys()

    def _on_session_file(self, event: SessionFileEvent) -> None:
        """A failed write or a session file deleted or replaced: said in the transcript."""
        level = "error" if event.fatal else "warning"
        message = event.message.removeprefix(f"{level}: ")
        self.renderer.on_notice(NoticeEvent(level=level, message=message))

    def _emit_ui_event(self, name: str, event: Any) -> None:
        """``ui_prompt_start`` / ``ui_prompt_end`` to the plugins (not awaited)."""
        if self._runtime is None:
            return
        session = self.session
        if session.runner.has_handlers(name):
            session.spawn(session.runner.emit(name, event))

    def _header(self) -> None:
        """The startup header; ``quietStartup``: ``true`` leaves it out, ``"header"``
        keeps only its first and last lines; a plugin's ``ctx.ui.set_header`` replaces it."""
        session = self.session
        quiet = session.settings.get("quietStartup", False)
        if quiet is True:
            self._startup_warnings()
            return
        if self.ui.header is not None:
            for line in self.ui.header:
                self.out.line(plain(line), "cyan")
            self._startup_warnings()
            return
        model = session.model.ref if session.model is not None else "no model"
        self.out.print(
            Text.assemble(
                (f"pi {__version__}", "bold"),
                (" · ", "dim"),
                (model, "cyan"),
                (f" · thinking {session.thinking_level}", "dim"),
                (" · ", "dim"),
                (session.cwd, ""),
            )
        )
        if quiet != "header":
            resources = session.services.resources
            tools = session.tools
            loaded = [f"{len(session.plugins.loaded)} plugins", f"{len(tools.active_names)} of {len(tools.all_definitions())} tools active"]
            if resources.context_files:
                loaded.append(", ".join(os.path.basename(c.path) for c in resources.context_files))
            if resources.skills:
                loaded.append(f"{len(resources.skills)} skills")
            if resources.prompt_templates:
                loaded.append(f"{len(resources.prompt_templates)} prompt templates")
            self.out.line(" · ".join(loaded), "dim")
            scoped = self.scoped_models
            if scoped:
                self.out.line("Model scope (Ctrl+P): " + ", ".join(m.ref for m, _ in scoped), "dim")
            patterns = self.args.models or session.settings.enabled_models
            if patterns:
                for warning in session.models.resolve_scope(patterns)[1]:
                    self.out.line(f"Model scope: {warning}", "yellow")
            sm = session.sm
            if self._entries_at_open:
                name = sm.get_session_name() or sm.get_session_id()
                self.out.line(f"Session {name}: {self._entries_at_open} entries", "dim")
        self._startup_warnings()
        self.out.line("/help commands · /hotkeys keys · !cmd shell · Enter send · Shift+Enter or Ctrl+J new line · Ctrl+D exit", "dim")

    def _startup_warnings(self) -> None:
        session = self.session
        if session.model is None:
            # as print mode refuses to start; here the user can fix it in place
            message = no_model_message(session.models.models_path)
            self.out.line(f"{message}; then choose it with /model", "yellow")
        elif session.model.api == "faux":
            self.out.line("Offline demo model: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or /model) for real answers", "yellow")

    async def _shutdown(self) -> None:
        job = self.job
        if job is not None:
            job.abort()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(job.task), 5)
        runtime = self._runtime
        if runtime is None:
            return
        file = self.session.session_file
        persisted = self.session.sm.is_flushed
        try:
            await runtime.dispose("quit")
        except Exception as exc:
            self._report(exc)
        if file and persisted and os.path.exists(file):
            self.out.line(f"Session saved: {file}", "dim")
            self.out.line(f"Resume it with: pi --session {file}", "dim")


def run_app(args: argparse.Namespace) -> int:
    """Run interactive mode; stray prints go to the transcript while it runs."""

    async def main() -> int:
        app = InteractiveApp(args)
        sys.stdout = StreamToTranscript(app.out, app.stdout)
        sys.stderr = StreamToTranscript(app.out, app.stderr, "yellow")
        try:
            return await app.run()
        finally:
            sys.stdout, sys.stderr = app.stdout, app.stderr

    return run_main(main())
