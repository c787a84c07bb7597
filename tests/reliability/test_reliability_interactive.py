"""Interactive mode stays responsive while a plugin's handler blocks: Esc and Ctrl+C end
the run within a second or two (the handler is left behind and reported), and SIGTERM
or SIGHUP end pi with status 128 + the signal even then."""

from __future__ import annotations

import signal
import textwrap
import time
from pathlib import Path

import pytest
from reliability_helpers import Pi

BLOCKING = """
import time
from pi_hookspecs import hookimpl

@hookimpl
def tool_call(event, ctx):
    ctx.ui.notify("handler blocks now")
    time.sleep(3600)  # synchronous, never returns in time
"""


@pytest.fixture
def pi(tmp_path: Path) -> Pi:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello\n")
    plugin = tmp_path / "blocking.py"
    plugin.write_text(textwrap.dedent(BLOCKING))
    started = Pi("-e", str(plugin), cwd=project)
    yield started
    started.close()


@pytest.mark.parametrize("key", ["\x1b", "\x03"], ids=["esc", "ctrl-c"])
def test_a_key_ends_the_run_while_a_handler_blocks(pi: Pi, key: str) -> None:
    pi.expect("› ")
    pi.line("what is here?")
    pi.expect("handler blocks now")
    started = time.monotonic()
    pi.send(key)
    # named (the line wraps where the test folder's path makes it: match its parts)
    pi.expect("blocking.py (tool_call): the run was aborted")
    pi.expect("pi went on without it")
    pi.expect("aborted · ")
    assert time.monotonic() - started < 3
    pi.line("/quit")
    assert pi.wait_exit() == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_sigterm_ends_interactive_mode_while_a_handler_blocks(pi: Pi, signum: int) -> None:
    pi.expect("› ")
    pi.line("what is here?")
    pi.expect("handler blocks now")
    pi.child.kill(signum)
    assert pi.wait_exit() == 128 + signum
