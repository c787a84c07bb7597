"""``pi --mode json`` conformance: the event stream, the session file and the provider
requests of scripted conversations, against golden files and (with ``PI_TS``) against
pi 1.6.0 run on the same endpoint in the same test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from harness import (
    MODEL,
    SKIP_REASON,
    Normaliser,
    check_golden,
    collapse_updates,
    first_difference,
    fresh_dir,
    have_pi_ts,
    normalise_request,
    rejected,
    request_bodies,
    run_json,
    session_records,
    text_reply,
    tool_reply,
    write_agent_dir,
)
from wire_server import Canned, WireServer, chat_chunks


@dataclass
class Case:
    name: str
    args: list[str]
    replies: list[Canned]
    files: dict[str, str] = field(default_factory=dict)
    before: list[list[str]] = field(default_factory=list)
    """Runs made first in the same folder (their replies lead ``replies``); only the
    last run's stream is compared, the session file as it ends up."""


CASES = [
    Case("text_answer", ["--model", MODEL, "hi"], [text_reply("Hello there, friend.")]),
    Case(
        "tool_call",
        ["--model", MODEL, "what is in notes.txt?"],
        [tool_reply("read", {"path": "notes.txt"}), text_reply("It says alpha and beta.")],
        files={"notes.txt": "alpha\nbeta\n"},
    ),
    Case("provider_error", ["--model", MODEL, "hi"], [rejected()]),
    Case(
        "reasoning_model_default_level",
        ["--model", "local/think-model", "think"],
        [
            text_reply(
                "Thought about it.",
                usage={
                    "prompt_tokens": 12,
                    "completion_tokens": 9,
                    "total_tokens": 21,
                    "completion_tokens_details": {"reasoning_tokens": 4},
                },
            )
        ],
    ),
    Case("two_prompts", ["--model", MODEL, "one", "two"], [text_reply("first"), text_reply("second")]),
    Case(
        "resume_restores_the_thinking_level",
        ["-c", "and now?"],
        [text_reply("Thought once."), text_reply("Thought again.")],
        before=[["--model", "local/think-model", "--thinking", "high", "think hard"]],
    ),
    Case(
        "bash_tool_output",  # what the model sees of coloured output and a failing status
        ["--model", MODEL, "run it"],
        [
            tool_reply("bash", {"command": "printf '\\033[1;31mred\\033[0m\\r\\nplain\\n'; exit 3"}),
            text_reply("It failed."),
        ],
    ),
    Case(
        "unknown_tool_and_bad_arguments",
        ["--model", MODEL, "try tools"],
        [
            tool_reply("no_such_tool", {"x": 1}),
            tool_reply("read", {"file": "notes.txt"}, call_id="call_2"),
            text_reply("Both failed."),
        ],
    ),
    Case(
        "answer_cut_at_the_output_limit",
        ["--model", MODEL, "write a lot"],
        [
            chat_chunks(
                [{"content": "A long answer that"}],
                finish_reason="length",
                usage={"prompt_tokens": 10, "completion_tokens": 1024, "total_tokens": 1034},
            )
        ],
    ),
    Case(
        "thinking_then_text",
        ["--model", "local/think-model", "--thinking", "high", "think first"],
        [
            chat_chunks(
                [{"reasoning_content": "Let me "}, {"reasoning_content": "think."}, {"content": "Answer."}],
                usage={
                    "prompt_tokens": 10,
                    "completion_tokens": 9,
                    "total_tokens": 19,
                    "completion_tokens_details": {"reasoning_tokens": 6},
                },
            )
        ],
    ),
    Case("no_session_file", ["--no-session", "--model", MODEL, "hi"], [text_reply("Nothing is saved.")]),
    Case(
        "invalid_thinking_level",
        ["--model", "local/think-model", "--thinking", "extreme", "hi"],
        [text_reply("Medium it is.")],
    ),
]


@pytest.fixture(scope="module")
def wire() -> Any:
    server = WireServer()
    yield server
    server.close()


def run_case(which: str, case: Case, wire: WireServer, root: Path) -> dict[str, Any]:
    wire.reset()
    wire.enqueue(*case.replies)
    cwd = fresh_dir(root / "project")  # the same folder for both pis: the same session folder name
    for name, text in case.files.items():
        (cwd / name).write_text(text)
    agent = fresh_dir(root / f"agent-{which}")
    write_agent_dir(agent, wire.url)
    for args in case.before:
        first = run_json(which, args, cwd=cwd, agent=agent)
        assert first.returncode == 0, first.stderr[-3000:]
    done = run_json(which, case.args, cwd=cwd, agent=agent)
    assert done.returncode == 0, done.stderr[-3000:]
    normalise = Normaliser(cwd, endpoint=wire.url)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {
        "exit": done.returncode,
        "events": normalise(collapse_updates(events)),
        "session": normalise(session_records(agent)) if "--no-session" not in case.args else [],
        "requests": [normalise_request(body, normalise) for body in request_bodies(wire)],
    }


_OURS: dict[str, dict[str, Any]] = {}


def ours_outcome(case: Case, wire: WireServer, root: Path) -> dict[str, Any]:
    """This pi's normalised outcome of ``case`` (run once per test session)."""
    if case.name not in _OURS:
        _OURS[case.name] = run_case("py", case, wire, root)
    return _OURS[case.name]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_json_mode_matches_the_golden_file(case: Case, wire: WireServer, tmp_path: Path) -> None:
    check_golden(f"json_{case.name}", ours_outcome(case, wire, tmp_path))


@pytest.mark.skipif(not have_pi_ts(), reason=SKIP_REASON)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_json_mode_matches_pi_1_6_0(case: Case, wire: WireServer, tmp_path: Path) -> None:
    ours = ours_outcome(case, wire, tmp_path)
    theirs = run_case("ts", case, wire, tmp_path)
    difference = first_difference(ours, theirs)
    assert difference is None, f"differs from pi 1.6.0 at {difference}"
