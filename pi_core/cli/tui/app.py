"""The interactive loop: read a line, dispatch it, repeat.

The input line stays on screen while pi works, so a message typed during a run
becomes steering (Enter) or a follow-up (Alt+Enter). Runs, user shell commands,
plugin commands and ``/compact`` run as a background *job* (one at a time; Ctrl+C or
Esc aborts it); the other built-in commands run in line, with the input line hidden.

:class:`InteractiveApp` holds the session and dispatches what is submitted; its
collaborators are the input line (:mod:`.input_line`), the key actions
(:mod:`.bindings`) and the jobs (:mod:`.jobs`); :mod:`.startup` picks the session
to open and prints the header.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from prompt_toolkit.key_binding import KeyBindings, KeyBindingsBase, merge_key_bindings
from prompt_toolkit.output import ColorDepth, create_output
from rich.text import Text

from pi_hookspecs import AbortController

from ...runtime import AgentSession, SessionRuntime
from ...runtime.events import NoticeEvent
from ...session.persistence import SessionFileEvent
from ..bootstrap import CliError, diagnostics_of, initial_input, open_runtime, start_runtime
from ..process import install_stop_signals, run_main, signal_status
from .base import JobKind, replay
from .bindings import KeyActions, PluginShortcut
from .commands import BUILTINS, builtin_argument_values, builtin_infos
from .completion import CommandInfo, PiCompleter, plugin_argument_values
from .dialogs import Dialogs, TerminalUI, trust_asker
from .fullscreen import TranscriptPane, pane_bindings
from .input_line import InputLine, Mode
from .jobs import Jobs
from .keys import install_sequences, load_keymap
from .output import StreamToTranscript, Transcript, plain, terminal_width
from .render import EventRenderer, LiveView
from .startup import check_session_cwd, pick_startup_session, print_header
from .system import copy_to_clipboard
from .theme import load_theme, set_cli_themes


class InteractiveApp:
    """Interactive mode: the session, what the terminal takes from its settings, and
    the dispatch of each submitted line (the :class:`~.base.CommandHost` of the
    built-in commands)."""

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
        self.ui.component_context = lambda: (getattr(self, "theme", None), getattr(self, "keymap", None))
        self._runtime: SessionRuntime | None = None
        self.renderer = EventRenderer(self.out, self.live, lambda: self.session, self.invalidate)
        self.jobs = Jobs(
            self.out, self.live, self.renderer, lambda: self.session if self.is_open else None, self.invalidate
        )
        self.exiting = False
        self._entries_at_open = 0
        """Entries the session had when it opened (the header names them)."""
        self._started = False
        self._scoped_refs: list[str] | None = None
        self.theme_problems: list[str] = []
        chosen, self.cli_problems = set_cli_themes(
            list(getattr(args, "theme", None) or []), bool(getattr(args, "no_themes", False)), os.getcwd()
        )
        self.theme_choice: str | None = getattr(args, "use_theme", None) or chosen
        """The theme of this run (``--use-theme``), until ``/settings`` picks another."""
        self.theme = load_theme(self.theme_choice, None, os.getcwd(), self.theme_problems)
        self.out.set_theme(self.theme)
        install_sequences()
        self.keymap = load_keymap()
        self.renderer.expand_key = self.keymap.first_key("app.tools.expand")
        self._keymap_shown: tuple[str, tuple[str, ...]] | None = None
        """The ``keybindings.json`` text and problems last shown (each change once)."""
        self.keys = KeyActions(self)
        completer = PiCompleter(
            self.command_infos, self.argument_values, lambda: self.session.cwd if self.is_open else os.getcwd()
        )
        self.input = InputLine(
            self.output,
            self.live,
            completer,
            self._key_bindings,
            style=self.theme.prompt_style(),
            busy=lambda: self.jobs.current is not None,
        )

        self.pane: TranscriptPane | None = None
        """Fullscreen mode's transcript pane (``None``: regular mode)."""
        self._pane_keys: KeyBindings | None = None
        self._merged: tuple[Any, Any, KeyBindingsBase] | None = None

    def _key_bindings(self) -> KeyBindingsBase:
        """The input line's keys; in fullscreen mode the ``tui.altScreen.*`` keys after them
        (they win on a key both have)."""
        if self._pane_keys is None:
            return self.keys.bindings
        if self._merged is None or self._merged[:2] != (self.keys.bindings, self._pane_keys):
            merged = merge_key_bindings([self.keys.bindings, self._pane_keys])
            self._merged = (self.keys.bindings, self._pane_keys, merged)
        return self._merged[2]

    # ------------------------------------------------------------------ state

    @property
    def runtime(self) -> SessionRuntime:
        """The open runtime (from the start of :meth:`run` on)."""
        if self._runtime is None:
            raise RuntimeError("the interactive runtime is not open yet")
        return self._runtime

    @property
    def is_open(self) -> bool:
        """The runtime is open (:attr:`session` can be used)."""
        return self._runtime is not None

    @property
    def session(self) -> AgentSession:
        return self.runtime.session

    def set_draft(self, text: str) -> None:
        self.input.set_draft(text)

    def get_draft(self) -> str:
        return self.input.get_draft()

    def invalidate(self) -> None:
        self.input.invalidate()

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
        self.jobs.start(coroutine, kind=kind, status=status, abort=abort)

    # ------------------------------------------------------------------ settings, keys, models

    def settings_changed(self, key: str | None = None) -> None:
        """Re-read what the terminal takes from the settings (after ``/settings``,
        ``/reload``, a new session). A ``theme`` chosen in ``/settings`` wins over
        ``--use-theme``. Problems (a theme that cannot be read) are printed once started."""
        if self._runtime is None:
            return
        if key == "theme":
            self.theme_choice = None
        settings = self.session.settings
        prompt = self.input.prompt
        self.renderer.configure(settings)
        visible = settings.get("autocompleteMaxVisible")
        prompt.reserve_space_for_menu = visible if isinstance(visible, int) and 3 <= visible <= 20 else 5
        padding = settings.get("editorPaddingX")
        self.input.padding = padding if isinstance(padding, int) and 0 <= padding <= 3 else 0
        true_color, _ = settings.lookup("terminal", "trueColor")
        self.out.set_true_color(true_color if isinstance(true_color, bool) else None)
        prompt.color_depth = (
            None
            if not isinstance(true_color, bool)
            else ColorDepth.TRUE_COLOR
            if true_color
            else ColorDepth.DEPTH_8_BIT
        )
        self.theme = load_theme(
            self.theme_choice or settings.get("theme"), settings, self.session.cwd, self.theme_problems
        )
        self.configure_pane()
        self.apply_theme()
        if self._started:
            for problem in self.theme_problems:
                self.out.line(problem, "yellow")
            self.theme_problems.clear()

    def apply_theme(self) -> None:
        self.out.set_theme(self.theme)
        self.input.prompt.style = self.theme.prompt_style()
        self.dialogs.style = self.theme.dialog_style()
        self.invalidate()

    def reload_keys(self) -> None:
        """``keybindings.json`` and the plugins' shortcuts again (new session, ``/reload``)."""
        self.keymap = load_keymap()
        self.renderer.expand_key = self.keymap.first_key("app.tools.expand")
        self.keys.bindings = self.keys.build()
        if self.pane is not None:
            self._pane_keys = pane_bindings(self.pane, self.keymap)
        if self._started:
            for problem in self._new_keymap_problems():
                self.out.line(problem, "yellow")

    def _new_keymap_problems(self) -> list[str]:
        """The keymap's problems unless they were shown for the same ``keybindings.json``
        (``/new``, ``/fork``, ``/reload`` … re-read it: a problem is said once per change)."""
        seen = (self.keymap.text, tuple(self.keymap.problems))
        if seen == self._keymap_shown:
            return []
        self._keymap_shown = seen
        return list(self.keymap.problems)

    def tui_mode(self) -> str:
        """``fullscreen`` or ``regular``: ``--tui-mode``, else the ``tuiMode`` setting, else
        regular (where the terminal keeps the scrollback)."""
        mode = getattr(self.args, "tui_mode", None) or self.session.settings.get("tuiMode")
        return "fullscreen" if mode == "fullscreen" else "regular"

    def enter_fullscreen(self) -> None:
        """The transcript in a pane pi scrolls, on the alternate screen (until pi exits)."""
        pane = TranscriptPane()
        pane.on_change = self.invalidate
        pane.copy = self._copy_selection
        self.pane = pane
        self.out.pane = pane
        self.configure_pane()
        pane.default_width = lambda: terminal_width() - self.out.margin
        self.input.enable_fullscreen(pane)
        self._pane_keys = pane_bindings(pane, self.keymap)

    def configure_pane(self) -> None:
        """What the fullscreen pane takes from the settings: ``fullscreenScrollbar``,
        ``fullscreenCopyOnSelect``, ``fullscreenWheelScrollLines``."""
        pane = self.pane
        if pane is None or not self.is_open:
            return
        settings = self.session.settings
        scrollbar = settings.get("fullscreenScrollbar")
        pane.scrollbar = scrollbar if scrollbar in ("auto", "always", "hidden") else "auto"
        self.out.margin = 0 if pane.scrollbar == "hidden" else 1
        pane.copy_on_select = settings.get("fullscreenCopyOnSelect") is not False
        pane.wheel.set_lines(settings.get("fullscreenWheelScrollLines"))

    def _copy_selection(self, text: str) -> None:
        """Text selected in the fullscreen pane to the clipboard (a clipboard tool, else
        OSC 52 through the terminal); "Copied!" flashes."""

        async def copy() -> None:
            how = await asyncio.to_thread(copy_to_clipboard, text, self.out.write)
            self.live.flash("Copied!" if how else "Copy failed", 2.0)
            self.invalidate()

        self.jobs.spawn(copy())

    def copy_pane_selection(self) -> bool:
        """``app.message.copy`` in fullscreen mode with ``fullscreenCopyOnSelect`` off:
        copy the selection (``False``: nothing selected, the key copies the last answer)."""
        pane = self.pane
        if pane is None or pane.copy_on_select:
            return False
        text = pane.selected_text()
        if not text:
            return False
        self._copy_selection(text)
        return True

    def leave_fullscreen(self) -> None:
        """Back to the normal screen: the transcript printed there (``fullscreenExitOutput``
        ``"transcript"``, the default) or nothing but the resume hint (``"resume-hint"``)."""
        pane = self.pane
        if pane is None:
            return
        self.pane = None
        self.out.pane = None
        self.out.margin = 0
        self.input.leave_fullscreen(pane.release_images())
        exit_output = self.session.settings.get("fullscreenExitOutput") if self.is_open else None
        if exit_output != "resume-hint":
            self.out.write(pane.all_text())

    def plugin_shortcuts(self) -> list[PluginShortcut]:
        return self.keys.plugin_shortcuts()

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

    def _ui_changed(self) -> None:
        """A plugin changed what ``ctx.ui`` shows around the input line."""
        self.live.statuses = self.ui.statuses
        self.live.widgets = self.ui.widgets
        self.live.widgets_below = self.ui.widgets_below
        self.live.footer = self.ui.footer
        self.live.working_message = self.ui.working_message
        shown = bool(self.ui.widgets_below or self.ui.footer)
        self.input.prompt.bottom_toolbar = self.input.below if shown else None
        self.invalidate()

    # ------------------------------------------------------------------ the loop

    async def read_loop(self) -> None:
        while not self.exiting:
            try:
                line = await self.input.read()
            except EOFError:
                self.request_exit()
                break
            if line is not None:
                await self.submit(*line)

    def request_exit(self) -> None:
        self.exiting = True
        self.input.stop()

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
                if self.jobs.current is not None and not builtin.while_busy:
                    self.out.line(f"/{name} waits for the current work: let it finish or press Ctrl+C", "yellow")
                    return
                if builtin.job:
                    self.start_job(builtin.handler(self, args), kind="command", status=f"/{name}")
                else:
                    await self.jobs.run_inline(builtin.handler(self, args))
                return
        await self._prompt(text.strip("\n"), mode)

    async def _prompt(self, text: str, mode: Mode) -> None:
        session = self.session
        await self._await_prompt_job()
        if self.jobs.current is not None:
            if not session.is_busy:
                self.out.line("pi is busy with a command: wait for it or press Ctrl+C", "yellow")
                self.input.draft = text
                return
            label = "steering" if mode == "steer" else "follow-up"
            self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold"), (f"  ({label}, queued)", "dim")))
            self.renderer.echoed.append(text)
            try:
                await session.prompt(text, source="interactive", streaming_behavior=mode)
            except Exception as exc:
                self.jobs.report(exc)
            return
        self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold")))
        self.renderer.echoed.append(text)
        images = self.input.take_images()
        self.start_job(
            session.prompt(text, images=images, source="interactive", streaming_behavior="steer"),
            kind="prompt",
            status="Working",
        )

    async def _await_prompt_job(self) -> None:
        """A run starting or settling, or a plugin command: new input waits until the run
        is under way (then it steers or is stored after the run) or the job is over."""
        while (job := self.jobs.current) is not None and job.kind == "prompt" and not self.session.is_busy:
            await asyncio.wait([job.task], timeout=0.05)

    async def _bash(self, line: str) -> None:
        exclude = line.startswith("!!")
        command = line[2:].strip() if exclude else line[1:].strip()
        if not command:
            self.out.line("Usage: !command (output sent to the model) or !!command (kept out of the context)", "yellow")
            return
        await self._await_prompt_job()
        if self.jobs.current is not None and not self.session.is_busy:
            self.out.line("pi is busy with a command: wait for it or press Ctrl+C", "yellow")
            self.input.draft = line
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
                self.out.print(Text(plain(head)))

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

        if self.jobs.current is not None:  # a run is active: the result is stored after it
            self.session.spawn(self.jobs.guard(run()))
            return
        self.start_job(run(), kind="bash", status=f"$ {command}", abort=controller.abort)

    # ------------------------------------------------------------------ start and end

    async def run(self) -> int:
        self.dialogs.host = self.input
        self.out.bind(asyncio.get_running_loop())
        if self.args.resume and not await pick_startup_session(self.args, self.dialogs, self.out, self.keymap):
            return 0
        if not await check_session_cwd(self.args, self.dialogs):
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
        if self.tui_mode() == "fullscreen":
            self.enter_fullscreen()
        await start_runtime(self.runtime, self.args)
        print_header(
            self.session,
            self.out,
            plugin_header=self.ui.header,
            scoped_models=lambda: self.scoped_models,
            models_option=self.args.models,
            entries_at_open=self._entries_at_open,
        )
        startup_problems = [
            *diagnostics_of(self.runtime),
            *self.cli_problems,
            *self.theme_problems,
            *self._new_keymap_problems(),
        ]
        for line in startup_problems:
            self.out.line(line, "yellow")
        replay(self)
        self.renderer.seen_entries = self.session.sm.get_entry_count()
        self.theme_problems.clear()
        self._started = True
        if initial.prompts:
            self.start_job(self._initial(initial.prompts, initial.images), kind="prompt", status="Working")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self.jobs.on_sigint)
        stop_signals = install_stop_signals(loop, self._on_stop_signal)  # SIGTERM, SIGHUP
        try:
            await self.read_loop()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            stop_signals()
            self.leave_fullscreen()
            await self._shutdown()
        return signal_status(self.stop_signum, 0)

    stop_signum: int | None = None

    def _on_stop_signal(self, signum: int) -> None:
        """SIGTERM or SIGHUP: abort the run (bash commands stopped), then leave as
        /quit does; the exit status is ``128 + signum``."""
        self.stop_signum = signum
        if self.jobs.current is not None:
            self.jobs.abort()
        self.request_exit()

    async def _initial(self, prompts: list[str], images: list[Any]) -> None:
        for index, text in enumerate(prompts):
            self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold")))
            self.renderer.echoed.append(text)
            await self.session.prompt(text, images=images if index == 0 else (), source="interactive")

    def _bind_session(self, session: Any) -> None:
        session.on_shutdown = self.request_exit
        if self._stop_file_events is not None:
            self._stop_file_events()
        self._stop_file_events = session.sm.add_file_listener(self._on_session_file)
        if self._runtime is not None:
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

    async def _shutdown(self) -> None:
        job = self.jobs.current
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
            self.jobs.report(exc)
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
