"""Helpers of pluggable-pi-llama's tests (a plain module: the root tests own ``conftest``):
the scripted router's typical catalogue and running the real ``pi`` with the plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripted_router import ScriptedRouter

PI = [sys.executable, "-m", "pi_core"]


def stock(router: ScriptedRouter) -> ScriptedRouter:
    """One loaded model (32k context from /props), one sleeping, one unloaded, one
    unloaded preset (offered only when the router autoloads), one decision-only model."""
    state = router.state
    state.add("qwen3-8b", "loaded", n_ctx=32768, chat_template="{% if enable_thinking %}…{% endif %}")
    state.add(
        "gemma-3-4b", "sleeping", meta={"n_ctx_train": 131072}, architecture={"input_modalities": ["text", "image"]}
    )
    state.add("llama-3.2-1b", "unloaded", n_ctx=8192)
    state.add("preset-coder", "unloaded", source="preset")
    state.add("julia-1", "loaded", architecture={"output_modalities": ["decisions"]})
    return router


def run_pi(*args: str, cwd: Path, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONUNBUFFERED": "1", "PI_EXTENSIONS": "llama", **env}
    return subprocess.run([*PI, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


def listed(stdout: str) -> list[tuple[str, str]]:
    """``(provider, model)`` rows of a ``--list-models`` table."""
    rows = [line.split() for line in stdout.splitlines()[1:] if line.strip()]
    return [(row[0], row[1]) for row in rows if len(row) >= 2]
