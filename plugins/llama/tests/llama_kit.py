"""Helpers of pluggable-pi-llama's tests (a plain module: the root tests own ``conftest``):
the scripted router's typical catalogue and running the real ``pi`` with the plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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


def refresh_pi_ts(router: ScriptedRouter, agent: Path, cwd: Path, bun: Path, cli: Path) -> dict[str, str]:
    """pi 1.6.0 (``bun`` running ``cli``) learns the router's models in a refresh, as a
    user's first start would: ``agent`` gets the router's key and a stub model (its RPC mode
    needs some model to start with), and pi runs in RPC mode until ``models-store.json``
    names llama.cpp. Its launcher sets PI_OFFLINE (no catalogue refresh), so the refresh,
    and the environment returned for running pi 1.6.0 on ``agent``, go without it."""
    agent.mkdir(exist_ok=True)
    (agent / "auth.json").write_text(
        json.dumps({"llama.cpp": {"type": "api_key", "env": {"LLAMA_BASE_URL": router.url}}})
    )
    stub = {"baseUrl": f"{router.url}/v1", "api": "openai-completions", "apiKey": "k", "models": [{"id": "stub"}]}
    (agent / "models.json").write_text(json.dumps({"providers": {"stub": stub}}))
    env = {k: v for k, v in os.environ.items() if k != "PI_OFFLINE"}
    env.update(PI_CODING_AGENT_DIR=str(agent))
    process = subprocess.Popen(
        [str(bun), str(cli), "--mode", "rpc", "--no-session"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        store = agent / "models-store.json"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "llama.cpp" not in (store.read_text() if store.exists() else ""):
            time.sleep(0.1)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    return env
