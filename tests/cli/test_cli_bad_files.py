"""Every bad file gets one line naming the file (and the field), never a traceback, in
print, JSON and RPC modes, exactly once; the run goes on without the broken part.

One ``pi`` run meets several bad files at once (settings, models.json, auth.json,
mcp.json, a SKILL.md, a prompt template, a session file with a garbage line), so the
group stays a handful of subprocesses; the settings.json variants rotate through the
modes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir, jsonl, run_pi, text_reply
from wire_server import WireServer, use_server

MODES = ("print", "json", "rpc")

SETTINGS_CASES: list[tuple[bytes, str]] = [
    (b'{"defaultTools": "bash"}', 'defaultTools must be a list of tool names, found "bash"'),
    (b'{"steeringMode": "sometimes"}', 'steeringMode must be "all" or "one-at-a-time", found "sometimes"'),
    (b"\xff\xfe\x00{}", "not UTF-8 text (byte 0); expected a JSON object"),
    (b"", "the file is empty; write {} or remove it"),
    (b'{"compaction": "yes"}', 'compaction must be an object, found "yes"'),
    (b'{"retry": {"maxRetries": 2,}}', "invalid JSON: Expecting property name enclosed in double quotes"),
]


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def write_bad_files(cwd: Path, settings: bytes, url: str) -> dict[str, Path]:
    agent = agent_dir()
    files = {
        "settings": agent / "settings.json",
        "models": agent / "models.json",
        "auth": agent / "auth.json",
        "mcp": agent / "mcp.json",
        "skill": agent / "skills" / "broken" / "SKILL.md",
        "prompt": agent / "prompts" / "broken.md",
        "session": cwd / "session.jsonl",
    }
    files["settings"].write_bytes(settings)
    files["models"].write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-completions",
                        "apiKey": "k",
                        "models": [{"id": "good", "contextWindow": 32000}, {"id": "bad", "contextWindow": "big"}],
                    }
                }
            }
        )
    )
    files["auth"].write_text('{"openai": {"type": "api_key", "key": "sk-1"},}')
    files["mcp"].write_bytes(b"\x00\xff\xfe binary")
    files["skill"].parent.mkdir(parents=True)
    files["skill"].write_text("---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    files["prompt"].parent.mkdir(parents=True)
    files["prompt"].write_text('---\ndescription: "open\n---\nbody\n')
    header = {
        "type": "session",
        "version": 3,
        "id": str(uuid.uuid4()),
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": str(cwd),
    }
    files["session"].write_text(json.dumps(header) + "\nthis is no JSON\n")
    return files


def expected_lines(files: dict[str, Path], settings_message: str) -> dict[str, tuple[str, ...]]:
    """Fragments per bad file that must be together on exactly one line."""
    where = f"{files['settings']}:1:" if "invalid JSON" in settings_message else f"{files['settings']}: "
    return {
        "settings": (where, settings_message),
        "models": (f"{files['models']}: providers.local.models[1].contextWindow: ", "; model local/bad is skipped"),
        "auth": (f"{files['auth']}: invalid JSON",),
        "mcp": (f"{files['mcp']}: not UTF-8 text",),
        "skill": (f"{files['skill']}: invalid YAML frontmatter", "the skill is not loaded"),
        "prompt": (f"{files['prompt']}: invalid YAML frontmatter", "the template is not loaded"),
        "session": (f"{files['session']}:2: malformed line skipped",),
    }


def run_mode(mode: str, cwd: Path, *args: str) -> tuple[int, str, str]:
    common = ["--model", "local/good", *args]
    env = {"PI_EXTENSIONS": "mcp"}  # pluggable-pi-mcp reads mcp.json
    if mode == "rpc":
        command = json.dumps({"type": "prompt", "message": "hi"}) + "\n"
        out = run_pi("--mode", "rpc", *common, cwd=cwd, stdin=command, env=env)
    elif mode == "json":
        out = run_pi("--mode", "json", *common, "hi", cwd=cwd, env=env)
    else:
        out = run_pi("-p", *common, "hi", cwd=cwd, env=env)
    return out.returncode, out.stdout, out.stderr


@pytest.mark.parametrize(
    ("mode", "settings", "message"),
    [(MODES[i % len(MODES)], data, message) for i, (data, message) in enumerate(SETTINGS_CASES)],
    ids=[f"{MODES[i % len(MODES)]}-{i}" for i in range(len(SETTINGS_CASES))],
)
def test_each_bad_file_is_one_line_once_and_the_run_goes_on(
    wire: WireServer, tmp_path: Path, mode: str, settings: bytes, message: str
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    files = write_bad_files(cwd, settings, wire.url)
    before = {name: path.read_bytes() for name, path in files.items() if name != "session"}
    wire.enqueue(text_reply("answered"))
    status, stdout, stderr = run_mode(mode, cwd, "--session", str(files["session"]))
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    if mode == "rpc":  # a plugin's notices (pluggable-pi-mcp's) reach an RPC client as notify requests
        lines += [r["message"] for r in jsonl(stdout) if r.get("method") == "notify"]
    for name, fragments in expected_lines(files, message).items():
        hits = [line for line in lines if all(fragment in line for fragment in fragments)]
        assert len(hits) == 1, f"{name}: {fragments!r} on {len(hits)} lines of:\n{stderr}"
    assert len(lines) == 7, stderr  # and nothing else
    # the broken model is left out, the good one answers
    assert status == 0 and wire.requests and wire.requests[0].body["model"] == "good"
    if mode == "print":
        assert stdout == "answered\n"
    else:
        assert any(r.get("type") == "agent_end" for r in jsonl(stdout))
    # nothing pi could not read was rewritten
    assert {name: path.read_bytes() for name, path in files.items() if name != "session"} == before


@pytest.mark.parametrize(
    ("mode", "version", "message"),
    [
        ("print", 4, "session format version 4 is newer than this pi reads (3)"),
        ("rpc", "3", 'the session header\'s version must be a whole number from 1 to 3, found "3"'),
        ("json", True, "the session header's version must be a whole number from 1 to 3, found true"),
    ],
)
def test_a_session_of_an_unknown_version_is_refused_never_rewritten(
    tmp_path: Path, mode: str, version: object, message: str
) -> None:
    session = tmp_path / "s.jsonl"
    entry = {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "earlier", "timestamp": 1},
    }
    session.write_text(
        json.dumps(
            {
                "type": "session",
                "version": version,
                "id": str(uuid.uuid4()),
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": str(tmp_path),
            }
        )
        + "\n"
        + json.dumps(entry)
        + "\n"
    )
    before = session.read_bytes()
    status, _stdout, stderr = run_mode(mode, tmp_path, "--session", str(session))
    assert status == 1 and "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if str(session) in line] == [
        f"pi: {session}:1: {message}; the file was not opened or changed"
        + (" (update pi to open it)" if version == 4 else "")
    ]
    assert session.read_bytes() == before


def test_install_and_remove_stop_before_changing_anything_when_settings_are_broken(tmp_path: Path) -> None:
    path = agent_dir() / "settings.json"
    for text, problem in [('{"packages": ["pi-a"],}', ":1:"), ('{"packages": "pi-a"}', "packages must be a list")]:
        path.write_text(text)
        for command in (["install", str(tmp_path / "no-such-folder")], ["remove", "pi-a"]):
            out = run_pi(*command, cwd=tmp_path)
            assert out.returncode == 1 and "Traceback" not in out.stderr
            [line] = out.stderr.splitlines()
            assert line.startswith(f"pi: {path}") and problem in line
            assert line.endswith("(fix it first: nothing was installed, removed or recorded)")
            assert path.read_text() == text


def test_commands_without_a_session_report_a_broken_settings_file_once(tmp_path: Path) -> None:
    path = agent_dir() / "settings.json"
    path.write_bytes(b"\xff\xfe{}")
    problem = f"{path}: not UTF-8 text (byte 0); expected a JSON object"
    for command in (["extensions", "list"], ["config"]):
        out = run_pi(*command, cwd=tmp_path)
        assert "Traceback" not in out.stderr
        assert (out.stdout + out.stderr).count(problem) == 1, (command, out.stdout, out.stderr)


def test_the_skipped_model_a_run_names_is_explained_before_it_is_not_found(tmp_path: Path) -> None:
    """``--model`` names the very entry models.json had to skip: the skipped entry's line
    comes first, then the model's, so the user sees why."""
    models = agent_dir() / "models.json"
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    models.write_text(
        json.dumps({"providers": {"local": {**provider, "models": [{"id": "bad", "contextWindow": "x"}]}}})
    )
    out = run_pi("-p", "--model", "local/bad", "hi", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    skipped = [i for i, line in enumerate(lines) if f"{models}: providers.local.models[0].contextWindow: " in line]
    assert len(skipped) == 1 and lines[skipped[0]].endswith("; model local/bad is skipped")
    assert skipped[0] < len(lines) - 1 and "local/bad" in lines[-1]


def test_pi_config_never_rewrites_a_list_it_cannot_read(tmp_path: Path) -> None:
    path = agent_dir() / "settings.json"
    for text in ('{"disabledExtensions": "acme"}', '{"skills": {"customDirectories": ["~/sk"]}}'):
        path.write_text(text)
        out = run_pi("config", cwd=tmp_path)
        assert out.returncode == 1 and "Traceback" not in out.stderr
        [line] = out.stderr.splitlines()
        assert line.startswith(f"pi: {path}: ") and " must be " in line
        assert path.read_text() == text


def test_interactive_mode_shows_each_bad_file_once(tmp_path: Path) -> None:
    from interactive_pty import Pi

    cwd = tmp_path / "project"
    cwd.mkdir()
    settings = agent_dir() / "settings.json"
    settings.write_text('{"defaultTools": "bash", "fancyMode": 1}')
    skill = agent_dir() / "skills" / "broken" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    pi = Pi(cwd=cwd)
    try:
        pi.expect("› ")
        pi.line("/quit")
        pi.wait_exit()
        screen = pi.screen_text()
    finally:
        pi.close()
    flat = " ".join(screen.split())  # the terminal may wrap a long line
    for fragment in (
        f'{settings}: defaultTools must be a list of tool names, found "bash"',
        f"{settings}: unknown setting fancyMode",
        f"{skill}: invalid YAML frontmatter",
    ):
        assert flat.count(fragment) == 1, (fragment, screen)
    assert "Traceback" not in screen
