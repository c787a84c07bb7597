"""Login callbacks on the terminal (``pi auth login``): a
:class:`~pi_hookspecs.LoginCallbacks` that prints URLs and device codes, opens the
browser, and reads pasted codes and keys without blocking the event loop (so the
browser's redirect can win the race against a pending prompt).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import webbrowser
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from pi_hookspecs import AbortController, AbortError


class TerminalCallbacks:
    """``browser=False`` (``--no-browser``) opens nothing and picks the login's other
    method (a device code, a pasted code) instead of the browser sign-in; ``ask``
    (an API-key login) lists every option of a selection."""

    def __init__(self, provider: str, *, browser: bool = True, out: TextIO | None = None, ask: bool = False) -> None:
        self.provider = provider
        self.browser = browser
        self.ask = ask
        self.out = out or sys.stdout
        self.controller = AbortController()
        self.signal = self.controller.signal
        self._skipped: list[str] = []

    # ------------------------------------------------------------------ output

    def write(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _open(self, url: str) -> None:
        if not self.browser or not url.startswith(("http://", "https://")):
            return

        def launch() -> None:
            with contextlib.suppress(Exception):
                webbrowser.open(url)

        # a browser command may wait for its window: never on the event loop, which
        # serves the callback the browser is about to reach
        threading.Thread(target=launch, name="pi-browser", daemon=True).start()

    def open_url(self, url: str, instructions: str | None = None) -> None:
        self.write(f"Open this URL to sign in:\n  {url}")
        if instructions:
            self.write(instructions)
        self._open(url)
        rerun = f'"pi auth login {self.provider} --no-browser"'
        if len(self._skipped) == 1:
            self.write(f'To use "{self._skipped[0]}" instead, run {rerun}')
        elif self._skipped:
            labels = ", ".join(f'"{label}"' for label in self._skipped)
            self.write(f"Other sign-in methods: {labels}. Run {rerun} to choose one.")

    def progress(self, message: str) -> None:
        self.write(message)

    def device_code(self, user_code: str, verification_uri: str, *, expires_in: float | None = None) -> None:
        self.write(f"Open {verification_uri} and enter code: {user_code}")
        self._open(verification_uri)
        self.write("Waiting for authentication...")

    # ------------------------------------------------------------------ input

    async def prompt(self, message: str, *, placeholder: str | None = None, secret: bool = False) -> str:
        hint = f" ({placeholder})" if placeholder else ""
        self.out.write(f"{message}{hint}: ")
        self.out.flush()
        return await read_line(secret=secret)

    async def select(self, message: str, options: Sequence[tuple[str, str]]) -> str:
        choices = list(options)
        if not choices:
            raise AbortError("nothing to choose from")
        if self.ask:
            return await self._choose(message, choices)
        first, others = choices[0], choices[1:]
        if self.browser:
            self._skipped = [label for _, label in others]
            return first[0]
        if not others:
            return first[0]
        if len(others) == 1:
            self.write(f"{message} {others[0][1]}")
            return others[0][0]
        return await self._choose(message, others)

    async def _choose(self, message: str, options: list[tuple[str, str]]) -> str:
        self.write(message)
        for number, (_, label) in enumerate(options, 1):
            self.write(f"  {number}. {label}")
        while True:
            answer = (await self.prompt(f"Select 1-{len(options)}")).strip()
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return options[int(answer) - 1][0]
            self.write(f"Enter a number from 1 to {len(options)}.")


@contextlib.contextmanager
def _no_echo(fd: int, secret: bool) -> Iterator[None]:
    if not secret or not os.isatty(fd):
        yield
        return
    import termios  # POSIX only (Windows has none): imported where a terminal is in use

    old = termios.tcgetattr(fd)
    new = termios.tcgetattr(fd)
    new[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSADRAIN, new)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
        if secret:
            sys.stdout.write("\n")
            sys.stdout.flush()


async def read_line(*, secret: bool = False, stream: Any = None) -> str:
    """One line of the terminal, read when it arrives (cancellable: the reader is
    removed, nothing is left blocked on stdin). End of input raises ``EOFError``."""
    stream = stream or sys.stdin
    fd = stream.fileno()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    buffer = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError as error:
            if not future.done():
                future.set_exception(error)
            return
        if not chunk:
            if not future.done():
                future.set_exception(EOFError("end of input"))
            return
        buffer.extend(chunk)
        if b"\n" in buffer and not future.done():
            future.set_result(buffer.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r"))

    with _no_echo(fd, secret):
        loop.add_reader(fd, readable)
        try:
            return await future
        finally:
            loop.remove_reader(fd)
