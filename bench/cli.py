"""The ``pi`` command as a user runs it (subprocesses, bytecode cached as when installed).

Budgets (DESIGN §7):
* ``pi --version`` <= 150 ms and ``pi --help`` <= 300 ms above ``python -c pass``;
* ``pi -p`` with one bash tool round trip against a local endpoint <= 2x the TypeScript pi
  (0.37 s openai-completions, 0.29 s anthropic-messages measured here by the project);
* a 120-turn bash tool loop in one ``pi -p`` run: <= 10 ms per turn, flat;
* resuming a 20,000-entry session in ``pi -p``: <= 0.26 s above the same prompt without one.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ai"))

from wire_server import WireServer, anthropic_stream, chat_chunks  # noqa: E402

PY = sys.executable
RUNS = 5


def _env(agent: Path, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["PI_CODING_AGENT_DIR"] = str(agent)
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    return env


def _time(cmd: list[str], env: dict[str, str], cwd: Path, runs: int = RUNS, stdin: str | None = None) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, input=stdin)
        samples.append(time.perf_counter() - start)
        if result.returncode != 0:
            raise RuntimeError(f"{cmd} failed: {result.stderr[-2000:]}")
    return statistics.median(samples)


def _chat_tool(i: int) -> Any:
    args = json.dumps({"command": "echo turn"})
    return chat_chunks(
        [{"tool_calls": [{"index": 0, "id": f"call_{i}", "type": "function",
                          "function": {"name": "bash", "arguments": args}}]}],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    )


def _chat_text(text: str) -> Any:
    return chat_chunks([{"content": text}], usage={"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105})


def _anthropic_tool() -> Any:
    from wire_server import anthropic_message

    block = {"type": "tool_use", "id": "toolu_1", "name": "bash", "json": [json.dumps({"command": "echo turn"})]}
    return anthropic_stream(anthropic_message([block], stop_reason="tool_use"))


def _anthropic_text(text: str) -> Any:
    from wire_server import anthropic_message

    return anthropic_stream(anthropic_message([{"type": "text", "text": text}]))


def _models_json(agent: Path, url: str) -> None:
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {
        "local": {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "k",
                  "models": [{"id": "m", "contextWindow": 1_000_000, "maxTokens": 1024}]},
        "localant": {"baseUrl": url, "api": "anthropic-messages", "apiKey": "k",
                     "models": [{"id": "claude-local", "contextWindow": 1_000_000, "maxTokens": 1024}]},
    }}))


def _big_session(path: Path, cwd: Path, entries: int) -> None:
    lines = [json.dumps({"type": "session", "version": 3, "id": "bench-resume", "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": str(cwd)})]
    parent = None
    for i in range(entries):
        role = ("user", "assistant")[i % 2]
        message: dict[str, Any] = {"role": role, "timestamp": 1}
        if role == "user":
            message["content"] = f"question {i} " * 5
        else:
            message.update(content=[{"type": "text", "text": f"answer {i} " * 10}], api="openai-completions",
                           provider="local", model="m", stopReason="stop",
                           usage={"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
                                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
        entry_id = f"{i:08x}"
        lines.append(json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                 "timestamp": "2026-01-01T00:00:00.000Z", "message": message}))
        parent = entry_id
    lines.append(json.dumps({"type": "compaction", "id": "ffffffff", "parentId": parent,
                             "timestamp": "2026-01-01T00:00:00.000Z", "summary": "Earlier work.",
                             "firstKeptEntryId": f"{entries - 20:08x}", "tokensBefore": 1}))
    path.write_text("\n".join(lines) + "\n")


def report() -> list[str]:
    out = [f"pi command (median of {RUNS} runs, bytecode cached)"]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        agent, cache, cwd = base / "agent", base / "pycache", base / "project"
        cwd.mkdir()
        env = _env(agent, cache)
        pi = [PY, "-m", "pi_core"]
        subprocess.run([*pi, "--help"], env=env, cwd=cwd, capture_output=True)  # fill the bytecode cache
        subprocess.run([*pi, "-p", "--no-session", "warm up"], env=env, cwd=cwd, capture_output=True)
        bare = _time([PY, "-c", "pass"], env, cwd)
        version = _time([*pi, "--version"], env, cwd)
        helptext = _time([*pi, "--help"], env, cwd)
        out.append(f"  python -c pass            {bare * 1000:7.1f} ms")
        out.append(f"  pi --version              {version * 1000:7.1f} ms  (+{(version - bare) * 1000:.1f} ms; budget +150)")
        out.append(f"  pi --help                 {helptext * 1000:7.1f} ms  (+{(helptext - bare) * 1000:.1f} ms; budget +300)")

        server = WireServer()
        try:
            _models_json(agent, server.url)
            for label, model, tool, text, ts in (
                ("openai-completions", "local/m", _chat_tool(0), _chat_text("done"), 0.37),
                ("anthropic-messages", "localant/claude-local", _anthropic_tool(), _anthropic_text("done"), 0.29),
            ):
                samples = []
                for _ in range(RUNS):
                    server.reset()
                    server.enqueue(tool, text)
                    samples.append(_time([*pi, "-p", "--no-session", "--model", model, "run it"], env, cwd, runs=1))
                median = statistics.median(samples)
                out.append(
                    f"  pi -p, one bash round trip, {label:<18} {median:6.3f} s  "
                    f"({median / ts:.2f}x the TypeScript pi's {ts} s; budget 2x)"
                )

            turns = 120
            server.reset()
            server.enqueue(*[_chat_tool(i) for i in range(turns - 1)], _chat_text("finished"))
            proc = subprocess.Popen([*pi, "--mode", "json", "--no-session", "--model", "local/m", "loop"],
                                    env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            stamps = []
            assert proc.stdout is not None
            for line in proc.stdout:
                if '"type":"turn_end"' in line:
                    stamps.append(time.perf_counter())
            proc.wait()
            gaps = [b - a for a, b in itertools.pairwise(stamps)]
            if len(gaps) >= 40:
                first, last = statistics.median(gaps[:20]), statistics.median(gaps[-20:])
                out.append(
                    f"  {turns}-turn bash loop in one pi -p run: {statistics.median(gaps) * 1000:.1f} ms/turn "
                    f"(turns 1-20 {first * 1000:.1f} ms, last 20 {last * 1000:.1f} ms; ratio {last / first:.2f}; "
                    "budget 10 ms, flat)"
                )

            session_file = base / "big.jsonl"
            _big_session(session_file, cwd, 20_000)
            samples_resume, samples_plain = [], []
            for _ in range(RUNS):
                server.reset()
                server.enqueue(_chat_text("ok"))
                samples_plain.append(_time([*pi, "-p", "--no-session", "--model", "local/m", "hi"], env, cwd, runs=1))
                server.reset()
                server.enqueue(_chat_text("ok"))
                copy = base / "resume.jsonl"
                copy.write_bytes(session_file.read_bytes())
                samples_resume.append(
                    _time([*pi, "-p", "--session", str(copy), "--model", "local/m", "hi"], env, cwd, runs=1)
                )
            extra = statistics.median(samples_resume) - statistics.median(samples_plain)
            out.append(f"  resume a 20,000-entry session in pi -p: +{extra:.3f} s (budget +0.26 s)")
        finally:
            server.close()
    return out


if __name__ == "__main__":
    print("\n".join(report()))
