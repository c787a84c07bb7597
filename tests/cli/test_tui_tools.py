"""How interactive mode draws tools and keys, end to end (the real ``pi`` in a
pseudo-terminal against a scripted local model): an edit as a coloured, numbered diff,
a write as a preview of the file, Ctrl+O printing them in full; a running tool drawn
once; every keybindings.json id of pi 1.6.0 accepted; the start-up hint wrapped
between words."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import agent_dir
from interactive_pty import ESCAPES, Pi, clean_env, loose

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from wire_server import Canned, WireServer, chat_chunks, use_server

MODEL = ("--model", "local/local-model")


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
    return root


@pytest.fixture
def spawn(project: Path, wire: WireServer) -> Iterator[Callable[..., Pi]]:
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024}],
    }
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    started: list[Pi] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Pi:
        pi = Pi(*MODEL, *args, cwd=project, env=env)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def text_reply(text: str) -> Canned:
    return chat_chunks([{"content": text}], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


def tool_reply(name: str, args: dict[str, Any]) -> Canned:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return chat_chunks(
        [{"tool_calls": [call]}],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    )


def quit_pi(pi: Pi) -> int:
    pi.line("/quit")
    return pi.wait_exit()


def test_an_edit_draws_a_numbered_diff_and_ctrl_o_prints_it_in_full(
    spawn: Callable[..., Pi], wire: WireServer, project: Path
) -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(30))
    (project / "long.py").write_text(f"def f():\n{body}")
    wire.enqueue(
        tool_reply(
            "edit", {"path": "calc.py", "edits": [{"oldText": "    return a + b", "newText": "    return a - b"}]}
        ),
        tool_reply("edit", {"path": "long.py", "edits": [{"oldText": body, "newText": body.replace(" = ", " == ")}]}),
        text_reply("Both edited."),
    )
    pi = spawn()
    pi.expect("› ")
    pi.line("fix calc")
    pi.expect("⚙ edit calc.py")
    pi.expect(" 1 def add(a, b):")
    pi.expect("-2     return a + b")
    pi.expect("+2     return a - b")
    pi.expect(" 6     return a * b")
    pi.expect("⚙ edit long.py")
    pi.expect_re(loose("more lines, ") + r"6\d" + loose(" total, Ctrl+O to expand)"))  # 30 removed, 30 added
    pi.expect("Both edited.")
    screen = pi.screen_text()
    assert "edits=" not in screen and "Successfully replaced" not in screen
    pi.send("\x0f")  # Ctrl+O: the latest tool calls in full
    pi.expect("output of the last 2 tool call(s) in full")
    pi.expect("⚙ edit calc.py")
    pi.expect("+2     return a - b")
    pi.expect("⚙ edit long.py")
    pi.expect("+31     x29 == 29")
    assert quit_pi(pi) == 0
    assert "return a - b" in (project / "calc.py").read_text()


def test_the_diff_is_coloured(spawn: Callable[..., Pi], wire: WireServer) -> None:
    wire.enqueue(
        tool_reply(
            "edit", {"path": "calc.py", "edits": [{"oldText": "    return a + b", "newText": "    return a - b"}]}
        ),
        text_reply("Edited."),
    )
    env = clean_env(TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    pi = spawn(env=env)
    pi.expect("› ")
    pi.line("fix calc")
    pi.expect("Edited.")
    raw = "".join(pi.log)
    removed = re.search(r"\x1b\[([0-9;]+)m-2     return a ", raw)
    added = re.search(r"\x1b\[([0-9;]+)m\+2     return a ", raw)
    assert removed and added, raw[-2000:]
    assert removed.group(1) != added.group(1)  # red and green
    assert re.search(r"\x1b\[7;[0-9;]*m\+", raw)  # the changed word in reverse video
    assert quit_pi(pi) == 0


def test_a_write_shows_the_first_lines_of_the_file(spawn: Callable[..., Pi], wire: WireServer) -> None:
    content = "".join(f"line {n}: some text\n" for n in range(1, 31))
    wire.enqueue(tool_reply("write", {"path": "notes.txt", "content": content}), text_reply("Written."))
    pi = spawn()
    pi.expect("› ")
    pi.line("write notes")
    pi.expect("⚙ write notes.txt")
    pi.expect("line 1: some text")
    pi.expect("line 10: some text")
    pi.expect("(20 more lines, 30 total, Ctrl+O to expand)")
    pi.expect("Written.")
    assert "⏎" not in pi.screen_text() and "content=" not in pi.screen_text()
    pi.send("\x0f")
    pi.expect("⚙ write notes.txt")
    pi.expect("line 30: some text")
    assert quit_pi(pi) == 0


def test_a_running_tool_is_drawn_once(spawn: Callable[..., Pi], wire: WireServer) -> None:
    wire.enqueue(
        tool_reply("bash", {"command": "echo first-tick; sleep 1.5; echo second-tick"}),
        text_reply("Ran it."),
    )
    pi = spawn()
    pi.expect("› ")
    pi.line("run it")
    pi.expect("first-tick")
    pi.expect("Running bash")  # the spinner redraws the live area meanwhile
    pi.expect("Ran it.")
    raw = "".join(pi.log)
    assert len(re.findall(loose("⚙ bash echo first-tick"), raw)) == 1, raw[-3000:]
    assert quit_pi(pi) == 0


PI_IDS = {
    # every action id of pi 1.6.0's keybindings.md, with its default keys there
    "tui.editor.cursorUp": ["up"],
    "tui.editor.cursorDown": ["down"],
    "tui.editor.historyPrevious": [],
    "tui.editor.historyNext": [],
    "tui.editor.cursorLeft": ["left", "ctrl+b"],
    "tui.editor.cursorRight": ["right", "ctrl+f"],
    "tui.editor.cursorWordLeft": ["alt+left", "ctrl+left", "alt+b"],
    "tui.editor.cursorWordRight": ["alt+right", "ctrl+right", "alt+f"],
    "tui.editor.cursorLineStart": ["home", "ctrl+a"],
    "tui.editor.cursorLineEnd": ["end", "ctrl+e"],
    "tui.editor.jumpForward": ["ctrl+]"],
    "tui.editor.jumpBackward": ["ctrl+alt+]"],
    "tui.editor.pageUp": ["pageUp", "ctrl+pageUp"],
    "tui.editor.pageDown": ["pageDown", "ctrl+pageDown"],
    "tui.editor.deleteCharBackward": ["backspace"],
    "tui.editor.deleteCharForward": ["delete", "ctrl+d"],
    "tui.editor.deleteWordBackward": ["ctrl+w", "alt+backspace"],
    "tui.editor.deleteWordForward": ["alt+d", "alt+delete"],
    "tui.editor.deleteToLineStart": ["ctrl+u"],
    "tui.editor.deleteToLineEnd": ["ctrl+k"],
    "tui.editor.yank": ["ctrl+y"],
    "tui.editor.yankPop": ["alt+y"],
    "tui.editor.undo": ["ctrl+-"],
    "tui.input.newLine": ["shift+enter", "ctrl+j"],
    "tui.input.submit": ["enter"],
    "tui.input.tab": ["tab"],
    "tui.input.copy": ["ctrl+c"],
    "tui.select.up": ["up"],
    "tui.select.down": ["down"],
    "tui.select.pageUp": ["pageUp"],
    "tui.select.pageDown": ["pageDown"],
    "tui.select.confirm": ["enter"],
    "tui.select.cancel": ["escape", "ctrl+c"],
    "tui.altScreen.pageUp": ["pageUp"],
    "tui.altScreen.pageDown": ["pageDown"],
    "tui.altScreen.halfPageUp": [],
    "tui.altScreen.halfPageDown": [],
    "tui.altScreen.lineUp": [],
    "tui.altScreen.lineDown": [],
    "tui.altScreen.previousPrompt": ["ctrl+shift+up"],
    "tui.altScreen.nextPrompt": ["ctrl+shift+down"],
    "tui.altScreen.search": ["ctrl+shift+f"],
    "tui.altScreen.searchNext": ["enter", "ctrl+g"],
    "tui.altScreen.searchPrevious": ["shift+enter", "ctrl+shift+g"],
    "tui.altScreen.searchClose": ["escape"],
    "tui.altScreen.top": ["ctrl+home"],
    "tui.altScreen.bottom": ["ctrl+end"],
    "app.interrupt": ["escape"],
    "app.clear": ["ctrl+c"],
    "app.exit": ["ctrl+d"],
    "app.suspend": ["ctrl+z"],
    "app.editor.external": ["ctrl+g"],
    "app.clipboard.pasteImage": ["ctrl+v"],
    "app.session.new": [],
    "app.session.tree": [],
    "app.session.fork": [],
    "app.session.resume": [],
    "app.session.togglePath": ["ctrl+p"],
    "app.session.toggleSort": ["ctrl+s"],
    "app.session.toggleNamedFilter": ["ctrl+n"],
    "app.session.rename": ["ctrl+r"],
    "app.session.delete": ["ctrl+d"],
    "app.session.deleteNoninvasive": ["ctrl+backspace"],
    "app.model.select": ["ctrl+l"],
    "app.model.cycleForward": ["ctrl+p"],
    "app.model.cycleBackward": ["shift+ctrl+p"],
    "app.models.save": ["ctrl+s"],
    "app.thinking.cycle": ["shift+tab"],
    "app.thinking.save": ["ctrl+s"],
    "app.thinking.toggle": ["ctrl+t"],
    "app.tools.expand": ["ctrl+o"],
    "app.message.copy": ["ctrl+x"],
    "app.message.followUp": ["alt+enter"],
    "app.message.dequeue": ["alt+up"],
    "app.tree.foldOrUp": ["ctrl+left", "alt+left"],
    "app.tree.unfoldOrDown": ["ctrl+right", "alt+right"],
    "app.tree.editLabel": ["shift+l"],
    "app.tree.toggleLabelTimestamp": ["shift+t"],
    "app.tree.filter.default": ["ctrl+d"],
    "app.tree.filter.noTools": ["ctrl+t"],
    "app.tree.filter.userOnly": ["ctrl+u"],
    "app.tree.filter.labeledOnly": ["ctrl+l"],
    "app.tree.filter.all": ["ctrl+a"],
    "app.tree.filter.cycleForward": ["ctrl+o"],
    "app.tree.filter.cycleBackward": ["shift+ctrl+o"],
    "app.models.enableAll": ["ctrl+a"],
    "app.models.clearAll": ["ctrl+x"],
    "app.models.toggleProvider": ["ctrl+p"],
    "app.models.reorderUp": ["alt+up"],
    "app.models.reorderDown": ["alt+down"],
}


def test_every_keybindings_id_of_pi_is_accepted(spawn: Callable[..., Pi]) -> None:
    assert len(PI_IDS) == 90
    bindings = {**PI_IDS, "tui.editor.cursorLineEnd": ["f5"]}  # remapped: F5 moves to the line end
    (agent_dir() / "keybindings.json").write_text(json.dumps(bindings))
    pi = spawn()
    pi.expect("no effect in this TUI (no such feature here): ")
    pi.expect("app.models.reorderDown")
    pi.expect("› ")
    assert "unknown" not in pi.screen_text()
    assert "tui.altScreen" not in pi.screen_text()  # fullscreen mode's keys: remapped, not inert
    pi.send("hello world")
    pi.send("\x01")  # Ctrl+A: to the line start (prompt_toolkit's Emacs key)
    pi.send("\x1b[15~")  # F5: tui.editor.cursorLineEnd remapped
    pi.send("!")
    pi.expect("hello world!")
    pi.send("\x15")  # Ctrl+U
    pi.line("/hotkeys")
    pi.expect("Input line editing")
    pi.expect("F5  Line end  tui.editor.cursorLineEnd")
    pi.expect("Accepted in keybindings.json with no effect here: ")
    assert quit_pi(pi) == 0


def test_the_start_up_hint_wraps_between_words(project: Path) -> None:
    pi = Pi(cwd=project, env=clean_env(COLUMNS="100"))
    pi.child.setwinsize(40, 100)
    try:
        pi.expect("/help commands")
        pi.expect_re(r"Ctrl\+D" + ESCAPES + r"(?:\s|" + ESCAPES + r")*" + loose("exit"))
        pi.expect("› ")
        assert not re.search(r"Ctrl\+D e\s*\n", pi.screen_text())
        assert quit_pi(pi) == 0
    finally:
        pi.close()


def test_a_streaming_answer_shows_as_markdown_before_it_ends(spawn: Callable[..., Pi], wire: WireServer) -> None:
    text = "# Plan\n\nA **bold** start and a long line " + "word " * 50 + "end.\n\n- item one\n- item two\n"
    held = text_reply(text)
    held.hold = True  # the answer is still streaming while the test looks
    wire.enqueue(held)
    pi = spawn()
    pi.expect("› ")
    pi.line("plan it")
    pi.expect("• item one")  # markdown rendered in the live area
    pi.expect("Writing")
    live = pi.screen_text()
    assert "**bold**" not in live and "- item one" not in live
    assert "word end." in live  # the long line wrapped, not cut with …
    pi.send("\x1b")  # abort the held answer
    pi.expect("Aborted")
    assert quit_pi(pi) == 0
