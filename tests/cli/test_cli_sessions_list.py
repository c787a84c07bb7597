"""``pi sessions``: ids that tell apart sessions started in the same minute (UUIDv7 ids
begin with their start time) and dates a person reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli_helpers import run_pi

from pi_core.cli.listing import human_time, unique_prefixes
from pi_core.session import SessionManager
from pi_hookspecs import AssistantMessage, TextContent, UserMessage


def test_unique_prefixes_grow_only_where_ids_share_their_start() -> None:
    same_minute = ["01a23278-d5aa-7000-8000-000000000001", "01a23278-d7bb-7000-8000-000000000002"]
    alone = "01a20000-0000-7000-8000-000000000003"
    prefixes = unique_prefixes([*same_minute, alone])
    assert prefixes[alone] == "01a20000"
    assert prefixes[same_minute[0]] == "01a23278-d5" and prefixes[same_minute[1]] == "01a23278-d7"
    same_ms = ["01a23278-d5aa-7000-8000-00000000000a", "01a23278-d5aa-7000-8000-00000000000b"]
    assert set(unique_prefixes(same_ms).values()) == set(same_ms)


def test_human_time() -> None:
    now = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    local = now.astimezone()
    assert human_time(now - timedelta(minutes=5), now) == f"today {(local - timedelta(minutes=5)):%H:%M}"
    assert human_time(now - timedelta(days=1), now).startswith("yesterday ")
    assert human_time(now - timedelta(days=400), now).startswith("2025-")


def test_sessions_started_in_one_minute_are_listed_with_ids_that_open_them(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    for text in ("first", "second"):
        manager = SessionManager.create(str(cwd))
        manager.append_message(UserMessage(content=[TextContent(text=text)]))
        manager.append_message(AssistantMessage(content=[TextContent(text="ok")]))
        manager.flush()
    listed = run_pi("sessions", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    shown = [row[0] for row in rows]
    assert len(shown) == 2 and len(set(shown)) == 2 and all(row[1] == "today" for row in rows)
    ids = [info["id"] for info in json.loads(run_pi("sessions", "--json", cwd=cwd).stdout)]
    assert all(any(i.startswith(prefix) for i in ids) for prefix in shown)
    assert shown[0][:8] == shown[1][:8]  # the same minute: eight characters would not do
