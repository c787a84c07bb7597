"""Session events as transcript lines, plus the live area drawn above the input line.

Finished things are printed once, in order: the assistant's text rendered as markdown
(thinking dimmed), each tool call with its arguments, each result as a short preview
(errors in red), a usage line when a run settles, notices and plugin errors. Things in
progress (the text streaming in, running tools, the spinner) live in :class:`LiveView`
and are redrawn with the prompt until they finish.
"""

from __future__ import annotations

import json
import re
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.formatted_text.utils import split_lines
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown
from rich.padding import Padding
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text

from pi_hookspecs import (
    AgentSettledEvent,
    AgentStartEvent,
    AssistantMessage,
    CustomMessage,
    CustomMessageEntry,
    ImageContent,
    MarkdownMessageType,
    MarkdownTransformContext,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    SessionInfoChangedEvent,
    TextContent,
    ThinkingContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
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
from .fullscreen import PaneImage
from .images import describe, draw_image, image_protocol, new_image_id, pane_image_parts
from .output import Transcript, plain, terminal_width

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
LIVE_TEXT_LINES = 6
PREVIEW_LINES = 8
DIFF_PREVIEW_LINES = 16
"""Lines of an edit's diff shown before the expand key (the whole diff when expanded)."""
BASH_TAIL_LINES = 5
"""Last lines of a ``bash`` result shown before the expand key (pi 1.6.0 shows its end)."""
WRITE_PREVIEW_LINES = 10
"""First lines of a written file shown before the expand key."""
PAGE_DRAWN_TOOLS = ("bash", "read", "write", "edit", "ls")
"""Tools the exported page draws itself, as pi 1.6.0's does (their plugin renderers are
for the terminal)."""
FILE_TOOLS = ("edit", "write")
"""Built-in tools drawn as ``⚙ name path`` plus a diff or a preview of the content."""


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


def tool_path(args: Any) -> str | None:
    """The file a file tool works on (``path``, or the older ``file_path``)."""
    if not isinstance(args, dict):
        return None
    for key in ("path", "file_path"):
        if isinstance(args.get(key), str):
            return str(args[key])
    return None


def call_summary(name: str, args: Any) -> str:
    """What follows ``⚙ name`` on a tool call's line: the path of an edit or a write
    (their texts are drawn below it), else :func:`compact_args`."""
    path = tool_path(args)
    if name in FILE_TOOLS and path is not None:
        return one_line(path, 160)
    return compact_args(args if isinstance(args, dict) else {})


def _more_line(more: int, total: int, key: str, expanded: bool) -> Text:
    what = f"… ({more} more lines, {total} total, {key} to expand)" if not expanded else f"… ({more} more lines)"
    return Text(what, style="dim")


def _word_diff(old: str, new: str) -> tuple[Text, Text]:
    """Two paired diff lines with the changed words in reverse video."""
    import difflib  # the first edit's diff pays for it, not the start-up

    words_a, words_b = re.findall(r"\s+|\w+|[^\w\s]", old), re.findall(r"\s+|\w+|[^\w\s]", new)
    left, right = Text(), Text()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes():
        a, b = "".join(words_a[i1:i2]), "".join(words_b[j1:j2])
        if tag == "equal":
            left.append(a)
            right.append(b)
        else:
            left.append(a, style="reverse" if a.strip() else "")
            right.append(b, style="reverse" if b.strip() else "")
    return left, right


_DIFF_ROW = re.compile(r"^([+\- ])(\s*\d*) (.*)$")


def diff_renderable(diff: str, *, max_lines: int | None, key: str = "Ctrl+O") -> Text:
    """An edit's display diff (``-N old`` / ``+N new`` / `` N context`` rows, as the
    edit tool's ``details.diff`` holds them) coloured: removed lines red, added green,
    context dim, the changed words of a one-line replacement in reverse video."""
    rows = plain(diff).replace("\t", "   ").rstrip("\n").split("\n")
    shown = rows if max_lines is None else rows[:max_lines]
    parsed = [_DIFF_ROW.match(row) for row in shown]

    def sign(at: int) -> str | None:
        match = parsed[at] if 0 <= at < len(parsed) else None
        return match.group(1) if match is not None else None

    out = Text()
    index = 0
    while index < len(shown):
        if index:
            out.append("\n")
        match = parsed[index]
        if match is None:
            out.append(shown[index], style="diff.context")
            index += 1
            continue
        mark, number, body = match.groups()
        next_match = parsed[index + 1] if index + 1 < len(parsed) else None
        if (
            mark == "-"
            and next_match is not None
            and sign(index + 1) == "+"
            and sign(index + 2) != "+"
            and sign(index - 1) != "-"
        ):
            _, number_b, body_b = next_match.groups()
            old, new = _word_diff(body, body_b)
            for prefix, words, style in ((f"-{number} ", old, "diff.removed"), (f"+{number_b} ", new, "diff.added")):
                start = len(out)
                out.append(prefix)
                out.append_text(words)
                out.stylize(style, start, len(out))
                if prefix.startswith("-"):
                    out.append("\n")
            index += 2
            continue
        style = {"+": "diff.added", "-": "diff.removed"}.get(mark, "diff.context")
        out.append(f"{mark}{number} {body}", style=style)
        index += 1
    if len(shown) < len(rows):
        out.append("\n")
        out.append_text(_more_line(len(rows) - len(shown), len(rows), key, False))
    return out


def content_preview(text: str, *, max_lines: int | None, key: str = "Ctrl+O") -> Text:
    """A written file's first ``max_lines`` lines (all of them when ``None``), then how
    many more there are."""
    lines = plain(text).replace("\t", "   ").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return Text("(empty file)", style="dim")
    shown = lines if max_lines is None else lines[:max_lines]
    out = Text("\n".join(shown), style="tool.output")
    if len(shown) < len(lines):
        out.append("\n")
        out.append_text(_more_line(len(lines) - len(shown), len(lines), key, False))
    return out


def content_text(content: Any, *, images: bool = True) -> str:
    """The text of a message's content; ``images``: an ``[image type]`` line for each
    image (``False``: images left out, drawn on their own)."""
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if isinstance(block, TextContent):
            out.append(block.text)
        elif isinstance(block, ImageContent) and images:
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
    model = session.limits_model()  # a virtual selection: the physical model that answered last
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
    widgets_below: dict[str, list[str]] = field(default_factory=dict)
    footer: list[str] | None = None
    working_message: str | None = None
    """A plugin's text for the spinner line (``ctx.ui.set_working_message``)."""
    markdown: Callable[[str, int], str] | None = None
    """Renders the streaming answer as markdown (terminal text for a width); without it
    the raw text shows, wrapped."""
    _rendered: tuple[str, int, list[StyleAndTextTuples]] | None = None

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

    def fragments(self, width: int, *, with_below: bool = False) -> StyleAndTextTuples:
        """The area above the input line; ``with_below``: also what belongs below it
        (where the terminal cannot report the cursor position, nothing can be drawn
        below the input line)."""
        if with_below:
            below = self.below(width)
            return [*self.fragments(width), *below, ("", "\n")] if below else self.fragments(width)
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
            for fragments in self.text_lines(width)[-LIVE_TEXT_LINES:]:
                out.extend(fragments)
                out.append(("", "\n"))
        # the transcript shows each call's line already: here only what its output ends with
        several = sum(1 for tool in self.tools.values() if tool.tail.strip()) > 1
        for tool in self.tools.values():
            label = f"{tool.name}: " if several else ""
            for line in plain(tool.tail).rstrip("\n").splitlines()[-3:]:
                add("class:dim", f"{'      ' if tool.nested else '    '}{label}{line}")
        for text in self.steering:
            add("class:dim", f"  ⤷ steering: {one_line(text, width)}")
        for text in self.follow_up:
            add("class:dim", f"  ⤷ follow-up: {one_line(text, width)}")
        now = time.monotonic()
        if self.status is not None:
            frame = SPINNER[int(now * 10) % len(SPINNER)]
            elapsed = f" {now - self.status_since:.0f}s" if self.status_since else ""
            label = plain(self.working_message) if self.working_message else self.status
            add("class:spinner", f"{frame} {label}{elapsed} · Enter steers · Alt+Enter follow-up · Ctrl+C aborts")
        if self.statuses:
            add("class:dim", " · ".join(plain(s) for s in self.statuses.values()))
        if self.hint is not None:
            if now < self.hint_until:
                add("class:hint", self.hint)
            else:
                self.hint = None
        return out

    def text_lines(self, width: int) -> list[StyleAndTextTuples]:
        """The end of the streaming answer as screen lines: rendered as markdown (from a
        block boundary a few dozen lines back, so each redraw renders little), long lines
        wrapped between words."""
        if self._rendered is not None and self._rendered[:2] == (self.text, width):
            return self._rendered[2]
        lines: list[StyleAndTextTuples] = []
        if self.markdown is not None:
            try:
                ansi = self.markdown(recent_blocks(self.text), width)
                lines = [list(line) for line in split_lines(to_formatted_text(ANSI(ansi.rstrip("\n"))))]
            except Exception:
                lines = []
        if not lines:
            for raw in plain(self.text).splitlines():
                for piece in textwrap.wrap(raw, width, break_on_hyphens=False, drop_whitespace=True) or [""]:
                    lines.append([("class:live", piece)])
        self._rendered = (self.text, width, lines)
        return lines

    def below(self, width: int) -> StyleAndTextTuples:
        """Under the input line: widgets placed ``belowEditor``, then a plugin's footer."""
        width = max(10, width - 1)
        lines: list[tuple[str, str]] = []
        for widget in self.widgets_below.values():
            lines += [("", plain(line)) for line in widget]
        if self.footer is not None:
            lines += [("class:footer", plain(line)) for line in self.footer]
        out: StyleAndTextTuples = []
        for index, (style, text) in enumerate(lines):
            text = text if len(text) <= width else text[: width - 1] + "…"
            out.append((style, text + ("\n" if index < len(lines) - 1 else "")))
        return out


# --------------------------------------------------------------------------- markdown


def recent_blocks(text: str, lines: int = 40) -> str:
    """The end of ``text`` from a paragraph break at least ``lines`` lines back, outside
    a code fence (what the live area renders of a long answer)."""
    rows = text.split("\n")
    if len(rows) <= lines:
        return text
    fence = False
    start = 0
    for index, row in enumerate(rows[: len(rows) - lines]):
        if row.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and not row.strip():
            start = index + 1
    return "\n".join(rows[start:])


def _member(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return value if callable(value) else None


class IndentedMarkdown(Markdown):
    """rich's Markdown with code blocks prefixed by ``markdown.codeBlockIndent``."""

    def __init__(self, text: str, *, code_indent: str = "  ", hyperlinks: bool = True) -> None:
        super().__init__(text, hyperlinks=hyperlinks)
        indent = code_indent

        class IndentedCode(self.elements["fence"]):  # type: ignore[name-defined,misc]
            fenced = False

            def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
                code = str(self.text).rstrip()
                width = max(10, options.max_width - cell_len(indent))
                syntax = Syntax(code, self.lexer_name, theme=self.theme, word_wrap=True, padding=0)
                border = console.get_style("markdown.code_block_border", default="dim")
                language = self.lexer_name if self.lexer_name not in ("text", "default") else ""
                if self.fenced:  # as pi 1.6.0: the fences stay, around the indented code
                    yield Segment("```" + language, border)
                    yield Segment.line()
                for line in console.render_lines(syntax, options.update(width=width), pad=False):
                    yield Segment(indent, console.get_style("markdown.code_block"))
                    yield from line
                    yield Segment.line()
                if self.fenced:
                    yield Segment("```", border)
                    yield Segment.line()

        class FencedCode(IndentedCode):
            fenced = True

        self.elements = {**self.elements, "fence": FencedCode, "code_block": IndentedCode}  # type: ignore[misc]


# --------------------------------------------------------------------------- events


class EventRenderer:
    """A runtime listener: turns session events into transcript output and live state."""

    def __init__(
        self, transcript: Transcript, live: LiveView, session: Callable[[], AgentSession], changed: Callable[[], None]
    ) -> None:
        self.out = transcript
        self.live = live
        self.session = session
        self.changed = changed
        self.totals: RunTotals | None = None
        self.echoed: list[str] = []
        """Texts the user typed and the transcript already shows (not repeated when the
        message reaches the model)."""
        self.hide_thinking = False
        self.expanded = False
        """Ctrl+O: tool output in full instead of a preview."""
        self.code_indent = "  "
        self.recent_results: list[tuple[str, Any]] = []
        """``(header, full output)`` of the latest tool calls (printed in full by Ctrl+O)."""
        self.expand_key = "Ctrl+O"
        """How the collapsed previews name the key of ``app.tools.expand``."""
        self.calls: dict[str, tuple[str, Any]] = {}
        """``(tool, arguments)`` of the tool calls running (their results draw with them)."""
        self.pad = 1
        self.hyperlinks = True
        self.progress = False
        self.seen_entries = 0
        self.drawn_custom: list[tuple[str, str]] = []
        """Custom messages drawn from their ``message_end`` (their entries are not drawn
        again when :meth:`scan_entries` finds them)."""
        self._render_failures: set[str] = set()
        self.image_protocol: str | None = None
        """``kitty``, ``iterm2`` or ``None`` (images as a line of text): :mod:`.images`."""
        self.image_columns = 60
        live.markdown = self.live_markdown

    def live_markdown(self, text: str, width: int) -> str:
        """The streaming answer as terminal text ``width`` columns wide (the live area)."""
        text = self.transform_markdown(text, "assistant", is_streaming=True, width=width - self.pad)
        renderable = IndentedMarkdown(text.strip(), code_indent=self.code_indent, hyperlinks=False)
        return self.out.render(Padding(renderable, (0, 0, 0, self.pad)) if self.pad else renderable, width=width)

    def configure(self, settings: Any) -> None:
        """Take what rendering uses from the settings: ``hideThinkingBlock``,
        ``markdown.codeBlockIndent``, ``outputPad``, ``terminal.hyperlinks`` and
        ``terminal.showTerminalProgress`` (values of the wrong type were dropped when the
        file loaded, so the defaults apply)."""
        try:
            self.hide_thinking = settings.hide_thinking_block
        except Exception as exc:
            self.out.line(f"settings: {exc}", "yellow")
        markdown = settings.get("markdown")
        indent = markdown.get("codeBlockIndent") if isinstance(markdown, dict) else None
        self.code_indent = indent if isinstance(indent, str) else "  "
        pad = settings.get("outputPad")
        self.pad = pad if pad in (0, 1) and not isinstance(pad, bool) else 1
        hyperlinks, _ = settings.lookup("terminal", "hyperlinks")
        self.hyperlinks = hyperlinks is not False
        progress, _ = settings.lookup("terminal", "showTerminalProgress")
        self.progress = progress is True
        self.image_protocol = image_protocol(settings)
        columns, _ = settings.lookup("terminal", "imageWidthCells")
        self.image_columns = (
            columns if isinstance(columns, int) and not isinstance(columns, bool) and columns > 0 else 60
        )

    def draw_images(self, content: Any, indent: int = 0) -> None:
        """The images of a message or tool result: drawn inline where the terminal can
        (``terminal.images``, ``terminal.showImages``), else one line naming each."""
        if isinstance(content, str):
            return
        pad = indent + self.pad
        for block in content or []:
            if not isinstance(block, ImageContent):
                continue
            if self.out.pane is not None:  # fullscreen: kitty placements the pane moves, else text
                parts = pane_image_parts(block.data, block.mime_type, self.image_protocol)
                if parts is not None:
                    size, mime = parts
                    self.out.image(PaneImage(block.data, size, self.image_columns, pad, new_image_id(), mime))
                else:
                    self.out.print(Text(" " * pad + describe(block.data, block.mime_type), style="dim"))
                continue
            protocol = self.image_protocol
            width = max(1, min(self.image_columns, terminal_width() - pad - 2))
            drawn = draw_image(block.data, block.mime_type, protocol, max_columns=width, indent=pad)
            if drawn is not None:
                self.out.write(drawn)
            else:
                self.out.print(Text(" " * pad + describe(block.data, block.mime_type), style="dim"))

    def block(self, renderable: Any) -> None:
        """Print a message, tool output or summary with the ``outputPad`` margin."""
        self.out.print(Padding(renderable, (0, 0, 0, self.pad)) if self.pad else renderable)

    def toggle_thinking(self) -> bool:
        self.hide_thinking = not self.hide_thinking
        return self.hide_thinking

    def toggle_expanded(self) -> bool:
        self.expanded = not self.expanded
        if self.expanded and self.recent_results:
            self.out.line(
                f"── output of the last {len(self.recent_results)} tool call(s) in full (Ctrl+O collapses) ──", "dim"
            )
            for header, body in self.recent_results:
                self.out.print(Text(f"⚙ {header}", style="cyan"))
                self.out.print(body)
        return self.expanded

    def call_body(self, name: str, args: Any) -> Any | None:
        """What a tool call shows under its line: the start of a written file."""
        if name == "write" and isinstance(args, dict) and isinstance(args.get("content"), str):
            limit = None if self.expanded else WRITE_PREVIEW_LINES
            return Padding(content_preview(args["content"], max_lines=limit, key=self.expand_key), (0, 0, 0, 2))
        return None

    def result_body(self, name: str, text: str, details: Any, is_error: bool, *, indent: int = 4) -> Any | None:
        """A finished tool's output: an edit's coloured diff; nothing for a write that
        worked (its call showed the content); else a preview of the text (in full when
        expanded), errors in red."""
        diff = details.get("diff") if isinstance(details, dict) else None
        if name == "edit" and not is_error and isinstance(diff, str) and diff:
            limit = None if self.expanded else DIFF_PREVIEW_LINES
            return Padding(diff_renderable(diff, max_lines=limit, key=self.expand_key), (0, 0, 0, 2))
        if name == "write" and not is_error:
            return None
        pad = " " * indent
        if name == "bash" and not self.expanded:  # as pi 1.6.0: the end of the output, where the outcome is
            rows = plain(text).rstrip("\n").splitlines()
            if len(rows) > BASH_TAIL_LINES:
                earlier = len(rows) - BASH_TAIL_LINES
                tail = "\n".join(pad + line for line in rows[-BASH_TAIL_LINES:])
                hint = f"{pad}… ({earlier} earlier lines, {self.expand_key} to expand)\n"
                return Text(hint + tail, style="red" if is_error else "dim")
        lines, more = preview(text, 100_000 if self.expanded else PREVIEW_LINES)
        if not lines:
            lines = ["(error)" if is_error else "(no output)"]
        body = "\n".join(pad + line for line in lines)
        if more:
            body += f"\n{pad}… ({more} more lines)"
        return Text(body, style="red" if is_error else "dim")

    def full_result(self, name: str, args: Any, text: str, details: Any, is_error: bool) -> tuple[str, Any]:
        """``(header, body)`` Ctrl+O prints for a finished tool call."""
        header = f"{name} {call_summary(name, args)}".rstrip()
        diff = details.get("diff") if isinstance(details, dict) else None
        if name == "edit" and not is_error and isinstance(diff, str) and diff:
            return header, diff_renderable(diff, max_lines=None)
        if name == "write" and not is_error and isinstance(args, dict) and isinstance(args.get("content"), str):
            return header, content_preview(args["content"], max_lines=None)
        return header, Text(plain(text.rstrip("\n")) or "(no output)", style="red" if is_error else "tool.output")

    def markdown(self, text: str) -> Any:
        return IndentedMarkdown(text, code_indent=self.code_indent, hyperlinks=self.hyperlinks)

    # ------------------------------------------------------------------ plugin renderers

    def transform_markdown(
        self,
        text: str,
        message_type: MarkdownMessageType,
        *,
        is_streaming: bool = False,
        width: int | None = None,
        entry: Any = None,
    ) -> str:
        """``text`` through the plugins' markdown transformers for ``message_type``, in
        plugin load order (``register_markdown_transformers``); ``entry`` is the session
        entry it is drawn from, if any. A transformer that raises or returns no string is
        reported once and skipped: the text produced so far goes on to the next one."""
        registry = self._registry()
        transformers = registry.markdown_transformers if registry is not None else ()
        context: MarkdownTransformContext | None = None
        for registered in transformers:
            definition = registered.value
            if message_type not in definition.message_types:
                continue
            if context is None:
                context = MarkdownTransformContext(
                    message_type=message_type,
                    is_streaming=is_streaming,
                    available_width=max(1, width if width is not None else terminal_width() - self.pad),
                    message_id=getattr(entry, "id", None),
                    timestamp=getattr(entry, "timestamp", None),
                )
            try:
                result = definition.transform(text, context)
            except Exception as exc:
                self._report_failure(f"markdown transformer of plugin {registered.plugin}", exc)
                continue
            if isinstance(result, str):
                text = result
            else:
                self._report_failure(
                    f"markdown transformer of plugin {registered.plugin}",
                    TypeError(f"returned {type(result).__name__}, not the markdown string"),
                )
        return text

    def _report_failure(self, what: str, exc: BaseException) -> None:
        """One red line the first time ``what`` fails (it is not said again)."""
        if what not in self._render_failures:
            self._render_failures.add(what)
            self.out.line(f"✖ {what} failed: {type(exc).__name__}: {exc}", "red")

    def _plugin_render(self, what: str, render: Callable[..., Any], *args: Any) -> bool:
        """Print what a plugin's renderer returns; ``False``: pi draws it itself."""
        try:
            result = render(*args)
        except Exception as exc:
            if what not in self._render_failures:
                self._render_failures.add(what)
                self.out.line(f"✖ {what} failed: {type(exc).__name__}: {exc}", "red")
            return False
        if result is None:
            return False
        if isinstance(result, str):
            self.out.print(Text(plain(result)))
        elif isinstance(result, (list, tuple)):
            self.out.print(Text("\n".join(plain(str(line)) for line in result)))
        else:
            self.out.print(result)
        return True

    def _registry(self) -> Any:
        try:
            return self.session().plugins.registry
        except Exception:
            return None

    def tool_renderer(self, tool_name: str) -> Any:
        """The render object the plugins' resolvers choose for ``tool_name`` (pi's
        ``registerToolRenderer`` chain: each resolver may defer with ``next()``)."""
        registry = self._registry()
        resolvers = list(registry.tool_renderers) if registry is not None else []
        if not resolvers:
            return None

        def chain(index: int) -> Any:
            if index >= len(resolvers):
                return None
            registered = resolvers[index]
            try:
                return registered.value.resolve(tool_name, lambda: chain(index + 1))
            except Exception as exc:
                key = f"tool renderer of plugin {registered.plugin}"
                if key not in self._render_failures:
                    self._render_failures.add(key)
                    self.out.line(f"✖ {key} failed: {type(exc).__name__}: {exc}", "red")
                return chain(index + 1)

        return chain(0)

    def plugin_tool_render(self, tool_name: str, member: str, *args: Any) -> bool:
        """Draw a tool call (``render_call``) or result (``render_result``) with the
        plugins' tool renderer; ``False``: none drew it."""
        render = _member(self.tool_renderer(tool_name), member)
        return render is not None and self._plugin_render(f"{member} of {tool_name}", render, *args)

    def scan_entries(self) -> None:
        """Draw custom entries appended since the last look (``ctx.append_entry``) that a
        plugin registered a renderer for."""
        try:
            sm = self.session().sm
        except Exception:
            return
        count = sm.get_entry_count()
        if count <= self.seen_entries:
            self.seen_entries = count
            return
        registry = self._registry()
        renderers = registry.entry_renderers if registry is not None else {}
        for entry in sm.get_entries()[self.seen_entries :]:
            if isinstance(entry, CustomMessageEntry) and entry.display:
                # a plugin's message stored while idle has no message events: draw it here
                key = (entry.custom_type, content_text(entry.content))
                if key in self.drawn_custom:
                    self.drawn_custom.remove(key)
                else:
                    self.draw_custom_message(
                        CustomMessage(
                            custom_type=entry.custom_type, content=entry.content, display=True, details=entry.details
                        ),
                        entry,
                    )
            elif renderers:
                self.render_entry(entry, renderers)
        self.seen_entries = count

    def render_entry(self, entry: Any, renderers: Any) -> None:
        if getattr(entry, "type", None) != "custom":
            return
        registered = renderers.get(entry.custom_type)
        if registered is not None:
            self._plugin_render(
                f"entry renderer {entry.custom_type!r} of plugin {registered.plugin}",
                registered.value.render,
                entry,
                {"expanded": self.expanded},
            )

    # ------------------------------------------------------------------ the exported page

    def render_text(self, what: str, render: Callable[..., Any] | None, *args: Any) -> str | None:
        """What a plugin's renderer draws, as plain text 100 columns wide (``None``: it
        draws nothing, or failed: said once in the transcript)."""
        if render is None:
            return None
        try:
            result = render(*args)
        except Exception as exc:
            if what not in self._render_failures:
                self._render_failures.add(what)
                self.out.line(f"✖ {what} failed: {type(exc).__name__}: {exc}", "red")
            return None
        if result is None:
            return None
        if isinstance(result, str):
            return plain(result).rstrip("\n")
        if isinstance(result, (list, tuple)):
            return "\n".join(plain(str(line)) for line in result)
        console = Console(width=100, color_system=None, force_terminal=False, highlight=False, emoji=False)
        with console.capture() as capture:
            console.print(result)
        return plain(capture.get()).rstrip("\n")

    def export_renderings(self, entries: list[Any]) -> dict[str, Any]:
        """What the plugins' renderers draw of ``entries`` (the session's), for the HTML
        page: tool calls and results through the tool renderers (the tools pi 1.6.0's page
        draws itself left out), custom messages and entries through theirs."""
        registry = self._registry()
        message_renderers = registry.message_renderers if registry is not None else {}
        entry_renderers = registry.entry_renderers if registry is not None else {}
        calls: dict[str, str] = {}
        results: dict[str, tuple[str, str | None]] = {}
        messages: dict[str, str] = {}
        custom: dict[str, str] = {}
        names: dict[str, str] = {}
        for entry in entries:
            message = getattr(entry, "message", None)
            if isinstance(entry, CustomMessageEntry):
                registered = message_renderers.get(entry.custom_type)
                if registered is not None:
                    item = CustomMessage(
                        custom_type=entry.custom_type,
                        content=entry.content,
                        display=entry.display,
                        details=entry.details,
                    )
                    what = f"message renderer {entry.custom_type!r} of plugin {registered.plugin}"
                    text = self.render_text(what, registered.value.render, item, {"expanded": True})
                    if text is not None:
                        messages[entry.id] = text
            elif getattr(entry, "type", None) == "custom" and entry.custom_type in entry_renderers:
                registered = entry_renderers[entry.custom_type]
                what = f"entry renderer {entry.custom_type!r} of plugin {registered.plugin}"
                text = self.render_text(what, registered.value.render, entry, {"expanded": True})
                if text is not None:
                    custom[entry.id] = text
            elif isinstance(message, AssistantMessage):
                for call in message.tool_calls():
                    names[call.id] = call.name
                    if call.name in PAGE_DRAWN_TOOLS:
                        continue
                    render = _member(self.tool_renderer(call.name), "render_call")
                    text = self.render_text(f"render_call of {call.name}", render, call.arguments, {"expanded": False})
                    if text is not None:
                        calls[call.id] = text
            elif isinstance(message, ToolResultMessage):
                name = message.tool_name or names.get(message.tool_call_id, "")
                if name in PAGE_DRAWN_TOOLS and message.tool_call_id not in calls:
                    continue
                render = _member(self.tool_renderer(name), "render_result")
                what = f"render_result of {name}"
                options = {"is_error": message.is_error}
                collapsed = self.render_text(what, render, message, {**options, "expanded": False})
                if collapsed is not None:
                    expanded = self.render_text(what, render, message, {**options, "expanded": True})
                    results[message.tool_call_id] = (collapsed, expanded if expanded != collapsed else None)
        return {"tool_calls": calls, "tool_results": results, "messages": messages, "entries": custom}

    def __call__(self, event: Any) -> None:
        handler = getattr(self, f"on_{event.type}", None)
        if handler is not None:
            handler(event)
            self.changed()
        self.scan_entries()

    # ------------------------------------------------------------------ runs

    def on_agent_start(self, event: AgentStartEvent) -> None:
        if self.totals is None:
            self.totals = RunTotals()
            self.recent_results = []
            if self.progress:
                self.out.write("\x1b]9;4;3\x07")  # OSC 9;4: busy, in the terminal's tab
        self.live.set_status("Working")

    def on_message_start(self, event: MessageStartEvent) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self.live.text = self.live.thinking = ""
            self.live.set_status("Waiting for the model")
        elif isinstance(message, UserMessage):
            text = content_text(message.content, images=False)
            if text in self.echoed:
                self.echoed.remove(text)
            else:
                lines, more = preview(self.transform_markdown(text, "user"), 3)
                body = "\n".join(lines) + (f"\n… ({more} more lines)" if more else "")
                self.out.print(Text.assemble(("› ", "bold cyan"), (body, "bold")))
            self.draw_images(message.content, indent=1)

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
            self.drawn_custom.append((message.custom_type, content_text(message.content)))
            self.draw_custom_message(message)

    def draw_custom_message(self, message: Any, entry: Any = None) -> None:
        """A custom message: the plugins' renderer for its type, else ``[type] text``."""
        registry = self._registry()
        registered = registry.message_renderers.get(message.custom_type) if registry is not None else None
        if registered is not None and self._plugin_render(
            f"message renderer {message.custom_type!r} of plugin {registered.plugin}",
            registered.value.render,
            message,
            {"expanded": self.expanded},
        ):
            return
        text = self.transform_markdown(content_text(message.content), "custom", entry=entry)
        lines, more = preview(text, PREVIEW_LINES)
        body = "\n".join(lines) + (f"\n… ({more} more lines)" if more else "")
        self.block(Text.assemble((f"[{message.custom_type}] ", "magenta"), (body, "")))

    def print_assistant(self, message: AssistantMessage, entry: Any = None) -> None:
        """A finished answer (``entry``: the session entry it is replayed from)."""
        for block in message.content:
            if isinstance(block, ThinkingContent) and block.thinking.strip():
                if self.hide_thinking:
                    self.block(Text("(thinking hidden · Ctrl+T shows it)", style="dim"))
                else:
                    thinking = self.transform_markdown(block.thinking, "assistant-thinking", entry=entry)
                    self.block(Text(plain(thinking.strip()), style="thinking"))
        text = self.transform_markdown(message.text(), "assistant", entry=entry).strip()
        if text:
            self.block(self.markdown(text))
        if message.stop_reason == "error":
            self.out.print(Text(f"✖ {message.error_message or 'the model request failed'}", style="red"))
        elif message.stop_reason == "aborted":
            self.out.print(Text("⏹ Aborted", style="yellow"))

    def on_tool_execution_start(self, event: ToolExecutionStartEvent) -> None:
        nested = event.parent_tool_call_id is not None
        args = call_summary(event.tool_name, event.args)
        self.live.tools[event.tool_call_id] = RunningTool(event.tool_name, args, nested=nested)
        self.calls[event.tool_call_id] = (event.tool_name, event.args)
        self.live.set_status(f"Running {event.tool_name}")
        if self.plugin_tool_render(event.tool_name, "render_call", event.args, {"expanded": self.expanded}):
            return
        self.block(
            Text.assemble(
                ("  ↳ " if nested else "", "dim"), ("⚙ ", "cyan"), (event.tool_name, "bold cyan"), (f" {args}", "cyan")
            )
        )
        body = self.call_body(event.tool_name, event.args)
        if body is not None:
            self.block(body)

    def on_tool_execution_update(self, event: ToolExecutionUpdateEvent) -> None:
        running = self.live.tools.get(event.tool_call_id)
        if running is not None:
            running.tail = content_text(event.partial_result.content)

    def on_tool_execution_end(self, event: ToolExecutionEndEvent) -> None:
        self.live.tools.pop(event.tool_call_id, None)
        _name, args = self.calls.pop(event.tool_call_id, (event.tool_name, {}))
        text = content_text(event.result.content, images=False)
        details = event.result.details
        full = self.full_result(event.tool_name, args, text, details, event.is_error)
        self.recent_results = [*self.recent_results[-9:], full]
        options = {"expanded": self.expanded, "is_error": event.is_error}
        if self.plugin_tool_render(event.tool_name, "render_result", event.result, options):
            return
        indent = 6 if event.parent_tool_call_id else 4
        body = self.result_body(event.tool_name, text, details, event.is_error, indent=indent)
        if body is not None:
            self.block(body)
        self.draw_images(event.result.content, indent=indent)

    def on_queue_update(self, event: QueueUpdateEvent) -> None:
        self.live.steering = list(event.steering)
        self.live.follow_up = list(event.follow_up)

    def on_agent_settled(self, event: AgentSettledEvent) -> None:
        if self.progress and self.totals is not None:
            self.out.write("\x1b]9;4;0\x07")
        self.live.set_status(None)
        self.live.text = self.live.thinking = ""
        self.live.tools.clear()
        self.calls.clear()
        self.live.steering, self.live.follow_up = [], []
        totals, self.totals = self.totals, None
        if totals is None:
            return
        session = self.session()
        model = session.model.ref if session.model is not None else "no model"
        routed = session.limits_model()
        if routed is not None and session.model is not None and routed is not session.model:
            model += f" → {routed.ref}"  # a virtual selection and the model it routed to last
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
            self.out.print(
                Text(f"✔ Compacted ({event.reason}): {human_tokens(before)} tokens summarised", style="green")
            )

    def on_auto_retry_start(self, event: AutoRetryStartEvent) -> None:
        self.out.print(
            Text(
                f"↻ Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:.1f}s: "
                f"{event.error_message}",
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
