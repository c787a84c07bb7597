"""Interactive mode end to end: the real ``pi`` in a pseudo-terminal on the offline demo
model (each prompt: a ``bash ls`` tool call, then a summary of its output)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from interactive_pty import Pi, clean_env, resume_path

CONFIRM_PLUGIN = """
from pi_hookspecs import hookimpl

@hookimpl
async def tool_call(event, ctx):
    if event.tool_name == "bash" and ctx.has_ui:
        if not await ctx.ui.confirm("Allow bash?", event.input.get("command", "")):
            return {"block": True, "reason": "denied in the terminal"}
    return None
"""

WAIT_PLUGIN = """
import asyncio
from pi_hookspecs import hookimpl

@hookimpl
async def tool_call(event, ctx):
    # Hold the run until the user steers, queues a follow-up or aborts (however long
    # that takes: a test that fails ends pi).
    ctx.ui.notify("tool paused: steer or abort")
    while not (ctx.has_pending_messages() or (ctx.signal is not None and ctx.signal.aborted)):
        await asyncio.sleep(0.02)
    return None
"""

COMMAND_PLUGIN = """
from pathlib import Path
from pi_hookspecs import hookimpl

@hookimpl
def session_shutdown(event):
    Path(__file__).with_suffix(".shutdown").write_text(event.reason)

@hookimpl
def register_commands(register):
    async def pick(args, ctx):
        colour = await ctx.ui.select("Which colour?", ["red", "green", "blue"])
        name = await ctx.ui.input("Your name?", "type it")
        ctx.ui.notify(f"picked {colour} for {name} ({args})")
        ctx.ui.set_status("colour", f"colour: {colour}")

    register("pick", pick, description="Pick a colour")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    return root


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[..., Pi]]:
    started: list[Pi] = []

    def start(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Pi:
        pi = Pi(*args, cwd=cwd or project, env=env)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def plugin(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code))
    return str(path)


def test_prompt_shows_tool_call_and_answer_and_quit_keeps_the_session(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("faux/offline-demo")
    pi.expect("› ")
    pi.line("what is here?")
    pi.expect("⚙ bash ls")
    pi.expect("notes.txt")  # the tool result preview
    pi.expect("The ls command listed 1 entry: notes.txt.")  # the answer, rendered as markdown
    pi.expect("ctx ")  # the usage line after the run
    pi.line("/quit")
    assert pi.wait_exit() == 0
    session = resume_path(pi.screen_text())
    assert session.is_file()
    records = [json.loads(line) for line in session.read_text().splitlines()]
    texts = [r["message"]["content"] for r in records if r.get("type") == "message" and r["message"]["role"] == "user"]
    assert texts == [[{"type": "text", "text": "what is here?"}]]


def test_user_bash_and_reload(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("› ")
    # no final newline: pi prints an unfinished last line when the command ends, so once
    # it shows, the command is over (a command typed while one runs is refused as busy)
    pi.line("!printf 'from%s' -bash")
    pi.expect("from-bash")
    pi.line("!!exit 3")
    pi.expect("(exit code 3)")
    pi.line("/reload")
    pi.expect("Reloaded")
    pi.line("and now?")  # the file is written with the first answer
    pi.expect("ctx ")
    pi.send("\x04")  # Ctrl+D at an empty prompt
    assert pi.wait_exit() == 0
    session = resume_path(pi.screen_text())
    records = [json.loads(line) for line in session.read_text().splitlines()]
    bash = [r["message"] for r in records if r.get("type") == "message" and r["message"]["role"] == "bashExecution"]
    assert [(b["command"], b["exitCode"]) for b in bash] == [("printf 'from%s' -bash", 0), ("exit 3", 3)]
    assert bash[0]["output"] == "from-bash" and bash[1]["excludeFromContext"] is True


def test_plugin_confirm_is_answered_in_the_terminal(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    pi = spawn("-e", plugin(tmp_path, "guard", CONFIRM_PLUGIN))
    pi.expect("› ")
    pi.line("first")
    pi.expect("⚙ bash ls")
    pi.expect("Allow bash?")
    pi.send("n")
    pi.expect("Allow bash? · No")
    pi.expect("denied in the terminal")
    pi.expect("The ls command failed: denied in the terminal")
    pi.expect("ctx ")
    pi.line("second")
    pi.expect("Allow bash?")
    pi.send("\r")  # Yes is preselected
    pi.expect("Allow bash? · Yes")
    pi.expect("The ls command listed 1 entry")
    pi.expect("ctx ")
    pi.line("/quit")
    assert pi.wait_exit() == 0


def test_plugin_command_runs_dialogs_one_after_the_other(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    pi = spawn("-e", plugin(tmp_path, "pick", COMMAND_PLUGIN))
    pi.expect("› ")
    pi.line("/pick now")
    pi.expect("Which colour?")
    pi.send("3")
    pi.expect("Your name?")
    pi.line("Ann")  # typed into the second dialog, not into the input line
    pi.expect("picked blue for Ann (now)")
    pi.expect("colour: blue")  # the plugin's status, shown above the input line
    pi.line("/quit")
    assert pi.wait_exit() == 0
    assert (tmp_path / "pick.shutdown").read_text() == "quit"  # session_shutdown fired on the way out


def test_steering_follow_up_abort_and_double_ctrl_c(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    pi = spawn("-e", plugin(tmp_path, "wait", WAIT_PLUGIN))
    pi.expect("› ")
    pi.line("first")
    pi.expect("tool paused")
    pi.line("steer me")  # Enter while the run is active: steering
    pi.expect("(steering, queued)")
    pi.expect('cannot really answer "steer me"')  # the model got the steering message
    pi.expect("tool paused")
    pi.send("\x03")  # Ctrl+C aborts the run
    pi.expect("Operation aborted")
    pi.expect("aborted · ")
    pi.line("again")
    pi.expect("tool paused")
    pi.send("later please\x1b\r")  # Alt+Enter while the run is active: follow-up
    pi.expect("(follow-up, queued)")
    pi.expect("The ls command listed 1 entry")  # the current task finishes first…
    pi.expect('cannot really answer "later please"')  # …then the follow-up runs
    pi.expect("tool paused")
    pi.send("\x03")
    pi.expect("aborted · ")
    pi.send("\x03")  # at an idle, empty prompt: asks to press again
    pi.expect("Press Ctrl+C again to exit")
    pi.send("\x03")
    assert pi.wait_exit() == 0


def test_multiline_input_tree_and_session_info(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("› ")
    pi.send("alpha\x1b\rbeta\r")  # Alt+Enter at an idle prompt adds a line
    pi.expect('answer "alpha beta"')
    pi.expect("ctx ")
    pi.line("gamma")
    pi.expect("ctx ")
    pi.line("/tree")
    pi.expect("Go to which entry?")
    pi.send("user: alpha")  # type to filter
    pi.expect("alpha▏")
    pi.send("\r")
    pi.expect("Summarise the branch you leave?")
    pi.send("n")
    pi.expect("Moved to")
    pi.expect("alpha")  # the user message came back to the input line…
    pi.send("\x03")  # …Ctrl+C clears it
    pi.line("/session")
    pi.expect("2 user · 4 assistant · 2 tool results")
    pi.line("/quit")
    assert pi.wait_exit() == 0


def test_trust_question_remembers_the_folder(spawn: Callable[..., Pi], project: Path) -> None:
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").write_text("{}\n")
    env = clean_env()
    pi = spawn(env=env)
    pi.expect("Trust ")
    pi.expect("Yes, and remember this folder")
    pi.send("a")
    pi.expect("› ")
    pi.line("/quit")
    assert pi.wait_exit() == 0
    trust = json.loads((Path(env["PI_CODING_AGENT_DIR"]) / "trust.json").read_text())
    assert trust == {str(project.resolve()): True}
