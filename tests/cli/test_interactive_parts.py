"""The pieces of interactive mode without a terminal: formatting, completion, the
transcript, dialogs driven through a pipe, the event renderer."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from pi_core.cli.tui.completion import CommandInfo, PiCompleter, plugin_argument_values, wants_completion_while_typing
from pi_core.cli.tui.dialogs import Dialogs, Option, TerminalUI
from pi_core.cli.tui.output import Transcript, plain
from pi_core.cli.tui.render import EventRenderer, LiveView, compact_args, human_tokens, preview
from pi_hookspecs import (
    AssistantMessage,
    TextContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResult,
    UserMessage,
)


def transcript() -> tuple[Transcript, io.StringIO]:
    stream = io.StringIO()
    return Transcript(stream), stream


# --------------------------------------------------------------------------- formatting


def test_compact_args_puts_the_main_argument_first_and_shortens() -> None:
    assert compact_args({"command": "ls -la"}) == "ls -la"
    assert compact_args({"path": "src/a.py", "offset": 10}) == "src/a.py offset=10"
    assert compact_args({"command": "echo a\necho b"}) == "echo a ⏎ echo b"
    long = compact_args({"command": "x" * 500}, limit=50)
    assert len(long) == 50 and long.endswith("…")


def test_preview_counts_what_it_leaves_out_and_strips_control_sequences() -> None:
    lines, more = preview("\x1b[31mred\x1b[0m\n" + "\n".join(f"l{i}" for i in range(20)), max_lines=3)
    assert lines == ["red", "l0", "l1"] and more == 18
    assert plain("a\rb\x07c\td") == "abc\td"
    assert human_tokens(999) == "999" and human_tokens(128_000) == "128k" and human_tokens(1_250_000) == "1.2M"


# --------------------------------------------------------------------------- completion


def completions(completer: PiCompleter, text: str) -> list[str]:
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent(completion_requested=True))]


def test_completion_of_commands_arguments_and_paths(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "src").mkdir()
    (tmp_path / ".hidden").write_text("x")
    commands = [CommandInfo("reload"), CommandInfo("resume"), CommandInfo("review", "a template", "prompt template")]
    completer = PiCompleter(
        lambda: commands,
        lambda name, prefix: [("high", ""), ("off", "")] if name == "thinking" else [],
        lambda: str(tmp_path),
    )
    assert completions(completer, "/re") == ["/reload", "/resume", "/review"]
    assert completions(completer, "/view") == ["/review"]  # a part of the name matches too
    assert completions(completer, "/thinking h") == ["high"]
    assert completions(completer, "look at @no") == ["@notes.txt"]
    assert completions(completer, "@") == ["@notes.txt", "@src/"]  # hidden files only when asked for
    assert completions(completer, "@.h") == ["@.hidden"]
    assert completions(completer, "/review @s") == ["@src/"]
    assert wants_completion_while_typing("/mo") and wants_completion_while_typing("see @sr")
    assert not wants_completion_while_typing("hello") and not wants_completion_while_typing("see @src ")


def test_plugin_argument_completions_accept_several_shapes_and_survive_errors() -> None:
    class Item:
        value = "obj"
        description = "an object"

    def provider(prefix: str) -> list[Any]:
        return ["plain", {"value": "dict", "description": "a dict"}, Item(), {"nothing": 1}]

    def broken(prefix: str) -> list[str]:
        raise RuntimeError("boom")

    async def asynchronous(prefix: str) -> list[str]:
        return ["never"]

    assert plugin_argument_values(provider, "") == [("plain", ""), ("dict", "a dict"), ("obj", "an object")]
    assert plugin_argument_values(broken, "") == []
    assert plugin_argument_values(asynchronous, "") == []
    assert plugin_argument_values(None, "") == []


# --------------------------------------------------------------------------- transcript


def test_transcript_writes_at_once_without_an_application() -> None:
    out, stream = transcript()
    out.line("[not markup] plain")
    out.write("raw\n")
    assert stream.getvalue() == "[not markup] plain\nraw\n"


# --------------------------------------------------------------------------- dialogs


async def drive(keys: str, run: Any) -> Any:
    """Run a dialog with ``keys`` typed on a pipe instead of a terminal."""
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        task = asyncio.ensure_future(run())
        await asyncio.sleep(0)
        pipe.send_text(keys)
        return await asyncio.wait_for(task, 60)  # only the safety net of a failing test


async def test_choose_confirm_text_and_cancel() -> None:
    out, stream = transcript()
    dialogs = Dialogs(out, DummyOutput())
    options = [Option("a", "Apple"), Option("b", "Banana"), Option("c", "Cherry")]
    assert await drive("2", lambda: dialogs.choose("Fruit?", options)) == "b"
    assert await drive("\x1b[B\x1b[B\r", lambda: dialogs.choose("Fruit?", options)) == "c"  # arrows, Enter
    assert await drive("che\r", lambda: dialogs.choose("Fruit?", options, filterable=True)) == "c"
    assert await drive("\x03", lambda: dialogs.choose("Fruit?", options)) is None
    assert await drive("y", lambda: dialogs.confirm("Sure?")) is True
    assert await drive("n", lambda: dialogs.confirm("Sure?")) is False
    assert await drive("hello\r", lambda: dialogs.text("Name?")) == "hello"
    assert await drive("\x03", lambda: dialogs.text("Name?")) is None
    assert "Fruit? · Banana" in stream.getvalue() and "Fruit? · (cancelled)" in stream.getvalue()


async def test_dialogs_time_out_with_their_default() -> None:
    out, _ = transcript()
    ui = TerminalUI(Dialogs(out, DummyOutput()))
    assert await drive("", lambda: ui.confirm("Wait?", timeout=0.05)) is False
    assert await drive("", lambda: ui.select("Pick", ["x", "y"], timeout=0.05)) is None
    assert await drive("", lambda: ui.input("Say", timeout=0.05)) is None


async def test_a_dialog_takes_the_prompt_off_the_screen_and_gives_it_back() -> None:
    calls: list[str] = []

    class Host:
        async def suspend_prompt(self) -> None:
            calls.append("suspend")

        def resume_prompt(self) -> None:
            calls.append("resume")

    out, _ = transcript()
    dialogs = Dialogs(out, DummyOutput())
    dialogs.host = Host()
    assert await drive("1", lambda: dialogs.choose("Pick", [Option(1, "one")])) == 1
    assert calls == ["suspend", "resume"]


def test_terminal_ui_notifications_status_and_widgets() -> None:
    out, stream = transcript()
    changes: list[int] = []
    ui = TerminalUI(Dialogs(out, DummyOutput()), on_change=lambda: changes.append(1))
    ui.notify("saved", "warning")
    ui.set_status("git", "main ✓")
    ui.set_widget("todo", ["- one", "- two"])
    ui.set_status("git", None)
    assert "⚠ saved" in stream.getvalue()
    assert ui.statuses == {} and ui.widgets == {"todo": ["- one", "- two"]} and len(changes) == 3
    live = LiveView(widgets=ui.widgets, statuses={"k": "ready"})
    live.set_status("Working")
    shown = "".join(text for _, text in live.fragments(40))
    assert "- one\n- two\n" in shown and "Working" in shown and "ready" in shown
    assert all(len(line) <= 39 for line in shown.splitlines())


# --------------------------------------------------------------------------- events


class FakeSession:
    model = None
    is_busy = False

    def limits_model(self) -> None:  # no virtual selection: no routed model
        return None


def test_renderer_prints_tool_calls_results_and_answers_once() -> None:
    out, stream = transcript()
    live = LiveView()
    renderer = EventRenderer(out, live, FakeSession, lambda: None)
    renderer.echoed.append("typed")
    from pi_hookspecs import MessageStartEvent

    renderer(MessageStartEvent(message=UserMessage(content="typed")))  # already on screen
    renderer(MessageStartEvent(message=UserMessage(content="from a plugin")))
    renderer(ToolExecutionStartEvent(tool_call_id="1", tool_name="bash", args={"command": "ls"}))
    assert "1" in live.tools
    renderer(
        ToolExecutionEndEvent(
            tool_call_id="1", tool_name="bash", result=ToolResult.error("no such file"), is_error=True
        )
    )
    assert live.tools == {}
    from pi_hookspecs import MessageEndEvent

    answer = AssistantMessage(content=[TextContent(text="**Done**: all good")], stop_reason="stop")
    renderer(MessageEndEvent(message=answer))
    text = stream.getvalue()
    assert "typed" not in text and "› from a plugin" in text
    assert "⚙ bash ls" in text and "no such file" in text
    assert "Done: all good" in text  # markdown rendered, not shown raw


@pytest.mark.parametrize("stop_reason, shown", [("error", "✖ boom"), ("aborted", "⏹ Aborted")])
def test_renderer_reports_failed_and_aborted_answers(stop_reason: str, shown: str) -> None:
    out, stream = transcript()
    renderer = EventRenderer(out, LiveView(), FakeSession, lambda: None)
    from pi_hookspecs import MessageEndEvent

    renderer(MessageEndEvent(message=AssistantMessage(content=[], stop_reason=stop_reason, error_message="boom")))
    assert shown in stream.getvalue()


def test_renderer_shows_notices_and_plugin_errors() -> None:
    from pi_core.runtime.events import ExtensionErrorEvent, NoticeEvent

    out, stream = transcript()
    renderer = EventRenderer(out, LiveView(), FakeSession, lambda: None)
    renderer(NoticeEvent(level="warning", message="settings: unknown key"))
    renderer(ExtensionErrorEvent(extension_path="/x/audit.py", event="turn_start", error="handler raised KeyError"))
    text = stream.getvalue()
    assert "warning: settings: unknown key" in text
    assert "extension error in /x/audit.py (turn_start): handler raised KeyError" in text


# --------------------------------------------------------------------------- settings, themes, keys


class Settings:
    def __init__(self, **values: Any) -> None:
        self.values = values
        self.hide_thinking_block = bool(values.get("hideThinkingBlock"))

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def lookup(self, *keys: str) -> tuple[Any, None]:
        node: Any = self.values
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node, None


def test_renderer_honours_code_block_indent_and_hidden_thinking() -> None:
    from pi_hookspecs import MessageEndEvent, ThinkingContent

    out, stream = transcript()
    renderer = EventRenderer(out, LiveView(), FakeSession, lambda: None)
    renderer.configure(Settings(hideThinkingBlock=True, markdown={"codeBlockIndent": "│ "}, outputPad=0))
    answer = AssistantMessage(
        content=[ThinkingContent(thinking="secret plan"), TextContent(text="Run:\n\n```sh\nls -la\necho hi\n```\n")],
        stop_reason="stop",
    )
    renderer(MessageEndEvent(message=answer))
    text = plain(stream.getvalue())
    assert "secret plan" not in text and "thinking hidden" in text
    assert "│ ls -la" in text and "│ echo hi" in text
    renderer.toggle_thinking()
    renderer(MessageEndEvent(message=answer))
    assert "secret plan" in plain(stream.getvalue())


def test_renderer_pads_output_and_reports_progress_as_configured() -> None:
    from pi_hookspecs import AgentSettledEvent, AgentStartEvent, MessageEndEvent

    out, stream = transcript()
    renderer = EventRenderer(out, LiveView(), FakeSession, lambda: None)
    renderer.configure(Settings(terminal={"showTerminalProgress": True}))  # outputPad: 1 by default
    renderer(AgentStartEvent())
    renderer(MessageEndEvent(message=AssistantMessage(content=[TextContent(text="padded")], stop_reason="stop")))
    renderer(AgentSettledEvent())
    text = stream.getvalue()
    assert "\x1b]9;4;3\x07" in text and "\x1b]9;4;0\x07" in text
    assert "\n padded" in "\n" + plain(text)


def test_terminal_ui_places_widgets_footer_and_working_message() -> None:
    out, _stream = transcript()
    ui = TerminalUI(Dialogs(out, DummyOutput()))
    ui.set_widget("top", ["above"])
    ui.set_widget("bottom", ["below"], placement="belowEditor")
    ui.set_footer("my footer")
    ui.set_working_message("Crunching")
    live = LiveView(
        widgets=ui.widgets, widgets_below=ui.widgets_below, footer=ui.footer, working_message=ui.working_message
    )
    live.set_status("Working")
    above = "".join(text for _, text in live.fragments(60))
    below = "".join(text for _, text in live.below(60))
    assert "above" in above and "Crunching" in above and "below" not in above
    assert below == "below\nmy footer"
    assert "below" in "".join(text for _, text in live.fragments(60, with_below=True))  # no cursor reports: above
    ui.set_widget("bottom", None)
    assert ui.widgets_below == {}


def test_theme_colours_are_read_as_pi_does(tmp_path: Path) -> None:
    from pi_core.cli.tui.theme import ThemeError, load_theme, parse_color, theme_from_json

    # the values pi 1.6.0's colour parser gives for the same inputs
    assert parse_color("okhsl(295 50% 67%)") == "#a798d7"
    assert parse_color("okhsl(83 99% 47%)") == "#8f6802"
    assert parse_color("oklch(70% 0.1 200)") == "#40b1b7"
    assert parse_color(196) == "#ff0000" and parse_color("#abc") == "#aabbcc" and parse_color("") is None
    with pytest.raises(ThemeError, match="invalid colour"):
        parse_color("reddish")
    light = load_theme("light", None, str(tmp_path))
    assert light.name == "light" and light.appearance == "light"
    with pytest.raises(ThemeError, match="missing colour token"):
        theme_from_json({"name": "x", "colors": {"accent": "#fff"}}, "x.json")
    problems: list[str] = []
    assert load_theme("nope", None, str(tmp_path), problems).name == "dark"
    assert problems and "Theme 'nope' not found" in problems[0]


def test_a_theme_listed_in_the_themes_setting_is_found(tmp_path: Path) -> None:
    import json

    from pi_core.cli.tui.theme import available_themes, load_theme
    from pi_core.resources.settings import load_settings

    light = json.loads((Path(__file__).resolve().parents[2] / "pi_core/cli/tui/themes/light.json").read_text())
    folder = tmp_path / "my-themes"
    folder.mkdir()
    (folder / "paper.json").write_text(json.dumps({**light, "name": "paper"}))
    (tmp_path / "settings.json").write_text(json.dumps({"themes": [str(folder)]}))
    settings = load_settings(tmp_path, agent_dir=tmp_path)
    assert "paper" in available_themes(settings, str(tmp_path))
    problems: list[str] = []
    assert load_theme("paper", settings, str(tmp_path), problems).name == "paper" and problems == []


def test_keys_in_pi_notation_map_to_prompt_toolkit(tmp_path: Path) -> None:
    from pi_core.cli.tui.keys import KeyError_, load_keymap, to_prompt_toolkit

    assert to_prompt_toolkit("ctrl+p") == ("c-p",)
    assert to_prompt_toolkit("alt+up") == ("escape", "up")
    assert to_prompt_toolkit("shift+tab") == ("s-tab",)
    assert to_prompt_toolkit("shift+ctrl+p") == ("f21",)  # the kitty / modifyOtherKeys report
    assert to_prompt_toolkit("ctrl+left") == ("c-left",)
    with pytest.raises(KeyError_):
        to_prompt_toolkit("ctrl+shift+x")
    (tmp_path / "keybindings.json").write_text('{"cycleModelForward": "ctrl+n", "app.thinking.cycle": []}')
    keymap = load_keymap(tmp_path)
    assert keymap.bindings["app.model.cycleForward"] == ["ctrl+n"]
    assert keymap.keys("app.thinking.cycle") == [] and keymap.describe("app.thinking.cycle") == "(unbound)"
    (tmp_path / "keybindings.json").write_text("{broken")
    assert "cannot read it" in load_keymap(tmp_path).problems[0]
