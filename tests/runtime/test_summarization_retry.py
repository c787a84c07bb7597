"""Compaction and branch summaries retry transient provider errors (pi 1.6.0's
``summarization_retry_*`` events), with the ``retry.*`` settings' budget and backoff."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import start, write_settings

from pi_core.ai import FauxResponse

TRANSIENT = "529 overloaded_error: Overloaded"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def summary(text: str = "## Goal\nSummarised.") -> Any:
    return lambda context: FauxResponse(text=text)


def retry_events(events: list[Any]) -> list[dict[str, Any]]:
    return [e.to_json() for e in events if e.type.startswith("summarization_retry")]


async def test_a_compaction_summary_is_retried_after_a_transient_error(cwd: Path) -> None:
    write_settings({"compaction": {"keepRecentTokens": 10}, "retry": {"baseDelayMs": 1}})
    runtime, _, events = await start(
        cwd, "a " * 30, "b " * 30, "c " * 30, FauxResponse(error_message=TRANSIENT), summary(), summary()
    )
    for i in range(3):
        await runtime.session.prompt(f"question {i} " + "word " * 40)
    entry = await runtime.session.compact()
    assert entry is not None and entry.summary.startswith("## Goal")
    assert retry_events(events) == [
        {
            "type": "summarization_retry_scheduled",
            "attempt": 1,
            "maxAttempts": 3,
            "delayMs": 1,
            "errorMessage": TRANSIENT,
        },
        {"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"},
        {"type": "summarization_retry_finished"},
    ]
    end = next(e for e in events if e.type == "compaction_end")
    assert end.error_message is None and end.result["summary"].startswith("## Goal")


async def test_a_branch_summary_retry_gives_up_after_the_budget(cwd: Path) -> None:
    write_settings({"retry": {"baseDelayMs": 1, "maxRetries": 1}})
    runtime, _, events = await start(
        cwd, "answer one", "answer two", FauxResponse(error_message=TRANSIENT), FauxResponse(error_message=TRANSIENT)
    )
    session = runtime.session
    await session.prompt("question one")
    await session.prompt("question two")
    second_user = [e for e in session.sm.get_branch() if e.type == "message" and e.message.role == "user"][1]
    with pytest.raises(Exception, match="Overloaded"):
        await session.navigate_tree(second_user.id, summarize=True)
    assert [e["type"] for e in retry_events(events)] == [
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
    ]
    assert retry_events(events)[1] == {"type": "summarization_retry_attempt_start", "source": "branchSummary"}


async def test_no_retry_when_retries_are_off(cwd: Path) -> None:
    write_settings({"compaction": {"keepRecentTokens": 10}, "retry": {"enabled": False}})
    runtime, _, events = await start(cwd, "a " * 30, "b " * 30, "c " * 30, FauxResponse(error_message=TRANSIENT))
    for i in range(3):
        await runtime.session.prompt(f"question {i} " + "word " * 40)
    assert await runtime.session.compact(raise_errors=False) is None
    assert retry_events(events) == []
    end = next(e for e in events if e.type == "compaction_end")
    assert "Overloaded" in (end.error_message or "")
