"""A user's ``!command``: its output reaches the user, the session and the model as
plain text (escape sequences and control characters removed, as pi 1.6.0), and a
stopped command has no exit code (absent, not null)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pi_core.runtime.bash import LocalBashOperations
from pi_core.tools.ansi import AnsiStream, sanitize_output
from pi_hookspecs import AbortController

COLOURED = r"printf '\033[1;31mred\033[0m\r\nplain\t\033]8;;https://example.com\033\\link\033]8;;\033\\ \001bell\n'"


def test_sanitize_output_keeps_text_tabs_and_newlines() -> None:
    assert sanitize_output("\x1b[1;31mred\x1b[0m\r\n\tx\x07\x00\ufffa") == "red\n\tx"
    assert sanitize_output("\x1b]0;window title\x07after") == "after"
    assert sanitize_output("\x1b[<35;59;1Mmouse") == "mouse"
    assert sanitize_output("\x1b=5 keypad") == "5 keypad"  # ESC = takes no digits with it


def test_a_sequence_cut_between_chunks_is_completed_by_the_next() -> None:
    stream = AnsiStream()
    assert stream.feed("one \x1b[3") == "one "
    assert stream.feed("1mtwo") == "two"
    assert stream.feed("\x1b]0;ti") == ""
    assert stream.feed("tle\x07three") == "three"
    assert stream.flush() == ""


async def test_user_bash_output_is_plain_text(tmp_path: Path) -> None:
    streamed: list[str] = []
    result = await LocalBashOperations({}).exec(COLOURED, str(tmp_path), on_data=streamed.append)
    assert result.output == "red\nplain\tlink bell\n"
    assert "".join(streamed) == result.output
    assert result.exit_code == 0 and not result.cancelled


async def test_a_stopped_user_command_has_no_exit_code(tmp_path: Path) -> None:
    controller = AbortController()
    asyncio.get_running_loop().call_later(0.3, controller.abort)
    result = await LocalBashOperations({}).exec("echo started; sleep 30", str(tmp_path), signal=controller.signal)
    assert result.cancelled and result.exit_code is None
    assert "exitCode" not in result.to_json()
    assert result.output.startswith("started")
