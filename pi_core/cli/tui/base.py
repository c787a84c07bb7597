"""What the built-in commands share: the app as they see it (:class:`CommandHost`), the
command table's row (:class:`Builtin`), and printing the end of a session (:func:`replay`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from rich.markdown import Markdown
from rich.text import Text

from pi_hookspecs import AssistantMessage, BashExecutionMessage, CustomMessage, UserMessage

from ...runtime import AgentSession, SessionRuntime
from .completion import CommandInfo
from .dialogs import Dialogs
from .output import Transcript
from .render import compact_args, content_text, one_line, preview

JobKind = Literal["prompt", "bash", "command"]


class CommandHost(Protocol):
    """What the built-in commands use of the interactive app."""

    @property
    def out(self) -> Transcript: ...
    @property
    def dialogs(self) -> Dialogs: ...
    @property
    def runtime(self) -> SessionRuntime: ...
    @property
    def session(self) -> AgentSession: ...

    @property
    def keymap(self) -> Any: ...
    def plugin_shortcuts(self) -> list[Any]: ...
    def set_scoped_models(self, refs: list[str]) -> None: ...
    def set_draft(self, text: str) -> None: ...
    def get_draft(self) -> str: ...
    def settings_changed(self, key: str | None = None) -> None:
        """Settings files changed (``/settings``, ``/scoped-models``): re-read what the
        terminal uses (theme, thinking blocks, scoped models)."""
        ...

    @property
    def scoped_models(self) -> list[tuple[Any, str | None]]:
        """The models Ctrl+P cycles through (``--models`` or ``enabledModels``), with
        their optional thinking level; empty: every available model."""
        ...
    def request_exit(self) -> None: ...
    def command_infos(self) -> list[CommandInfo]: ...
    def start_job(
        self,
        coroutine: Coroutine[Any, Any, Any],
        *,
        kind: JobKind,
        status: str | None = None,
        abort: Callable[[], None] | None = None,
    ) -> None: ...


Handler = Callable[[CommandHost, str], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Builtin:
    name: str
    description: str
    handler: Handler
    while_busy: bool = False
    """Usable while a run is active (the others wait for it to finish)."""
    job: bool = False
    """Runs in the background with the spinner (Ctrl+C cancels) instead of in line."""
    argument_hint: str = ""



def ago(moment: datetime) -> str:
    seconds = (datetime.now(UTC) - moment).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"



# --------------------------------------------------------------------------- replay


def replay(app: CommandHost, limit: int = 20) -> None:
    """Print the end of the active branch (after ``/resume``, ``-c``, ``--session``)."""
    messages = [m for m in app.session.messages if getattr(m, "role", "") != "system"]
    if not messages:
        return
    if len(messages) > limit:
        app.out.line(f"… {len(messages) - limit} earlier messages", "dim")
    for message in messages[-limit:]:
        if isinstance(message, UserMessage):
            lines, more = preview(content_text(message.content), 3)
            app.out.print(Text("› " + "\n".join(lines) + (f" … (+{more} lines)" if more else ""), style="bold"))
        elif isinstance(message, AssistantMessage):
            text = message.text().strip()
            if text:
                app.out.print(Markdown(text))
            for call in message.tool_calls():
                app.out.print(Text(f"⚙ {call.name} {compact_args(call.arguments)}", style="cyan"))
        elif isinstance(message, BashExecutionMessage):
            app.out.print(Text(f"$ {message.command}", style="bold"))
        elif isinstance(message, CustomMessage) and message.display:
            app.out.print(Text(f"[{message.custom_type}] {one_line(content_text(message.content), 100)}", style="magenta"))
        elif getattr(message, "role", "") in ("compactionSummary", "branchSummary"):
            app.out.line(f"({message.role}) {one_line(getattr(message, 'summary', ''), 100)}", "dim")
    app.out.line("─" * 20, "dim")
