"""Fullscreen mode (``--tui-mode fullscreen`` or the ``tuiMode`` setting): pi on the
terminal's alternate screen, the transcript in a pane that pi scrolls itself.

The transcript is kept here as *blocks* (a printed message, a tool's output, an image,
raw text) and laid out into screen lines for the pane's width; when the terminal is
resized the blocks are laid out again, so the text re-wraps. The pane is drawn in a
window above the live area and the input line; the terminal's scrollback is left
alone. The ``tui.altScreen.*`` keys scroll the pane, jump between your messages and
search it; the mouse wheel scrolls it (``fullscreenWheelScrollLines``) and a drag
selects text, copied when the button is let go (``fullscreenCopyOnSelect``). PNG
images are drawn with the kitty graphics protocol where the terminal speaks it (placed
again wherever the pane scrolls them), else named in a line of text.

When pi exits, the alternate screen is left and the transcript printed to the normal
screen (``fullscreenExitOutput``: ``"transcript"``) or only the resume hint
(``"resume-hint"``).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit.filters import Condition, has_completions
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.formatted_text.utils import fragment_list_width
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.bindings.mouse import load_mouse_bindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import ConditionalContainer, HSplit, Window
from prompt_toolkit.layout.controls import FormattedTextControl, UIContent, UIControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.utils import get_cwidth

from . import images as img

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_TOKENS = re.compile(r"(\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\))")
_OSC_ONLY = re.compile(r"^(?:\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b_G[^\x1b]*\x1b\\)+$")
_SGR_MOUSE = re.compile(r"^\x1b\[<(\d+);(\d+);(\d+)([Mm])$")
_WORD = re.compile(r"[\w/\-+\\~.]+")
PROMPT_MARK = "› "
"""How a message of yours starts in the transcript (what previousPrompt / nextPrompt find)."""
DOUBLE_CLICK_SECONDS = 0.5
ALT_WHEEL_FACTOR = 5
"""Alt+wheel scrolls this many times as far."""
AUTO_SCROLL_SECONDS = 0.05
"""How often a drag held above or below the pane scrolls it by a line."""


def visible(line: str) -> str:
    return _ESCAPES.sub("", line)


def is_control_only(text: str) -> bool:
    """``text`` is only terminal control strings (OSC 52 copy, OSC 9;4 progress):
    they go to the terminal, not into the transcript pane."""
    return bool(_OSC_ONLY.match(text))


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` (terminal text) cut into pieces at most ``width`` cells wide; the styles
    in force at a cut carry over to the next piece."""
    width = max(1, width)
    if get_cwidth(visible(line)) <= width:
        return [line]
    out: list[str] = []
    current, used, styles = "", 0, ""
    for part in _TOKENS.split(line):
        if not part:
            continue
        if part.startswith("\x1b"):
            current += part
            if part.startswith("\x1b[") and part.endswith("m"):
                styles = "" if part in ("\x1b[0m", "\x1b[m") else styles + part
            continue
        for char in part:
            cells = get_cwidth(char)
            if used + cells > width and used > 0:
                out.append(current + ("\x1b[0m" if styles else ""))
                current, used = styles, 0
            current += char
            used += cells
    out.append(current)
    return out


def slice_cells(text: str, start: int, end: int) -> str:
    """The characters of plain ``text`` whose cells start in ``[start, end)``."""
    out, column = [], 0
    for char in text:
        if start <= column < end:
            out.append(char)
        column += get_cwidth(char)
        if column >= end:
            break
    return "".join(out)


# --------------------------------------------------------------------------- blocks


@dataclass
class PaneImage:
    """A PNG shown with the kitty graphics protocol in the pane."""

    payload: str
    """The PNG, base64."""
    size: tuple[int, int]
    """Pixels."""
    max_columns: int
    indent: int
    image_id: int
    mime: str = "image/png"

    def cells_at(self, width: int) -> tuple[int, int]:
        return img.cells(self.size, max(1, min(self.max_columns, width - self.indent - 2)))


@dataclass
class _Block:
    render: Callable[[int], str] | None = None
    """Terminal text for a width (a printed renderable); ``None``: raw text or an image."""
    text: str = ""
    image: PaneImage | None = None
    start: int = 0
    count: int = 0

    def lines_at(self, width: int) -> list[str]:
        if self.image is not None:
            return [""] * self.image.cells_at(width)[1]
        text = self.render(width) if self.render is not None else self.text
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [piece for line in lines for piece in wrap_line(line, width)]


# --------------------------------------------------------------------------- the wheel


class WheelScroll:
    """Lines to scroll for one wheel event: ``fullscreenWheelScrollLines`` when it is a
    number; ``"auto"``: one per event where the terminal already speeds the wheel up (a
    local macOS terminal), else more for a fast spin (up to 6 per event, by how close
    the events of one gesture come)."""

    GESTURE_GAP = 0.2
    BURST_GAP = 0.005
    REFERENCE_GAP = 0.1
    MOST = 6

    def __init__(self, lines: Any = "auto", accelerate: bool | None = None) -> None:
        if accelerate is None:
            local = not any(os.environ.get(k) for k in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"))
            accelerate = not (sys.platform == "darwin" and local)
        self.accelerate = accelerate
        self.lines: Any = "auto"
        self.set_lines(lines)

    def set_lines(self, lines: Any) -> None:
        ok = isinstance(lines, int | float) and not isinstance(lines, bool)
        self.lines = max(1, min(100, int(lines))) if ok else "auto"
        self._last, self._direction, self._average, self._carry = -1e9, 0, 0.0, 0.0

    def next(self, direction: int, now: float) -> int:
        if self.lines != "auto":
            return int(self.lines)
        if not self.accelerate:
            return 1
        gap = now - self._last
        same = direction == self._direction and gap <= self.GESTURE_GAP
        self._last, self._direction = now, direction
        if not same:
            self._average, self._carry = 0.0, 0.0
            return 1
        if gap < self.BURST_GAP:
            return 1
        self._average = gap if not self._average else (self._average + gap) / 2
        lines = min(self.MOST, max(1.0, self.REFERENCE_GAP / self._average)) + self._carry
        whole = int(lines)
        self._carry = lines - whole
        return whole


# --------------------------------------------------------------------------- the pane


@dataclass
class TranscriptPane:
    """The transcript's blocks and lines, the pane's scroll position, search and selection."""

    lines: list[str] = field(default_factory=list)
    """Terminal text, one screen line each (styles as SGR sequences), for :attr:`width`."""
    width: int = 0
    """The columns the lines are laid out for (0: not drawn yet)."""
    follow: bool = True
    """Stuck to the end: new output scrolls into view."""
    top: int = 0
    """The first line shown when not following."""
    height: int = 10
    """Rows of the pane at the last draw (a page)."""
    searching: bool = False
    query: str = ""
    matches: list[int] = field(default_factory=list)
    match_index: int = -1
    scrollbar: str = "auto"
    copy_on_select: bool = True
    on_change: Callable[[], None] = lambda: None
    copy: Callable[[str], None] = lambda text: None
    """Puts a selection on the clipboard (set by the app)."""
    default_width: Callable[[], int] = lambda: 80
    """The width to lay out for before the pane is first drawn."""
    window: Window | None = None
    wheel: WheelScroll = field(default_factory=WheelScroll)
    blocks: list[_Block] = field(default_factory=list)
    images: dict[int, tuple[PaneImage, int, int]] = field(default_factory=dict)
    """First line -> (image, columns, rows) at :attr:`width`."""
    anchor: tuple[int, int] | None = None
    """Where the selection started (line, column); ``focus`` where it ends."""
    focus: tuple[int, int] | None = None
    pressed: bool = False
    _initial: tuple[tuple[int, int], tuple[int, int]] | None = None
    _granularity: str = "character"
    _last_click: tuple[float, int, int, int] | None = None
    _drag_row: int = 0
    _auto_scroll: asyncio.TimerHandle | None = None
    _bar_drag: bool = False
    _fragments: dict[int, StyleAndTextTuples] = field(default_factory=dict)
    _placed: dict[int, tuple[int, ...]] = field(default_factory=dict)
    _sent: set[int] = field(default_factory=set)

    # ------------------------------------------------------------------ text

    def _layout_width(self) -> int:
        return self.width or max(10, self.default_width())

    def _add(self, block: _Block) -> None:
        width = self._layout_width()
        block.start = len(self.lines)
        new = block.lines_at(width)
        block.count = len(new)
        if block.image is not None and new:
            columns, rows = block.image.cells_at(width)
            self.images[block.start] = (block.image, columns, rows)
        self.blocks.append(block)
        self.lines.extend(new)
        self._changed()

    def _changed(self) -> None:
        if self.searching and self.query:
            self._find()
        self.on_change()

    def append(self, text: str) -> None:
        """Raw terminal text (it joins an unfinished line written before)."""
        text = text.replace("\r\n", "\n")
        last = self.blocks[-1] if self.blocks else None
        if last is not None and last.render is None and last.image is None and not last.text.endswith("\n"):
            del self.lines[last.start :]
            for index in [i for i in self._fragments if i >= last.start]:
                del self._fragments[index]
            last.text += text
            new = last.lines_at(self._layout_width())
            last.count = len(new)
            self.lines.extend(new)
            self._changed()
            return
        self._add(_Block(text=text))

    def add_rendered(self, render: Callable[[int], str]) -> None:
        """A printed renderable: ``render(width)`` gives its terminal text, again when
        the terminal's width changes."""
        self._add(_Block(render=render))

    def add_image(self, image: PaneImage) -> None:
        self._add(_Block(image=image))

    def all_text(self) -> str:
        """What was shown, for the normal screen when pi exits (images as their line of text)."""
        out = []
        for block in self.blocks:
            if block.image is not None:
                out.append(" " * block.image.indent + img.fallback_text(block.image.mime, block.image.size) + "\n")
            else:
                out.extend(line + "\n" for line in self.lines[block.start : block.start + block.count])
        return "".join(out)

    def relayout(self, width: int) -> None:
        """Lay the blocks out again for ``width`` columns (the terminal was resized),
        keeping the line at the top of the pane in view."""
        if width == self.width:
            return
        first = self.first_line()
        keep: tuple[int, int] | None = None
        if not self.follow and self.blocks:
            index = max(0, bisect.bisect_right([b.start for b in self.blocks], first) - 1)
            keep = (index, first - self.blocks[index].start)
        self.width = width
        self.lines, self.images, self._fragments = [], {}, {}
        for block in self.blocks:
            block.start = len(self.lines)
            try:
                new = block.lines_at(width)
            except Exception:  # a renderable that no longer renders: keep its old lines
                new = [line for piece in block.text.split("\n") for line in wrap_line(piece, width)]
            block.count = len(new)
            if block.image is not None and new:
                columns, rows = block.image.cells_at(width)
                self.images[block.start] = (block.image, columns, rows)
            self.lines.extend(new)
        if keep is not None:
            block = self.blocks[keep[0]]
            self.top = block.start + min(keep[1], max(0, block.count - 1))
            self.follow = self.top >= max(0, len(self.lines) - self.height)
        self.clear_selection(notify=False)
        if self.searching and self.query:
            self._find()

    # ------------------------------------------------------------------ scrolling

    def bottom(self) -> int:
        return max(0, len(self.lines) - self.height)

    def first_line(self) -> int:
        """The first line on screen."""
        return self.bottom() if self.follow else max(0, min(self.top, self.bottom()))

    def scroll(self, rows: int) -> None:
        top = max(0, min(self.first_line() + rows, self.bottom()))
        self.top, self.follow = top, top >= self.bottom()
        self.on_change()

    def scroll_to(self, top: int) -> None:
        self.scroll(top - self.first_line())

    def to_top(self) -> None:
        self.top, self.follow = 0, len(self.lines) <= self.height
        self.on_change()

    def to_bottom(self) -> None:
        self.follow = True
        self.on_change()

    def show_line(self, index: int) -> None:
        """Scroll so that line ``index`` is in view (a third from the top)."""
        top = max(0, min(index - self.height // 3, self.bottom()))
        self.top, self.follow = top, top >= self.bottom()
        self.on_change()

    def prompts(self) -> list[int]:
        return [i for i, line in enumerate(self.lines) if visible(line).lstrip().startswith(PROMPT_MARK)]

    def jump_prompt(self, step: int) -> None:
        """To the previous (``-1``) or next (``1``) message of yours; past the last one,
        back to the end."""
        marks = self.prompts()
        first = self.first_line()
        if step < 0:
            earlier = [i for i in marks if i < first]
            if earlier:
                self._put_at_top(earlier[-1])
        else:
            later = [i for i in marks if i > first]
            if later and later[0] <= self.bottom():
                self._put_at_top(later[0])
            else:
                self.to_bottom()

    def _put_at_top(self, index: int) -> None:
        self.top = max(0, min(index, self.bottom()))
        self.follow = self.top >= self.bottom()
        self.on_change()

    # ------------------------------------------------------------------ search

    def open_search(self) -> None:
        self.searching, self.query, self.matches, self.match_index = True, "", [], -1
        self.on_change()

    def close_search(self) -> None:
        self.searching, self.matches, self.match_index = False, [], -1
        self.on_change()

    def set_query(self, query: str) -> None:
        self.query = query
        self._find()
        if self.matches:
            self.match_index = len(self.matches) - 1  # the newest match first
            self.show_line(self.matches[self.match_index])
        self.on_change()

    def _find(self) -> None:
        needle = self.query.lower()
        self.matches = [i for i, line in enumerate(self.lines) if needle and needle in visible(line).lower()]
        if self.match_index >= len(self.matches):
            self.match_index = len(self.matches) - 1

    def next_match(self, step: int) -> None:
        """``-1``: the match above (searchNext goes back in time, from the newest), ``1``: below."""
        if not self.matches:
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        self.show_line(self.matches[self.match_index])

    def search_line(self) -> StyleAndTextTuples:
        where = f"  {self.match_index + 1}/{len(self.matches)}" if self.matches else "  no match" if self.query else ""
        return [
            ("class:search", "Search: "),
            ("class:search.query", self.query),
            ("[SetCursorPosition]", ""),
            ("class:dim", where + "  · Enter: next · Shift+Enter: previous · Esc: close"),
        ]

    # ------------------------------------------------------------------ selection

    def bounds(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """The selection, first cell then the cell it ends at (``None``: nothing selected)."""
        if self.anchor is None or self.focus is None or self.anchor == self.focus:
            return None
        return (self.anchor, self.focus) if self.anchor < self.focus else (self.focus, self.anchor)

    def _columns(self, row: int, start: tuple[int, int], end: tuple[int, int], length: int) -> tuple[int, int]:
        first = start[1] if row == start[0] else 0
        if row != end[0]:
            return first, length
        inclusive = self._initial is None  # a drag covers the cells at both ends; a word or line ends before
        return first, min(length, end[1] + (1 if inclusive else 0))

    def selected_text(self) -> str:
        bounds = self.bounds()
        if bounds is None:
            return ""
        start, end = bounds
        out = []
        for row in range(start[0], min(end[0], len(self.lines) - 1) + 1):
            text = visible(self.lines[row])
            first, last = self._columns(row, start, end, get_cwidth(text))
            out.append(slice_cells(text, first, last).rstrip())
        return "\n".join(out)

    def clear_selection(self, notify: bool = True) -> None:
        had = self.bounds() is not None
        self.anchor = self.focus = self._initial = None
        self.pressed, self._granularity = False, "character"
        self._stop_auto_scroll()
        if had and notify:
            self.on_change()

    def _word_at(self, row: int, column: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
        text = visible(self.lines[row]) if 0 <= row < len(self.lines) else ""
        for match in _WORD.finditer(text):
            start = get_cwidth(text[: match.start()])
            end = start + get_cwidth(match.group())
            if start <= column < end:
                return (row, start), (row, end)
        return None

    def _line_at(self, row: int) -> tuple[tuple[int, int], tuple[int, int]]:
        text = visible(self.lines[row]) if 0 <= row < len(self.lines) else ""
        return (row, 0), (row, get_cwidth(text.rstrip()))

    def press(self, row: int, column: int, now: float) -> None:
        """The left button went down on (line ``row``, ``column``): a new selection;
        a second click on the same word picks the word, a third the line."""
        self._stop_auto_scroll()
        word = self._word_at(row, column)
        count = 1
        last = self._last_click
        if last and word and now - last[0] <= DOUBLE_CLICK_SECONDS and (last[2], last[3]) == word[0]:
            count = last[1] % 3 + 1
        self._last_click = (now, count, *word[0]) if word else None
        picked = word if count == 2 else self._line_at(row) if count == 3 else None
        self.pressed = True
        self._granularity = "word" if count == 2 else "line" if count == 3 else "character"
        self._initial = picked
        if picked is not None:
            self.anchor, self.focus = picked
        else:
            self.anchor = self.focus = (row, column)
        self.on_change()

    def drag(self, row: int, column: int) -> None:
        if not self.pressed or self.anchor is None:
            return
        self._last_click = None
        if self._initial is None:
            self.focus = (row, column)
        else:
            picked = self._word_at(row, column) if self._granularity == "word" else self._line_at(row)
            if picked is not None:
                start, end = self._initial
                if picked[0] < start:
                    self.anchor, self.focus = end, picked[0]
                else:
                    self.anchor, self.focus = start, picked[1]
        self.on_change()

    def release(self) -> None:
        """The button came up: the selection stays; copied when ``fullscreenCopyOnSelect``."""
        if not self.pressed:
            return
        self.pressed = False
        self._stop_auto_scroll()
        text = self.selected_text()
        if text and self.copy_on_select:
            self.copy(text)
        self.on_change()

    def _stop_auto_scroll(self) -> None:
        if self._auto_scroll is not None:
            self._auto_scroll.cancel()
            self._auto_scroll = None

    def drag_outside(self, direction: int, column: int) -> None:
        """A drag at the pane's top (``-1``) or bottom edge (``1``), or past it: scroll a
        line now and every :data:`AUTO_SCROLL_SECONDS` while the pointer stays there."""
        self._drag_row = direction
        first = self.first_line()
        self.scroll(direction)
        edge = self.first_line() if direction < 0 else min(len(self.lines) - 1, self.first_line() + self.height - 1)
        self.drag(max(0, edge), column)
        if self._auto_scroll is None and self.first_line() != first:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
                self._auto_scroll = loop.call_later(AUTO_SCROLL_SECONDS, self._auto_step, column)

    def _auto_step(self, column: int) -> None:
        self._auto_scroll = None
        if self.pressed and self._drag_row:
            self.drag_outside(self._drag_row, column)

    # ------------------------------------------------------------------ the mouse

    def geometry(self) -> tuple[int, int, int, int] | None:
        """The pane's text area on the screen: x, y, columns, rows (``None``: not drawn)."""
        info = self.window.render_info if self.window is not None else None
        if info is None:
            return None
        # the pane is the first row of the full-screen layout: its top left is the screen's
        return 0, 0, self.width or info.window_width, info.window_height

    def mouse(self, data: str, now: float, menu_open: bool = False) -> bool:
        """An SGR mouse report; ``False``: not the pane's (prompt_toolkit handles it:
        a click in the input line, everything while the completion menu is open)."""
        match = _SGR_MOUSE.match(data)
        geometry = self.geometry()
        if match is None or geometry is None:
            return False
        button, x, y = int(match.group(1)), int(match.group(2)) - 1, int(match.group(3)) - 1
        release = match.group(4) == "m"
        left, top, columns, rows = geometry
        inside = left <= x < left + columns and top <= y < top + rows
        on_bar = x == left + columns and top <= y < top + rows and bool(self.scrollbar_fragments())
        if menu_open and not self.pressed:
            return False  # the completion menu floats over the screen: its wheel, its clicks
        if button & 64:  # the wheel: 64 up, 65 down; bit 8 is Alt
            if button & 3 not in (0, 1):
                return True
            direction = -1 if button & 3 == 0 else 1
            lines = self.wheel.next(direction, now) * (ALT_WHEEL_FACTOR if button & 8 else 1)
            self.scroll(direction * lines)
            return True
        if button & 3 != 0 and not release:  # the middle or right button: not the pane's
            return False
        if self._bar_drag or (on_bar and not release and not button & 32):
            self._bar_drag = not release
            total = max(1, rows - 1)
            self.scroll_to(round(max(0, min(y - top, total)) * self.bottom() / total))
            return True
        row = self.first_line() + max(0, min(y - top, rows - 1))
        row = max(0, min(row, len(self.lines) - 1)) if self.lines else 0
        column = max(0, min(x - left, columns - 1))
        if release:
            if not self.pressed:
                return inside
            if self.anchor == self.focus and self._initial is None:
                self.clear_selection()  # a click: nothing selected
                return True
            self.release()
            return True
        if button & 32:  # a drag
            if not self.pressed:
                return inside
            self._drag_row = 0
            if y <= top and self.first_line() > 0:  # on the pane's first or last row, or past it: scroll on
                self.drag_outside(-1, column)
            elif y >= top + rows - 1 and self.first_line() < self.bottom():
                self.drag_outside(1, column)
            else:
                self._stop_auto_scroll()
                self.drag(row, column)
            return True
        if not inside:
            self.clear_selection()
            return False
        if self.lines:
            self.press(row, column, now)
        return True

    # ------------------------------------------------------------------ kitty images

    def image_commands(self) -> str:
        """Kitty graphics commands that put the images in view where the pane shows them
        now (sent once, then placed, moved, cropped at the pane's edges, or taken away)."""
        geometry = self.geometry()
        if geometry is None:
            return ""
        left, top, _columns, _rows = geometry
        first = self.first_line()
        last = first + self.height
        wanted: dict[int, tuple[int, ...]] = {}
        shown: dict[int, PaneImage] = {}
        for start, (image, columns, rows) in self.images.items():
            if start + rows <= first or start >= last:
                continue
            hidden = max(0, first - start)
            rows_shown = min(rows - hidden, last - max(start, first))
            wanted[image.image_id] = (
                top + max(start, first) - first,
                left + image.indent,
                columns,
                rows,
                hidden,
                rows_shown,
            )
            shown[image.image_id] = image
        out = [img.kitty_remove(image_id) for image_id in self._placed if image_id not in wanted]
        for image_id, spot in wanted.items():
            if self._placed.get(image_id) == spot:
                continue
            image = shown[image_id]
            if image_id not in self._sent:
                out.append(img.kitty_transmit(image.payload, image_id))
                self._sent.add(image_id)
            row, column, columns, rows, hidden, rows_shown = spot
            place = img.kitty_place(image_id, columns, rows, image.size, hidden, rows_shown)
            out.append(f"\x1b7\x1b[{row + 1};{column + 1}H{place}\x1b8")
        self._placed = wanted
        return "".join(out)

    def forget_placements(self) -> str:
        """The screen is cleared or handed to a dialog: take the images away (they are
        placed again at the next draw)."""
        placed, self._placed = self._placed, {}
        return "".join(img.kitty_remove(image_id) for image_id in placed)

    def release_images(self) -> str:
        """pi leaves the alternate screen: the terminal frees the images sent."""
        sent, self._sent, self._placed = self._sent, set(), {}
        return img.kitty_free_all() if sent else ""

    # ------------------------------------------------------------------ drawing

    def line_fragments(self, index: int) -> StyleAndTextTuples:
        cached = self._fragments.get(index)
        if cached is None:
            cached = list(to_formatted_text(ANSI(self.lines[index])))
            self._fragments[index] = cached
        if self.searching and self.matches and 0 <= self.match_index < len(self.matches):
            if self.matches[self.match_index] == index:
                return [(f"{part[0]} reverse", part[1]) for part in cached] or [("reverse", " ")]
        bounds = self.bounds()
        if bounds is not None and bounds[0][0] <= index <= bounds[1][0]:
            return self._highlight(cached, *self._columns(index, *bounds, 10**6))
        return cached

    @staticmethod
    def _highlight(fragments: StyleAndTextTuples, start: int, end: int) -> StyleAndTextTuples:
        out: StyleAndTextTuples = []
        column = 0
        for fragment in fragments:
            style, text = fragment[0], fragment[1]
            if "[ZeroWidthEscape]" in style:
                out.append((style, text))
                continue
            for char in text:
                out.append((f"{style} reverse" if start <= column < end else style, char))
                column += get_cwidth(char)
        return out

    def scrollbar_fragments(self) -> StyleAndTextTuples:
        total, height = len(self.lines), self.height
        if self.scrollbar == "hidden" or (self.scrollbar == "auto" and total <= height) or height <= 0:
            return []
        total = max(total, 1)
        size = max(1, height * height // max(total, height))
        start = (height - size) * self.first_line() // max(1, total - height) if total > height else 0
        out: StyleAndTextTuples = []
        for row in range(height):
            thumb = start <= row < start + size
            out.append(("class:scrollbar.thumb" if thumb else "class:scrollbar", "▐" if thumb else "│"))
        return out


class _PaneControl(UIControl):
    """The transcript's lines, laid out for the window's width, the scrollbar in the last column."""

    def __init__(self, pane: TranscriptPane) -> None:
        self.pane = pane

    def create_content(self, width: int, height: int) -> UIContent:
        pane = self.pane
        pane.height = max(1, height)
        margin = 0 if pane.scrollbar == "hidden" else 1
        pane.relayout(max(10, width - margin))
        first = pane.first_line()
        count = max(0, min(height, len(pane.lines) - first))
        bar = pane.scrollbar_fragments()
        text_width = pane.width

        def get_line(row: int) -> StyleAndTextTuples:
            line = pane.line_fragments(first + row) if row < count else []
            if not bar:
                return line
            pad = max(0, text_width - fragment_list_width(line))
            return [*line, ("", " " * pad), bar[row]]

        return UIContent(get_line=get_line, line_count=height if bar else count, show_cursor=False)

    def is_focusable(self) -> bool:
        return False


def pane_container(pane: TranscriptPane, bottom: Any) -> HSplit:
    """The fullscreen layout: the transcript pane (and its scrollbar) over the search
    line and ``bottom`` (the prompt session's own layout: live area, input line, menus)."""
    transcript = Window(_PaneControl(pane), height=Dimension(min=1, preferred=10**6), wrap_lines=False)
    pane.window = transcript
    search = ConditionalContainer(
        Window(FormattedTextControl(pane.search_line), height=Dimension.exact(1)),
        filter=Condition(lambda: pane.searching),
    )
    return HSplit([transcript, search, bottom])


_DEFAULT_MOUSE = next(b for b in load_mouse_bindings().bindings if b.keys == (Keys.Vt100MouseEvent,))


def pane_bindings(pane: TranscriptPane, keymap: Any) -> KeyBindings:
    """The ``tui.altScreen.*`` keys (ahead of the input line's own: they win on the same
    key); the search keys only while searching, where typed text goes to the query; the
    mouse (the wheel and selection in the pane, the rest as prompt_toolkit does it)."""
    kb = KeyBindings()
    menu_closed = ~has_completions
    searching = Condition(lambda: pane.searching)

    def page() -> int:
        return max(1, pane.height - 1)

    def half() -> int:
        return max(1, pane.height // 2)

    scroll_actions: dict[str, Callable[[], None]] = {
        "tui.altScreen.pageUp": lambda: pane.scroll(-page()),
        "tui.altScreen.pageDown": lambda: pane.scroll(page()),
        "tui.altScreen.halfPageUp": lambda: pane.scroll(-half()),
        "tui.altScreen.halfPageDown": lambda: pane.scroll(half()),
        "tui.altScreen.lineUp": lambda: pane.scroll(-1),
        "tui.altScreen.lineDown": lambda: pane.scroll(1),
        "tui.altScreen.previousPrompt": lambda: pane.jump_prompt(-1),
        "tui.altScreen.nextPrompt": lambda: pane.jump_prompt(1),
        "tui.altScreen.top": pane.to_top,
        "tui.altScreen.bottom": pane.to_bottom,
        "tui.altScreen.search": pane.open_search,
    }
    for action, run in scroll_actions.items():
        for keys in keymap.keys(action):
            kb.add(*keys, filter=menu_closed, eager=True)(_run(run))
    search_actions: dict[str, Callable[[], None]] = {
        "tui.altScreen.searchNext": lambda: pane.next_match(-1),
        "tui.altScreen.searchPrevious": lambda: pane.next_match(1),
        "tui.altScreen.searchClose": pane.close_search,
    }
    for action, run in search_actions.items():
        for keys in keymap.keys(action):
            kb.add(*keys, filter=searching, eager=True)(_run(run))

    @kb.add("<any>", filter=searching)
    def _type(event: KeyPressEvent) -> None:
        data = event.key_sequence[0].data if event.key_sequence else ""
        if data and data.isprintable():
            pane.set_query(pane.query + data)

    @kb.add("backspace", filter=searching, eager=True)
    @kb.add("c-h", filter=searching, eager=True)
    def _erase(event: KeyPressEvent) -> None:
        pane.set_query(pane.query[:-1])

    @kb.add(Keys.Vt100MouseEvent)
    def _mouse(event: KeyPressEvent) -> Any:
        data = event.key_sequence[0].data if event.key_sequence else ""
        menu_open = event.app.current_buffer.complete_state is not None
        if pane.mouse(data, time.monotonic(), menu_open):
            return None
        return _DEFAULT_MOUSE.handler(event)

    return kb


def _run(action: Callable[[], None]) -> Callable[[KeyPressEvent], None]:
    def handler(event: KeyPressEvent) -> None:
        action()

    return handler
