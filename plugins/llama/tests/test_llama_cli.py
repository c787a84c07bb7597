"""The real ``pi`` with pluggable-pi-llama (``PI_EXTENSIONS=llama``) against the scripted
router: ``--list-models`` lists the loaded models, ``pi -p`` answers through the router,
RPC lists ``/llama`` and loads and unloads through it, a dead router is one line; and,
when ``PI_TS`` names pi 1.6.0, both list the same models of the same router."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_kit import listed, refresh_pi_ts, run_pi, stock
from scripted_router import ScriptedRouter, dead_url

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "cli"))

from rpc_client import RpcProcess, of_type

PI_TS = os.environ.get("PI_TS", "")


@pytest.fixture
def router(pi_agent_dir: Path) -> Iterator[ScriptedRouter]:
    with ScriptedRouter() as server:
        yield stock(server)


def env_of(router: ScriptedRouter, **extra: str) -> dict[str, str]:
    return {"LLAMA_BASE_URL": router.url, **extra}


def test_list_models_lists_the_loaded_models(router: ScriptedRouter, tmp_path: Path) -> None:
    done = run_pi("--list-models", cwd=tmp_path, env=env_of(router))
    assert done.returncode == 0, done.stderr
    assert listed(done.stdout) == [("llama.cpp", "gemma-3-4b"), ("llama.cpp", "qwen3-8b")]
    qwen = next(line.split() for line in done.stdout.splitlines() if "qwen3-8b" in line)
    assert qwen[2:] == ["32.8K", "32.8K", "yes", "no"]  # context from /props, thinking from its chat template
    # `pi models` agrees, from the snapshot this time
    before = len(router.state.requests)
    again = run_pi("models", cwd=tmp_path, env=env_of(router))
    assert listed(again.stdout) == listed(done.stdout)
    assert len(router.state.requests) == before


def test_update_models_refreshes_the_router_catalogue(router: ScriptedRouter, tmp_path: Path) -> None:
    assert listed(run_pi("--list-models", cwd=tmp_path, env=env_of(router)).stdout) == [
        ("llama.cpp", "gemma-3-4b"),
        ("llama.cpp", "qwen3-8b"),
    ]
    router.state.models["llama-3.2-1b"]["status"] = {"value": "loaded"}  # loaded behind pi's back
    assert ("llama.cpp", "llama-3.2-1b") not in listed(run_pi("--list-models", cwd=tmp_path, env=env_of(router)).stdout)
    done = run_pi("update", "--models", cwd=tmp_path, env=env_of(router))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Model catalogues refreshed: llama.cpp"
    after = run_pi("--list-models", cwd=tmp_path, env=env_of(router))
    assert ("llama.cpp", "llama-3.2-1b") in listed(after.stdout)  # the refresh kept its snapshot


def test_update_models_names_a_dead_router(tmp_path: Path, pi_agent_dir: Path) -> None:
    done = run_pi("update", "--models", cwd=tmp_path, env={"LLAMA_BASE_URL": dead_url()})
    assert done.returncode == 1
    assert done.stderr.startswith("pi update: could not refresh model catalogues: llama.cpp: RuntimeError:")
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_print_mode_answers_through_the_router(router: ScriptedRouter, tmp_path: Path) -> None:
    done = run_pi("-p", "--no-session", "--model", "llama.cpp/qwen3-8b", "say hello", cwd=tmp_path, env=env_of(router))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello from llama.cpp"
    (request,) = router.state.chat_requests()
    assert request.body["model"] == "qwen3-8b" and request.body["stream"] is True
    assert request.headers["Authorization"] == "Bearer local"
    assert "max_tokens" in request.body


def test_the_api_key_is_sent(router: ScriptedRouter, tmp_path: Path) -> None:
    router.state.api_key = "sekrit"
    env = env_of(router, LLAMA_API_KEY="sekrit")
    done = run_pi("-p", "--no-session", "--model", "llama.cpp/qwen3-8b", "hi", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert all(r.headers.get("Authorization") == "Bearer sekrit" for r in router.state.requests)


def test_a_dead_router_is_one_line(router: ScriptedRouter, tmp_path: Path) -> None:
    assert run_pi("--list-models", cwd=tmp_path, env=env_of(router)).returncode == 0  # a snapshot exists
    env = {"LLAMA_BASE_URL": dead_url()}
    # another router: no snapshot of it, one short look that fails, no llama.cpp models
    listing = run_pi("--list-models", cwd=tmp_path, env=env)
    assert listing.returncode == 0 and "llama.cpp" not in listing.stdout and "Traceback" not in listing.stderr
    # the snapshot's router went away: the request fails with one line
    router.__exit__(None, None, None)
    done = run_pi("-p", "--no-session", "--model", "llama.cpp/qwen3-8b", "hi", cwd=tmp_path, env=env_of(router))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr


def test_rpc_lists_llama_and_loads_and_unloads(router: ScriptedRouter, tmp_path: Path) -> None:
    env = {**env_of(router), "PI_EXTENSIONS": "llama"}
    with RpcProcess("--no-session", "--model", "llama.cpp/qwen3-8b", cwd=tmp_path, env=env) as rpc:
        commands = {c["name"]: c for c in rpc.ok("get_commands")["commands"]}
        assert commands["llama"]["source"] == "extension"
        assert "llama.cpp" in commands["llama"]["description"]

        command_id = rpc.command("prompt", message="/llama load llama-3.2-1b")
        question = rpc.wait_for(of_type("extension_ui_request", method="select"))
        assert question["title"] == "3 models are loaded"
        rpc.send({"type": "extension_ui_response", "id": question["id"], "value": "Keep loaded and load"})
        loaded = rpc.wait_for(of_type("extension_ui_request", method="notify"))
        assert loaded["message"] == "Loaded llama-3.2-1b (loaded · 8k context)"
        assert rpc.response(command_id, timeout=30)["data"] == {"disposition": "handled"}
        assert router.state.posted("/models/load") == [{"model": "llama-3.2-1b"}]
        available = {m["id"] for m in rpc.ok("get_available_models")["models"] if m["provider"] == "llama.cpp"}
        assert available == {"qwen3-8b", "gemma-3-4b", "llama-3.2-1b"}  # the session was reloaded

        command_id = rpc.command("prompt", message="/llama unload llama-3.2-1b")
        unloaded = rpc.wait_for(of_type("extension_ui_request", method="notify"))
        assert unloaded["message"] == "Unloaded llama-3.2-1b"
        assert rpc.response(command_id, timeout=30)["data"] == {"disposition": "handled"}
        available = {m["id"] for m in rpc.ok("get_available_models")["models"] if m["provider"] == "llama.cpp"}
        assert available == {"qwen3-8b", "gemma-3-4b"}
    assert "Traceback" not in rpc.stderr


def _pi_ts_list(router: ScriptedRouter, agent: Path, tmp_path: Path) -> list[tuple[str, str]]:
    """pi 1.6.0's list after its own look at the router (a refresh in RPC mode)."""
    package = Path(PI_TS).resolve().parent / "node_modules"
    bun, cli = package / ".bin" / "bun", package / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
    if not (bun.exists() and cli.exists()):
        pytest.skip(f"no bun and pi 1.6.0 bundle next to {PI_TS}")
    agent.mkdir()
    env = refresh_pi_ts(router, agent, tmp_path, bun, cli)
    done = subprocess.run([PI_TS, "--list-models"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [row for row in listed(done.stdout) if row[0] == "llama.cpp"]


@pytest.mark.skipif(not PI_TS, reason="PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)")
def test_pi_1_6_0_lists_the_same_models(router: ScriptedRouter, tmp_path: Path) -> None:
    theirs = _pi_ts_list(router, tmp_path / "ts-agent", tmp_path)
    ours = run_pi("--list-models", cwd=tmp_path, env=env_of(router))
    assert ours.returncode == 0, ours.stderr
    assert theirs == listed(ours.stdout) == [("llama.cpp", "gemma-3-4b"), ("llama.cpp", "qwen3-8b")]
    # and ours answers through it
    done = run_pi("-p", "--no-session", "--model", "llama.cpp/qwen3-8b", "hi", cwd=tmp_path, env=env_of(router))
    assert done.stdout.strip() == "Hello from llama.cpp"
