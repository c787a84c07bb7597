"""Copying without a clipboard tool goes through the terminal's OSC 52 sequence, up to
pi 1.6.0's limit of 100,000 base64 characters; a longer text is refused rather than
written as a multi-megabyte escape sequence the terminal would drop."""

from __future__ import annotations

import base64

import pytest

from pi_core.cli.tui.system import OSC52_LIMIT, copy_to_clipboard


@pytest.fixture(autouse=True)
def no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)  # no pbcopy, wl-copy, xclip or xsel here


def test_text_goes_through_osc_52() -> None:
    written: list[str] = []
    assert copy_to_clipboard("line 1.1", written.append) == "OSC 52"
    assert written == [f"\x1b]52;c;{base64.b64encode(b'line 1.1').decode()}\x07"]


def test_text_over_the_limit_is_not_written() -> None:
    written: list[str] = []
    fits = "x" * (OSC52_LIMIT // 4 * 3)  # exactly OSC52_LIMIT base64 characters
    assert copy_to_clipboard(fits, written.append) == "OSC 52" and len(written) == 1
    assert copy_to_clipboard(fits + "xyz", written.append) == ""
    assert len(written) == 1
