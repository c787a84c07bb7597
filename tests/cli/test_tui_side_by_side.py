"""One scripted session - an edit, a write, a long command output, a streamed markdown
answer with a code block - on a 100 x 30 terminal (pyte), in this pi and, when ``PI_TS``
names pi 1.6.0, in pi 1.6.0 too (its regular mode, as ours runs by default): the parts a
pi 1.6.0 user reads the same way must be there in both, line for line - the numbered diff
(ending with the file's last line, no trailing row), the written file, the end of the
command's output under "(N earlier lines, Ctrl+O to expand)", the code block between its
fences, the answer's text. ``PI_SCREENS_DIR`` keeps both screens (with the scrollback)
as ``ours.txt`` and ``pi-ts.txt`` for a look side by side."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir
from tui_screen import PI, Screen, screen_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from wire_server import Canned, WireServer, chat_chunks, use_server

ANSWER = (
    "Done. Here is the **new** function:\n\n```python\ndef sub(a, b):\n    return a - b\n```\n\nAll three steps worked."
)
SAME = [
    "1 def add(a, b):",
    "-2     return a + b",
    "+2     return a - b",
    "3",
    "5 def mul(a, b):",
    "6     return a * b",
    "# notes",
    "- one",
    "- two",
    "... (35 earlier lines, ctrl+o to expand)",
    "36",
    "40",
    "done. here is the new function:",
    "```python",
    "def sub(a, b):",
    "return a - b",
    "```",
    "all three steps worked.",
]
"""Lines both terminals show (compared stripped, in lower case, "…" as "...")."""


def normal(line: str) -> str:
    return line.strip().replace("…", "...").lower()


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def tool(name: str, args: dict[str, object], n: int) -> Canned:
    call = {
        "index": 0,
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    usage = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}
    return chat_chunks([{"tool_calls": [call]}], finish_reason="tool_calls", usage=usage)


def run_session(argv: list[str], wire: WireServer, root: Path, agent: Path) -> list[str]:
    """The session in the program ``argv``: its screen and scrollback at the end."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024}],
    }
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    wire.enqueue(
        tool("edit", {"path": "calc.py", "edits": [{"oldText": "    return a + b", "newText": "    return a - b"}]}, 1),
        tool("write", {"path": "notes.md", "content": "# Notes\n\n- one\n- two\n"}, 2),
        tool("bash", {"command": "seq 1 40"}, 3),
        chat_chunks([{"content": ANSWER[i : i + 12]} for i in range(0, len(ANSWER), 12)], usage=usage),
    )
    screen = Screen(argv, cwd=root, env=screen_env(PI_CODING_AGENT_DIR=str(agent)))
    try:
        screen.wait_for("local-model")
        screen.settle(1.0)
        screen.line("fix calc, write notes, count to 40")
        screen.wait_for("All three steps worked.")
        screen.settle(1.0)
        return screen.scrollback()
    finally:
        screen.close()


def keep(name: str, lines: list[str]) -> None:
    directory = os.environ.get("PI_SCREENS_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def check(lines: list[str], who: str) -> None:
    shown = [normal(line) for line in lines]
    missing = [line for line in SAME if line not in shown]
    assert missing == [], f"{who} does not show {missing}:\n" + "\n".join(lines)
    last_diff_row = shown.index("6     return a * b")
    following = next(line for line in shown[last_diff_row + 1 :] if line)
    assert "notes.md" in following, f"{who}: the diff goes on after the file's last line: {following!r}"


def test_our_screen_shows_what_pi_1_6_0_shows(wire: WireServer, tmp_path: Path) -> None:
    ours = run_session([*PI, "--no-extensions", "--model", "local/local-model"], wire, tmp_path / "ours", agent_dir())
    keep("ours.txt", ours)
    check(ours, "this pi")


def test_side_by_side_with_pi_1_6_0(wire: WireServer, tmp_path: Path) -> None:
    pi_ts = os.environ.get("PI_TS")
    if not pi_ts or not os.access(pi_ts, os.X_OK):
        pytest.skip("PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)")
    theirs = run_session(
        [pi_ts, "--model", "local/local-model", "--tui-mode", "regular", "--no-extensions"],
        wire,
        tmp_path / "pi-ts",
        tmp_path / "pi-ts-agent",
    )
    keep("pi-ts.txt", theirs)
    check(theirs, "pi 1.6.0")
