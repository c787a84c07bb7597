"""Session events as transcript lines, plus the live area drawn above the input line.

Finished things are printed once, in order: the assistant's text rendered as markdown
(thinking dimmed), each tool call with its arguments, each result as a short preview
(errors in red), a usage line when a run settles, notices and plugin errors. Things in
progress (the text streaming in, running tools, the spinner) live in :class:`LiveView`
and are redrawn with the prompt until they finish.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit.formatted_text import StyleAndTextTuples
from rich.markdown import Markdown
from rich.text import Text

from pi_hookspecs import (
    AgentSettledEvent,
    AgentStartEvent,
    AssistantMessage,
    CustomMessage,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    SessionInfoChangedEvent,
    TextContent,
    ThinkingContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    Usage,
    UserMessage,
)

from ...compaction import estimate_context_tokens
from ...runtime import AgentSession
from ...runtime.events import (
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ExtensionErrorEvent,
    NoticeEvent,
    QueueUpdateEvent,
    ThinkingLevelChangedEvent,
)
from .output import Transcript, plain

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
LIVE_TEXT_LINES = 6
PREVIEW_LINES = 8


# --------------------------------------------------------------------------- formatting


def human_tokens(count: float) -> str:
    if count < 1000:
        return str(int(count))
    if count < 1_000_000:
        return f"{count / 1000:.1f}".removesuffix(".0") + "k"
    return f"{count / 1_000_000:.1f}".removesuffix(".0") + "M"


def one_line(text: str, limit: int) -> str:
    flat = " ⏎ ".join(part for part in plain(text).splitlines()) if "\n" in text else plain(text)
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)] + "…"


_MAIN_ARGS = ("command", "path", "file_path", "pattern", "query", "url", "name")


def compact_args(args: dict[str, Any], limit: int = 160) -> str:
    """``ls -la`` for ``{"command": "ls -la"}``; ``src/a.py offset=10`` for read; else
    ``key=value`` pairs, shortened to ``limit`` characters."""
    parts: list[str] = []
    rest = dict(args or {})
    for key in _MAIN_ARGS:
        value = rest.get(key)
        if isinstance(value, str):
            parts.append(value)
            del rest[key]
            break
    for key, value in rest.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if isinstance(shown, str) and len(shown) > 40:
            shown = shown[:39] + "…"
        parts.append(f"{key}={shown}")
    return one_line(" ".join(parts), limit)


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if isinstance(block, TextContent):
            out.append(block.text)
        elif isinstance(block, ImageContent):
            out.append(f"[image {block.mime_type}]")
    return "\n".join(out)


def preview(text: str, max_lines: int = PREVIEW_LINES, width: int = 200) -> tuple[list[str], int]:
    """The first ``max_lines`` non-trailing lines of ``text`` (each cut to ``width``)
    and how many lines were left out."""
    lines = plain(text).rstrip("\n").splitlines()
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:max_lines]]
    return shown, max(0, len(lines) - max_lines)


@dataclass
class RunTotals:
    """Usage of the assistant messages since the run started."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def add(self, usage: Usage) -> None:
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost.total


def usage_line(totals: RunTotals, *, model: str, context: tuple[int, int] | None) -> str:
    parts = [f"↑{human_tokens(totals.input)} ↓{human_tokens(totals.output)}"]
    if totals.cache_read or totals.cache_write:
        parts[0] += f" R{human_tokens(totals.cache_read)} W{human_tokens(totals.cache_write)}"
    parts.append(f"${totals.cost:.4f}")
    if context is not None:
        used, window = context
        percent = f" ({used / window * 100:.0f}%)" if window else ""
        parts.append(f"ctx {human_tokens(used)}/{human_tokens(window)}{percent}")
    parts.append(model)
    parts.append(f"{time.monotonic() - totals.started:.1f}s")
    return " · ".join(parts)


def context_usage(session: AgentSession) -> tuple[int, int] | None:
    model = session.model
    if model is None:
        return None
    try:
        tokens = estimate_context_tokens(list(session.sm.build_session_context().messages)).tokens
    except Exception:
        return None
    return tokens, model.context_window


# --------------------------------------------------------------------------- live area


@dataclass
class RunningTool:
    name: str
    args: str
    tail: str = ""
    nested: bool = False


@dataclass
class LiveView:
    """What is in progress; drawn above the input line on every refresh."""

    status: str | None = None
    status_since: float = 0.0
    text: str = ""
    thinking: str = ""
    tools: dict[str, RunningTool] = field(default_factory=dict)
    steering: list[str] = field(default_factory=list)
    follow_up: list[str] = field(default_factory=list)
    hint: str | None = None
    hint_until: float = 0.0
    statuses: dict[str, str] = field(default_factory=dict)
    widgets: dict[str, list[str]] = field(default_factory=dict)

    def set_status(self, status: str | None) -> None:
        if status != self.status:
            self.status = status
            if status is not None and not self.status_since:
                self.status_since = time.monotonic()
            if status is None:
                self.status_since = 0.0

    def flash(self, hint: str, seconds: float = 2.0) -> None:
        self.hint, self.hint_until = hint, time.monotonic() + seconds

    @property
    def animating(self) -> bool:
        """Whether the area changes by itself (spinner, elapsed time, a hint to expire)."""
        return self.status is not None or (self.hint is not None and time.monotonic() < self.hint_until)

    def fragments(self, width: int) -> StyleAndTextTuples:
        width = max(10, width - 1)
        out: StyleAndTextTuples = []

        def add(style: str, text: str) -> None:
            out.append((style, (text if len(text) <= width else text[: width - 1] + "…") + "\n"))

        for lines in self.widgets.values():
            for line in lines:
                add("", plain(line))
        if self.thinking and not self.text:
            for line in plain(self.thinking).splitlines()[-2:]:
                add("class:thinking", line)
        if self.text:
            for line in plain(self.text).splitlines()[-LIVE_TEXT_LINES:]:
                add("class:live", line)
        for tool in self.tools.values():
            add("class:tool", f"{'  ↳ ' if tool.nested else ''}⚙ {tool.name} {tool.args}")
            for line in plain(tool.tail).rstrip("\n").splitlines()[-3:]:
                add("class:dim", f"    {line}")
        for text in self.steering:
            add("class:dim", f"  ⤷ steering: {one_line(text, width)}")
        for text in self.follow_up:
            add("class:dim", f"  ⤷ follow-up: {one_line(text, width)}")
        now = time.monotonic()
        if self.status is not None:
            frame = SPINNER[int(now * 10) % len(SPINNER)]
            elapsed = f" {now - self.status_since:.0f}s" if self.status_since else ""
            add("class:spinner", f"{frame} {self.status}{elapsed} · Enter steers · Alt+Enter follow-up · Ctrl+C aborts")
        if self.statuses:
            add("class:dim", " · ".join(plain(s) for s in self.statuses.values()))
        if self.hint is not None:
            if now < self.hint_until:
                add("class:hint", self.hint)
            else:
                self.hint = None
        return out


# --------------------------------------------------------------------------- events


class EventRenderer:
    """A runtime listener: turns session events into transcript output and live state."""

    def __init__(self, transcript: Transcript, live: LiveView, session: Callable[[], AgentSession], changed: Callable[[], None]) -> None:
        self.out = transcript
        self.live = live
        self.session = session
        self.changed = changed
        self.totals: RunTotals | None = None
        self.echoed: list[str] = []
        """Texts the user typed and the transcript already shows (not repeated when the
        message reaches the model)."""

    def __call__(self, event: Any) -> None:
        handler = getattr(self, f"on_{event.type}", None)
        if handler is not None:
            handler(event)
            self.changed()

    # ------------------------------------------------------------------ runs

    def on_agent_start(self, event: AgentStartEvent) -> None:
        if self.totals is None:
            self.totals = RunTotals()
        self.live.set_status("Working")

    def on_message_start(self, event: MessageStartEvent) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self.live.text = self.live.thinking = ""
            self.live.set_status("Waiting for the model")
        elif isinstance(message, UserMessage):
            text = content_text(message.content)
            if text in self.echoed:
                self.echoed.remove(text)
                return
            lines, more = preview(text, 3)
            body = "\n".join(lines) + (f"\n… ({more} more lines)" if more else "")
            self.out.print(Text.assemble(("› ", "bold cyan"), (body, "bold")))

    def on_message_update(self, event: MessageUpdateEvent) -> None:
        update = event.assistant_message_event
        kind = getattr(update, "type", None)
        if kind == "text_delta":
            self.live.text += update.delta
            self.live.set_status("Writing")
        elif kind == "thinking_delta":
            self.live.thinking += update.delta
            self.live.set_status("Thinking")
        elif kind == "toolcall_start":
            self.live.set_status(f"Preparing {update.tool_name or 'a tool call'}")

    def on_message_end(self, event: MessageEndEvent) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self.live.text = self.live.thinking = ""
            self.live.set_status("Working")
            if self.totals is not None:
                self.totals.add(message.usage)
            self.print_assistant(message)
        elif isinstance(message, CustomMessage) and message.display:
            lines, more = preview(content_text(message.content), PREVIEW_LINES)
            body = "\n".join(lines) + (f"\n… ({more} more lines)" if more else "")
            self.out.print(Text.assemble((f"[{message.custom_type}] ", "magenta"), (body, "")))

    def print_assistant(self, message: AssistantMessage) -> None:
        for block in message.content:
            if isinstance(block, ThinkingContent) and block.thinking.strip():
                self.out.print(Text(plain(block.thinking.strip()), style="dim italic"))
        text = message.text().strip()
        if text:
            self.out.print(Markdown(text))
        if message.stop_reason == "error":
            self.out.print(Text(f"✖ {message.error_message or 'the model request failed'}", style="red"))
        elif message.stop_reason == "aborted":
            self.out.print(Text("⏹ Aborted", style="yellow"))

    def on_tool_execution_start(self, event: ToolExecutionStartEvent) -> None:
        nested = event.parent_tool_call_id is not None
        args = compact_args(event.args)
        self.live.tools[event.tool_call_id] = RunningTool(event.tool_name, args, nested=nested)
        self.live.set_status(f"Running {event.tool_name}")
        self.out.print(
            Text.assemble(("  ↳ " if nested else "", "dim"), ("⚙ ", "cyan"), (event.tool_name, "bold cyan"), (f" {args}", "cyan"))
        )

    def on_tool_execution_update(self, event: ToolExecutionUpdateEvent) -> None:
        running = self.live.tools.get(event.tool_call_id)
        if running is not None:
            running.tail = content_text(event.partial_result.content)

    def on_tool_execution_end(self, event: ToolExecutionEndEvent) -> None:
        self.live.tools.pop(event.tool_call_id, None)
        indent = "      " if event.parent_tool_call_id else "    "
        text = content_text(event.result.content)
        lines, more = preview(text, PREVIEW_LINES)
        style = "red" if event.is_error else "dim"
        if not lines:
            lines = ["(error)" if event.is_error else "(no output)"]
        body = "\n".join(indent + line for line in lines)
        if more:
            body += f"\n{indent}… ({more} more lines)"
        self.out.print(Text(body, style=style))

    def on_queue_update(self, event: QueueUpdateEvent) -> None:
        self.live.steering = list(event.steering)
        self.live.follow_up = list(event.follow_up)

    def on_agent_settled(self, event: AgentSettledEvent) -> None:
        self.live.set_status(None)
        self.live.text = self.live.thinking = ""
        self.live.tools.clear()
        self.live.steering, self.live.follow_up = [], []
        totals, self.totals = self.totals, None
        if totals is None:
            return
        session = self.session()
        model = session.model.ref if session.model is not None else "no model"
        line = usage_line(totals, model=model, context=context_usage(session))
        if event.aborted:
            line = "aborted · " + line
        self.out.print(Text(line, style="dim"))

    # ------------------------------------------------------------------ session events

    def on_compaction_start(self, event: CompactionStartEvent) -> None:
        self.live.set_status("Compacting the context")

    def on_compaction_end(self, event: CompactionEndEvent) -> None:
        session = self.session()
        self.live.set_status("Working" if session.is_busy else None)
        if event.error_message:
            self.out.print(Text(f"✖ Compaction failed: {event.error_message}", style="red"))
        elif event.aborted:
            self.out.print(Text("Compaction cancelled", style="yellow"))
        elif event.result:
            before = event.result.get("tokensBefore") or 0
            self.out.print(Text(f"✔ Compacted ({event.reason}): {human_tokens(before)} tokens summarised", style="green"))

    def on_auto_retry_start(self, event: AutoRetryStartEvent) -> None:
        self.out.print(
            Text(
                f"↻ Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:.1f}s: {event.error_message}",
                style="yellow",
            )
        )

    def on_auto_retry_end(self, event: AutoRetryEndEvent) -> None:
        if not event.success:
            self.out.print(Text(f"✖ Giving up after {event.attempt} retries: {event.final_error}", style="red"))

    def on_notice(self, event: NoticeEvent) -> None:
        style = {"info": "blue", "warning": "yellow", "error": "red"}.get(event.level, "")
        self.out.print(Text(f"{event.level}: {event.message}", style=style))

    def on_extension_error(self, event: ExtensionErrorEvent) -> None:
        self.out.print(Text(f"✖ extension error in {event.extension_path} ({event.event}): {event.error}", style="red"))

    def on_thinking_level_changed(self, event: ThinkingLevelChangedEvent) -> None:
        self.out.print(Text(f"Thinking level: {event.level}", style="dim"))

    def on_session_info_changed(self, event: SessionInfoChangedEvent) -> None:
        self.out.print(Text(f"Session name: {event.name or '(none)'}", style="dim"))
