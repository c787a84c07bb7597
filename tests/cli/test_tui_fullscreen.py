"""Fullscreen mode, looked at through a terminal emulator (pyte, 100 x 30) with the real
``pi`` on the offline demo model: the transcript in a pane above the input line on the
alternate screen, scrolled and searched with the ``tui.altScreen.*`` keys (remappable in
keybindings.json), and printed to the normal screen when pi exits."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir
from tui_screen import PI, Screen, screen_env

DEMO = ("--no-extensions", "--model", "faux/offline-demo")
PAGE_UP, CTRL_END = "\x1b[5~", "\x1b[1;5F"
CTRL_SHIFT_UP, CTRL_SHIFT_F = "\x1b[1;6A", "\x1b[102;6u"
ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[..., Screen]]:
    started: list[Screen] = []

    def start(*args: str) -> Screen:
        screen = Screen([*PI, *DEMO, *args], cwd=project, env=screen_env())
        started.append(screen)
        return screen

    yield start
    for screen in started:
        screen.close()


def runs(screen: Screen, count: int = 3) -> None:
    for n in range(count):
        screen.line(f"message number {n}")
        screen.wait_for(f'really answer "message number {n}"')
        screen.wait_for("↑")
    screen.settle()


def test_the_transcript_scrolls_in_a_pane_above_the_input_line(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    screen.wait_for("faux/offline-demo")
    assert screen.lines()[0].startswith("pi ")  # the header at the top of the alternate screen
    assert screen.lines()[-1].startswith("›")  # the input line at the bottom, the rows between free
    runs(screen, 4)
    lines = screen.lines()
    assert lines[-1].startswith("›") and "› message number 3" in screen.text()
    assert "› message number 0" not in screen.text()  # scrolled out of the pane, not into scrollback
    assert {line[-1] for line in lines[:-1] if len(line) == 100} <= {"│", "▐"}  # the scrollbar
    screen.send(PAGE_UP)
    screen.wait_for("› message number 0")
    assert "› message number 3" not in screen.text()
    screen.send(CTRL_END)  # back to the end, following new output
    screen.wait_for("› message number 3")
    screen.line("/quit")
    assert screen.wait_exit() == 0
    raw = screen.raw_text()
    assert ALT_SCREEN_ON in raw and raw.rindex(ALT_SCREEN_OFF) > raw.index(ALT_SCREEN_ON)
    after = raw[raw.rindex(ALT_SCREEN_OFF) :]  # fullscreenExitOutput "transcript": printed on the normal screen
    for n in range(4):
        assert f"message number {n}" in after
    assert "Resume it with: pi --session" in after


def test_previous_prompt_and_search(spawn: Callable[..., Screen]) -> None:
    screen = spawn("--tui-mode", "fullscreen")
    runs(screen, 4)
    screen.send(CTRL_SHIFT_UP)  # the message of yours that starts above the pane, at its top
    screen.wait_for("› message number 1")
    screen.settle()
    assert screen.lines()[0].startswith("› message number 1 ")
    screen.send(CTRL_SHIFT_UP)
    screen.wait_for("› message number 0")
    screen.settle()
    assert screen.lines()[0].startswith("› message number 0 ")
    screen.send(CTRL_END)
    screen.wait_for("› message number 3")
    screen.send(CTRL_SHIFT_F)
    screen.wait_for("Search:")
    screen.send("number 0")
    screen.wait_for("Search: number 0  2/2")  # the newest of two matches first
    assert "› message number 0" in screen.text()
    screen.send("\r")  # searchNext: the match above, not a message sent
    screen.wait_for("Search: number 0  1/2")
    screen.send("\x1b")  # searchClose
    screen.wait_gone("Search:")
    assert "message number 0message" not in screen.text()
    screen.send("\x04")  # Ctrl+D on the empty line: the query never reached the input line
    assert screen.wait_exit() == 0


def test_the_settings_and_keybindings_json(spawn: Callable[..., Screen]) -> None:
    (agent_dir() / "settings.json").write_text(
        json.dumps({"tuiMode": "fullscreen", "fullscreenExitOutput": "resume-hint", "fullscreenScrollbar": "hidden"})
    )
    (agent_dir() / "keybindings.json").write_text(json.dumps({"tui.altScreen.top": "alt+t"}))
    screen = spawn()
    runs(screen)
    assert not any(line.endswith(("│", "▐")) for line in screen.lines())
    screen.send("\x1bt")  # alt+t: the top of the transcript
    screen.wait_for("faux/offline-demo · thinking")
    assert screen.lines()[0].startswith("pi ")
    screen.line("/quit")
    assert screen.wait_exit() == 0
    after = screen.raw_text().rsplit(ALT_SCREEN_OFF, 1)[1]
    assert "message number" not in after and "Resume it with: pi --session" in after
