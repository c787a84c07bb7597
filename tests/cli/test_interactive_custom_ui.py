"""A plugin's own component (``ctx.ui.custom``) and its markdown transformers, in the real
``pi`` in a pseudo-terminal; ``ctx.ui.custom`` in print and RPC modes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from interactive_pty import Pi, clean_env

PICKER = """
from pi_hookspecs import hookimpl

CHOICES = ["development", "staging", "production"]
KEYS = []


class Picker:
    def __init__(self, tui, theme, keybindings, done):
        self.tui, self.theme, self.keys, self.done = tui, theme, keybindings, done
        self.index = 0
        self.typed = ""

    def render(self, width):
        lines = [self.theme.bold("Choose a deployment target") + f" (width {width})"]
        lines += [("> " if i == self.index else "  ") + choice for i, choice in enumerate(CHOICES)]
        lines.append(f"typed: {self.typed or '-'}")
        return lines

    def handle_input(self, key):
        KEYS.append(key)
        if self.keys.matches(key, "tui.select.up"):
            self.index = (self.index - 1) % len(CHOICES)
        elif self.keys.matches(key, "tui.select.down"):
            self.index = (self.index + 1) % len(CHOICES)
        elif self.keys.matches(key, "tui.select.confirm"):
            self.done(CHOICES[self.index])
        elif self.keys.matches(key, "tui.select.cancel"):
            self.done(None)
        else:
            self.typed += key
        self.tui.request_render()

    def dispose(self):
        with open(__file__ + ".log", "a") as log:
            print("disposed", file=log)


@hookimpl
def register_commands(register):
    async def pick(args, ctx):
        chosen = await ctx.ui.custom(Picker, blocked={"kind": "question", "message": "Pick a target"})
        ctx.ui.notify(f"picked {chosen} in {ctx.mode} after keys {','.join(KEYS)}")
        KEYS.clear()

    async def broken(args, ctx):
        def factory(tui, theme, keybindings, done):
            raise RuntimeError("no component today")

        result = await ctx.ui.custom(factory)
        ctx.ui.notify(f"broken gave {result}")

    register("pick", pick)
    register("broken", broken)


@hookimpl
def ui_prompt_start(event):
    with open(__file__ + ".log", "a") as log:
        print(f"waiting: {event.kind} {event.title}", file=log)
"""

TRANSFORMERS = {
    "first.py": """
        from pi_hookspecs import hookimpl

        @hookimpl
        def register_markdown_transformers(register):
            def arrows(markdown, context):
                if context.is_streaming:
                    return markdown
                drawn = "stored" if context.message_id and context.timestamp else "live"
                return markdown.replace("listed", f"counted[{context.message_type}:{drawn}]")
            register(arrows)
    """,
    "second.py": """
        from pi_hookspecs import hookimpl

        @hookimpl
        def register_markdown_transformers(register):
            def broken(markdown, context):
                raise ValueError("cannot read markdown")
            register(broken)
    """,
    "third.py": """
        from pi_hookspecs import hookimpl

        @hookimpl
        def register_markdown_transformers(register):
            def tally(markdown, context):
                return markdown.replace("counted", "tallied").replace("## ", "## CHANGES: ")

            register(print)  # replaced: a plugin has one transformer
            register(tally, message_types=["assistant", "changelog"])
    """,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    return root


@pytest.fixture
def spawn(project: Path) -> Iterator[Callable[..., Pi]]:
    started: list[Pi] = []

    def start(*args: str) -> Pi:
        pi = Pi(*args, cwd=project)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        pi.close()


def test_a_plugin_component_takes_keys_and_returns_its_value(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    plugin = tmp_path / "picker.py"
    plugin.write_text(textwrap.dedent(PICKER))
    pi = spawn("-e", str(plugin))
    pi.expect("› ")
    pi.line("/pick")
    pi.expect("Choose a deployment target (width 15")  # 160 columns, less one
    pi.expect("> development")
    # a plain key, Down, Down, Up, Enter: each reaches handle_input in pi's key notation
    pi.send("x\x1b[B\x1b[B\x1b[A\r")
    pi.expect("picked staging in tui after keys x,down,down,up,enter")
    pi.expect("› ")  # the input line is back
    assert Path(str(plugin) + ".log").read_text() == "waiting: custom Pick a target\ndisposed\n"

    pi.line("/pick")
    pi.expect("> development")
    pi.send("\x1b")  # Escape cancels: the component answers None
    pi.expect("picked None in tui after keys escape")
    pi.line("/broken")
    pi.expect("✖ ctx.ui.custom() of plugin picker failed: the component factory raised RuntimeError: no component")
    pi.expect("broken gave None")
    pi.line("/quit")
    assert pi.wait_exit() == 0


def test_markdown_transformers_chain_in_load_order_and_a_failing_one_is_skipped(
    spawn: Callable[..., Pi], tmp_path: Path, project: Path
) -> None:
    args: list[str] = []
    for name, source in TRANSFORMERS.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        args += ["-e", str(path)]
    pi = spawn(*args)
    pi.expect("› ")
    pi.line("what is here?")
    pi.expect("command tallied[assistant:live] 1 entry: notes.txt.")  # first, then third; second skipped
    pi.expect("› ")
    screen = pi.screen_text()
    failure = "✖ markdown transformer of plugin second failed: ValueError: cannot read markdown"
    assert screen.count(failure) == 1, screen[-3000:]
    pi.line("/changelog")
    pi.expect("CHANGES: ")  # a transformer of the changelog surface
    pi.line("/quit")
    assert pi.wait_exit() == 0
    sessions = (Path(clean_env()["PI_CODING_AGENT_DIR"]) / "sessions").rglob("*.jsonl")
    stored = "".join(path.read_text() for path in sessions)
    assert "The `ls` command listed 1 entry" in stored and "tallied" not in stored  # display only

    resumed = spawn("-c", *args)  # replayed from the session file: with the entry's id and time
    resumed.expect("command tallied[assistant:stored] 1 entry: notes.txt.")
    resumed.expect("› ")
    resumed.line("/quit")
    assert resumed.wait_exit() == 0


def test_custom_returns_none_in_print_and_rpc_modes(project: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "modes.py"
    plugin.write_text(
        textwrap.dedent(
            """
            from pi_hookspecs import hookimpl

            called = []

            @hookimpl
            async def session_start(event, ctx):
                result = await ctx.ui.custom(lambda *args: called.append(args))
                ctx.ui.notify(f"custom in {ctx.mode} gave {result}, factory called {len(called)} times", "warning")
            """
        )
    )
    base = [sys.executable, "-m", "pi_core", "--no-extensions", "-e", str(plugin), "--model", "faux/offline-demo"]
    printed = subprocess.run(
        [*base, "-p", "hi"], cwd=project, env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert printed.returncode == 0, printed.stderr
    assert "[warning] custom in print gave None, factory called 0 times" in printed.stderr

    rpc = subprocess.run(
        [*base, "--mode", "rpc"],
        cwd=project,
        env=clean_env(),
        input=json.dumps({"type": "get_state", "id": "1"}) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    records = [json.loads(line) for line in rpc.stdout.splitlines() if line.startswith("{")]
    notices = [r for r in records if r.get("type") == "extension_ui_request" and r.get("method") == "notify"]
    assert [n["message"] for n in notices] == ["custom in rpc gave None, factory called 0 times"]
