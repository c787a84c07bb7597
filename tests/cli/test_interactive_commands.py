"""Interactive mode's slash commands end to end: the real ``pi`` in a pseudo-terminal on
the offline demo model (each prompt: a ``bash ls`` tool call, then a summary)."""

from __future__ import annotations

import json
import shutil
import stat
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir
from interactive_pty import Pi, clean_env, resume_path


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


def answered(pi: Pi, text: str = "hi") -> None:
    """Send ``text`` and wait for the run to settle (its usage line)."""
    pi.line(text)
    pi.expect("The ls command listed")
    pi.expect("ctx ")


def quit_pi(pi: Pi) -> None:
    pi.line("/quit")
    assert pi.wait_exit() == 0


DOUBLE_ESCAPE = "\x1b\x1b\x1b[24~"
"""Esc twice on an empty input line, then F12 (bound to nothing). pi acts on a lone Esc
only once the rest of an Alt+key has not come for 0.3 s, and counts two Escs acted on
within 0.5 s as a double Esc; the key after the second Esc ends that wait, so both are
acted on at once however busy the machine is, not one timer apart."""


def test_copy_export_clone_and_import(spawn: Callable[..., Pi], project: Path, tmp_path: Path) -> None:
    pi = spawn()
    pi.expect("› ")
    pi.line("/copy")
    pi.expect("No agent messages to copy yet.")
    answered(pi)
    pi.line("/copy")  # no clipboard tool here: the terminal's OSC 52
    pi.expect("Copied last agent message to clipboard (through the terminal: OSC 52)")
    assert "\x1b]52;c;" in "".join(pi.log)
    pi.line("/export copy.jsonl")
    pi.expect("Session exported to:")
    exported = [json.loads(line) for line in (project / "copy.jsonl").read_text().splitlines()]
    assert exported[0]["type"] == "session" and any(r.get("type") == "message" for r in exported[1:])
    pi.line("/export page.html")
    pi.expect("Session exported to:")
    assert "<html" in (project / "page.html").read_text().lower()
    pi.line("/clone")
    pi.expect("Cloned into new session")
    pi.line("/import copy.jsonl")
    pi.expect("Replace the current session with copy.jsonl?")
    pi.send("y")
    pi.expect("Session imported from copy.jsonl")
    pi.expect("The ls command listed")  # the imported session's end is replayed
    pi.line("/import")
    pi.expect("Usage: /import <path.jsonl>")
    quit_pi(pi)


def test_share_without_gh_and_bug_report_and_changelog(spawn: Callable[..., Pi], project: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = clean_env(PATH=f"{bin_dir}:/usr/bin:/bin")
    if shutil.which("gh", path=env["PATH"]):
        pytest.skip("gh is installed: this test is about a machine without it")
    pi = spawn(env=env)
    pi.expect("› ")
    answered(pi)
    pi.line("/share")
    pi.expect("/share needs the GitHub CLI (gh)")
    pi.line("/bug it broke")
    pi.expect("What went wrong?")
    pi.send(" badly\r")
    pi.expect("Include the session transcript?")
    pi.send("y")
    pi.expect("Bug report written to")
    [report] = list(project.glob("pi-bug-report-*.zip"))
    with zipfile.ZipFile(report) as archive:
        assert archive.read("description.txt").decode().strip() == "it broke badly"
        assert json.loads(archive.read("metadata.json"))["model"] == "faux/offline-demo"
        assert b'"type":"session"' in archive.read("session.jsonl").replace(b" ", b"")
    pi.line("/changelog")
    pi.expect("Interactive mode")
    quit_pi(pi)


def test_settings_writes_the_user_file_and_applies_at_once(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("› ")
    pi.line("/settings")
    pi.expect("Settings (user:")
    pi.expect("hideThinkingBlock = false")
    # keys are handled in order: the filter narrows the list before Enter picks
    pi.send("hideThinking\r")  # a boolean toggles
    pi.expect("hideThinkingBlock = true (")  # printed in the transcript
    pi.send("\x7f" * len("hideThinking") + "codeBlock\r")
    pi.expect("? markdown.codeBlockIndent")  # the text dialog
    pi.send("\x15> \r")  # Ctrl+U clears the line, then the new value
    pi.expect('markdown.codeBlockIndent = "> " (')
    pi.send("\x1b")
    pi.expect("› ")
    settings = json.loads((agent_dir() / "settings.json").read_text())
    assert settings == {"hideThinkingBlock": True, "markdown": {"codeBlockIndent": "> "}}
    quit_pi(pi)


def test_trust_saves_the_decision(spawn: Callable[..., Pi], project: Path) -> None:
    pi = spawn()
    pi.expect("› ")
    pi.line("/trust")
    pi.expect("Project trust for")
    pi.expect("Saved: no saved decision")
    pi.send("t")
    pi.expect("Trust this folder: saved in")
    assert json.loads((agent_dir() / "trust.json").read_text()) == {str(project.resolve()): True}
    quit_pi(pi)


def test_tree_labels_filters_folding_and_double_escape(spawn: Callable[..., Pi]) -> None:
    pi = spawn()
    pi.expect("› ")
    answered(pi, "alpha")
    pi.send(DOUBLE_ESCAPE)  # double Esc on an empty line: doubleEscapeAction "tree"
    pi.expect("Go to which entry? (filter: default)")
    pi.expect("bash → ")  # tool results are shown by the default filter
    pi.send("\x1b[5~")  # PageUp: to the first entry, your message
    pi.send("\x1b[1;5D")  # Ctrl+←: fold the branch under it
    pi.expect("▸ ● user: alpha")
    pi.send("\x1b[1;5C")  # Ctrl+→: unfold
    pi.expect("● assistant:")
    pi.send("\x15")  # Ctrl+U: user messages only
    pi.expect("Go to which entry? (filter: user-only)")
    pi.send("L")  # Shift+L: label the entry under the cursor
    pi.expect("Label (empty clears it)")
    pi.send("start\r")
    pi.expect("Label set: start")
    pi.expect("[start]")
    pi.send("\x0c")  # Ctrl+L: labeled entries only
    pi.expect("Go to which entry? (filter: labeled-only)")
    pi.send("\x1b")
    pi.expect("› ")
    quit_pi(pi)


def test_session_picker_renames_and_deletes(spawn: Callable[..., Pi], project: Path) -> None:
    first = spawn()
    first.expect("› ")
    answered(first, "first session")
    quit_pi(first)
    second = spawn()
    second.expect("› ")
    answered(second, "second session")
    second.line("/resume")
    second.expect("Resume which session? (sorted by recent")
    second.send("first")
    second.expect("first▏")
    second.send("\x12")  # Ctrl+R
    second.expect("New name of the session")
    second.send("Alpha\r")
    second.expect("Renamed to Alpha")
    second.send("\x15")  # the filter keeps "first": clear it (Ctrl+U is not bound here: backspace)
    second.send("\x7f" * 5)
    second.send("\x0e")  # Ctrl+N: named sessions only
    second.expect("named only")
    second.expect("Alpha")
    second.send("\x04")  # Ctrl+D deletes
    second.expect("Delete session 'Alpha'?")
    second.send("y")
    second.expect("Deleted ")
    second.send("\x1b")
    second.expect("› ")
    quit_pi(second)
    sessions = list(Path(agent_dir(), "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1 and "second session" in sessions[0].read_text()


def test_session_whose_folder_is_gone_continues_here(spawn: Callable[..., Pi], tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    pi = spawn(cwd=gone)
    pi.expect("› ")
    answered(pi, "in the old folder")
    quit_pi(pi)
    session = resume_path(pi.screen_text())
    shutil.rmtree(gone)
    here = tmp_path / "here"
    here.mkdir()
    pi = spawn("--session", str(session), cwd=here)
    pi.expect("The session's working folder no longer exists")
    pi.send("c")
    pi.expect(str(here))  # the header names the folder it runs in
    pi.expect("in the old folder")
    quit_pi(pi)
    pi = spawn("--session", str(session), cwd=here)
    pi.expect("The session's working folder no longer exists")  # not stored: asked again
    pi.send("f")
    pi.expect("› ")
    quit_pi(pi)
    forked = resume_path(pi.screen_text())
    assert forked != session and json.loads(forked.read_text().splitlines()[0])["cwd"] == str(here.resolve())


def make_executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_share_creates_a_secret_gist_with_gh_and_export_has_a_default_name(
    spawn: Callable[..., Pi], project: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "gh-calls.txt"
    make_executable(
        bin_dir / "gh",
        f"""#!/bin/sh
echo "$@" >> {calls}
for last; do :; done
grep -q '<html' "$last" && echo "https://gist.github.com/someone/0123abcd"
""",
    )
    pi = spawn(env=clean_env(PATH=f"{bin_dir}:/usr/bin:/bin"))
    pi.expect("› ")
    pi.send("hi\r")
    pi.expect("ctx ")
    pi.line("/share")
    pi.expect("Share this session as a secret GitHub gist?")
    pi.send("y")
    pi.expect("Secret gist: https://gist.github.com/someone/0123abcd")
    args = calls.read_text().split()
    assert args[:2] == ["gist", "create"] and "--public" not in args
    pi.line("/export")
    pi.expect("Session exported to:")
    [page] = list(project.glob("pi-session-*.html"))
    assert "<html" in page.read_text().lower()
    quit_pi(pi)


def test_settings_in_the_project_file_and_removing_a_key(spawn: Callable[..., Pi], project: Path) -> None:
    pi = spawn("--approve")  # a trusted project: its .pi/settings.json counts
    pi.expect("› ")
    pi.line("/settings")
    pi.expect("Settings (user:")
    pi.send("\t")  # Tab: the project's file
    pi.expect("Settings (project:")
    pi.send("steeringMode\r")
    pi.expect("? steeringMode")
    pi.send("2")  # "all"
    pi.expect('steeringMode = "all" (')
    assert json.loads((project / ".pi" / "settings.json").read_text()) == {"steeringMode": "all"}
    pi.send("\x1b[3~")  # Del: remove it from this file again
    pi.expect("steeringMode removed (")
    pi.send("\x1b")
    pi.expect("› ")
    quit_pi(pi)
    assert json.loads((project / ".pi" / "settings.json").read_text()) == {}


def test_tree_filter_mode_and_double_escape_action_settings(spawn: Callable[..., Pi]) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps({"treeFilterMode": "no-tools", "doubleEscapeAction": "none"}))
    pi = spawn()
    pi.expect("› ")
    answered(pi, "alpha")
    pi.send(DOUBLE_ESCAPE)  # doubleEscapeAction "none": nothing opens
    pi.line("/tree")  # typed after F12: no Esc is left to make an Alt+key of "/"
    pi.expect("Go to which entry? (filter: no-tools)")
    pi.send("\x1b")
    pi.expect("› ")
    quit_pi(pi)
    assert pi.screen_text().count("Go to which entry?") == 1
    assert "bash → " not in pi.screen_text()  # no-tools: tool results left out
