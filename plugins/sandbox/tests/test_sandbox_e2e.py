"""The real ``pi`` command with pluggable-pi-sandbox found through its entry point (group
``pi.extensions``, name ``sandbox``) and a scripted model behind a local
OpenAI-compatible endpoint: print mode, RPC ``bash``, ``pi extensions list`` and
``pi sandbox status``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_testkit import SECRET, HttpServer, fetch, http_server, need_some_sandbox  # noqa: F401

import pi_sandbox

TESTS = Path(__file__).resolve().parents[3] / "tests"
sys.path.insert(0, str(TESTS / "ai"))
sys.path.insert(0, str(TESTS / "cli"))

from rpc_client import RpcProcess  # noqa: E402
from wire_server import WireServer, chat_chunks  # noqa: E402


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Any]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    agent = tmp_path / "agent"
    agent.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        PI_CODING_AGENT_DIR=str(agent),
        PI_EXTENSIONS="sandbox",
        PYTHONUNBUFFERED="1",
        OPENAI_API_KEY="sk-test-not-for-commands",
    )
    return {"home": home, "agent": agent, "project": project, "env": env}


@pytest.fixture
def model(machine: dict[str, Any]) -> Iterator[WireServer]:
    server = WireServer()
    (machine["agent"] / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": f"{server.url}/v1",
                        "api": "openai-completions",
                        "apiKey": "test-key",
                        "models": [{"id": "m", "contextWindow": 32000, "maxTokens": 1024}],
                    }
                }
            }
        )
    )
    try:
        yield server
    finally:
        server.close()


def bash_call(command: str, call_id: str = "call_1") -> Any:
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                    }
                ]
            },
        ],
        finish_reason="tool_calls",
    )


def pi(machine: dict[str, Any], *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_core", *args],
        cwd=machine["project"],
        env=machine["env"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tool_text(request: Any) -> str:
    result = next(m for m in request.body["messages"] if m["role"] == "tool")
    content = result["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_pi_print_mode_confines_the_models_command(machine: dict[str, Any], model: WireServer) -> None:
    """``pi -p``: a model-issued write outside and read of a planted key fail, the model
    is told why, and a trusted project's ``.pi/settings.json`` asking for ``off`` changes
    nothing."""
    need_some_sandbox()
    settings = machine["project"] / ".pi" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"sandbox": {"preset": "off"}}))
    model.enqueue(
        bash_call("echo x > ~/outside; cat ~/.ssh/id_rsa; echo inside > inside.txt; echo key=${OPENAI_API_KEY:-none}"),
        chat_chunks([{"content": "Tried."}]),
    )
    done = pi(machine, "-p", "--approve", "--no-session", "--model", "local/m", "try it")
    assert done.returncode == 0, done.stderr
    assert "extension error" not in done.stderr  # every handler ran, the probe at the first command included
    assert done.stdout.strip() == "Tried."
    text = tool_text(model.requests[1])
    assert not (machine["home"] / "outside").exists()
    assert SECRET not in text and "key=none" in text
    assert (machine["project"] / "inside.txt").read_text() == "inside\n"
    assert "[pluggable-pi-sandbox]" in text
    assert f"writing {machine['home'] / 'outside'}" in text and f"reading {machine['home'] / '.ssh' / 'id_rsa'}" in text


def test_the_backend_is_probed_when_a_run_starts_not_at_start_up(machine: dict[str, Any], model: WireServer) -> None:
    """pi's start-up does not probe the backend: a command that starts no agent run
    (``--list-models``) loads the plugin but neither imports the backends nor starts
    bubblewrap. A run probes it in the background as it starts (``agent_start``), while
    its first request is out, so that a first command finds the answer ready: even a
    ``pi -p`` that runs no command has imported the backends by the end."""

    def imported(done: subprocess.CompletedProcess[str]) -> set[str]:
        return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}

    machine["env"]["PYTHONPROFILEIMPORTTIME"] = "1"
    listed = pi(machine, "--list-models")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "pi_sandbox.plugin" in imported(listed)  # the list is real: the plugin itself loaded
    assert not {"pi_sandbox.sandbox", "pi_sandbox.bwrap", "pi_sandbox.landlock"} & imported(listed)

    answer = chat_chunks([{"content": "Nothing to run."}])
    answer.delay = 0.5  # the request is out long enough for the probe to finish meanwhile
    model.enqueue(answer)
    done = pi(machine, "-p", "--no-session", "--model", "local/m", "hello")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "Nothing to run."
    assert "pi_sandbox.sandbox" in imported(done)


def test_pi_print_mode_reaches_an_allowed_host_through_the_proxy(
    machine: dict[str, Any], model: WireServer, http_server: HttpServer
) -> None:
    need_some_sandbox()
    (machine["agent"] / "settings.json").write_text(json.dumps({"sandbox": {"allowedHosts": ["127.0.0.1"]}}))
    model.enqueue(bash_call(fetch(http_server.url + "/through-the-proxy")), chat_chunks([{"content": "Fetched."}]))
    done = pi(machine, "-p", "--no-session", "--model", "local/m", "fetch it")
    assert done.returncode == 0, done.stderr
    assert tool_text(model.requests[1]).strip() == "hello from /through-the-proxy"
    assert http_server.paths == ["/through-the-proxy"]


def test_a_users_bash_command_over_rpc_is_confined(machine: dict[str, Any]) -> None:
    need_some_sandbox()
    with RpcProcess(cwd=machine["project"], env=machine["env"]) as rpc:
        data = rpc.ok("bash", command="echo x > ~/outside; cat ~/.ssh/id_rsa; echo done")
    assert data["output"].rstrip().endswith("done") and SECRET not in data["output"]
    assert "Read-only file system" in data["output"] or "Permission denied" in data["output"]
    assert not (machine["home"] / "outside").exists()


def test_pi_extensions_list_shows_the_plugin_and_its_preset(machine: dict[str, Any]) -> None:
    (machine["agent"] / "settings.json").write_text(json.dumps({"sandbox": {"preset": "strict"}}))
    done = pi(machine, "extensions", "list")
    assert done.returncode == 0, done.stderr
    block = done.stdout[done.stdout.index("sandbox  [entry point]") :]
    assert "loaded" in block.splitlines()[0]
    assert f"from: pluggable-pi-sandbox {pi_sandbox.__version__}" in block  # the installed metadata's version
    assert "commands: sandbox (sandbox strict, network off: show the policy)" in block
    assert "bash_spawn" in block and "tool_result" in block


def test_pi_sandbox_status(machine: dict[str, Any]) -> None:
    need_some_sandbox()
    (machine["agent"] / "settings.json").write_text(
        json.dumps({"sandbox": {"allowedHosts": ["pypi.org"], "allowWrite": ["~/.cache"]}})
    )
    (machine["home"] / ".cache").mkdir()
    done = pi(machine, "sandbox", "status", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["preset"] == "workspace-write" and data["network"] == "proxy" and data["allowedHosts"] == ["pypi.org"]
    assert str(machine["home"] / ".ssh") in data["denied"]
    assert str(machine["home"] / ".cache") in data["writable"] and str(machine["project"]) in data["writable"]
    assert data["backend"].startswith(("bubblewrap", "Landlock"))
    text = pi(machine, "sandbox", "status").stdout
    assert "preset workspace-write" in text and "only to pypi.org" in text and "~/.ssh" in text


def test_pi_sandbox_run(machine: dict[str, Any]) -> None:
    need_some_sandbox()
    done = pi(machine, "sandbox", "run", "--", "echo x > ~/outside; echo in > inside.txt; echo $PI_SANDBOX")
    assert done.stdout.strip() == "workspace-write"
    assert "Read-only file system" in done.stderr or "Permission denied" in done.stderr
    assert not (machine["home"] / "outside").exists() and (machine["project"] / "inside.txt").exists()
