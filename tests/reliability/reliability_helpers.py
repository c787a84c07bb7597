"""Shared pieces of the fault-injection suite: a scripted model (a plugin registering
pi's faux provider), plugins that misbehave on purpose, and process-group checks.

Every test runs the real ``pi`` in a subprocess (``tests/cli/cli_helpers.py``,
``tests/cli/rpc_client.py``)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_helpers import PI, agent_dir, configure_local_endpoint, jsonl, run_pi, text_reply
from interactive_pty import Pi
from rpc_client import RpcProcess, of_type, session_records

__all__ = [
    "PI",
    "Pi",
    "RpcProcess",
    "agent_dir",
    "configure_local_endpoint",
    "group_members",
    "jsonl",
    "of_type",
    "run_pi",
    "scripted_model",
    "session_files",
    "session_records",
    "text_reply",
    "write_plugin",
]

SCRIPTED = """
import json
import os

from pi_core.ai.faux import FauxResponse, FauxScript, register_faux_script
from pi_hookspecs import hookimpl

STEPS = json.loads(os.environ.get("SCRIPT_STEPS") or "[]")
responses = [FauxResponse(tool_calls=[("bash", {"command": command})]) for command in STEPS]
register_faux_script("scripted", "model", FauxScript(
    [*responses, FauxResponse(text=os.environ.get("SCRIPT_ANSWER", "all done"))],
    fallback=FauxResponse(text="again"),
))


@hookimpl
def register_providers(register):
    register({"name": "scripted", "api": "faux", "api_key": "none",
              "models": [{"id": "model", "name": "scripted", "api": "faux", "provider": "scripted"}]})
"""

MODEL = "scripted/model"


def write_plugin(folder: Path, name: str, source: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def scripted_model(folder: Path) -> list[str]:
    """The options that load the scripted model: ``-e <plugin> --model scripted/model``.
    Its answers: one bash call per command of ``SCRIPT_STEPS`` (a JSON list in the
    environment), then ``SCRIPT_ANSWER`` (default ``all done``)."""
    return ["-e", str(write_plugin(folder, "scripted", SCRIPTED)), "--model", MODEL]


def steps_env(*commands: str, answer: str = "all done") -> dict[str, str]:
    return {"SCRIPT_STEPS": json.dumps(list(commands)), "SCRIPT_ANSWER": answer}


def session_files() -> list[Path]:
    return sorted((agent_dir() / "sessions").rglob("*.jsonl"))


def write_settings(settings: dict[str, Any]) -> None:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings), encoding="utf-8")


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(entry.name))
    return members


def env_with(**values: str) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PI_EXTENSIONS": "", **values}
