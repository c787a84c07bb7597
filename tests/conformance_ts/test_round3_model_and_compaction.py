"""Model switches, automatic compaction, hooks across session replacements and models.json
across replacements, compared with golden files and (with ``PI_TS``) with pi 1.6.0 run on
the same endpoint in the same test.

* the thinking level survives a model without reasoning: ``set_model`` / ``cycle_model``
  take the level from ``modelThinkingLevels``, else ``defaultThinkingLevel``, else keep it;
* automatic compaction with nothing to summarise reports nothing (no
  ``compaction_start`` / ``compaction_end`` pair with an error);
* ``project_trust`` fires once per folder and process (not on every new / resume / fork /
  reload); ``before_provider_headers`` fires for summary requests too;
* a changed models.json is read by a new session (its ``baseUrl`` is used), not by
  ``/reload`` (pi 1.6.0 keeps the session's model as it is on reload).

RPC mode is driven here with raw JSON lines (the protocol both pis speak), so the golden
files are checked without node or pi 1.6.0.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from harness import (
    HERE,
    MODEL,
    PI,
    PI_TS,
    Normaliser,
    check_golden,
    environment,
    first_difference,
    fresh_dir,
    have_pi_ts,
    normalise_request,
    request_bodies,
    run_json,
    session_records,
    text_reply,
    write_agent_dir,
)
from wire_server import WireServer

EXTENSIONS = HERE / "extensions"


# ------------------------------------------------------------ a raw RPC client


class RawRpc:
    """``pi --mode rpc`` of this pi (``"py"``) or pi 1.6.0 (``"ts"``), spoken to line by line."""

    def __init__(self, which: str, args: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        command = [*PI] if which == "py" else [PI_TS]
        self.process = subprocess.Popen(
            [*command, "--mode", "rpc", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                pass

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            pass

    def send(self, command: dict[str, Any], *, until: str | None = None, timeout: float = 60) -> Any:
        """The command's response (its ``data``; an error response fails the test); with
        ``until``, after the event of that type following the response."""
        assert self.process.stdin is not None
        self.count += 1
        ident = f"c{self.count}"
        self.process.stdin.write(json.dumps({**command, "id": ident}) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        response: dict[str, Any] | None = None
        while True:
            message = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if message.get("type") == "response":
                if message.get("id") == ident:
                    assert message.get("success"), f"{command['type']}: {message.get('error')}"
                    response = message
                    if until is None:
                        return response.get("data")
                continue
            self.events.append(message)
            if response is not None and message.get("type") == until:
                return response.get("data")

    def take_events(self, *types: str) -> list[dict[str, Any]]:
        taken, self.events = self.events, []
        return [event for event in taken if event.get("type") in types]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wait_for_line(path: Path, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} did not appear in {path}")


# ------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def wire() -> Any:
    server = WireServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def wire2() -> Any:
    """A second endpoint: models.json is pointed at it in the middle of a session."""
    server = WireServer()
    yield server
    server.close()


def recorder(which: str) -> str:
    return str(EXTENSIONS / ("hook_recorder.py" if which == "py" else "hook_recorder.js"))


def compare(name: str, run: Any, wire: WireServer, root: Path, *extra: Any) -> dict[str, Any]:
    """This pi's outcome against its golden file, then (with ``PI_TS``) against pi 1.6.0's."""
    ours = run("py", wire, root / "py", *extra)
    check_golden(name, ours)
    if have_pi_ts():
        theirs = run("ts", wire, root / "ts", *extra)
        difference = first_difference(ours, theirs)
        assert difference is None, f"differs from pi 1.6.0 at {difference}"
    return ours


# ------------------------------------------------------------ 1. thinking level across models


def drive_model_switches(which: str, wire: WireServer, root: Path, settings: dict[str, Any]) -> dict[str, Any]:
    wire.reset()
    wire.enqueue(text_reply("Thought about it."))
    cwd = fresh_dir(root / "project")
    agent = fresh_dir(root / "agent")
    write_agent_dir(agent, wire.url, settings)
    rpc = RawRpc(which, ["--model", "local/think-model"], cwd=cwd, env=environment(agent))
    steps: dict[str, Any] = {}
    try:
        steps["start"] = rpc.send({"type": "get_state"})["thinkingLevel"]
        rpc.send({"type": "set_model", "provider": "local", "modelId": "local-model"})
        steps["after_model_without_reasoning"] = rpc.send({"type": "get_state"})["thinkingLevel"]
        rpc.send({"type": "set_model", "provider": "local", "modelId": "think-model"})
        steps["back_on_reasoning_model"] = rpc.send({"type": "get_state"})["thinkingLevel"]
        cycled = []
        for _ in range(3):  # cached-model, local-model, think-model
            result = rpc.send({"type": "cycle_model"})
            cycled.append({"model": result["model"]["id"], "thinkingLevel": result["thinkingLevel"]})
        steps["cycle_model"] = cycled
        rpc.send({"type": "prompt", "message": "think"}, until="agent_settled")
        steps["events"] = rpc.take_events("thinking_level_changed")
        entries = rpc.send({"type": "get_entries"})["entries"]
        steps["entries"] = [
            {k: v for k, v in entry.items() if k in ("type", "provider", "modelId", "thinkingLevel")}
            for entry in entries
            if entry["type"] in ("model_change", "thinking_level_change")
        ]
    finally:
        rpc.close()
    normalise = Normaliser(cwd, (agent,), endpoint=wire.url)
    return {"steps": steps, "requests": [normalise_request(body, normalise) for body in request_bodies(wire)]}


def test_default_thinking_level_comes_back_after_a_model_without_reasoning(wire: WireServer, tmp_path: Path) -> None:
    ours = compare(
        "round3_default_thinking_level_across_models",
        drive_model_switches,
        wire,
        tmp_path,
        {"defaultThinkingLevel": "high"},
    )
    steps = ours["steps"]
    assert (steps["start"], steps["after_model_without_reasoning"], steps["back_on_reasoning_model"]) == (
        "high",
        "off",
        "high",
    )
    assert steps["cycle_model"][-1] == {"model": "think-model", "thinkingLevel": "high"}
    assert ours["requests"][-1]["reasoning_effort"] == "high"


def test_model_thinking_levels_apply_when_cycling_back(wire: WireServer, tmp_path: Path) -> None:
    ours = compare(
        "round3_model_thinking_levels_across_models",
        drive_model_switches,
        wire,
        tmp_path,
        {"modelThinkingLevels": {"local/think-model": "low"}},
    )
    assert ours["steps"]["back_on_reasoning_model"] == "low"
    assert ours["steps"]["cycle_model"][-1] == {"model": "think-model", "thinkingLevel": "low"}
    assert ours["requests"][-1]["reasoning_effort"] == "low"


# ------------------------------------------------------------ 4. automatic compaction, nothing to summarise


def run_two_prompts_compacting(which: str, wire: WireServer, root: Path) -> dict[str, Any]:
    wire.reset()
    # each answer is followed by a threshold compaction (the reserve exceeds the window);
    # the second one summarises the first summary's turn and the new prompt separately
    wire.enqueue(
        text_reply("first"),
        text_reply("## Goal\nFirst summary."),
        text_reply("second"),
        text_reply("## Goal\nHistory summary."),
        text_reply("## Goal\nTurn summary."),
    )
    cwd = fresh_dir(root / "project")
    agent = fresh_dir(root / "agent")
    write_agent_dir(agent, wire.url, {"compaction": {"reserveTokens": 99950, "keepRecentTokens": 1}})
    done = run_json(which, ["--model", MODEL, "one", "two"], cwd=cwd, agent=agent)
    assert done.returncode == 0, done.stderr[-3000:]
    normalise = Normaliser(cwd, endpoint=wire.url)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    kinds = ("agent_start", "agent_end", "compaction_start", "compaction_end")
    return {
        "events": normalise([{k: v for k, v in e.items() if k != "messages"} for e in events if e["type"] in kinds]),
        "session": normalise([r for r in session_records(agent) if r["type"] == "compaction"]),
        "requests": [normalise_request(body, normalise) for body in request_bodies(wire)],
    }


def test_automatic_compaction_with_nothing_to_compact_reports_nothing(wire: WireServer, tmp_path: Path) -> None:
    ours = compare("round3_automatic_compaction_nothing_to_compact", run_two_prompts_compacting, wire, tmp_path)
    ends = [e for e in ours["events"] if e["type"] == "compaction_end"]
    assert len(ends) == 2 and all("errorMessage" not in e for e in ends)


# ------------------------------------------------------------ 6 and 9. hooks and models.json across replacements


def drive_replacements(which: str, wire: WireServer, root: Path, wire2: WireServer) -> dict[str, Any]:
    wire.reset()
    wire2.reset()
    wire.enqueue(
        text_reply("First answer."),
        text_reply("## Goal\nFirst summary."),
        text_reply("Second answer."),
        text_reply("## Goal\nSecond summary."),
        text_reply("After the reload."),
    )
    wire2.enqueue(text_reply("From the new endpoint."))
    cwd = fresh_dir(root / "project")
    (cwd / ".pi").mkdir()
    (cwd / ".pi" / "settings.json").write_text("{}")  # a project whose trust is decided
    agent = fresh_dir(root / "agent")
    write_agent_dir(agent, wire.url, {"compaction": {"keepRecentTokens": 1}})
    log = root / "hooks.jsonl"
    log.unlink(missing_ok=True)
    env = {**environment(agent), "HOOK_LOG": str(log)}
    rpc = RawRpc(which, ["--model", MODEL, "-e", recorder(which)], cwd=cwd, env=env)
    steps: dict[str, Any] = {}
    try:
        rpc.send({"type": "prompt", "message": "one"}, until="agent_settled")
        rpc.send({"type": "compact"})
        first = rpc.send({"type": "get_state"})["sessionFile"]
        rpc.send({"type": "new_session"})
        rpc.send({"type": "prompt", "message": "two"}, until="agent_settled")
        rpc.send({"type": "compact"})
        rpc.send({"type": "switch_session", "sessionPath": first})
        rpc.send({"type": "clone"})
        forkable = rpc.send({"type": "get_fork_messages"})["messages"]
        rpc.send({"type": "fork", "entryId": forkable[0]["entryId"]})
        # models.json now names the second endpoint: /reload keeps the session's model as
        # it was, a new session reads models.json again
        models = json.loads((agent / "models.json").read_text())
        models["providers"]["local"]["baseUrl"] = f"{wire2.url}/v1"
        (agent / "models.json").write_text(json.dumps(models))
        rpc.send({"type": "prompt", "message": "/reload-now"})
        wait_for_line(log, '"reload"')
        steps["base_url_after_reload"] = rpc.send({"type": "get_state"})["model"]["baseUrl"]
        rpc.send({"type": "prompt", "message": "three"}, until="agent_settled")
        rpc.send({"type": "new_session"})
        steps["base_url_after_new_session"] = rpc.send({"type": "get_state"})["model"]["baseUrl"]
        rpc.send({"type": "prompt", "message": "four"}, until="agent_settled")
        rpc.take_events()
    finally:
        rpc.close()
    steps["hooks"] = [json.loads(line) for line in log.read_text().splitlines()]
    normalise = Normaliser(cwd, (agent,))
    for url, name in sorted(((wire.url, "<endpoint>"), (wire2.url, "<endpoint2>")), key=lambda p: -len(p[0])):
        normalise.paths.append((url, name))
    return {
        "steps": normalise(steps),
        "requests": [normalise_request(body, normalise) for body in request_bodies(wire)],
        "requests_to_the_new_endpoint": [normalise_request(body, normalise) for body in request_bodies(wire2)],
    }


def test_hooks_and_models_json_across_session_replacements(wire: WireServer, wire2: WireServer, tmp_path: Path) -> None:
    ours = compare("round3_hooks_and_models_json_across_replacements", drive_replacements, wire, tmp_path, wire2)
    steps = ours["steps"]
    hooks = [h["hook"] for h in steps["hooks"]]
    assert hooks.count("project_trust") == 1  # once per folder and process
    assert hooks.count("before_provider_headers") == 6  # four answers and two summaries
    assert [h["reason"] for h in steps["hooks"] if h["hook"] == "session_start"] == [
        "startup",
        "new",
        "resume",
        "fork",
        "fork",
        "reload",
        "new",
    ]
    assert steps["base_url_after_reload"] == "<endpoint>/v1"
    assert steps["base_url_after_new_session"] == "<endpoint2>/v1"
    assert len(ours["requests_to_the_new_endpoint"]) == 1
