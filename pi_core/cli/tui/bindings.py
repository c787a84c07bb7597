"""What the keys of the input line do: the prompt_toolkit bindings built from the keymap
(:mod:`.keys`, ``keybindings.json``) and the plugins' shortcuts, and their handlers."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from prompt_toolkit.filters import has_completions
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from pi_hookspecs import ImageContent

from ..._async import maybe_await
from ...ai import supported_thinking_levels
from ...resources.settings import SettingsError
from .base import CommandHost
from .commands import BUILTINS
from .input_line import InputLine
from .jobs import Jobs
from .keys import KeyError_, external_editor_command, remapped_editor_actions, to_prompt_toolkit
from .render import LiveView
from .settings_ui import refresh_settings, write_setting
from .system import read_clipboard, run_editor

DOUBLE_CTRL_C_SECONDS = 2.0
DOUBLE_ESCAPE_SECONDS = 0.5  # as pi 1.6.0


@dataclass
class PluginShortcut:
    id: str
    keys: list[str]
    prompt_keys: list[tuple[str, ...]]
    definition: Any
    plugin: str
    taken_by: str | None = None
    """pi's action that has the key (the shortcut is then not bound)."""


def _editing_handler(command: str) -> Callable[[KeyPressEvent], Any]:
    """The handler of a remapped ``tui.editor.*`` key: prompt_toolkit's readline
    command, or the cursor moves up / down (through the history at the ends)."""
    if command in ("auto-up", "auto-down"):

        def move(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if command == "auto-up":
                buffer.auto_up(count=event.arg)
            else:
                buffer.auto_down(count=event.arg)

        return move
    from prompt_toolkit.key_binding.bindings.named_commands import get_by_name

    return get_by_name(command).handler


class KeyHost(CommandHost, Protocol):
    """What the key actions use of the interactive app."""

    @property
    def is_open(self) -> bool:
        """The runtime is open (``session`` can be used)."""
        ...

    @property
    def live(self) -> LiveView: ...
    @property
    def jobs(self) -> Jobs: ...
    @property
    def input(self) -> InputLine: ...
    def invalidate(self) -> None: ...
    def copy_pane_selection(self) -> bool:
        """Copy the fullscreen pane's selection when ``fullscreenCopyOnSelect`` is off."""
        ...


class KeyActions:
    """The input line's key bindings and the actions behind them."""

    def __init__(self, app: KeyHost) -> None:
        self.app = app
        self._ctrl_c_at = 0.0
        self._escape_at = 0.0
        self.bindings = self.build()

    def build(self) -> KeyBindings:
        """The bindings from the app's keymap and the plugins' shortcuts (rebuilt when
        either changes: a new session, ``/reload``)."""
        app = self.app
        kb = KeyBindings()
        handlers: dict[str, Callable[[KeyPressEvent], None]] = {
            "tui.input.submit": self._submit,
            "tui.input.newLine": lambda event: event.current_buffer.insert_text("\n"),
            "app.message.followUp": self._follow_up,
            "app.message.dequeue": self._dequeue,
            "app.interrupt": self._escape,
            "app.clear": self._ctrl_c,
            "app.exit": self._ctrl_d,
            "app.suspend": self._suspend,
            "app.thinking.cycle": lambda event: app.jobs.spawn(self.cycle_thinking()),
            "app.model.cycleForward": lambda event: app.jobs.spawn(self.cycle_model(1)),
            "app.model.cycleBackward": lambda event: app.jobs.spawn(self.cycle_model(-1)),
            "app.model.select": lambda event: self.command("model"),
            "app.tools.expand": lambda event: self.toggle_tool_output(),
            "app.thinking.toggle": lambda event: self.toggle_thinking(),
            "app.editor.external": lambda event: app.jobs.spawn(self.edit_externally()),
            "app.message.copy": self._copy,
            "app.clipboard.pasteImage": lambda event: app.jobs.spawn(self.paste_from_clipboard()),
            "app.session.new": lambda event: self.command("new"),
            "app.session.tree": lambda event: self.command("tree"),
            "app.session.fork": lambda event: self.command("fork"),
            "app.session.resume": lambda event: self.command("resume"),
        }
        menu_closed = ~has_completions  # Shift+Tab / Tab move through an open completion menu
        for action, handler in handlers.items():
            for keys in app.keymap.keys(action):
                kb.add(*keys, filter=menu_closed if keys in (("s-tab",), ("tab",)) else True)(handler)
        for command, keys_list in remapped_editor_actions(app.keymap):
            handler = _editing_handler(command)
            for keys in keys_list:
                kb.add(*keys)(handler)
        for shortcut in self.plugin_shortcuts():
            if shortcut.taken_by is None:  # a key of pi's own actions stays pi's
                for keys in shortcut.prompt_keys:
                    kb.add(*keys)(self._plugin_shortcut_handler(shortcut))
        return kb

    # ------------------------------------------------------------------ plugin shortcuts

    def plugin_shortcuts(self) -> list[PluginShortcut]:
        app = self.app
        if not app.is_open:
            return []
        out = []
        for key, registered in app.session.plugins.registry.shortcuts.items():
            shortcut = registered.value
            try:
                prompt_keys = [to_prompt_toolkit(key)]
            except KeyError_:
                continue
            taken_by = app.keymap.owner(prompt_keys[0])
            out.append(
                PluginShortcut(
                    f"plugin:{registered.plugin}:{key}", [key], prompt_keys, shortcut, registered.plugin, taken_by
                )
            )
        return out

    def _plugin_shortcut_handler(self, shortcut: PluginShortcut) -> Callable[[KeyPressEvent], None]:
        app = self.app

        def handler(event: KeyPressEvent) -> None:
            async def run() -> None:
                ctx = app.session.context_host.command_context()
                try:
                    await maybe_await(shortcut.definition.handler(ctx))
                except Exception as exc:
                    app.out.line(
                        f"✖ shortcut {shortcut.keys[0]} of plugin {shortcut.plugin}: {type(exc).__name__}: {exc}", "red"
                    )

            app.jobs.spawn(run())

        return handler

    # ------------------------------------------------------------------ the input line's keys

    def _copy(self, event: KeyPressEvent) -> None:
        """The fullscreen pane's selection (``fullscreenCopyOnSelect`` off), else ``/copy``."""
        if not self.app.copy_pane_selection():
            self.command("copy")

    def command(self, name: str) -> None:
        """A key that runs a built-in command (``/model``, ``/tree`` …)."""
        app = self.app
        builtin = BUILTINS[name]
        if app.jobs.current is not None and not builtin.while_busy:
            app.live.flash(f"/{name} waits for the current work", 2.0)
            app.invalidate()
            return
        app.jobs.spawn(builtin.handler(app, ""))

    def _submit(self, event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        self.app.input.mode = "steer"
        buffer.validate_and_handle()

    def _follow_up(self, event: KeyPressEvent) -> None:
        if self.app.jobs.current is not None:
            self.app.input.mode = "follow_up"
            event.current_buffer.validate_and_handle()
        else:
            event.current_buffer.insert_text("\n")

    def _dequeue(self, event: KeyPressEvent) -> None:
        app = self.app
        if not app.is_open:
            return
        steering, follow_up = app.session.clear_queue()
        queued = [*steering, *follow_up]
        if not queued:
            app.live.flash("No queued messages", 1.5)
            app.invalidate()
            return
        buffer = event.current_buffer
        text = "\n\n".join([*queued, buffer.text] if buffer.text.strip() else queued)
        buffer.text = text
        buffer.cursor_position = len(text)
        app.live.steering, app.live.follow_up = [], []
        app.live.flash(f"{len(queued)} queued message(s) back in the input line", 2.0)
        app.invalidate()

    def _escape(self, event: KeyPressEvent) -> None:
        app = self.app
        if app.jobs.current is not None:
            app.jobs.abort()
            return
        if event.current_buffer.text:
            return
        now = time.monotonic()
        if now - self._escape_at < DOUBLE_ESCAPE_SECONDS:
            self._escape_at = 0.0
            action = app.session.settings.get("doubleEscapeAction") if app.is_open else None
            action = action if action in ("tree", "fork", "none") else "tree"
            if action != "none":
                self.command(action)
        else:
            self._escape_at = now

    def _ctrl_c(self, event: KeyPressEvent) -> None:
        app = self.app
        buffer = event.current_buffer
        if app.jobs.current is not None:
            app.jobs.abort()
        elif buffer.text:
            buffer.reset()
            app.input.images.clear()
            self._ctrl_c_at = 0.0
        elif time.monotonic() - self._ctrl_c_at < DOUBLE_CTRL_C_SECONDS:
            app.request_exit()
        else:
            self._ctrl_c_at = time.monotonic()
            app.live.flash("Press Ctrl+C again to exit", DOUBLE_CTRL_C_SECONDS)
            app.invalidate()

    def _suspend(self, event: KeyPressEvent) -> None:
        if hasattr(signal, "SIGTSTP"):
            event.app.suspend_to_background()
        else:
            self.app.live.flash("Suspending is not supported on this platform", 2.0)

    def _ctrl_d(self, event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.delete()
        else:
            self.app.request_exit()

    # ------------------------------------------------------------------ models, thinking, tool output

    async def cycle_model(self, step: int) -> None:
        app = self.app
        session = app.session
        scoped = app.scoped_models
        candidates = scoped or [(m, None) for m in session.models.available(session.model)]
        if len(candidates) < 2:
            app.live.flash(
                "Only one model to cycle through (/scoped-models)" if candidates else "No model available", 2.0
            )
            app.invalidate()
            return
        refs = [m.ref for m, _ in candidates]
        current = session.model.ref if session.model is not None else None
        index = refs.index(current) if current in refs else (-1 if step > 0 else 0)
        model, level = candidates[(index + step) % len(candidates)]
        if not await session.set_model(model, source="cycle", thinking_level=level):
            app.out.line(f"✖ No API key for provider {model.provider!r}", "red")
            return
        app.out.line(
            f"Model: {model.ref} (thinking {session.thinking_level})" + ("" if scoped else " · all models"), "green"
        )

    async def cycle_thinking(self) -> None:
        app = self.app
        session = app.session
        levels = supported_thinking_levels(session.model) if session.model is not None else ["off"]
        if len(levels) < 2:
            app.live.flash(
                f"{session.model.ref if session.model else 'This model'} has no thinking levels to cycle", 2.0
            )
            app.invalidate()
            return
        current = session.thinking_level
        index = levels.index(current) if current in levels else -1
        await session.set_thinking_level(levels[(index + 1) % len(levels)])

    def toggle_tool_output(self) -> None:
        expanded = self.app.renderer.toggle_expanded()
        self.app.out.line(
            "Tool output: in full (Ctrl+O collapses)" if expanded else "Tool output: previews (Ctrl+O expands)", "dim"
        )

    def toggle_thinking(self) -> None:
        """Ctrl+T: as pi 1.6.0, saved as ``hideThinkingBlock`` in the user settings."""
        app = self.app
        hidden = app.renderer.toggle_thinking()
        app.out.line(f"Thinking blocks: {'hidden' if hidden else 'visible'}", "dim")
        if not app.is_open:
            return
        try:
            write_setting(app.session.cwd, "user", "hideThinkingBlock", hidden)
            refresh_settings(app.session.settings)
        except (SettingsError, OSError) as exc:
            app.out.line(f"✖ hideThinkingBlock not saved: {exc}", "red")

    # ------------------------------------------------------------------ the draft: editor, clipboard

    async def edit_externally(self) -> None:
        """Ctrl+G: the draft in the external editor; what it saves becomes the draft."""
        app = self.app
        setting = app.session.settings.get("externalEditor") if app.is_open else None
        command = external_editor_command(setting)
        if command is None:
            app.live.flash("No external editor: set externalEditor in /settings, or $VISUAL / $EDITOR", 3.0)
            app.invalidate()
            return
        draft = app.input.get_draft()
        with tempfile.NamedTemporaryFile(
            "w", suffix=".md", prefix="pi-draft-", delete=False, encoding="utf-8"
        ) as handle:
            handle.write(draft)
            path = handle.name
        try:
            code = await app.dialogs.exclusive(lambda: asyncio.to_thread(run_editor, command, path))
            if code != 0:
                app.out.line(f"✖ {command} exited with code {code}: the draft is unchanged", "red")
                return
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            app.input.set_draft(text[:-1] if text.endswith("\n") and not draft.endswith("\n") else text)
        except OSError as exc:
            app.out.line(f"✖ Cannot run the external editor {command!r}: {exc.strerror or exc}", "red")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    async def paste_from_clipboard(self) -> None:
        """Ctrl+V: an image on the clipboard is attached to the next message (``[image N]``
        marks it in the draft); else the clipboard's text is inserted."""
        line = self.app.input
        clip = await asyncio.to_thread(read_clipboard)
        if clip.image is not None:
            data, mime = clip.image
            line.images.append(ImageContent(data=base64.b64encode(data).decode(), mime_type=mime))
            line.insert(f"[image {len(line.images)}]")
        elif clip.text:
            line.insert(clip.text)
        else:
            self.app.live.flash(clip.problem or "The clipboard is empty", 3.0)
            self.app.invalidate()
