"""Durability: ``kill -9`` at random points of a multi-turn session, then reopen it.

Every message pi acknowledged before the kill (its ``message_end`` record on json
mode's stdout) is in the session file, every line of the file is complete, and the
session opens again and goes on. (A session file is written from the first answer on,
as pi 1.6.0 does, so the kill comes after the first assistant message: a prompt killed
before any answer leaves no session.)"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import PI, env_with, run_pi, scripted_model, session_files, session_records, steps_env

STEPS = [f"echo step-{n}" for n in range(8)]
TRIALS = 6


def _message_key(message: dict[str, Any]) -> tuple[Any, ...]:
    return (message["role"], message.get("timestamp"), json.dumps(message.get("content"), sort_keys=True))


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_9_loses_no_acknowledged_entry(trial: int, tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    # somewhere among the 17 message ends from the first answer on (8 tool calls and their
    # results, the final answer)
    kill_after = rng.randrange(1, 2 * len(STEPS) + 2)
    proc = subprocess.Popen(
        [*PI, "--mode", "json", *scripted_model(tmp_path), "go"],
        cwd=cwd,
        env=env_with(**steps_env(*STEPS)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    acknowledged: list[dict[str, Any]] = []
    answered = 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            record = json.loads(line)
            if record["type"] == "message_end":
                acknowledged.append(record["message"])
                if answered or record["message"]["role"] == "assistant":
                    answered += 1
                if answered == kill_after:
                    proc.kill()
                    break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    (session_file,) = session_files()
    data = session_file.read_bytes()
    lines = data.split(b"\n")
    assert lines[-1] == b"", f"seed {seed}: a partial last line"
    records = [json.loads(raw) for raw in lines[:-1]]
    on_disk = {_message_key(r["message"]) for r in records if r["type"] == "message"}
    missing = [m for m in acknowledged if _message_key(m) not in on_disk]
    assert not missing, f"seed {seed}, killed after {kill_after}: {missing}"

    out = run_pi(
        "-p",
        *scripted_model(tmp_path),
        "--session",
        str(session_file),
        "and now?",
        cwd=cwd,
        env=steps_env(answer="reopened"),
    )
    assert out.returncode == 0, f"seed {seed}: {out.stderr}"
    assert out.stdout == "reopened\n"
    after = session_records(session_file)
    assert after[: len(records)] == records  # nothing rewritten
    assert after[-1]["message"]["content"][0]["text"] == "reopened"
