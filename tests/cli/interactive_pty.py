"""Drive the real ``pi`` in a pseudo-terminal (pexpect) for the interactive tests.

prompt_toolkit redraws only what changed, with escape sequences between characters,
so :func:`loose` turns expected text into a pattern that tolerates them. Waits are
always for output or for the terminal's state, never fixed sleeps; ``TIMEOUT`` is only
the safety net of a test that fails.

Keys are typed only while pi reads them (:meth:`Pi.send`): between two prompt_toolkit
applications (the input line, a dialog), while a command runs in line or while pi
prints above the input line, the terminal is in cooked mode, and there a CR (Enter)
becomes a LF (Ctrl+J: a new line).
"""

from __future__ import annotations

import os
import re
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

PI = [sys.executable, "-m", "pi_core"]
ESCAPES = r"(?:\x1b\[[0-9;?]*[ -/]*[@-~]|[\r\x08])*"
TIMEOUT = 60
"""Seconds an expected output or state may take: the safety net of a failing test."""


def loose(text: str) -> str:
    """A regex matching ``text`` even with terminal escape sequences between characters."""
    return ESCAPES.join(re.escape(char) for char in text)


def pty_or_skip() -> Any:
    """The pexpect module, or a skip when this machine cannot open a pseudo-terminal."""
    pexpect = pytest.importorskip("pexpect")
    try:
        master, slave = os.openpty()
    except OSError as exc:
        pytest.skip(f"no pseudo-terminal available: {exc}")
    os.close(master)
    os.close(slave)
    return pexpect


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment (it holds the private PI_CODING_AGENT_DIR), without
    provider keys, plus: no cursor-position queries (no terminal answers them here), no
    colours, a plain terminal type."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN"))}
    env.pop("PI_OFFLINE", None)
    env.update(PROMPT_TOOLKIT_NO_CPR="1", NO_COLOR="1", TERM="xterm", COLUMNS="160", LINES="40")
    env.update(extra)
    return env


class Pi:
    """One interactive ``pi`` process on the offline demo model, without installed plugins."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        pexpect = pty_or_skip()
        self.pexpect = pexpect
        self.log: list[str] = []
        self.child = pexpect.spawn(
            PI[0],
            [*PI[1:], "--no-extensions", "--model", "faux/offline-demo", *args],
            cwd=str(cwd),
            env=env or clean_env(),
            dimensions=(40, 160),
            encoding="utf-8",
            codec_errors="replace",
            timeout=TIMEOUT,
        )
        self.child.logfile_read = _Collector(self.log)

    def expect(self, text: str) -> str:
        """Wait for ``text`` (escape sequences allowed between its characters)."""
        return self.expect_re(loose(text))

    def expect_re(self, pattern: str) -> str:
        try:
            self.child.expect(pattern)
        except (self.pexpect.TIMEOUT, self.pexpect.EOF) as exc:
            raise AssertionError(f"never saw {pattern!r}; the terminal showed:\n{self.screen_text()[-3000:]}") from exc
        return str(self.child.after)

    def send(self, keys: str) -> None:
        """Type ``keys`` once pi reads keys (:func:`wait_for_raw_mode`)."""
        try:
            wait_for_raw_mode(self.child)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the terminal showed:\n{self.screen_text()[-3000:]}") from None
        self.child.send(keys)

    def line(self, text: str) -> None:
        """Type ``text`` and press Enter (a terminal sends CR for Enter)."""
        self.send(text + "\r")

    def wait_exit(self) -> int:
        try:
            self.child.expect(self.pexpect.EOF)
        except self.pexpect.TIMEOUT as exc:
            raise AssertionError(f"pi did not exit; the terminal showed:\n{self.screen_text()[-3000:]}") from exc
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0))

    def screen_text(self) -> str:
        """Everything printed so far, escape sequences removed (for messages and checks)."""
        return re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", "".join(self.log))

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def raw_mode(fd: int) -> bool:
    """Whether the terminal of the pseudo-terminal whose master side is ``fd`` (asked
    there, the system answers with the terminal's settings) hands over each key as it is
    typed, Enter as CR."""
    try:
        iflag, _oflag, _cflag, lflag, *_ = termios.tcgetattr(fd)
    except termios.error:  # closed: the next expect reports the end
        return True
    return not lflag & termios.ICANON and not iflag & termios.ICRNL


def wait_for_raw_mode(child: Any) -> None:
    """Until the terminal of the pexpect ``child`` is in raw mode: a prompt_toolkit
    application (pi's input line or a dialog) reads the keys. What is printed meanwhile
    is read and kept for the next ``expect`` (a full terminal would block the writer)."""
    import pexpect

    deadline = time.monotonic() + TIMEOUT
    while not raw_mode(child.child_fd):
        if time.monotonic() > deadline:
            raise AssertionError("the terminal never went to raw mode: nothing reads the keys")
        try:
            child.expect([pexpect.TIMEOUT], timeout=0.01)
        except pexpect.EOF:
            raise AssertionError("the program exited instead of reading keys") from None


class _Collector:
    def __init__(self, into: list[str]) -> None:
        self.into = into

    def write(self, data: str) -> None:
        self.into.append(data)

    def flush(self) -> None:
        pass


def resume_path(screen: str) -> Path:
    match = re.search(r"Resume it with: pi --session (\S+\.jsonl)", screen)
    assert match, f"no resume hint in:\n{screen[-2000:]}"
    return Path(match.group(1))
