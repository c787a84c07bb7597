"""``pi --mode rpc`` driven by pi 1.6.0's own ``RpcClient`` (its npm package, run with
node): a scripted session (state, a prompt with a tool call, the last answer, the
messages, a compaction, a user bash command with coloured output and a failing status,
an unknown thinking level, a session name, the entries, a run aborted in its tool), compared with a golden file and with
pi 1.6.0 itself driven by the same client in the same test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import (
    HERE,
    PI,
    PI_TS,
    SKIP_REASON,
    Normaliser,
    check_golden,
    collapse_updates,
    environment,
    first_difference,
    fresh_dir,
    normalise_request,
    pi_ts_package,
    request_bodies,
    text_reply,
    tool_reply,
    write_agent_dir,
)
from wire_server import WireServer, json_error

PACKAGE = pi_ts_package()
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(PACKAGE is None, reason=f"{SKIP_REASON}: its RpcClient comes from its npm package"),
    pytest.mark.skipif(NODE is None, reason="node is not installed (it runs pi 1.6.0's RpcClient)"),
]


SESSION_REPLIES = [
    tool_reply("read", {"path": "notes.txt"}),
    text_reply("It says alpha and beta."),
    text_reply("## Goal\nRead notes.txt.\n\n## Next Steps\n1. Nothing."),
    tool_reply("bash", {"command": "sleep 5"}, call_id="call_2"),
]
# a 100k-token prompt, 99k of it read from the cache; the refresh reads it all
BIG_PROMPT = {
    "prompt_tokens": 100_000,
    "completion_tokens": 5,
    "total_tokens": 100_005,
    "prompt_tokens_details": {"cached_tokens": 99_000},
}
REFRESH = {
    "prompt_tokens": 100_000,
    "completion_tokens": 1,
    "total_tokens": 100_001,
    "prompt_tokens_details": {"cached_tokens": 100_000},
}
WARMING_REPLIES = [text_reply("Hello.", usage=BIG_PROMPT), text_reply("", usage=REFRESH)]
OVERLOADED = json_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
RETRY_REPLIES = [text_reply("Hello."), OVERLOADED, text_reply("## Goal\nSay hello.")]
SCENARIOS: dict[str, tuple[list[Any], str, dict[str, Any]]] = {
    "session": (SESSION_REPLIES, "local/local-model", {"compaction": {"keepRecentTokens": 1}}),
    "cache_warming": (WARMING_REPLIES, "local/cached-model", {}),
    "models": ([], "local/local-model", {}),
    "sessions": ([text_reply("First answer.")], "local/local-model", {}),
    "queues": (
        [tool_reply("bash", {"command": "sleep 1; echo slept"}), text_reply("Steered."), text_reply("Summarised.")],
        "local/local-model",
        {},
    ),
    "summary_retry": (
        RETRY_REPLIES,
        "local/local-model",
        {"compaction": {"keepRecentTokens": 1}, "retry": {"enabled": True, "baseDelayMs": 1}},
    ),
}


def drive(which: str, wire: WireServer, root: Path, scenario: str = "session") -> dict[str, Any]:
    assert PACKAGE is not None and NODE is not None
    wire.reset()
    replies, model, settings = SCENARIOS[scenario]
    wire.enqueue(*replies)
    cwd = fresh_dir(root / "project")
    (cwd / "notes.txt").write_text("alpha\nbeta\n")
    agent = fresh_dir(root / f"agent-{which}")
    write_agent_dir(agent, wire.url, settings)
    target = [*PI] if which == "py" else [PI_TS]
    env = {
        **environment(agent),
        "PI_CONFORMANCE_TARGET": json.dumps(target),
        "RPC_CLIENT": str(PACKAGE / "dist" / "modes" / "rpc" / "rpc-client.js"),
        "RPC_SHIM": str(HERE / "rpc_shim.mjs"),
        "RPC_MODEL": model,
        "RPC_SCENARIO": scenario,
    }
    done = subprocess.run(
        [NODE, str(HERE / "rpc_driver.mjs")], cwd=cwd, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in outcome, f"{outcome['error']}\n{done.stderr[-3000:]}"
    normalise = Normaliser(cwd, (agent,), endpoint=wire.url)
    steps = {step["name"]: normalise(_without_volatile(step["name"], step["value"])) for step in outcome["steps"]}
    return {"steps": steps, "requests": [normalise_request(body, normalise) for body in request_bodies(wire)]}


def _without_volatile(name: str, value: Any) -> Any:
    """State that differs by nature between two runs or between the two pis: the model
    reduced to the fields both share, streamed bash output to one update per command,
    progress updates collapsed, this pi's own additions left out."""
    if name.endswith("_events") and isinstance(value, list) and name != "bash_events":
        return collapse_updates(value)
    if name == "bash_events" and isinstance(value, list):
        # how output is cut into chunks depends on timing: the updates are joined
        joined: list[dict[str, Any]] = []
        for event in value:
            if (
                joined
                and event.get("type") == "bash_execution_update" == joined[-1].get("type")
                and event.get("id") == joined[-1].get("id")
            ):
                joined[-1] = {**joined[-1], "delta": joined[-1]["delta"] + event["delta"]}
            else:
                joined.append(dict(event))
        return joined
    if name == "get_available_models" and isinstance(value, list):
        # this pi's offline demo model (provider "faux") has no counterpart in pi 1.6.0
        return [model for model in value if model.get("provider") != "faux"]
    if name.startswith("get_state") and isinstance(value, dict):
        value = dict(value)
        # this pi's addition (docs/rpc.md): pi 1.6.0 has set_auto_retry but no way to read it
        value.pop("autoRetryEnabled", None)
        if isinstance(value.get("model"), dict):
            value["model"] = {k: v for k, v in value["model"].items() if k in ("id", "provider", "api", "reasoning")}
    return value


def matches_golden_and_pi_1_6_0(
    golden: str, ours: dict[str, Any], wire: WireServer, root: Path, scenario: str = "session"
) -> None:
    """``ours`` against its golden file, then against pi 1.6.0 driven through ``scenario``."""
    check_golden(golden, ours)
    theirs = drive("ts", wire, root, scenario)
    difference = first_difference(ours, theirs)
    assert difference is None, f"differs from pi 1.6.0 at {difference}"


@pytest.fixture(scope="module")
def wire() -> Any:
    server = WireServer()
    yield server
    server.close()


def test_rpc_client_of_pi_1_6_0_sees_the_same_session(wire: WireServer, tmp_path: Path) -> None:
    ours = drive("py", wire, tmp_path)
    steps = ours["steps"]
    # what this test is about, stated plainly before the whole comparison
    assert steps["get_last_assistant_text"] == "It says alpha and beta."
    assert steps["bash"]["output"] == "red\nplain\n" and steps["bash"]["exitCode"] == 3
    assert steps["get_state_after"]["thinkingLevel"] == "off"
    end = next(e for e in steps["compact_events"] if e["type"] == "compaction_end")
    assert end["result"]["estimatedTokensAfter"] == "<estimate>" and end["result"]["usage"]["output"] == 5
    compaction = next(e for e in steps["get_entries"]["entries"] if e["type"] == "compaction")
    assert compaction["fromHook"] is False
    last = steps["get_messages_after_abort"][-1]
    assert (last["role"], last["content"], last["stopReason"]) == ("assistant", [], "aborted")
    matches_golden_and_pi_1_6_0("rpc_session", ours, wire, tmp_path)


def test_prompt_cache_warming_as_pi_1_6_0(wire: WireServer, tmp_path: Path) -> None:
    ours = drive("py", wire, tmp_path, "cache_warming")
    entries = ours["steps"]["entries_after_refresh"]["entries"]
    usage = [e for e in entries if e["type"] == "usage"]
    assert [u["kind"] for u in usage] == ["cache_warm"] and usage[0]["usage"]["cacheRead"] == 100_000
    assert ours["requests"][1]["max_completion_tokens"] == 1  # the refresh: one output token
    matches_golden_and_pi_1_6_0("rpc_cache_warming", ours, wire, tmp_path, "cache_warming")


def test_models_and_thinking_levels_as_pi_1_6_0(wire: WireServer, tmp_path: Path) -> None:
    ours = drive("py", wire, tmp_path, "models")
    cached = next(m for m in ours["steps"]["get_available_models"] if m["name"] == "cached-model")
    assert cached["promptCache"] == {"short": 11}
    matches_golden_and_pi_1_6_0("rpc_models", ours, wire, tmp_path, "models")


def test_steering_and_follow_up_as_pi_1_6_0(wire: WireServer, tmp_path: Path) -> None:
    ours = drive("py", wire, tmp_path, "queues")
    users = [m for m in ours["steps"]["get_messages"] if m["role"] == "user"]
    assert [u["content"][0]["text"] for u in users] == [
        "run the slow command",
        "use the other file",
        "and then summarise",
    ]
    matches_golden_and_pi_1_6_0("rpc_queues", ours, wire, tmp_path, "queues")


def test_new_switch_and_clone_sessions_as_pi_1_6_0(wire: WireServer, tmp_path: Path) -> None:
    ours = drive("py", wire, tmp_path, "sessions")
    steps = ours["steps"]
    assert steps["get_state_after_new"]["messageCount"] == 0
    assert [m["role"] for m in steps["messages_after_switch"]] == ["system", "user", "assistant"]
    assert steps["get_state_after_clone"]["sessionId"] != steps["get_state_after_switch"]["sessionId"]
    matches_golden_and_pi_1_6_0("rpc_sessions", ours, wire, tmp_path, "sessions")


def test_a_summary_request_is_retried_as_pi_1_6_0(wire: WireServer, tmp_path: Path) -> None:
    ours = drive("py", wire, tmp_path, "summary_retry")
    kinds = [e["type"] for e in ours["steps"]["compact_events"]]
    assert kinds == [
        "compaction_start",
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
        "compaction_end",
    ]
    assert ours["steps"]["compact"]["summary"].endswith("## Goal\nSay hello.")
    matches_golden_and_pi_1_6_0("rpc_summary_retry", ours, wire, tmp_path, "summary_retry")


if __name__ == "__main__":  # print both outcomes for a look at a difference
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/pi-rpc-conformance")
    scenario = sys.argv[2] if len(sys.argv) > 2 else "session"
    server = WireServer()
    for which in ("py", "ts"):
        (root / f"{which}.json").parent.mkdir(parents=True, exist_ok=True)
        outcome = drive(which, server, root / which, scenario)
        (root / f"{which}.json").write_text(json.dumps(outcome, indent=1, sort_keys=True))
    server.close()
    print(os.fspath(root))
