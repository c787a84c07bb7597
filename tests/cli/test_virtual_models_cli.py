"""Virtual models through the real ``pi`` command: a plugin (``-e router.py``) registers
``router/auto``, which routes every request to a model of a local OpenAI-compatible
endpoint; the request reaches that physical model and the session records both - and,
when ``PI_TS`` names pi 1.6.0, records them exactly as pi 1.6.0 does with the same router
written as a TypeScript extension."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import agent_dir, configure_local_endpoint, run_pi, text_reply, tool_reply
from wire_server import WireServer, chat_chunks, use_server

PI_TS = os.environ.get("PI_TS", "")

ROUTER_TS = """
export default function (pi: any) {
  pi.registerVirtualModel({
    provider: "router", id: "auto", name: "Auto router", thinkingLevels: ["low", "high"],
    route(request: any, ctx: any) {
      const state = { ...(request.state ?? { requests: 0 }) };
      state.requests += 1;
      state.reasons = [...(state.reasons ?? []), request.reason];
      const id = request.thinkingLevel === "high" ? "big" : "small";
      return { model: ctx.modelRegistry.find("local", id), thinkingLevel: "off", state };
    },
  });
}
"""

ROUTER = """
from pi_hookspecs import Route, VirtualModelDefinition, hookimpl

SEEN = []


def route(request):
    SEEN.append(request.reason)
    state = dict(request.state or {"requests": 0})
    state["requests"] += 1
    state["reasons"] = [*state.get("reasons", []), request.reason]
    big = request.thinking_level == "high"
    return Route(model="local/big" if big else "local/small", thinking_level="off", state=state)


@hookimpl
def register_virtual_models(register):
    register(VirtualModelDefinition(provider="router", id="auto", name="Auto router",
                                    thinking_levels=["low", "high"], route=route))
"""


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "router.py").write_text(ROUTER)
    return root


def _endpoint(url: str) -> None:
    configure_local_endpoint(url, model="small")
    path = agent_dir() / "models.json"
    data = json.loads(path.read_text())
    data["providers"]["local"]["models"].append({"id": "big", "contextWindow": 64000, "maxTokens": 2048})
    path.write_text(json.dumps(data))


def _session(project: Path) -> list[dict]:
    files = sorted((agent_dir() / "sessions").rglob("*.jsonl"))
    assert files, "no session file written"
    return [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]


def test_a_virtual_model_routes_a_real_print_run(wire: WireServer, project: Path) -> None:
    _endpoint(wire.url)
    wire.enqueue(tool_reply("ls", {"path": "."}), text_reply("routed answer"))
    done = run_pi("-e", "router.py", "--model", "router/auto:high", "-p", "hello", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "routed answer" in done.stdout
    # both requests reached the physical model "big" of the endpoint
    assert [r.body["model"] for r in wire.requests] == ["big", "big"]
    entries = _session(project)
    changes = [e for e in entries if e["type"] == "model_change"]
    assert (changes[-1]["provider"], changes[-1]["modelId"]) == ("router", "auto")
    levels = [e["thinkingLevel"] for e in entries if e["type"] == "thinking_level_change"]
    assert levels[-1] == "high"  # the selection; the dispatch level is on each message
    answers = [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert [(m["provider"], m["api"], m["model"]) for m in answers] == [("local", "openai-completions", "big")] * 2
    assert all(m.get("thinkingLevel") == "off" for m in answers)
    states = [e["data"] for e in entries if e["type"] == "custom" and e["customType"] == "pi.virtual-model-state"]
    assert [s["provider"] for s in states] == ["router", "router"]
    assert states[-1]["state"] == {"requests": 2, "reasons": ["user", "continuation"]}


def test_resume_restores_the_virtual_selection(wire: WireServer, project: Path) -> None:
    _endpoint(wire.url)
    wire.enqueue(text_reply("first"), text_reply("second"))
    first = run_pi("-e", "router.py", "--model", "router/auto:low", "-p", "one", cwd=project)
    assert first.returncode == 0, first.stderr
    again = run_pi("-e", "router.py", "-c", "-p", "two", cwd=project)
    assert again.returncode == 0, again.stderr
    assert "second" in again.stdout
    assert [r.body["model"] for r in wire.requests] == ["small", "small"]
    entries = _session(project)
    states = [e["data"]["state"] for e in entries if e["type"] == "custom"]
    assert states[-1]["requests"] == 2  # the router's state came back from the branch
    # without the plugin the virtual model is gone: pi falls back to the model that answered last
    wire.enqueue(text_reply("third"))
    plain = run_pi("-c", "-p", "three", cwd=project)
    assert plain.returncode == 0, plain.stderr
    assert wire.requests[-1].body["model"] == "small"

    # choosing a physical model on a branch that holds a virtual one records it, so it sticks
    wire.enqueue(text_reply("fourth"), text_reply("fifth"))
    physical = run_pi("-e", "router.py", "-c", "--model", "local/big", "-p", "four", cwd=project)
    assert physical.returncode == 0, physical.stderr
    assert run_pi("-e", "router.py", "-c", "-p", "five", cwd=project).returncode == 0
    assert [r.body["model"] for r in wire.requests[-2:]] == ["big", "big"]
    changes = [(e["provider"], e["modelId"]) for e in _session(project) if e["type"] == "model_change"]
    assert changes[-1] == ("local", "big")


def test_list_models_lists_the_virtual_model(project: Path, wire: WireServer) -> None:
    _endpoint(wire.url)
    done = run_pi("-e", "router.py", "--list-models", "auto", cwd=project)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("router"))
    assert row.split()[:2] == ["router", "auto"]
    assert row.split()[4] == "yes"  # thinking: it offers low and high


def test_a_failing_route_is_one_error_naming_the_virtual_model(wire: WireServer, project: Path) -> None:
    _endpoint(wire.url)
    (project / "bad.py").write_text(
        "from pi_hookspecs import VirtualModelDefinition, hookimpl\n"
        "@hookimpl\n"
        "def register_virtual_models(register):\n"
        "    register(VirtualModelDefinition(provider='router', id='nowhere',\n"
        "                                    route=lambda request: {'model': 'local/missing'}))\n"
    )
    done = run_pi("-e", "bad.py", "--model", "router/nowhere", "-p", "hi", cwd=project)
    assert done.returncode == 1
    assert "Virtual model router/nowhere routed to local/missing, which is not a physical model" in done.stderr
    assert "Traceback" not in done.stderr
    assert wire.requests == []


def _record(entries: list[dict]) -> list[tuple]:
    """What the session file says about selection and dispatch, entry by entry."""
    out: list[tuple] = []
    for entry in entries:
        kind = entry["type"]
        if kind == "model_change":
            out.append((kind, entry["provider"], entry["modelId"]))
        elif kind == "thinking_level_change":
            out.append((kind, entry["thinkingLevel"]))
        elif kind == "custom":
            out.append((kind, entry["customType"], json.dumps(entry["data"], sort_keys=True)))
        elif kind == "message":
            message = entry["message"]
            fields = ("provider", "api", "model", "thinkingLevel") if message["role"] == "assistant" else ()
            out.append((kind, message["role"], *(message.get(f) for f in fields)))
    return out


@pytest.mark.skipif(not PI_TS, reason="PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)")
def test_pi_1_6_0_records_the_same_selection_and_dispatch(wire: WireServer, project: Path, tmp_path: Path) -> None:
    _endpoint(wire.url)
    wire.enqueue(tool_reply("ls", {"path": "."}), text_reply("routed answer"))
    assert run_pi("-e", "router.py", "--model", "router/auto:high", "-p", "hello", cwd=project).returncode == 0
    ours = _record(_session(project))
    ts_agent = tmp_path / "ts-agent"
    ts_agent.mkdir()
    (ts_agent / "models.json").write_text((agent_dir() / "models.json").read_text())
    (project / "router.ts").write_text(ROUTER_TS)
    wire.enqueue(tool_reply("ls", {"path": "."}), text_reply("routed answer"))
    done = subprocess.run(
        [PI_TS, "-e", str(project / "router.ts"), "--model", "router/auto:high", "-p", "hello"],
        cwd=project,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(ts_agent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    files = sorted((ts_agent / "sessions").rglob("*.jsonl"))
    theirs = _record([json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()])
    assert ours == theirs
    assert [r.body["model"] for r in wire.requests] == ["big"] * 4


def test_extensions_list_shows_the_virtual_models_a_plugin_registers(project: Path) -> None:
    done = run_pi("extensions", "list", "-e", "router.py", cwd=project)
    assert done.returncode == 0, done.stderr
    block = done.stdout.split("router  [-e]", 1)[1].split("\n\n")[0]
    assert "    virtual models: router/auto\n" in block + "\n"
    listed = run_pi("extensions", "list", "--json", "-e", "router.py", cwd=project)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)["plugins"]}
    assert plugins["router"]["virtual_models"] == ["router/auto"]
    assert all(p["virtual_models"] == [] for name, p in plugins.items() if name != "router")


def _compaction_scenario(wire: WireServer, run: Any) -> tuple[list[str], list[dict[str, Any]], str, str]:
    """Three runs of one session under ``router/auto``: a long message answered by
    ``big`` (64k), a follow-up, then a request routed to ``small`` (1k), which cannot
    hold the conversation. ``run(*args)`` runs one pi. Returns the models the requests
    went to, the session entries, the long message and the follow-up."""
    configure_local_endpoint(wire.url, model="small", contextWindow=1000)
    path = agent_dir() / "models.json"
    data = json.loads(path.read_text())
    data["providers"]["local"]["models"].append({"id": "big", "contextWindow": 64000, "maxTokens": 2048})
    path.write_text(json.dumps(data))
    (agent_dir() / "settings.json").write_text(
        json.dumps({"compaction": {"enabled": True, "reserveTokens": 100, "keepRecentTokens": 50}})
    )
    start = len(wire.requests)
    long_text = "Please remember this detail. " * 200  # about 1,500 tokens
    wire.enqueue(
        chat_chunks([{"content": "noted"}], usage={"prompt_tokens": 1500, "completion_tokens": 5, "total_tokens": 1505})
    )
    first = run("--model", "router/auto:high", "-p", long_text)
    assert first.returncode == 0, first.stderr
    follow_up = "A second question about the detail, with a few more words to keep. " * 5  # about 80 tokens
    wire.enqueue(
        chat_chunks([{"content": "ok"}], usage={"prompt_tokens": 1600, "completion_tokens": 5, "total_tokens": 1605})
    )
    second = run("-c", "-p", follow_up)
    assert second.returncode == 0, second.stderr
    wire.enqueue(text_reply("SUMMARY OF EARLIER WORK"), text_reply("small answer"))
    third = run("-c", "--model", "router/auto:low", "-p", "and now?")
    assert third.returncode == 0, third.stderr
    assert "small answer" in third.stdout
    files = sorted((agent_dir() / "sessions").rglob("*.jsonl"))
    entries = [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]
    return [r.body["model"] for r in wire.requests[start:]], entries, long_text, follow_up


def test_a_request_routed_to_a_smaller_window_compacts_first(wire: WireServer, project: Path) -> None:
    """pi 1.6.0 checks the window of the model each request is routed to: the last
    answer came from ``big`` (64k), the next request goes to ``small`` (1k), which cannot
    hold the conversation - pi compacts before sending it, and the route stands. The
    summary too is written by the model the router picks (asked as a ``direct``
    request), not by the one that answered last."""
    models, entries, long_text, follow_up = _compaction_scenario(
        wire, lambda *args: run_pi("-e", "router.py", *args, cwd=project)
    )
    assert [e["type"] for e in entries].count("compaction") == 1
    assert models == ["big", "big", "small", "small"]
    sent = json.dumps(wire.requests[-1].body["messages"])
    assert "SUMMARY OF EARLIER WORK" in sent and long_text not in sent and follow_up.strip() in sent
    answers = [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert answers[-1]["model"] == "small"
    # the summary's route keeps no router state: only the three requests of the agent count
    states = [e["data"]["state"] for e in entries if e["type"] == "custom"]
    assert states[-1]["reasons"] == ["user", "user", "user"]


@pytest.mark.skipif(not (PI_TS and Path(PI_TS).exists()), reason="PI_TS does not name an installed pi 1.6.0")
def test_pi_1_6_0_routes_the_compaction_summary_the_same_way(
    wire: WireServer, project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ours, entries, _, _ = _compaction_scenario(wire, lambda *args: run_pi("-e", "router.py", *args, cwd=project))
    (project / "router.ts").write_text(ROUTER_TS)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "ts-agent"))

    def run_ts(*args: str) -> subprocess.CompletedProcess[str]:
        command = [PI_TS, "-e", str(project / "router.ts"), *args]
        return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120, check=False)

    theirs, ts_entries, _, _ = _compaction_scenario(wire, run_ts)
    assert ours == theirs
    states = [[e["data"]["state"] for e in found if e["type"] == "custom"] for found in (entries, ts_entries)]
    assert states[0] == states[1]


def test_session_shows_the_cost_of_each_physical_model(wire: WireServer, project: Path) -> None:
    """``/session`` under a virtual selection lists the cost per physical model that
    answered (pi 1.6.0), not one line for the selection."""
    from tui_screen import PI, Screen, screen_env

    _endpoint(wire.url)
    path = agent_dir() / "models.json"
    data = json.loads(path.read_text())
    for model in data["providers"]["local"]["models"]:
        model["cost"] = {"input": 1000 if model["id"] == "big" else 100, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    path.write_text(json.dumps(data))
    usage = {"prompt_tokens": 1000, "completion_tokens": 0, "total_tokens": 1000}
    wire.enqueue(chat_chunks([{"content": "from big"}], usage=usage, model="big"))
    assert run_pi("-e", "router.py", "--model", "router/auto:high", "-p", "one", cwd=project).returncode == 0
    wire.enqueue(chat_chunks([{"content": "from small"}], usage=usage, model="small"))
    assert run_pi("-e", "router.py", "-c", "--model", "router/auto:low", "-p", "two", cwd=project).returncode == 0

    screen = Screen([*PI, "-e", "router.py", "-c"], cwd=project, env=screen_env(columns=120))
    try:
        screen.wait_for("›")
        screen.line("/session")
        screen.wait_for("local/small")
        lines = screen.text().splitlines()
        model_row = next(line for line in lines if line.startswith("model "))
        assert "router/auto" in model_row
        assert next(line for line in lines if line.startswith("cost ")).split()[-1] == "$1.1000"
        big = next(line for line in lines if line.strip().startswith("local/big"))
        small = next(line for line in lines if line.strip().startswith("local/small"))
        assert big.split()[1:] == ["$1.0000", "(1k", "tokens)"]
        assert small.split()[1:] == ["$0.1000", "(1k", "tokens)"]
        assert lines.index(big) < lines.index(small)  # most expensive first
    finally:
        screen.close()
