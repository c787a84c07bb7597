"""How a session opens, as pi 1.6.0: a new one records its model and thinking level
first; a resumed one restores its level; an older file without one gets the default."""

from __future__ import annotations

import json
from pathlib import Path

from runtime_helpers import lines

from pi_core.ai import FauxScript, faux_model
from pi_core.runtime import create_agent_session


def write_old_session(path: Path, cwd: Path) -> None:
    records = [
        {
            "type": "session",
            "version": 3,
            "id": "0195b2a4-7c1e-7a30-9a4e-2f0d6c1b8e55",
            "timestamp": "2026-11-29T14:00:00.000Z",
            "cwd": str(cwd),
        },
        {
            "type": "message",
            "id": "a1b2c3d4",
            "parentId": None,
            "timestamp": "2026-11-29T14:00:01.000Z",
            "message": {"role": "user", "content": "Hello", "timestamp": 1795960801000},
        },
        {
            "type": "message",
            "id": "b2c3d4e5",
            "parentId": "a1b2c3d4",
            "timestamp": "2026-11-29T14:00:03.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Hi!"}],
                "provider": "faux",
                "model": "thinker",
                "stopReason": "stop",
                "timestamp": 1795960803000,
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


async def test_a_reasoning_model_starts_at_medium_and_resumes_at_its_level(tmp_path: Path) -> None:
    model = faux_model(FauxScript(["one", "two"]), id="thinker", reasoning=True)
    runtime = await create_agent_session(cwd=tmp_path, model=model, installed_plugins=False)
    assert runtime.session.thinking_level == "medium"  # pi 1.6.0's default
    await runtime.session.set_thinking_level("high")
    await runtime.session.prompt("hi")
    path = runtime.session.session_file
    await runtime.dispose()
    kinds = [r["type"] for r in lines(path)][1:4]
    assert kinds == ["model_change", "thinking_level_change", "thinking_level_change"]
    # (the scripted model is not in the registry: hand it over as a session's model is found)
    resumed = await create_agent_session(cwd=tmp_path, session=path, model=model, installed_plugins=False)
    assert resumed.session.thinking_level == "high" and resumed.session.model.id == "thinker"
    await resumed.dispose()


async def test_an_older_file_without_a_thinking_level_gets_the_default(tmp_path: Path) -> None:
    model = faux_model(FauxScript(["ok"]), id="thinker", reasoning=True)
    path = tmp_path / "old.jsonl"
    write_old_session(path, tmp_path)
    runtime = await create_agent_session(cwd=tmp_path, session=str(path), model=model, installed_plugins=False)
    assert runtime.session.thinking_level == "medium"
    await runtime.session.prompt("more")
    await runtime.dispose()
    added = [r for r in lines(str(path)) if r["type"] in ("model_change", "thinking_level_change")]
    assert [(r["type"], r.get("thinkingLevel")) for r in added] == [("thinking_level_change", "medium")]
