"""Session store: opening a large session and the per-turn cost of appending.

Budgets (docs/architecture.md, "Performance budgets"):
* open + build context of a 50,000-entry session <= 3x reading and ``json.loads``-ing
  every line;
* per-turn append + context cost flat from turn 10 to turn 1,000.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_core.session import SessionManager
from pi_hookspecs import AssistantMessage, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage

ENTRIES = 50_000
ROUNDS = 3


def _usage() -> dict[str, Any]:
    return {
        "input": 1200,
        "output": 240,
        "cacheRead": 48000,
        "cacheWrite": 0,
        "totalTokens": 49440,
        "cost": {"input": 0.0036, "output": 0.0036, "cacheRead": 0.0144, "cacheWrite": 0, "total": 0.0216},
    }


def _messages(turn: int) -> list[dict[str, Any]]:
    """One realistic turn: a prompt, three tool round trips, a final answer."""
    out: list[dict[str, Any]] = [
        {"role": "user", "content": f"Please look at module {turn} and fix the failing test. " * 3, "timestamp": 1}
    ]
    for step in range(3):
        call_id = f"toolu_{turn}_{step}"
        out.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "I should inspect the file first. " * 8,
                        "thinkingSignature": "c2ln",
                    },
                    {"type": "text", "text": "Let me check that. " * 4},
                    {
                        "type": "toolCall",
                        "id": call_id,
                        "name": "bash",
                        "arguments": {"command": f"cat src/m{turn}.py"},
                    },
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": _usage(),
                "stopReason": "toolUse",
                "timestamp": 2,
            }
        )
        out.append(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "bash",
                "content": [{"type": "text", "text": f"def f{turn}(x):\n    return x + {step}\n" * 12}],
                "isError": False,
                "timestamp": 3,
            }
        )
    out.append(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Fixed: the off-by-one in the loop bound. " * 6}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": _usage(),
            "stopReason": "stop",
            "timestamp": 4,
        }
    )
    return out


def write_session(path: Path, entries: int, compact_every: int = 0) -> None:
    """A linear session of ``entries`` entries (a compaction every ``compact_every``)."""
    lines = [
        json.dumps(
            {"type": "session", "version": 3, "id": "bench", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/b"}
        )
    ]
    parent: str | None = None
    count = 0
    turn = 0
    recent: list[str] = []
    while count < entries:
        for message in _messages(turn):
            entry_id = f"{count:08x}"
            if compact_every and count and count % compact_every == 0:
                record: dict[str, Any] = {
                    "type": "compaction",
                    "summary": "## Goal\nFix tests\n" * 20,
                    "firstKeptEntryId": recent[-40],
                    "tokensBefore": 150000,
                }
            else:
                record = {"type": "message", "message": message}
            base = {"type": record["type"], "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
            lines.append(json.dumps({**base, **record}, separators=(",", ":")))
            parent = entry_id
            recent.append(entry_id)
            count += 1
            if count >= entries:
                break
        turn += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def best(fn: Callable[[], Any], rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def open_ratio(path: Path) -> tuple[float, float, float, int]:
    def baseline() -> None:
        with path.open("rb") as handle:
            [json.loads(line) for line in handle]

    def open_only() -> None:
        SessionManager.open(path).close()

    count = 0

    def open_and_context() -> None:
        nonlocal count
        session = SessionManager.open(path)
        count = len(session.build_session_context().messages)
        session.close()

    return best(baseline), best(open_only), best(open_and_context), count


def turn_costs(directory: Path) -> tuple[float, float]:
    """µs per turn (4 appends + 2 context builds) around turn 10 and turn 1,000."""
    session = SessionManager.create("/bench", session_dir=directory)
    usage = Usage(input=1000, output=100, total_tokens=1100)

    def turn(number: int) -> None:
        session.append_message(UserMessage(content=f"step {number}: continue"))
        session.build_session_context()
        session.append_message(
            AssistantMessage(
                content=[
                    TextContent(text="Running it."),
                    ToolCall(id=f"c{number}", name="bash", arguments={"command": "ls"}),
                ],
                api="anthropic-messages",
                provider="anthropic",
                model="claude-sonnet-4-5",
                usage=usage,
                stop_reason="toolUse",
            )
        )
        session.append_message(
            ToolResultMessage(tool_call_id=f"c{number}", tool_name="bash", content=[TextContent(text="a\nb\nc\n" * 20)])
        )
        session.build_session_context()
        session.append_message(
            AssistantMessage(
                content=[TextContent(text="Done.")], provider="anthropic", model="claude-sonnet-4-5", usage=usage
            )
        )

    def window(start: int, size: int = 20) -> float:
        t0 = time.perf_counter()
        for number in range(start, start + size):
            turn(number)
        return (time.perf_counter() - t0) / size * 1e6

    for number in range(10):
        turn(number)
    early = min(window(10), window(30))
    number = 50
    while number < 1000:
        turn(number)
        number += 1
    late = min(window(1000), window(1020))
    session.close()
    return early, late


def report() -> list[str]:
    lines = ["session store"]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for label, compact_every in (("no compaction", 0), ("a compaction every 5,000 entries", 5000)):
            path = directory / f"s{compact_every}.jsonl"
            write_session(path, ENTRIES, compact_every)
            size_mb = path.stat().st_size / 1e6
            base, opened, full, count = open_ratio(path)
            lines.append(f"  {ENTRIES:,} entries ({size_mb:.0f} MB), {label}; context = {count:,} messages")
            lines.append(f"    read + json.loads every line  {base * 1000:8.1f} ms")
            lines.append(f"    SessionManager.open            {opened * 1000:8.1f} ms  {opened / base:5.2f}x")
            lines.append(f"    open + build_session_context   {full * 1000:8.1f} ms  {full / base:5.2f}x  (budget 3x)")
        early, late = turn_costs(directory / "turns")
        lines.append("  per turn (4 appends to a file + 2 context builds)")
        lines.append(f"    around turn 10     {early:8.1f} µs")
        lines.append(f"    around turn 1,000  {late:8.1f} µs  {late / early:5.2f}x  (budget: flat)")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
