"""Interactive mode's keys end to end (pexpect, the real ``pi`` on the offline demo model):
keybindings.json remapping, /hotkeys, model and thinking cycling, tool output and
thinking toggles, the external editor, queued messages back, image paste, Shift+Enter."""

from __future__ import annotations

import json
import shlex
import shutil
import stat
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir
from interactive_pty import PI, TIMEOUT, Pi, clean_env, loose, pty_or_skip, resume_path, wait_for_raw_mode

WAIT_PLUGIN = """
import asyncio
from pi_hookspecs import hookimpl

@hookimpl
async def tool_call(event, ctx):
    ctx.ui.notify("tool paused: steer or abort")
    while not (ctx.signal is not None and ctx.signal.aborted):  # until aborted (a test that fails ends pi)
        await asyncio.sleep(0.02)
    return None
"""
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    return root


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[..., Pi]]:
    started: list[Pi] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Pi:
        pi = Pi(*args, cwd=project, env=env)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def quit_pi(pi: Pi) -> int:
    pi.line("/quit")
    return pi.wait_exit()


def executable(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def two_models() -> None:
    """Two models of a local provider (never called: cycling only selects them)."""
    (agent_dir() / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-completions",
                        "apiKey": "test-key",
                        "models": [
                            {"id": "alpha", "contextWindow": 32000, "reasoning": True},
                            {"id": "beta", "contextWindow": 32000},
                        ],
                    }
                }
            }
        )
    )


def test_keybindings_json_remaps_and_hotkeys_lists_them(spawn: Callable[..., Pi]) -> None:
    (agent_dir() / "keybindings.json").write_text(
        json.dumps(
            {
                "app.model.select": "ctrl+y",
                "expandTools": ["ctrl+e"],
                "app.session.rename": "ctrl+b",
                "app.bogus": "ctrl+k",
                "app.exit": "hyper+q",
            }
        )
    )
    pi = spawn()
    pi.expect("unknown action 'app.bogus' (/hotkeys lists them)")
    pi.expect("app.exit: unknown modifier in 'hyper+q'")
    pi.expect("› ")
    pi.line("/hotkeys")
    pi.expect("Ctrl+Y")
    pi.expect("Open the model picker")
    pi.expect("Ctrl+E")  # the legacy name expandTools maps to app.tools.expand
    pi.expect("Session picker (/resume)")
    pi.expect("Ctrl+B  Rename the session")  # the pickers' keys are remapped the same way
    pi.expect("keybindings.json")
    pi.send("\x19")  # Ctrl+Y: the model picker
    pi.expect("Which model?")
    pi.send("\x1b")
    pi.expect("Which model? · (cancelled)")
    assert quit_pi(pi) == 0


def test_model_cycling_thinking_levels_and_scoped_models(spawn: Callable[..., Pi]) -> None:
    two_models()
    pi = spawn("--model", "local/alpha", "--models", "local/*,nothing-like-this")
    pi.expect("Model scope (Ctrl+P): local/alpha, local/beta")
    pi.expect('Model scope: No models match pattern "nothing-like-this"')
    pi.expect("› ")
    pi.send("\x10")  # Ctrl+P
    pi.expect("Model: local/beta")
    pi.send("\x1b[112;6u")  # Shift+Ctrl+P as the kitty keyboard protocol reports it
    pi.expect("Model: local/alpha")
    pi.send("\x1b[Z")  # Shift+Tab: the next thinking level of a reasoning model
    pi.expect("Thinking level: ")
    pi.line("/scoped-models")
    pi.expect("Models for Ctrl+P cycling (2 enabled)")
    pi.send("beta ")  # filter to beta, Space disables it
    pi.expect("Models for Ctrl+P cycling (1 enabled)")
    pi.send("\x13")  # Ctrl+S saves enabledModels
    pi.expect("enabledModels saved to")
    pi.expect("Ctrl+P cycles local/alpha")
    assert json.loads((agent_dir() / "settings.json").read_text())["enabledModels"] == ["local/alpha"]
    pi.send("\x10")
    pi.expect("Only one model to cycle through")
    pi.send("\x0c")  # Ctrl+L: the model picker
    pi.expect("Which model?")
    pi.send("\x1b")
    pi.expect("Which model? · (cancelled)")  # closed: what is typed next goes to the input line
    assert quit_pi(pi) == 0


def test_tool_output_expands_and_thinking_toggles(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("› ")
    pi.line("show me")
    pi.expect("ctx ")
    pi.send("\x0f")  # Ctrl+O
    pi.expect("output of the last 1 tool call(s) in full")
    pi.expect("Tool output: in full")
    pi.send("\x0f")
    pi.expect("Tool output: previews")
    pi.send("\x14")  # Ctrl+T
    pi.expect("Thinking blocks: hidden")
    assert json.loads((agent_dir() / "settings.json").read_text()) == {"hideThinkingBlock": True}  # as pi: saved
    assert quit_pi(pi) == 0


def test_external_editor_edits_the_draft(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    editor = executable(
        tmp_path / "editor.sh",
        """\
        #!/bin/sh
        printf 'from the editor: %s' "$(cat "$1")" > "$1"
        """,
    )
    pi = spawn(env=clean_env(VISUAL=str(editor)))
    pi.expect("› ")
    pi.send("draft")
    pi.expect("draft")
    pi.send("\x07")  # Ctrl+G
    pi.expect("from the editor: draft")
    pi.send("\r")
    pi.expect('cannot really answer "from the editor: draft"')
    pi.expect("ctx ")
    assert quit_pi(pi) == 0


def test_alt_up_takes_queued_messages_back(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    plugin = tmp_path / "wait.py"
    plugin.write_text(textwrap.dedent(WAIT_PLUGIN))
    pi = spawn("-e", str(plugin))
    pi.expect("› ")
    pi.line("first")
    pi.expect("tool paused")
    pi.send("later please\x1b\r")  # Alt+Enter: a follow-up
    pi.expect("(follow-up, queued)")
    pi.send("\x1b\x1b[A")  # Alt+Up
    pi.expect("1 queued message(s) back in the input line")
    pi.send("\x03")  # abort the run; the text stays in the input line
    pi.expect("aborted · ")
    pi.send("\r")
    pi.expect("› later please")
    pi.expect("tool paused")  # the run is under way: Ctrl+C aborts it
    pi.send("\x03")
    pi.expect("aborted · ")
    assert quit_pi(pi) == 0


def test_ctrl_v_attaches_a_clipboard_image(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    image = tmp_path / "clip.png"
    image.write_bytes(PNG)
    executable(
        bin_dir / "xclip",
        f"""\
        #!/bin/sh
        case "$*" in
          *image/png*) cat {image} ;;
          *) exit 1 ;;
        esac
        """,
    )
    pi = spawn(env=clean_env(PATH=f"{bin_dir}:/usr/bin:/bin", DISPLAY=":0"))
    pi.expect("› ")
    pi.send("look ")
    pi.send("\x16")  # Ctrl+V
    pi.expect("[image 1]")
    pi.send("\r")
    pi.expect("ctx ")
    assert quit_pi(pi) == 0
    records = [json.loads(line) for line in resume_path(pi.screen_text()).read_text().splitlines()]
    [user] = [r["message"] for r in records if r.get("type") == "message" and r["message"]["role"] == "user"]
    assert [block["type"] for block in user["content"]] == ["text", "image"]
    assert user["content"][1]["mimeType"] == "image/png"


def test_shift_enter_adds_a_line_where_the_terminal_reports_it(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("› ")
    pi.send("one\x1b[13;2utwo\r")  # Shift+Enter as the kitty keyboard protocol reports it
    pi.expect('cannot really answer "one two"')
    pi.expect("ctx ")
    assert quit_pi(pi) == 0


def test_ctrl_z_suspends_to_the_shell_and_fg_resumes(project: Path) -> None:
    pexpect = pty_or_skip()
    if shutil.which("bash") is None:
        pytest.skip("needs bash for job control")
    shell = pexpect.spawn(
        "bash",
        ["--norc", "--noprofile", "-i"],
        cwd=str(project),
        env=clean_env(PS1="$ "),
        encoding="utf-8",
        codec_errors="replace",
        timeout=TIMEOUT,
        dimensions=(40, 160),
    )
    try:
        command = " ".join(shlex.quote(part) for part in [*PI, "--no-extensions", "--model", "faux/offline-demo"])
        shell.sendline(command)
        shell.expect(loose("› "))
        wait_for_raw_mode(shell)  # pi reads the keys
        shell.send("\x1a")  # Ctrl+Z: back to the shell, pi stopped
        shell.expect("Stopped")
        shell.sendline("fg")
        shell.expect(loose("› "))  # pi draws its input line again…
        wait_for_raw_mode(shell)  # …and reads the keys (an Enter the shell's terminal got would be a new line)
        shell.send("/session\r")
        shell.expect(loose("faux/offline-demo · thinking"))
        shell.send("/quit\r")
        shell.sendline("echo pi-$?-done")  # the shell has the terminal back
        shell.expect("pi-0-done")
        shell.sendline("exit")
        shell.expect(pexpect.EOF)
    finally:
        shell.close(force=True)
