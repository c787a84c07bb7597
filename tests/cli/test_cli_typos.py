"""A first word one slip away from a command (``pi instal foo``) is refused with one line
and status 2 instead of becoming a paid model turn; ``pi -- instal foo`` and ``pi "instal
foo"`` still send the prompt. The rule itself (pi_core.cli.typos) is tested on words."""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir, configure_local_endpoint, run_pi, text_reply
from wire_server import WireServer, use_server

from pi_core.cli import COMMANDS, PACKAGE_COMMANDS, SUBCOMMANDS
from pi_core.cli.typos import closest, distance, looks_like

NAMES = [name for name, _, _ in COMMANDS] + ["mcp", "sandbox", "acp"]


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("install", "install", 0),
        ("instal", "install", 1),  # a letter left out
        ("installl", "install", 1),  # one added
        ("imstall", "install", 1),  # one replaced
        ("modles", "models", 1),  # neighbours swapped: one edit, not two
        ("hepl", "help", 1),
        ("complete", "completion", 3),
        ("", "abc", 3),
        ("ca", "abc", 3),  # optimal string alignment: no substring edited twice
    ],
)
def test_distance(a: str, b: str, expected: int) -> None:
    assert distance(a, b) == expected
    assert distance(b, a) == expected


@pytest.mark.parametrize(
    ("word", "command"),
    [
        ("instal", "install"),
        ("sesions", "sessions"),
        ("modles", "models"),
        ("extension", "extensions"),
        ("hepl", "help"),
        ("complete", "completion"),  # an unfinished name, its last letter wrong
        ("complet", "completion"),
        ("extensi", "extensions"),
        ("lsit", "list"),
        ("atuh", "auth"),
        ("confgi", "config"),
        ("updaet", "update"),
        ("uninstal", "uninstall"),
        ("sanbox", "sandbox"),  # a plugin's command
    ],
)
def test_slips_are_taken_for_the_command(word: str, command: str) -> None:
    assert closest(word, NAMES) == command


@pytest.mark.parametrize(
    "word",
    [
        # ordinary first words of a prompt
        "test",
        "fix",
        "explain",
        "hello",
        "refactor",
        "review",
        "summarise",
        "summarize",
        "why",
        "what",
        "add",
        "write",
        "implement",
        "debug",
        "run",
        "rename",
        "document",
        "optimise",
        "translate",
        "check",
        # one or two edits from a command, and still ordinary
        "lint",
        "last",
        "lost",
        "gist",
        "helm",
        "held",
        "auto",
        "math",
        "path",
        "versions",
        "passions",
        "sections",
        "compaction",
        "compilation",
        "completely",
        "completed",
        "complex",
        "installed",
        "installation",
        "configure",
        "upgrade",
        "models2x",
        # too short to tell
        "mpc",
        "cap",
        "abc",
        "lis",
        "hep",
    ],
)
def test_ordinary_words_are_not(word: str) -> None:
    assert closest(word, NAMES) is None, word


def test_a_command_itself_is_no_slip() -> None:
    assert not any(looks_like(name, name) for name in NAMES)


def test_the_nearest_command_wins() -> None:
    # "remve" is one edit from "remove" (and none is closer)
    assert closest("remve", NAMES) == "remove"
    assert closest("updates", NAMES) == "update"


def test_the_table_is_the_dispatch() -> None:
    """Every command of the table is dispatched, and every dispatched name is in it."""
    assert {name for name, _, _ in COMMANDS} == {*SUBCOMMANDS, *PACKAGE_COMMANDS, "help", "completion"}


# --------------------------------------------------------------------------- the real pi


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def _imported(stderr: str) -> set[str]:
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", stderr, re.MULTILINE))


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["instal", "foo"], "install"),
        (["sesions"], "sessions"),
        (["modles", "--all"], "models"),
        (["extension", "list"], "extensions"),
        (["hepl"], "help"),
        (["complete", "bash"], "completion"),
    ],
)
def test_a_mistyped_command_is_refused_without_a_model_turn(tmp_path: Path, args: list[str], command: str) -> None:
    done = run_pi(*args, cwd=tmp_path, stdin="", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    prompt = " ".join(["pi", "--", *args])
    assert lines == [f"pi: {args[0]!r} is not a command: did you mean 'pi {command}'? To send it as a prompt: {prompt}"]
    modules = _imported(done.stderr)
    assert "pi_core.cli.typos" in modules  # the list is real
    # the plugin host loads pi's provider plugin (its catalogue index and login list), nothing else of the LLM layer
    provider_plugin = {
        "pi_core.ai",
        "pi_core.ai.builtin",
        "pi_core.ai.catalog",
        "pi_core.ai.oauth",
        "pi_core.ai.oauth.api_key",
    }
    heavy = {m for m in modules if m.startswith(("pi_core.runtime", "pi_core.ai", "pi_core.cli.main"))}
    assert not heavy - provider_plugin


def test_the_message_quotes_what_the_shell_would_split(tmp_path: Path) -> None:
    done = run_pi("instal", "my file", "it's", cwd=tmp_path, stdin="")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("""To send it as a prompt: pi -- instal 'my file' 'it'"'"'s'""")


def test_a_plugins_command_is_a_name_it_may_be_mistyped_for(tmp_path: Path) -> None:
    """The plugins' subcommands (``register_cli_commands``) are among the names, and a
    plugin's command that is itself one slip from pi's (``lists``) runs."""
    plugin = tmp_path / "cli_plugin.py"
    plugin.write_text(
        textwrap.dedent("""
        from pi_hookspecs import hookimpl

        @hookimpl
        def register_cli_commands(register):
            register("tour-guide", lambda args: print("touring", args), help="A guided tour")
            register("lists", lambda args: print("lists", args), help="Shadows no command")
    """)
    )
    env = {
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "PI_EXTENSIONS": "cli_plugin",
    }
    _install_entry_point(tmp_path, "cli_plugin", "cli_plugin")
    done = run_pi("tuor-guide", "now", cwd=tmp_path, stdin="", env=env)
    assert done.returncode == 2, done.stderr
    assert "did you mean 'pi tour-guide'? To send it as a prompt: pi -- tuor-guide now" in done.stderr
    done = run_pi("lists", "x", cwd=tmp_path, stdin="", env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "lists ['x']"), done.stderr


def _install_entry_point(site: Path, name: str, module: str) -> None:
    info = site / f"pi_test_{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pi-test-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pi.extensions]\n{name} = {module}\n")
    (info / "RECORD").write_text("")


@pytest.mark.parametrize(
    "args",
    [
        ["--", "instal", "foo"],  # after --: words of a prompt
        ["instal foo"],  # one argument with a space: a prompt
        ["fix", "the", "tests"],  # an ordinary first word
        ["hello"],
        ["explain"],
    ],
)
def test_prompts_still_reach_the_model(wire: WireServer, tmp_path: Path, args: list[str]) -> None:
    """``pi WORDS`` (stdin not a terminal: the answer is printed) sends the words, each
    argument a prompt of its own."""
    configure_local_endpoint(wire.url)
    (agent_dir() / "settings.json").write_text(json.dumps({"defaultProvider": "local", "defaultModel": "local-model"}))
    prompts = [a for a in args if a != "--"]
    wire.enqueue(*(text_reply(f"answer {i}") for i in range(len(prompts))))
    done = run_pi(*args, cwd=tmp_path, stdin="")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"answer {len(prompts) - 1}"
    sent = [m["content"] for m in wire.requests[-1].body["messages"] if m["role"] == "user"]
    assert [json.dumps(content) for content in sent] == [json.dumps([{"type": "text", "text": p}]) for p in prompts]
