"""Fullscreen mode's mouse, resizing and images, through a terminal emulator (pyte) with
the real ``pi`` in a pseudo-terminal: the wheel scrolls the transcript pane
(``fullscreenWheelScrollLines``, Alt+wheel five times as far), a drag selects text and
copies it with OSC 52 when the button comes up (``fullscreenCopyOnSelect``; off: Ctrl+X
copies it), a double click picks a word; a resize (the pty's window size and SIGWINCH)
lays the transcript out again for the new width, in fullscreen and in regular mode; a
PNG is placed with the kitty graphics protocol where the pane shows it.

Mouse reports are SGR 1006 sequences, as a terminal sends them: ``ESC [ < b ; x ; y M``
(press, drag with 32 added, wheel 64 up / 65 down, Alt adds 8) and ``… m`` (release),
``x`` and ``y`` counted from 1."""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir
from tui_screen import PI, Screen, screen_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from test_tui_images import PAYLOAD, PICTURE, read_call, reply
from wire_server import WireServer, use_server

DEMO = ("--no-extensions", "--model", "faux/offline-demo")
PAGE_UP = "\x1b[5~"
CTRL_X = "\x18"
ALT_SCREEN_OFF = "\x1b[?1049l"


def press(x: int, y: int) -> str:
    return f"\x1b[<0;{x + 1};{y + 1}M"


def drag(x: int, y: int) -> str:
    return f"\x1b[<32;{x + 1};{y + 1}M"


def release(x: int, y: int) -> str:
    return f"\x1b[<0;{x + 1};{y + 1}m"


def wheel(up: bool, x: int = 10, y: int = 5, alt: bool = False) -> str:
    return f"\x1b[<{(64 if up else 65) + (8 if alt else 0)};{x + 1};{y + 1}M"


def osc52(text: str) -> str:
    return f"\x1b]52;c;{base64.b64encode(text.encode()).decode()}\x07"


def no_clipboard_tools(**extra: str) -> dict[str, str]:
    """No display: the copy goes through the terminal (OSC 52), as on a remote machine."""
    env = screen_env()
    env.update(extra)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(name, None)
    return env


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[..., Screen]]:
    started: list[Screen] = []

    def start(*args: str, columns: int = 100, rows: int = 30, model: tuple[str, ...] = DEMO, **env: str) -> Screen:
        environment = no_clipboard_tools(**env)
        environment.update(COLUMNS=str(columns), LINES=str(rows))
        screen = Screen([*PI, *model, *args], cwd=project, env=environment, columns=columns, rows=rows)
        started.append(screen)
        return screen

    yield start
    for screen in started:
        screen.close()


def runs(screen: Screen, count: int) -> None:
    for n in range(count):
        screen.line(f"message number {n}")
        screen.wait_for(f'really answer "message number {n}"')
        screen.wait_for("↑")
    screen.settle()


def pane_text(screen: Screen, rows: int = 12) -> list[str]:
    """The first ``rows`` rows without the scrollbar's column."""
    return [line[: screen.screen.columns - 1].rstrip() for line in screen.lines()[:rows]]


def row_of(screen: Screen, text: str) -> int:
    for y, line in enumerate(screen.lines()):
        if text in line:
            return y
    raise AssertionError(f"{text!r} is not on the screen:\n{screen.text()}")


def resize(screen: Screen, rows: int, columns: int) -> None:
    """The terminal window changes size: the pty's size (the kernel sends SIGWINCH) and the emulator's."""
    screen.screen.resize(rows, columns)
    screen.child.setwinsize(rows, columns)


def test_the_wheel_scrolls_the_pane(spawn: Callable[..., Screen]) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"tuiMode": "fullscreen", "fullscreenWheelScrollLines": 3}))
    screen = spawn()
    runs(screen, 8)
    raw = screen.raw_text()
    assert "\x1b[?1006h" in raw and "\x1b[?1000h" in raw  # the terminal reports the mouse (SGR)
    before = pane_text(screen)
    screen.send(wheel(up=True))
    screen.settle()
    after = pane_text(screen)
    assert after[3:] == before[:-3]  # three lines a notch
    screen.send(wheel(up=True, alt=True))  # Alt: five times as far
    screen.settle()
    assert pane_text(screen, 24)[15:] == after[:9]
    screen.send(wheel(up=False, alt=True) + wheel(up=False))
    screen.settle()
    assert pane_text(screen) == before  # back where it was
    screen.send("\x04")
    assert screen.wait_exit() == 0


def test_a_drag_selects_and_copies_with_osc_52(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    runs(screen, 2)
    y = row_of(screen, "› message number 0")
    x = screen.lines()[y].index("›")
    end = screen.lines()[y].index("number 0") + len("number 0") - 1
    screen.send(press(x, y) + drag(x + 4, y) + drag(end, y))
    screen.settle()
    cells = screen.screen.buffer[y]
    assert all(cells[c].reverse for c in range(x, end + 1)) and not cells[end + 1].reverse  # drawn selected
    assert osc52("› message number 0") not in screen.raw_text()  # not yet: the button is still down
    screen.send(release(end, y))
    screen.wait_for("Copied!")
    assert osc52("› message number 0") in screen.raw_text()
    # a drag over two lines copies both, each without its trailing blanks
    top = row_of(screen, "› message number 1")
    screen.send(press(x, top) + drag(8, top + 1) + release(8, top + 1))
    screen.settle()
    second = screen.lines()[top + 1][:9].rstrip()
    assert osc52(screen.lines()[top][x:].rstrip() + "\n" + second) in screen.raw_text()
    screen.send("\x04")
    assert screen.wait_exit() == 0


def test_a_drag_held_at_the_top_scrolls_on(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    runs(screen, 8)
    assert "› message number 1" not in screen.text()
    y = row_of(screen, "› message number 6")
    screen.send(press(2, y) + drag(2, y - 1) + drag(2, 0))  # to the first row and held there
    screen.wait_for("› message number 1")  # the pane scrolls by itself while the button is down
    screen.send(release(2, 0))
    screen.wait_for("Copied!")
    copied = [base64.b64decode(p).decode() for p in re.findall(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", screen.raw_text())]
    assert len(copied) == 1 and "message number 1" in copied[0] and copied[0].endswith("\n› m")
    screen.send("\x04")
    assert screen.wait_exit() == 0


def test_copy_on_select_off_and_ctrl_x(spawn: Callable[..., Screen]) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"tuiMode": "fullscreen", "fullscreenCopyOnSelect": False}))
    screen = spawn()
    runs(screen, 1)
    y = row_of(screen, "› message number 0")
    x = screen.lines()[y].index("message")
    screen.send(press(x, y) + drag(x + 6, y) + release(x + 6, y))
    screen.settle()
    assert screen.screen.buffer[y][x].reverse  # selected, not copied
    assert "\x1b]52;" not in screen.raw_text()
    screen.send(CTRL_X)  # app.message.copy: the selection, not the last answer
    screen.wait_for("Copied!")
    assert osc52("message") in screen.raw_text()
    screen.send("\x04")
    assert screen.wait_exit() == 0


def test_settings_turns_copy_on_select_off_at_once(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    runs(screen, 1)
    screen.line("/settings")
    screen.wait_for("fullscreenCopyOnSelect = true")
    screen.send("CopyOnSelect\r")  # the filter, then Enter toggles the boolean
    screen.wait_for("fullscreenCopyOnSelect = false")
    screen.send("\x1b")
    screen.wait_for("› message number 0")  # the pane is back
    screen.settle()
    assert json.loads((agent_dir() / "settings.json").read_text()) == {"fullscreenCopyOnSelect": False}
    y = row_of(screen, "› message number 0")
    x = screen.lines()[y].index("number")
    screen.send(press(x, y) + drag(x + 5, y) + release(x + 5, y))
    screen.settle()
    assert screen.screen.buffer[y][x].reverse and "\x1b]52;" not in screen.raw_text()
    screen.send(CTRL_X)
    screen.wait_for("Copied!")
    assert osc52("number") in screen.raw_text()
    screen.send("\x04")
    assert screen.wait_exit() == 0


def test_a_double_click_picks_a_word_and_a_click_clears(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    runs(screen, 1)
    y = row_of(screen, "› message number 0")
    x = screen.lines()[y].index("number") + 2
    screen.send(press(x, y) + release(x, y) + press(x, y) + release(x, y))
    screen.wait_for("Copied!")
    assert osc52("number") in screen.raw_text()
    start = screen.lines()[y].index("number")
    assert [screen.screen.buffer[y][c].reverse for c in range(start - 1, start + 7)] == [False] + [True] * 6 + [False]
    screen.send(press(2, 1) + release(2, 1))  # a single click elsewhere: nothing selected
    screen.settle()
    assert not screen.screen.buffer[y][start].reverse
    screen.send("\x04")
    assert screen.wait_exit() == 0


WORDS = " ".join(f"alpha{n:02d}" for n in range(1, 31))


def test_the_pane_rewraps_when_the_terminal_is_resized(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    screen.line(WORDS)
    screen.wait_for("really answer")
    screen.settle()
    y = row_of(screen, "› alpha01")
    assert "alpha11" in screen.lines()[y] and "alpha30" not in screen.lines()[y]  # wrapped at 99 columns
    resize(screen, 30, 60)
    screen.settle()
    lines = screen.lines()
    assert max(len(line) for line in lines) <= 60
    y = row_of(screen, "› alpha01")
    assert "alpha07" in lines[y] and "alpha08" not in lines[y]  # 59 columns of text: 7 words
    text = "\n".join(lines)
    assert all(f"alpha{n:02d}" in text for n in range(1, 31))  # nothing cut off
    resize(screen, 30, 140)
    screen.settle()
    y = row_of(screen, "› alpha01")
    assert "alpha17" in screen.lines()[y]  # joined again for the wider terminal
    screen.line("/quit")
    assert screen.wait_exit() == 0
    after = re.sub(r"\x1b\[[0-9;]*m", "", screen.raw_text().rsplit(ALT_SCREEN_OFF, 1)[1])
    assert re.search(r"› alpha01 [^\r\n]* alpha17\r\n", after)  # the transcript on the normal screen, 140 columns


def test_regular_mode_prints_for_the_new_width_after_a_resize(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "regular")
    screen.wait_for("faux/offline-demo")
    resize(screen, 30, 60)
    screen.settle()
    screen.line(WORDS)
    screen.wait_for("really answer")
    screen.settle()
    text = "\n".join(screen.scrollback())
    # rich wrapped the line at 60 columns between words (COLUMNS=100 went stale with the
    # resize): no word is cut by the terminal's own wrapping
    assert all(f"alpha{n:02d}" in text for n in range(1, 31)), text
    assert max(len(line) for line in screen.lines()) <= 60


# --------------------------------------------------------------------------- images


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def local_model(project: Path, wire: WireServer) -> tuple[str, ...]:
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024, "input": ["text", "image"]}],
    }
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    (project / "chart.png").write_bytes(PICTURE)
    return ("--no-extensions", "--model", "local/local-model")


def test_kitty_places_an_image_in_the_pane_and_moves_it(
    spawn: Callable[..., Screen], project: Path, wire: WireServer
) -> None:
    screen = spawn("--tui-mode", "fullscreen", model=local_model(project, wire), KITTY_WINDOW_ID="1")
    screen.wait_for("local/local-model")
    for n in range(3):  # enough transcript to scroll
        wire.enqueue(reply(f"Answer {n}.\n\n" + "\n\n".join(f"line {n}.{k}" for k in range(4))))
        screen.line(f"question {n}")
        screen.wait_for(f"line {n}.3")
    wire.enqueue(read_call("chart.png"), reply("A grey chart."))
    screen.line("look at chart.png")
    screen.wait_for("A grey chart.")
    screen.settle()
    raw = screen.raw_text()
    sent = re.search(r"\x1b_Ga=t,f=100,q=2,i=(\d+);([A-Za-z0-9+/=]+)\x1b\\", raw)
    assert sent and sent.group(2) == PAYLOAD  # sent once, then placed
    image_id = sent.group(1)
    places = re.findall(rf"\x1b7\x1b\[(\d+);(\d+)H\x1b_Ga=p,q=2,i={image_id},p=1,C=1,c=60,r=12\x1b\\\x1b8", raw)
    assert places, raw[-3000:]
    row, column = int(places[-1][0]) - 1, int(places[-1][1]) - 1
    assert column == 5  # outputPad 1 + the tool's indent
    assert "Read image file" in screen.lines()[row - 1]  # under the tool's line
    assert all(not line[:99].strip() for line in screen.lines()[row : row + 12])  # the cells it covers
    assert "[Image:" not in screen.text()
    count = len(raw)
    screen.send(PAGE_UP)  # the pane scrolls: the image is placed lower, cut at the bottom, or taken away
    screen.settle()
    moved = screen.raw_text()[count:]
    assert re.search(rf"\x1b_Ga=p,q=2,i={image_id},p=1,C=1,c=60,r=\d+(,y=\d+,h=\d+)?\x1b\\", moved) or (
        f"\x1b_Ga=d,d=i,i={image_id},q=2\x1b\\" in moved
    )
    assert f"a=t,f=100,q=2,i={image_id}" not in moved  # not sent again
    screen.line("/quit")
    assert screen.wait_exit() == 0
    raw = screen.raw_text()
    assert raw.rindex("\x1b_Ga=d,d=A,q=2\x1b\\") < raw.rindex(ALT_SCREEN_OFF)  # freed before leaving
    assert "[Image: [image/png] 90x36]" in raw.rsplit(ALT_SCREEN_OFF, 1)[1]  # the normal screen gets text


# --------------------------------------------------------------------------- beside pi 1.6.0


def copied_by_a_drag(argv: list[str], wire: WireServer, root: Path, agent: Path) -> list[str]:
    """Two answers in the program ``argv`` (fullscreen, a local model), then a drag over
    "line 1.1" of the second: what reached the clipboard through OSC 52."""
    root.mkdir(parents=True, exist_ok=True)
    agent.mkdir(parents=True, exist_ok=True)
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    for n in range(2):
        wire.enqueue(reply(f"Answer {n}.\n\n" + "\n\n".join(f"line {n}.{k}" for k in range(3))))
    screen = Screen(argv, cwd=root, env=no_clipboard_tools(PI_CODING_AGENT_DIR=str(agent)))
    try:
        screen.wait_for("local-model")
        screen.settle(1.0)
        for n in range(2):
            screen.line(f"question {n}")
            screen.wait_for(f"line {n}.2")
        screen.settle(1.0)
        y = row_of(screen, "line 1.1")
        x = screen.lines()[y].index("line 1.1")
        screen.send(press(x, y) + drag(x + 3, y) + drag(x + 7, y))
        screen.settle(0.5)
        screen.send(release(x + 7, y))
        screen.settle(1.0)
        payloads = re.findall(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", screen.raw_text())
        return [base64.b64decode(payload).decode() for payload in payloads]
    finally:
        screen.close()


def test_a_drag_copies_the_cells_it_covers(wire: WireServer, tmp_path: Path) -> None:
    argv = [*PI, "--tui-mode", "fullscreen", "--no-extensions", "--model", "local/local-model"]
    assert copied_by_a_drag(argv, wire, tmp_path / "ours", agent_dir()) == ["line 1.1"]


def test_a_drag_copies_what_pi_1_6_0_copies(wire: WireServer, tmp_path: Path) -> None:
    pi_ts = os.environ.get("PI_TS")
    if not pi_ts or not os.access(pi_ts, os.X_OK):
        pytest.skip("PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)")
    argv = [pi_ts, "--tui-mode", "fullscreen", "--no-extensions", "--model", "local/local-model"]
    assert copied_by_a_drag(argv, wire, tmp_path / "pi-ts", tmp_path / "pi-ts-agent") == ["line 1.1"]


# --------------------------------------------------------------------------- the parts


def test_auto_wheel_speeds_up_a_fast_spin_only() -> None:
    from pi_core.cli.tui.fullscreen import WheelScroll

    wheel = WheelScroll("auto", accelerate=True)
    assert wheel.next(-1, 10.0) == 1  # a gesture starts with one line
    assert wheel.next(-1, 10.1) == 1  # notches 100 ms apart: one line each
    spun = [wheel.next(-1, 10.1 + 0.02 * n) for n in range(1, 6)]
    assert spun[-1] >= 4 and max(spun) <= 6  # 20 ms apart: faster, at most 6 a notch
    assert wheel.next(1, 10.25) == 1  # the other way: a new gesture
    assert wheel.next(1, 11.0) == 1  # after a pause: a new gesture
    assert WheelScroll("auto", accelerate=False).next(-1, 0.0) == 1  # macOS: the terminal accelerates
    assert [WheelScroll(n).next(1, 0.0) for n in (3, 0, 500, True, "x")] == [3, 1, 100, 1, 1]


def test_wrapping_keeps_the_styles_of_a_cut_line() -> None:
    from pi_core.cli.tui.fullscreen import visible, wrap_line

    line = "\x1b[1mbold " + "x" * 12 + "\x1b[0m end"
    pieces = wrap_line(line, 10)
    assert [visible(p) for p in pieces] == ["bold xxxxx", "xxxxxxx en", "d"]
    assert pieces[1].startswith("\x1b[1m") and pieces[0].endswith("\x1b[0m")  # bold goes on, then ends
    assert not pieces[2].startswith("\x1b[1m")
    assert wrap_line("中文中文中", 4) == ["中文", "中文", "中"]  # wide characters take two cells


def test_a_resize_keeps_the_line_at_the_top_in_view(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    runs(screen, 8)
    screen.send("\x1b[1;6A" * 3)  # tui.altScreen.previousPrompt: a message of yours at the top
    screen.settle()
    top = screen.lines()[0][:18]
    assert top.startswith("› message number ") and top != "› message number 7"
    resize(screen, 30, 50)
    screen.settle()
    assert max(len(line) for line in screen.lines()) <= 50
    assert screen.lines()[0].startswith(top)  # still at the top, not thrown back to the end
    screen.send("\x04")
    assert screen.wait_exit() == 0
