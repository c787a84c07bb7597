"""What the built-in commands share: the app as they see it (:class:`CommandHost`), the
command table's row (:class:`Builtin`), and printing the end of a session (:func:`replay`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from rich.text import Text

from pi_hookspecs import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    MessageEntry,
    ToolResultMessage,
    UserMessage,
)

from ...runtime import AgentSession, SessionRuntime
from .completion import CommandInfo
from .dialogs import Dialogs
from .output import Transcript
from .render import FILE_TOOLS, call_summary, content_text, one_line, preview

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
    @property
    def renderer(self) -> Any:
        """The :class:`~pi_core.cli.tui.render.EventRenderer` (markdown, plugin renderers)."""
        ...

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
    """Print the end of the active branch (after ``/resume``, ``-c``, ``--session``,
    ``/import``): messages, tool results, summaries, and custom messages and entries
    through the plugins' renderers."""
    renderer = app.renderer
    registry = getattr(app.session.plugins, "registry", None)
    entry_renderers = registry.entry_renderers if registry is not None else {}
    items: list[tuple[Any, Any]] = []
    """``(session entry, what to draw)``."""
    for entry in app.session.sm.get_branch():
        if isinstance(entry, MessageEntry) and getattr(entry.message, "role", "") != "system":
            items.append((entry, entry.message))
        elif isinstance(entry, CustomMessageEntry) and entry.display:
            message = CustomMessage(
                custom_type=entry.custom_type, content=entry.content, display=True, details=entry.details
            )
            items.append((entry, message))
        elif isinstance(entry, CustomEntry) and entry.custom_type in entry_renderers:
            items.append((entry, entry))
        elif isinstance(entry, CompactionEntry | BranchSummaryEntry):
            items.append((entry, entry))
    if not items:
        return
    if len(items) > limit:
        app.out.line(f"… {len(items) - limit} earlier entries", "dim")
    for entry, item in items[-limit:]:
        if isinstance(item, UserMessage):
            text = content_text(item.content, images=False)
            lines, more = preview(renderer.transform_markdown(text, "user", entry=entry), 3)
            app.out.print(Text("› " + "\n".join(lines) + (f" … (+{more} lines)" if more else ""), style="bold"))
            renderer.draw_images(item.content, indent=1)
        elif isinstance(item, AssistantMessage):
            text = renderer.transform_markdown(item.text(), "assistant", entry=entry).strip()
            if text:
                renderer.block(renderer.markdown(text))
            for call in item.tool_calls():
                if not renderer.plugin_tool_render(
                    call.name, "render_call", call.arguments, {"expanded": renderer.expanded}
                ):
                    renderer.block(Text(f"⚙ {call.name} {call_summary(call.name, call.arguments)}", style="cyan"))
                    body = renderer.call_body(call.name, call.arguments)
                    if body is not None:
                        renderer.block(body)
            if item.stop_reason == "aborted":
                renderer.block(Text("⏹ Aborted", style="yellow"))
        elif isinstance(item, ToolResultMessage):
            options = {"expanded": renderer.expanded, "is_error": item.is_error}
            if renderer.plugin_tool_render(item.tool_name, "render_result", item, options):
                continue
            text = content_text(item.content)
            if item.tool_name in FILE_TOOLS:
                result = renderer.result_body(item.tool_name, text, item.details, item.is_error)
                if result is not None:
                    renderer.block(result)
                continue
            lines, more = preview(content_text(item.content, images=False), 2)
            body = "\n".join("    " + line for line in lines or ["(no output)"]) + (
                f"\n    … ({more} more lines)" if more else ""
            )
            renderer.block(Text(body, style="red" if item.is_error else "dim"))
            renderer.draw_images(item.content, indent=4)
        elif isinstance(item, BashExecutionMessage):
            app.out.print(Text(f"$ {item.command}", style="bold"))
        elif isinstance(item, CustomMessage):
            renderer.draw_custom_message(item, entry)
        elif isinstance(item, CustomEntry):
            renderer.render_entry(item, entry_renderers)
        elif isinstance(item, CompactionEntry | BranchSummaryEntry):
            kind = "compaction" if isinstance(item, CompactionEntry) else "branch summary"
            summary = renderer.transform_markdown(item.summary, "summary", entry=entry)
            app.out.line(f"({kind}) {one_line(summary, 100)}", "dim")
    app.out.line("─" * 20, "dim")
