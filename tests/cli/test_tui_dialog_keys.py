"""Keys typed right after a dialog closes with Esc, read through pyte with the real ``pi``
(issue 34: "an Enter typed within 0.3 s after leaving /settings with Esc is lost"). The
draft survives the model picker (Ctrl+L); Esc closes the picker and the Enter that
follows - in the same write, as a multiplexer holding Esc sends it, or 0.05 to 0.3 s
later - submits the draft; text typed right after leaving ``/settings`` is sent whole."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tui_screen import PI, Screen, screen_env


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[[], Screen]]:
    started: list[Screen] = []

    def start() -> Screen:
        screen = Screen([*PI, "--no-extensions", "--model", "faux/offline-demo"], cwd=project, env=screen_env())
        started.append(screen)
        return screen

    yield start
    for screen in started:
        screen.close()


@pytest.mark.parametrize("delay", [None, 0.05, 0.15, 0.3])
def test_enter_right_after_esc_submits_the_draft(spawn: Callable[[], Screen], delay: float | None) -> None:
    screen = spawn()
    screen.wait_for("›")
    screen.send("hello there")
    screen.send("\x0c")  # Ctrl+L: the model picker; the draft is kept
    screen.wait_for("Which model?")
    if delay is None:
        screen.child.send("\x1b\r")  # Esc and Enter in one write
    else:
        screen.child.send("\x1b")
        time.sleep(delay)
        screen.child.send("\r")
    screen.wait_for('really answer "hello there"', timeout=15)
    assert "? Which model? · (cancelled)" in screen.text()  # the picker closed by Esc, not by the Enter


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3])
def test_typing_right_after_leaving_settings(spawn: Callable[[], Screen], delay: float) -> None:
    screen = spawn()
    screen.wait_for("›")
    screen.line("/settings")
    screen.settle(0.3)
    screen.send("\x1b")
    time.sleep(delay)
    screen.child.send("hello there\r")
    screen.wait_for('really answer "hello there"', timeout=15)
