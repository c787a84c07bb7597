"""The real ``pi`` (or pi 1.6.0 through ``PI_TS``) in a pseudo-terminal, read through the
pyte terminal emulator: tests look at the screen a user sees, cell by cell, not at the
bytes written. Waits are for text on the screen or for the terminal to read keys; the
timeout is only the safety net of a failing test."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from interactive_pty import TIMEOUT, clean_env, pty_or_skip, raw_mode

PI = [sys.executable, "-m", "pi_core"]


class Screen:
    """One program on a ``columns`` x ``rows`` terminal emulated by pyte."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        columns: int = 100,
        rows: int = 30,
        raw_log: list[str] | None = None,
    ) -> None:
        pexpect = pty_or_skip()
        pyte = pytest.importorskip("pyte")
        self.pexpect = pexpect
        self.screen = pyte.HistoryScreen(columns, rows, history=20000, ratio=0.5)
        self.stream = pyte.Stream(self.screen)
        self.raw: list[str] = raw_log if raw_log is not None else []
        self.child = pexpect.spawn(
            argv[0],
            argv[1:],
            cwd=str(cwd),
            env=env or clean_env(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(rows)),
            dimensions=(rows, columns),
            encoding="utf-8",
            codec_errors="replace",
            timeout=TIMEOUT,
        )
        self.child.logfile_read = _Feed(self)

    # ------------------------------------------------------------------ reading

    def pump(self, seconds: float = 0.05) -> None:
        """Read what the program wrote for ``seconds`` (into the emulated screen)."""
        try:
            self.child.expect([self.pexpect.TIMEOUT], timeout=seconds)
        except self.pexpect.EOF:
            pass

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def scrollback(self) -> list[str]:
        """The lines scrolled off the top of the screen, then the screen's (what a user
        scrolling back sees: the whole transcript in regular mode)."""
        columns = self.screen.columns
        above = ["".join(row[x].data for x in range(columns)).rstrip() for row in self.screen.history.top]
        return above + self.lines()

    def wait_for(self, text: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.text():
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {text!r} on the screen:\n{self.text()}")
            if not self.child.isalive():
                self.pump(0.1)
                if text in self.text():
                    return
                raise AssertionError(f"the program exited before {text!r} showed:\n{self.text()}")
            self.pump()

    def wait_gone(self, text: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text in self.text():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} stayed on the screen:\n{self.text()}")
            self.pump()

    def settle(self, quiet: float = 0.4, timeout: float = TIMEOUT) -> None:
        """Until the screen has not changed for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        last, since = self.text(), time.monotonic()
        while time.monotonic() - since < quiet and time.monotonic() < deadline:
            self.pump()
            now = self.text()
            if now != last:
                last, since = now, time.monotonic()

    def raw_text(self) -> str:
        return "".join(self.raw)

    # ------------------------------------------------------------------ typing

    def send(self, keys: str) -> None:
        """Type ``keys`` once the program reads keys (raw mode)."""
        deadline = time.monotonic() + TIMEOUT
        while not raw_mode(self.child.child_fd):
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing reads the keys; the screen:\n{self.text()}")
            self.pump(0.01)
        self.child.send(keys)

    def line(self, text: str) -> None:
        self.send(text + "\r")

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)

    def wait_exit(self) -> int:
        try:
            self.child.expect(self.pexpect.EOF)
        except self.pexpect.TIMEOUT as exc:
            raise AssertionError(f"the program did not exit; the screen:\n{self.text()}") from exc
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0))


class _Feed:
    """The program's output into the raw log and the emulated screen. pyte knows no APC
    strings (the kitty graphics protocol's ``ESC _ G … ESC \\``): they are taken out, as a
    terminal consumes them, even when split across reads."""

    def __init__(self, owner: Screen) -> None:
        self.owner = owner
        self.pending = ""

    def write(self, data: str) -> None:
        self.owner.raw.append(data)
        data, self.pending = self.pending + data, ""
        out = []
        while True:
            start = data.find("\x1b_")
            if start < 0:
                break
            end = data.find("\x1b\\", start)
            if end < 0:
                self.pending = data[start:]
                data = data[:start]
                break
            out.append(data[:start])
            data = data[end + 2 :]
        out.append(data)
        self.owner.stream.feed("".join(out))

    def flush(self) -> None:
        pass


def screen_env(columns: int = 100, rows: int = 30, **extra: Any) -> dict[str, str]:
    """The test environment for a pyte screen: colours on (pyte reads them), a plain
    xterm, no cursor-position queries."""
    env = clean_env(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(rows), **extra)
    env.pop("NO_COLOR", None)
    return env
