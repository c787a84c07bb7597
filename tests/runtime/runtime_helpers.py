"""Helpers for runtime tests: a started session runtime on the scripted model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pi_core.ai import FauxResponse, FauxScript, faux_model
from pi_core.runtime import SessionRuntime, create_agent_session


def agent_dir() -> Path:
    return Path(os.environ["PI_CODING_AGENT_DIR"])


def write_settings(settings: dict[str, Any]) -> None:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


async def start(
    cwd: Path, *responses: Any, plugins: tuple[Any, ...] = (), fallback: Any = None, **kwargs: Any
) -> tuple[SessionRuntime, FauxScript, list[Any]]:
    script = FauxScript(list(responses), fallback=fallback)
    kwargs.setdefault("installed_plugins", False)
    runtime = await create_agent_session(cwd=cwd, model=faux_model(script), plugins=list(plugins), **kwargs)
    events: list[Any] = []
    runtime.subscribe(events.append)
    return runtime, script, events


def calls(*pairs: tuple[str, dict[str, Any]]) -> FauxResponse:
    return FauxResponse(tool_calls=list(pairs))


def lines(path: str | None) -> list[dict[str, Any]]:
    assert path is not None
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def plugin(instance_of: type) -> Any:
    return instance_of
