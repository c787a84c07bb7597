"""``pi -p`` and ``pi --mode json`` end to end: a subprocess, pi's own wire client, a
local endpoint on loopback configured in models.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir, configure_local_endpoint, jsonl, run_pi, text_reply, tool_reply
from wire_server import WireServer, json_error, use_server


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.txt").write_text("hello from the file\n")
    return root


def test_print_mode_tool_round_trip_against_a_local_endpoint(wire: WireServer, cwd: Path) -> None:
    model = configure_local_endpoint(wire.url)
    wire.enqueue(tool_reply("bash", {"command": "cat hello.txt"}), text_reply("The file says hello."))
    out = run_pi("-p", "--model", model, "what does hello.txt say?", cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "The file says hello.\n"
    first, second = wire.requests[0].body, wire.requests[1].body
    assert first["model"] == "local-model" and first["stream"] is True
    assert [t["function"]["name"] for t in first["tools"]] == ["read", "bash", "edit", "write"]
    assert wire.requests[0].headers["authorization"] == "Bearer test-key"
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and "hello from the file" in tool_message["content"]
    sessions = list((agent_dir() / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1
    types = [json.loads(line)["type"] for line in sessions[0].read_text().splitlines()]
    assert types[0] == "session" and types.count("message") == 5


def test_piped_stdin_and_file_arguments_are_prepended(wire: WireServer, cwd: Path) -> None:
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("ok"))
    out = run_pi("-p", "--model", model, "@hello.txt", "review this", cwd=cwd, stdin="diff --git a b\n")
    assert out.returncode == 0, out.stderr
    user = wire.requests[0].body["messages"][-1]["content"]
    text = user if isinstance(user, str) else "".join(part.get("text", "") for part in user)
    assert text.startswith("diff --git a b\n\n<file name=")
    assert "hello from the file" in text and text.endswith("review this")


def test_print_mode_errors_go_to_stderr_with_exit_status_1(wire: WireServer, cwd: Path) -> None:
    model = configure_local_endpoint(wire.url)
    wire.enqueue(json_error(400, {"error": {"message": "bad request: unknown field", "type": "invalid_request_error"}}))
    out = run_pi("-p", "--model", model, "hi", cwd=cwd)
    assert out.returncode == 1 and out.stdout == ""
    assert "unknown field" in out.stderr
    out = run_pi("-p", "--model", "nosuch/model-x", "hi", cwd=cwd)
    assert out.returncode == 1 and "nosuch" in out.stderr
    out = run_pi("-p", "@missing.txt", "hi", cwd=cwd)
    assert out.returncode == 1 and "File not found" in out.stderr


def test_json_mode_prints_the_header_then_every_event(wire: WireServer, cwd: Path) -> None:
    model = configure_local_endpoint(wire.url)
    wire.enqueue(tool_reply("read", {"path": "hello.txt"}), text_reply("done"))
    out = run_pi("--mode", "json", "--model", model, "read it", cwd=cwd)
    assert out.returncode == 0, out.stderr
    records = jsonl(out.stdout)
    assert records[0]["type"] == "session" and records[0]["version"] == 3
    kinds = [r["type"] for r in records[1:]]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_settled"
    assert {"tool_execution_start", "tool_execution_end", "turn_end", "agent_end"} <= set(kinds)
    updates = [r for r in records if r["type"] == "message_update"]
    assert updates and all("message" not in r and "partial" not in r["assistantMessageEvent"] for r in updates)
    starts = [r["assistantMessageEvent"] for r in updates if r["assistantMessageEvent"]["type"] == "toolcall_start"]
    assert starts and starts[0]["toolName"] == "read" and starts[0]["id"] == "call_1"
    end = next(r for r in records if r["type"] == "tool_execution_end")
    assert end["toolName"] == "read" and "hello from the file" in end["result"]["content"][0]["text"]


BROKEN_PLUGIN = """
from pi_hookspecs import hookimpl

@hookimpl
def session_start(ctx):
    raise RuntimeError("rules file is unreadable")

@hookimpl
def turn_start(event):
    raise ValueError("turn hook broke")
"""


@pytest.mark.parametrize("mode", ["print", "json"])
def test_plugin_hook_errors_reach_stderr_including_session_start(cwd: Path, mode: str) -> None:
    plugin = cwd / "broken_hooks.py"
    plugin.write_text(BROKEN_PLUGIN)
    flags = ["-p"] if mode == "print" else ["--mode", "json"]
    out = run_pi(*flags, "--model", "faux/offline-demo", "-e", str(plugin), "hi", cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert (
        f"extension error ({plugin}) in session_start: handler raised RuntimeError: rules file is unreadable"
        in out.stderr
    )
    assert "in turn_start: handler raised ValueError: turn hook broke" in out.stderr
    if mode == "json":  # the JSONL stream carries them too, the start-up one included
        errors = [r for r in jsonl(out.stdout) if r["type"] == "extension_error"]
        assert [e["event"] for e in errors][:2] == ["session_start", "turn_start"]


def test_without_any_key_no_model_and_the_demo_only_by_name(cwd: Path) -> None:
    # no silent offline answer: one line naming the ways to configure a model, status 1
    # (tests/cli/test_cli_no_model.py covers this in detail)
    out = run_pi("-p", "what is here?", cwd=cwd, env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""})
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("pi: No model available:") and out.stderr.count("\n") == 1
    named = run_pi(
        "-p",
        "--model",
        "faux/offline-demo",
        "what is here?",
        cwd=cwd,
        env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
    )
    assert named.returncode == 0, named.stderr
    assert "hello.txt" in named.stdout and "offline demo" in named.stdout


def test_no_session_writes_nothing_and_continue_resumes(wire: WireServer, cwd: Path) -> None:
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("first"))
    assert run_pi("-p", "--no-session", "--model", model, "hi", cwd=cwd).returncode == 0
    assert not list((agent_dir() / "sessions").rglob("*.jsonl"))
    wire.enqueue(text_reply("one"), text_reply("two"))
    assert run_pi("-p", "--model", model, "remember 7", cwd=cwd).returncode == 0
    out = run_pi("-p", "-c", "--model", model, "what number?", cwd=cwd)
    assert out.returncode == 0 and out.stdout == "two\n"
    history = wire.requests[-1].body["messages"]
    assert [m["role"] for m in history if m["role"] != "system"] == ["user", "assistant", "user"]


def test_provider_retry_and_timeout_settings_reach_the_request(wire: WireServer, cwd: Path) -> None:
    """``retry.provider.maxRetries`` retries inside the request (agent-level retries
    off here), and ``retry.provider.timeoutMs`` is the idle timeout."""
    from wire_server import Canned

    model = configure_local_endpoint(wire.url)
    settings = agent_dir() / "settings.json"
    settings.write_text(json.dumps({"retry": {"enabled": False, "provider": {"maxRetries": 1}}}))
    limited = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
    wire.enqueue(json_error(429, limited, headers={"retry-after": "0"}), text_reply("after one retry"))
    done = run_pi("-p", "--no-session", "--model", model, "hi", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "after one retry" and len(wire.requests) == 2

    wire.reset()
    settings.write_text(json.dumps({"retry": {"enabled": False, "provider": {"timeoutMs": 300}}}))
    wire.enqueue(Canned(body=[b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hm"}}]}\n\n'], hold=True))
    done = run_pi("-p", "--no-session", "--model", model, "hi", cwd=cwd, timeout=30)
    assert done.returncode == 1 and "ReadTimeout" in done.stderr
