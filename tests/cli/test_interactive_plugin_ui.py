"""Plugins' terminal UI and themes end to end (pexpect, the real ``pi``): a plugin's
shortcut, its renderers for custom messages, entries and tool calls, widgets below the
input line, the header, the working message, the editor text and the ui_prompt events;
a custom theme, a broken one, ``quietStartup`` (``markdown.codeBlockIndent`` and
``hideThinkingBlock``: test_interactive_parts)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir
from interactive_pty import Pi, clean_env, resume_path

UI_PLUGIN = """
from pathlib import Path
from pi_hookspecs import hookimpl

LOG = Path(__file__).with_suffix(".log")


def log(line):
    with LOG.open("a") as fh:
        fh.write(line + "\\n")


@hookimpl
def register_shortcuts(register):
    async def swap(ctx):
        ctx.ui.notify(f"shortcut saw: {ctx.ui.get_editor_text()}")
        ctx.ui.set_editor_text("replaced by the plugin")

    register("ctrl+y", swap, description="Swap the draft")
    register("ctrl+l", swap, description="Wants pi's key")


@hookimpl
def register_message_renderers(register):
    register("card", lambda message, options: f"CARD<{message.content}>")


@hookimpl
def register_entry_renderers(register):
    register("note", lambda entry, options: [f"NOTE number {entry.data['n']}"])


@hookimpl
def register_tool_renderers(register):
    def resolve(name, next):
        if name != "bash":
            return next()
        return {
            "render_call": lambda args, options: f"RUNNING {args['command']}",
            "render_result": lambda result, options: f"RESULT of {len(result.content)} block(s)",
        }

    register(resolve)


@hookimpl
def register_commands(register):
    async def card(args, ctx):
        await ctx.send_message({"customType": "card", "content": "hello", "display": True})
        ctx.append_entry("note", {"n": 7})
        ctx.ui.set_widget("below", ["A WIDGET BELOW"], placement="belowEditor")
        ctx.ui.set_working_message("Crunching numbers")

    async def ask(args, ctx):
        answer = await ctx.ui.confirm("Proceed?")
        ctx.ui.notify(f"answered {answer}")

    register("card", card)
    register("ask", ask)


@hookimpl
def session_start(event, ctx):
    ctx.ui.set_header(["MY OWN HEADER"])


@hookimpl
def ui_prompt_start(event):
    log(f"start {event.kind} {event.title}")


@hookimpl
def ui_prompt_end(event):
    log(f"end {event.kind}")
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

    def start(*args: str, env: dict[str, str] | None = None) -> Pi:
        pi = Pi(*args, cwd=project, env=env)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def quit_pi(pi: Pi) -> None:
    pi.line("/quit")
    assert pi.wait_exit() == 0


def test_plugin_shortcut_renderers_widgets_header_and_prompt_events(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    plugin = tmp_path / "ui.py"
    plugin.write_text(textwrap.dedent(UI_PLUGIN))
    pi = spawn("-e", str(plugin))
    pi.expect("MY OWN HEADER")
    pi.expect("› ")
    pi.send("my draft")
    pi.expect("my draft")
    pi.send("\x19")  # the plugin's Ctrl+Y
    pi.expect("shortcut saw: my draft")
    pi.expect("replaced by the plugin")
    pi.send("\x15")  # Ctrl+U clears the line
    pi.line("/card")
    pi.expect("CARD<hello>")  # the message renderer
    pi.expect("NOTE number 7")  # the entry renderer
    pi.expect("A WIDGET BELOW")
    pi.line("list")
    pi.expect("RUNNING ls")  # the tool renderer's call…
    pi.expect("RESULT of 1 block(s)")  # …and result
    pi.expect("ctx ")
    pi.line("/hotkeys")
    pi.expect("Swap the draft  (plugin ui)")
    pi.expect("Wants pi's key  (plugin ui; not bound: the key is pi's app.model.select)")
    pi.line("/ask")
    pi.expect("Proceed?")
    pi.send("y")
    pi.expect("answered True")
    quit_pi(pi)
    assert (tmp_path / "ui.log").read_text().splitlines() == ["start confirm Proceed?", "end confirm"]
    session = resume_path(pi.screen_text())
    again = spawn("-e", str(plugin), "--session", str(session))  # the replay uses the same renderers
    again.expect("CARD<hello>")
    again.expect("NOTE number 7")
    again.expect("RUNNING ls")
    again.expect("RESULT of 1 block(s)")
    quit_pi(again)


def custom_theme() -> dict[str, object]:
    """A complete theme: every token of the dark theme, the accent made tomato red."""
    dark = json.loads((Path(__file__).parents[2] / "pi_core/cli/tui/themes/dark.json").read_text())
    dark["name"] = "tomato"
    dark["vars"]["tomato"] = "#ff6347"
    dark["colors"]["accent"] = "tomato"
    return dark


def test_custom_theme_colours_the_terminal_and_settings_switch_it(spawn: Callable[..., Pi]) -> None:
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    (themes / "tomato.json").write_text(json.dumps(custom_theme()))
    broken = {**custom_theme(), "name": "broken"}
    broken["colors"] = {**broken["colors"], "accent": "not-a-colour"}  # type: ignore[dict-item]
    (themes / "broken.json").write_text(json.dumps(broken))
    env = clean_env(COLORTERM="truecolor", TERM="xterm-256color")
    env.pop("NO_COLOR")
    pi = spawn("--theme", "tomato", env=env)  # --theme wins over the setting for the run
    pi.expect("› ")
    pi.line("/model")  # the picker's cursor is drawn in the accent colour
    pi.expect("Which model?")
    assert "38;2;255;99;71" in "".join(pi.log)
    pi.send("\x1b")
    pi.expect("Which model? · (cancelled)")  # closed: what is typed next goes to the input line
    pi.line("/settings")
    pi.expect("Settings (user:")
    pi.send("theme\r")  # the theme picker lists the themes found
    pi.expect("broken")
    pi.send("1")  # "broken", the first of the five
    pi.expect('theme = "broken" (')
    pi.expect("colors.accent: invalid colour 'not-a-colour'")  # one line naming the file…
    pi.expect("using the dark theme")  # …and the dark theme instead
    pi.send("\x1b")
    pi.expect("› ")  # the settings closed, the input line is back
    quit_pi(pi)
    assert json.loads((agent_dir() / "settings.json").read_text()) == {"theme": "broken"}


def test_quiet_startup_hides_the_header(spawn: Callable[..., Pi]) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"quietStartup": True}))
    pi = spawn()
    pi.expect("› ")
    pi.line("/quit")
    assert pi.wait_exit() == 0
    assert "/help commands" not in pi.screen_text() and "tools active" not in pi.screen_text()
    (agent_dir() / "settings.json").write_text(json.dumps({"quietStartup": "header"}))
    pi = spawn()
    pi.expect("/help commands")
    pi.line("/quit")
    assert pi.wait_exit() == 0
    assert "tools active" not in pi.screen_text()
