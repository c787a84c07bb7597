"""Inline images in the interactive transcript, end to end (the real ``pi`` in a
pseudo-terminal, read through pyte, a scripted local model): a tool result and a message
of yours holding an image draw it with the kitty graphics protocol or iTerm2's inline
image where the environment names such a terminal (or the ``terminal.images`` setting
chooses one), else as one line of text; ``terminal.showImages: false`` keeps the text."""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import agent_dir
from tui_screen import PI, Screen, screen_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from wire_server import Canned, WireServer, chat_chunks, use_server


def png(width: int, height: int) -> bytes:
    """A real PNG of ``width`` x ``height`` grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PICTURE = png(90, 36)
PAYLOAD = base64.b64encode(PICTURE).decode()


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def spawn(project: Path, wire: WireServer) -> Iterator[Callable[..., Screen]]:
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024, "input": ["text", "image"]}],
    }
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    (project / "chart.png").write_bytes(PICTURE)
    started: list[Screen] = []

    def start(*args: str, **env: str) -> Screen:
        screen = Screen(
            [*PI, "--no-extensions", "--model", "local/local-model", *args], cwd=project, env=screen_env(**env)
        )
        started.append(screen)
        return screen

    yield start
    for screen in started:
        screen.close()


def reply(text: str) -> Canned:
    return chat_chunks([{"content": text}], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


def read_call(path: str) -> Canned:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "read", "arguments": json.dumps({"path": path})},
    }
    return chat_chunks(
        [{"tool_calls": [call]}],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    )


def run_read(screen: Screen, wire: WireServer) -> str:
    wire.enqueue(read_call("chart.png"), reply("A grey chart."))
    screen.line("look at chart.png")
    screen.wait_for("A grey chart.")
    screen.settle()
    return screen.raw_text()


def test_kitty_draws_a_tool_results_image(spawn: Callable[..., Screen], wire: WireServer) -> None:
    screen = spawn(KITTY_WINDOW_ID="1")
    raw = run_read(screen, wire)
    match = re.search(r"\x1b_Ga=T,f=100,q=2,C=1,c=(\d+),r=(\d+),i=\d+;([A-Za-z0-9+/=]+)\x1b\\", raw)
    assert match, raw[-2000:]
    assert match.group(3) == PAYLOAD
    assert (int(match.group(1)), int(match.group(2))) == (
        60,
        12,
    )  # 90 x 36 px scaled to imageWidthCells (60) columns of 9 x 18 px cells
    assert "[Image:" not in screen.text()


def test_iterm2_draws_a_tool_results_image(spawn: Callable[..., Screen], wire: WireServer) -> None:
    screen = spawn(TERM_PROGRAM="iTerm.app")
    raw = run_read(screen, wire)
    expected = f"\x1b]1337;File=inline=1;size={len(PICTURE)};width=60;height=auto:{PAYLOAD}\x07"
    assert expected in raw
    assert "\x1b_G" not in raw


def test_a_plain_terminal_names_the_image_in_text(spawn: Callable[..., Screen], wire: WireServer) -> None:
    screen = spawn()
    raw = run_read(screen, wire)
    assert "[Image: [image/png] 90x36]" in screen.text()
    assert "\x1b_G" not in raw and "\x1b]1337;" not in raw


def test_show_images_false_and_the_images_setting(spawn: Callable[..., Screen], wire: WireServer) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"terminal": {"showImages": False}}))
    screen = spawn(KITTY_WINDOW_ID="1")
    raw = run_read(screen, wire)
    assert "[Image: [image/png] 90x36]" in screen.text() and "\x1b_G" not in raw
    screen.close()
    (agent_dir() / "settings.json").write_text(json.dumps({"terminal": {"images": "iterm2"}}))
    screen = spawn()  # a plain xterm by its environment, iTerm2 by the setting
    assert "\x1b]1337;File=inline=1;" in run_read(screen, wire)


def test_a_message_of_yours_with_an_image(spawn: Callable[..., Screen], wire: WireServer) -> None:
    wire.enqueue(reply("I see it."))
    screen = spawn("@chart.png", "what is this?", TERM_PROGRAM="iTerm.app")
    screen.wait_for("I see it.")
    raw = screen.raw_text()
    assert f"width=60;height=auto:{PAYLOAD}\x07" in raw
    assert raw.index("what is this?") < raw.index("\x1b]1337;File=")
    body: Any = wire.requests[-1].body
    images = [p for m in body["messages"] for p in (m["content"] if isinstance(m["content"], list) else [])]
    assert any(p.get("type") == "image_url" for p in images)


def test_the_fullscreen_pane_names_an_iterm2_image_in_text(spawn: Callable[..., Screen], wire: WireServer) -> None:
    screen = spawn("--tui-mode", "fullscreen", TERM_PROGRAM="iTerm.app")
    raw = run_read(screen, wire)
    assert "[Image: [image/png] 90x36]" in screen.text()  # iTerm2's pictures scroll with the text: not in the pane
    assert "\x1b]1337;" not in raw and "\x1b_G" not in raw
