"""Sessions and RPC shapes as a client of pi 1.6.0 sees them (issue 32): ``--session``
and ``switch_session`` with a path where no file is yet, ``--export`` of a session,
``sessionFile`` under an agent folder given with ``..`` or relative, ``get_fork_messages``
of a session with branches, and the exact shape of responses (``get_last_assistant_text``
without a reply, ``clone`` of an unsaved session, error texts for unknown ids, whole
costs written as ``0``, the default ``export_html`` path).

RPC is spoken here as raw JSON lines (not through pi 1.6.0's ``RpcClient``, which would
hide the shapes compared: ``{}`` and ``{"text": null}`` both read as no text, ``0`` and
``0.0`` as the same number), so the golden files are checked without pi 1.6.0 too; with
``PI_TS`` the same scenarios run through pi 1.6.0 and the outcomes must be equal.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import (
    MODEL,
    PI,
    PI_TS,
    SKIP_REASON,
    Normaliser,
    check_golden,
    environment,
    first_difference,
    fresh_dir,
    have_pi_ts,
    run_json,
    text_reply,
    tool_reply,
    write_agent_dir,
)
from wire_server import WireServer


class RawRpc:
    """``pi --mode rpc`` (this pi or pi 1.6.0) spoken to as JSON lines."""

    def __init__(self, which: str, cwd: Path, env: dict[str, str]) -> None:
        command = [*PI] if which == "py" else [PI_TS]
        self.process = subprocess.Popen(
            [*command, "--mode", "rpc", "--model", MODEL],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def _next(self) -> tuple[str, dict[str, Any]]:
        try:
            line = self.lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"no answer from pi: {self._stderr()}") from None
        return line.strip(), json.loads(line)

    def send(self, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        """The response to one command: its raw line and its JSON."""
        self.count += 1
        command_id = f"c{self.count}"
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"id": command_id, "type": kind, **fields}) + "\n")
        self.process.stdin.flush()
        while True:
            raw, record = self._next()
            if record.get("type") == "response" and record.get("id") == command_id:
                return raw, record

    def answer(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A response without its id (the id is this driver's)."""
        _raw, record = self.send(kind, **fields)
        return {k: v for k, v in record.items() if k != "id"}

    def prompt_and_settle(self, message: str) -> None:
        assert self.answer("prompt", message=message)["success"] is True
        while self._next()[1].get("type") != "agent_settled":
            pass

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)

    def _stderr(self) -> str:
        self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read()[-3000:]


def whole_floats(raw: str) -> list[str]:
    """The keys of numbers written with a ``.0`` (JavaScript writes ``0``, not ``0.0``)."""
    return sorted(set(re.findall(r'"(\w+)":-?\d+\.0(?=[,}\]])', raw)))


# --------------------------------------------------------------------------- scenarios

Scenario = Callable[[str, WireServer, Path], Any]


def rpc_shapes(which: str, wire: WireServer, root: Path) -> Any:
    """Responses before the first answer and after one (item 8 of issue 32)."""
    cwd, agent = _folders(which, wire, root)
    (cwd / "notes.txt").write_text("alpha\n")
    wire.enqueue(tool_reply("read", {"path": "notes.txt"}), text_reply("  It says alpha.  "))
    rpc = RawRpc(which, cwd, environment(agent))
    steps: dict[str, Any] = {}
    steps["last_text_before_any_reply"] = rpc.answer("get_last_assistant_text")
    steps["clone_before_the_file_is_saved"] = rpc.answer("clone")
    steps["entries_since_unknown_id"] = rpc.answer("get_entries", since="no-such-entry")
    steps["fork_unknown_id"] = rpc.answer("fork", entryId="no-such-entry")
    rpc.prompt_and_settle("what is in notes.txt?")
    entries = rpc.answer("get_entries")["data"]["entries"]
    steps["fork_from_an_answer"] = rpc.answer("fork", entryId=entries[-1]["id"])
    raw_messages, messages = rpc.send("get_messages")
    steps["messages"] = [m for m in messages["data"]["messages"] if m["role"] != "system"]
    raw_stats, stats = rpc.send("get_session_stats")
    steps["stats"] = {k: v for k, v in stats["data"].items() if k not in ("sessionFile",)}
    steps["numbers_written_with_dot_zero"] = whole_floats(raw_messages) + whole_floats(raw_stats)
    steps["last_text"] = rpc.answer("get_last_assistant_text")
    export = rpc.answer("export_html")
    steps["export_html_default_path"] = re.sub(
        r"pi-session-[\w.-]+\.html$", "pi-session-<session file name>.html", export["data"]["path"]
    )
    steps["clone_after_the_first_answer"] = rpc.answer("clone")
    steps["messages_of_the_clone"] = len(rpc.answer("get_messages")["data"]["messages"])
    rpc.close()
    return Normaliser(cwd, (agent, root), endpoint=wire.url)(steps)


BRANCHES = [
    # u1 -> a1 -> u2 -> a2, and from a1 another branch: u3 -> a3 (the leaf: last in the file)
    ("u1", None, "user", "first question"),
    ("a1", "u1", "assistant", "first answer"),
    ("u2", "a1", "user", "second question"),
    ("a2", "u2", "assistant", "second answer"),
    ("u3", "a1", "user", "other question"),
    ("a3", "u3", "assistant", "other answer"),
]


def write_branched_session(path: Path, cwd: Path) -> None:
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "branched", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(cwd)}
    ]
    for index, (entry_id, parent, role, text) in enumerate(BRANCHES):
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": index}
        if role == "assistant":
            message.update(
                api="openai-completions",
                provider="local",
                model="local-model",
                usage={
                    "input": 1,
                    "output": 1,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 2,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                stopReason="stop",
            )
        records.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-01-01T00:00:0{index}.000Z",
                "message": message,
            }
        )
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def fork_messages_of_every_branch(which: str, wire: WireServer, root: Path) -> Any:
    """``get_fork_messages`` lists the user messages of every branch (item 7)."""
    cwd, agent = _folders(which, wire, root)
    write_branched_session(cwd / "branched.jsonl", cwd)
    rpc = RawRpc(which, cwd, environment(agent))
    steps: dict[str, Any] = {"switch": rpc.answer("switch_session", sessionPath=str(cwd / "branched.jsonl"))}
    steps["fork_messages"] = rpc.answer("get_fork_messages")
    steps["message_count"] = rpc.answer("get_state")["data"]["messageCount"]
    steps["last_text"] = rpc.answer("get_last_assistant_text")
    rpc.close()
    return Normaliser(cwd, (agent, root), endpoint=wire.url)(steps)


def switch_to_a_new_path(which: str, wire: WireServer, root: Path) -> Any:
    """``switch_session`` to a path where no file is yet: a new session saved there (item 3)."""
    cwd, agent = _folders(which, wire, root)
    wire.enqueue(text_reply("Saved here."))
    rpc = RawRpc(which, cwd, environment(agent))
    target = cwd / "kept" / "new.jsonl"
    steps: dict[str, Any] = {"switch": rpc.answer("switch_session", sessionPath=str(target))}
    state = rpc.answer("get_state")["data"]
    steps["state"] = {"path": state["sessionFile"], "messageCount": state["messageCount"]}
    steps["file_before_the_answer"] = target.exists()
    rpc.prompt_and_settle("hello")
    steps["records"] = [
        {k: v for k, v in record.items() if k in ("type", "cwd", "message")}
        for record in map(json.loads, target.read_text().splitlines())
        if record["type"] in ("session", "message")
    ]
    rpc.close()
    return Normaliser(cwd, (agent, root), endpoint=wire.url)(steps)


def session_file_under_agent_dir_spellings(which: str, wire: WireServer, root: Path) -> Any:
    """``sessionFile`` with ``PI_CODING_AGENT_DIR`` given with ``..`` and relative (item 5)."""
    cwd, agent = _folders(which, wire, root)
    spellings = {"with_dot_dot": f"{cwd}/../{agent.name}", "relative": f"../{agent.name}"}
    seen: dict[str, Any] = {}
    for name, spelling in spellings.items():
        rpc = RawRpc(which, cwd, {**environment(agent), "PI_CODING_AGENT_DIR": spelling})
        session_file = rpc.answer("get_state")["data"]["sessionFile"]
        rpc.close()
        # the folder holding the session (its file name holds the start time and id)
        seen[name] = str(Path(session_file).parent).replace(_encoded(cwd), "<encoded cwd>")
    return Normaliser(cwd, (agent, root), endpoint=wire.url)(seen)


def cli_session_and_export(which: str, wire: WireServer, root: Path) -> Any:
    """``--session NEW_PATH`` creates the session there (item 3); ``--export PATH``
    prints the page's name as written."""
    cwd, agent = _folders(which, wire, root)
    wire.enqueue(text_reply("New file."))
    done = run_json(which, ["--session", "saved/new.jsonl", "--model", MODEL, "hi"], cwd=cwd, agent=agent)
    outcome: dict[str, Any] = {"exit": done.returncode}
    target = cwd / "saved" / "new.jsonl"
    records = [json.loads(line) for line in target.read_text().splitlines()] if target.exists() else []
    outcome["records"] = [r["type"] for r in records]
    header = json.loads(done.stdout.splitlines()[0]) if done.stdout else {}
    outcome["header_id_is_the_file's"] = bool(records) and header.get("id") == records[0].get("id")
    missing = run_json(which, ["--session", "no-such-id", "--model", MODEL, "hi"], cwd=cwd, agent=agent)
    outcome["unknown_id"] = {"exit": missing.returncode, "error": _error_line(missing.stderr)}
    command = [*PI] if which == "py" else [PI_TS]
    exported = subprocess.run(
        [*command, "--export", str(target)],
        cwd=cwd,
        env=environment(agent),
        capture_output=True,
        text=True,
        timeout=120,
    )
    outcome["export"] = {"exit": exported.returncode, "stdout": exported.stdout}
    outcome["export_written"] = sorted(p.name for p in cwd.glob("*.html"))
    return Normaliser(cwd, (agent, root), endpoint=wire.url)(outcome)


def _encoded(cwd: Path) -> str:
    """The name of a project's sessions folder."""
    return "--" + re.sub(r"[/\\:]", "-", str(cwd).lstrip("/")) + "--"


def _error_line(stderr: str) -> str:
    """The error, without this pi's ``pi: `` prefix or pi 1.6.0's colours."""
    line = re.sub(r"\x1b\[[0-9;]*m", "", stderr.strip().splitlines()[-1] if stderr.strip() else "")
    return line.removeprefix("pi: ")


def _folders(which: str, wire: WireServer, root: Path) -> tuple[Path, Path]:
    wire.reset()
    cwd = fresh_dir(root / "project")
    agent = fresh_dir(root / f"agent-{which}")
    write_agent_dir(agent, wire.url)
    return cwd, agent


SCENARIOS: dict[str, Scenario] = {
    "rpc_shapes": rpc_shapes,
    "fork_messages_of_every_branch": fork_messages_of_every_branch,
    "switch_to_a_new_path": switch_to_a_new_path,
    "session_file_under_agent_dir_spellings": session_file_under_agent_dir_spellings,
    "cli_session_and_export": cli_session_and_export,
}


def _stable(outcome: Any) -> Any:
    """Export names carry the session file's name (start time and id)."""
    text = json.dumps(outcome)
    text = re.sub(r"pi-session-[0-9TZ-]+_[0-9a-f-]+\.html", "pi-session-<session file name>.html", text)
    return json.loads(text)


@pytest.fixture(scope="module")
def wire() -> Any:
    server = WireServer()
    yield server
    server.close()


_OURS: dict[str, Any] = {}


def ours(name: str, wire: WireServer, root: Path) -> Any:
    if name not in _OURS:
        _OURS[name] = _stable(SCENARIOS[name]("py", wire, root))
    return _OURS[name]


@pytest.mark.parametrize("name", SCENARIOS)
def test_round3_matches_the_golden_file(name: str, wire: WireServer, tmp_path: Path) -> None:
    check_golden(f"round3_{name}", ours(name, wire, tmp_path))


@pytest.mark.skipif(not have_pi_ts(), reason=SKIP_REASON)
@pytest.mark.parametrize("name", SCENARIOS)
def test_round3_matches_pi_1_6_0(name: str, wire: WireServer, tmp_path: Path) -> None:
    mine = ours(name, wire, tmp_path)
    theirs = _stable(SCENARIOS[name]("ts", wire, tmp_path))
    difference = first_difference(mine, theirs)
    assert difference is None, f"differs from pi 1.6.0 at {difference}"


def test_the_plain_facts(wire: WireServer, tmp_path: Path) -> None:
    """What the scenarios are about, stated plainly (this pi alone)."""
    shapes = ours("rpc_shapes", wire, tmp_path / "shapes")
    assert shapes["last_text_before_any_reply"]["data"] == {}
    assert shapes["last_text"]["data"] == {"text": "It says alpha."}
    assert shapes["clone_before_the_file_is_saved"]["error"].startswith("This session has not been saved yet.")
    assert shapes["numbers_written_with_dot_zero"] == []
    assert shapes["export_html_default_path"] == "pi-session-<session file name>.html"
    branched = ours("fork_messages_of_every_branch", wire, tmp_path / "branched")
    texts = [m["text"] for m in branched["fork_messages"]["data"]["messages"]]
    assert texts == ["first question", "second question", "other question"]
    new = ours("switch_to_a_new_path", wire, tmp_path / "new")
    assert new["state"]["path"] == "<path0>/kept/new.jsonl"
    spellings = ours("session_file_under_agent_dir_spellings", wire, tmp_path / "spellings")
    assert spellings == dict.fromkeys(("with_dot_dot", "relative"), "<path1>/sessions/<encoded cwd>")


def test_export_takes_a_session_id(wire: WireServer, tmp_path: Path) -> None:
    """``pi --export ID`` (the short id ``pi sessions`` prints, as ``--session`` takes
    it): this pi's addition; pi 1.6.0 takes only a path ("File not found")."""
    cwd, agent = _folders("py", wire, tmp_path)
    wire.enqueue(text_reply("Something to export."))
    assert run_json("py", ["--model", MODEL, "hi"], cwd=cwd, agent=agent).returncode == 0
    (session_file,) = (agent / "sessions").rglob("*.jsonl")
    session_id = json.loads(session_file.read_text().splitlines()[0])["id"]
    env = environment(agent)
    for arg in (session_id[:8], session_id):
        done = subprocess.run(
            [*PI, "--export", arg, "page.html"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "Exported to: page.html\n", "")
        assert "Something to export." in (cwd / "page.html").read_text()
    missing = subprocess.run(
        [*PI, "--export", "zzzzzzzz"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 1 and missing.stderr == f"pi: File not found: {cwd / 'zzzzzzzz'}\n"
    assert os.listdir(cwd) == ["page.html"]
