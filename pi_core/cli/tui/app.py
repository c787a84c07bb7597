"""The interactive loop: read a line, dispatch it, repeat.

The input line stays on screen while pi works, so a message typed during a run
becomes steering (Enter) or a follow-up (Alt+Enter). Runs, user shell commands,
plugin commands and ``/compact`` run as a background *job* (one at a time; Ctrl+C or
Esc aborts it); the other built-in commands run in line, with the input line hidden.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import create_output
from prompt_toolkit.styles import Style
from rich.text import Text

from pi_hookspecs import AbortController

from ... import __version__
from ..._paths import agent_dir
from ...runtime import AgentSession, NoModelError, SessionBusyError, SessionRuntime
from ...session import SessionManager
from ..bootstrap import CliError, diagnostics_of, initial_input, open_runtime, start_runtime
from .commands import BUILTINS, JobKind, ago, builtin_argument_values, builtin_infos, replay
from .completion import CommandInfo, PiCompleter, plugin_argument_values, wants_completion_while_typing
from .dialogs import Dialogs, Option, TerminalUI, trust_asker
from .output import StreamToTranscript, Transcript, plain, terminal_width
from .render import EventRenderer, LiveView

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


class InteractiveApp:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stdout = sys.stdout
        self.stderr = sys.stderr
        self.output = create_output(stdout=sys.stdout)
        self.out = Transcript(sys.stdout)
        self.dialogs = Dialogs(self.out, self.output)
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
        self.prompt: PromptSession[str] = self._make_prompt()

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
        self.draft = text

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
        self.invalidate()

    # ------------------------------------------------------------------ the prompt

    def _history(self) -> History:
        try:
            directory = agent_dir()
            directory.mkdir(parents=True, exist_ok=True)
            return FileHistory(str(directory / HISTORY_FILE))
        except OSError:
            return InMemoryHistory()

    def _message(self) -> StyleAndTextTuples:
        fragments = self.live.fragments(terminal_width())
        return [*fragments, ("class:prompt", "› ")]

    def _make_prompt(self) -> PromptSession[str]:
        completer = PiCompleter(self.command_infos, self.argument_values, lambda: self.session.cwd if self._runtime else os.getcwd())
        return PromptSession(
            self._message,
            multiline=True,
            key_bindings=self._bindings(),
            history=self._history(),
            completer=completer,
            complete_while_typing=Condition(lambda: wants_completion_while_typing(self.prompt.default_buffer.text)),
            reserve_space_for_menu=6,
            style=PROMPT_STYLE,
            erase_when_done=True,
            output=self.output,
            prompt_continuation=lambda width, line, wrap: [("class:dim", "  ")],
            enable_history_search=False,
        )

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()
        busy = Condition(lambda: self.job is not None)

        @kb.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
                return
            self._mode = "steer"
            buffer.validate_and_handle()

        @kb.add("escape", "enter")
        def _alt_enter(event: KeyPressEvent) -> None:
            if self.job is not None:
                self._mode = "follow_up"
                event.current_buffer.validate_and_handle()
            else:
                event.current_buffer.insert_text("\n")

        @kb.add("c-j")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("escape", filter=busy)
        def _escape(event: KeyPressEvent) -> None:
            self.abort_job()

        @kb.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if self.job is not None:
                self.abort_job()
            elif buffer.text:
                buffer.reset()
                self._ctrl_c_at = 0.0
            elif time.monotonic() - self._ctrl_c_at < DOUBLE_CTRL_C_SECONDS:
                self.request_exit()
            else:
                self._ctrl_c_at = time.monotonic()
                self.live.flash("Press Ctrl+C again to exit", DOUBLE_CTRL_C_SECONDS)
                self.invalidate()

        return kb

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
        self.start_job(session.prompt(text, source="interactive", streaming_behavior="steer"), kind="prompt", status="Working")

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
        self._bind_session(self.session)
        self._header()
        for line in diagnostics_of(self.runtime):
            self.out.line(line, "yellow")
        await start_runtime(self.runtime, self.args)
        replay(self)
        if initial.prompts:
            self.start_job(self._initial(initial.prompts, initial.images), kind="prompt", status="Working")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        try:
            await self.read_loop()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            await self._shutdown()
        return 0

    async def _initial(self, prompts: list[str], images: list[Any]) -> None:
        for index, text in enumerate(prompts):
            self.out.print(Text.assemble(("› ", "bold cyan"), (text, "bold")))
            self.renderer.echoed.append(text)
            await self.session.prompt(text, images=images if index == 0 else (), source="interactive")

    async def _pick_startup_session(self) -> bool:
        infos = SessionManager.list(os.getcwd(), self.args.session_dir)
        if not infos:
            self.out.line("No saved sessions in this folder: starting a new one", "yellow")
            self.args.resume = False
            return True
        options = [
            Option(i.path, i.name or plain(i.first_message or "(no messages)")[:70], f"{ago(i.modified)} · {i.message_count} msgs")
            for i in infos
        ]
        path = await self.dialogs.choose("Resume which session?", options, filterable=len(options) > 6)
        if path is None:
            return False
        self.args.session, self.args.resume = path, False
        return True

    def _bind_session(self, session: Any) -> None:
        session.on_shutdown = self.request_exit

    def _header(self) -> None:
        session = self.session
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
        sm = session.sm
        if sm.get_entry_count():
            name = sm.get_session_name() or sm.get_session_id()
            self.out.line(f"Session {name}: {sm.get_entry_count()} entries", "dim")
        if session.model is not None and session.model.api == "faux":
            self.out.line("Offline demo model: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or /model) for real answers", "yellow")
        self.out.line("/help commands · !cmd shell · Enter send · Ctrl+J new line · Ctrl+D exit", "dim")

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

    return asyncio.run(main())
