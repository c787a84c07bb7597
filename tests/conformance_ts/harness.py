"""The conformance harness: one scripted conversation run by this pi and, when ``PI_TS``
names an installed pi 1.6.0, by pi 1.6.0 itself, against the same local OpenAI-style
endpoint; what a client sees (the ``--mode json`` stream, the session file, the provider
requests, the RPC responses and events) reduced to a comparable shape.

Normalisation replaces what legitimately differs from one run to the next: ids (entry,
session and generated call ids become ``<id1>``, ``<id2>``… in order of appearance, so
``parentId`` links stay checked), timestamps, durations, the working directory and temp
paths. It also replaces the texts that are pi's own words by design — the system prompt,
tool descriptions and schemas (see docs/rpc.md, "Differences from pi 1.6.0") — with
their names, so everything else is compared byte for byte.

Golden files (``golden/<name>.json``) hold this pi's normalised outcome; run with
``PI_CONFORMANCE_RECORD=1`` to record them again after a deliberate change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from wire_server import Canned, WireServer, chat_chunks, json_error

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
PI = [sys.executable, "-m", "pi_core"]
PI_TS = os.environ.get("PI_TS", "")
SKIP_REASON = "PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)"
MODEL = "local/local-model"


def have_pi_ts() -> bool:
    return bool(PI_TS) and Path(PI_TS).exists()


def pi_ts_package() -> Path | None:
    """pi 1.6.0's npm package next to the ``PI_TS`` launcher (for its ``RpcClient``)."""
    if not have_pi_ts():
        return None
    package = Path(PI_TS).resolve().parent / "node_modules" / "@earendil-works" / "pi-coding-agent"
    return package if (package / "dist" / "modes" / "rpc" / "rpc-client.js").is_file() else None


# --------------------------------------------------------------------------- the endpoint


def text_reply(text: str, usage: dict[str, Any] | None = None) -> Canned:
    return chat_chunks(
        [{"content": text[i : i + 8]} for i in range(0, len(text), 8)],
        usage=usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )


def tool_reply(name: str, args: dict[str, Any], call_id: str = "call_1") -> Canned:
    arguments = json.dumps(args)
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
                ]
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": arguments[:10]}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": arguments[10:]}}]},
        ],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    )


PROVIDER_ERROR = "the model is not available to this key"
PROVIDER_ERRORS = {PROVIDER_ERROR: "400", "Overloaded": "529"}
"""The provider messages of the scripted errors and their HTTP status."""


def rejected() -> Canned:
    """A permanent provider error (400: not retried by either pi)."""
    return json_error(400, {"error": {"message": PROVIDER_ERROR, "type": "invalid_request_error"}})


def write_agent_dir(agent: Path, url: str, settings: dict[str, Any] | None = None) -> None:
    """models.json pointing at the local endpoint; settings that keep runs comparable
    (no retries: a failure is reported at once)."""
    agent.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "local": {
                "baseUrl": f"{url}/v1",
                "api": "openai-completions",
                "apiKey": "test-key",
                "models": [
                    {"id": "local-model", "contextWindow": 32000, "maxTokens": 1024},
                    {"id": "think-model", "reasoning": True, "contextWindow": 32000, "maxTokens": 1024},
                    # an 11-second prompt cache (a refresh one second after a request) and
                    # prices at which refreshing a large prompt pays
                    {
                        "id": "cached-model",
                        "contextWindow": 200000,
                        "maxTokens": 1024,
                        "promptCache": {"short": 11},
                        "cost": {"input": 10, "output": 50, "cacheRead": 1, "cacheWrite": 12.5},
                    },
                ],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}, **(settings or {})}))


# --------------------------------------------------------------------------- running


def environment(agent: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        {
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_EXTENSIONS": "",
            "PYTHONUNBUFFERED": "1",
            "PI_OFFLINE": "1",
            "NO_COLOR": "1",
        }
    )
    return env


def run_json(which: str, args: list[str], *, cwd: Path, agent: Path) -> subprocess.CompletedProcess[str]:
    """``pi --mode json`` of this pi (``which="py"``) or of pi 1.6.0 (``"ts"``)."""
    command = [*PI] if which == "py" else [PI_TS]
    return subprocess.run(
        [*command, "--mode", "json", *args],
        cwd=cwd,
        env=environment(agent),
        capture_output=True,
        text=True,
        timeout=120,
    )


def session_records(agent: Path) -> list[dict[str, Any]]:
    files = sorted((agent / "sessions").rglob("*.jsonl"))
    assert len(files) == 1, f"expected one session file, found {files}"
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def request_bodies(server: WireServer) -> list[Any]:
    return [request.body for request in server.requests]


# --------------------------------------------------------------------------- normalising

_ID_KEYS = {
    "id",
    "parentId",
    "targetId",
    "firstKeptEntryId",
    "fromId",
    "leafId",
    "sessionId",
    "messageEntryId",
    "entryId",
}
_TIME_KEYS = {"timestamp", "modified", "created"}
_DURATION_KEYS = {"durationMs", "duration_ms", "wall_time_seconds"}


class Normaliser:
    """Replaces run-specific values with stable placeholders (ids keep their identity
    across a whole outcome)."""

    def __init__(self, cwd: Path, extra_paths: tuple[Path, ...] = (), endpoint: str | None = None) -> None:
        self.ids: dict[str, str] = {}
        self.paths = [(str(p), f"<path{i}>") for i, p in enumerate((cwd, *extra_paths))]
        if endpoint:
            self.paths.append((endpoint, "<endpoint>"))  # the local server's port changes per run

    def _id(self, value: str) -> str:
        if value not in self.ids:
            self.ids[value] = f"<id{len(self.ids) + 1}>"
        return self.ids[value]

    def _text(self, value: str) -> str:
        for path, name in self.paths:
            value = value.replace(path, name)
        return re.sub(r"/tmp/pi-[\w-]+\.log", "<temp-file>", value)

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return self._dict(value)
        if isinstance(value, list):
            return [self(item, key) for item in value]
        if key in _ID_KEYS and isinstance(value, str):
            return self._id(value)
        if key in _TIME_KEYS and value is not None:
            return "<time>"
        if key in _DURATION_KEYS and value is not None:
            return "<duration>"
        if key == "cwd" and isinstance(value, str):
            return "<cwd>"
        if key == "sessionFile" and isinstance(value, str):
            # its name holds the start time, its folder the cwd: the sessions folder remains
            return self._text(str(Path(value).parent.parent))
        if key == "estimatedTokensAfter" and isinstance(value, int):
            # estimated from the whole new context, system prompt (pi's own words) included
            return "<estimate>" if value > 0 else value
        if key == "errorMessage" and isinstance(value, str):
            # the wording of a provider error is the HTTP client's (OpenAI's JS SDK in pi
            # 1.6.0); both must carry the status and the provider's own message
            for message, status in PROVIDER_ERRORS.items():
                if message in value and status in value:
                    return f"<provider error {status}>"
        if isinstance(value, str):
            return self._text(value)
        return value

    def _dict(self, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("role") == "system":
            return self._system_message(value)
        # structuredContent (what codemode scripts receive): pi 1.6.0's built-in tools
        # fill it, this pi's return text (a documented difference)
        out = {k: self(v, k) for k, v in value.items() if k != "structuredContent"}
        details = out.get("details")
        if isinstance(details, dict) and "exitCode" in details:
            # this pi's bash tool keeps the exit code in details (pi 1.6.0: structuredContent)
            details = {k: v for k, v in details.items() if k != "exitCode"}
            if details:
                out["details"] = details
            else:
                del out["details"]
        if value.get("type") == "tool_execution_end" and isinstance(out.get("result"), dict):
            # the event's isError is what clients read; whether the result repeats it
            # depends on whether the tool threw or returned its error (documented)
            out["result"] = {k: v for k, v in out["result"].items() if k != "isError"}
        if value.get("stopReason") == "aborted" and "errorMessage" in out:
            out["errorMessage"] = "<aborted>"  # pi's own words (documented)
        if value.get("type") == "session" and "version" in value:
            out["id"] = "<session>"
        return out

    def _system_message(self, message: dict[str, Any]) -> dict[str, Any]:
        """pi's own prompt words and tool texts: only their structure is compared."""
        out = {k: self(v, k) for k, v in message.items() if k not in ("sections", "toolsAdded", "content")}
        if isinstance(message.get("content"), str):
            out["content"] = "<system prompt>" if message["content"] else ""
        if "sections" in message:
            out["sections"] = sorted(message["sections"] or {})
        if "toolsAdded" in message:
            out["toolsAdded"] = [tool["name"] for tool in message["toolsAdded"]]
        return out


def collapse_updates(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive ``tool_execution_update`` records of one call as one, the last:
    how often a running command reports progress depends on timing."""
    out: list[dict[str, Any]] = []
    for event in events:
        if (
            event.get("type") == "tool_execution_update"
            and out
            and out[-1].get("type") == "tool_execution_update"
            and out[-1].get("toolCallId") == event.get("toolCallId")
        ):
            out[-1] = event
        else:
            out.append(event)
    return out


def normalise_request(body: Any, normalise: Normaliser) -> Any:
    """A provider request with the system prompt and tool declarations (pi's words)
    reduced to their presence and names."""
    body = dict(body)
    if "tools" in body:
        body["tools"] = [tool["function"]["name"] for tool in body["tools"]]
    messages = []
    summary_request = False
    for message in body.get("messages", []):
        if message.get("role") in ("system", "developer"):
            summary_request = "summar" in json.dumps(message.get("content", "")).lower()
            message = {**message, "content": "<system prompt>"}
        elif summary_request and message.get("role") == "user":
            # the summary request: the transcript with pi's own instructions around it;
            # only the transcript (the [User]: … lines) is compared
            message = {**message, "content": [{"type": "text", "text": _transcript(message["content"])}]}
        messages.append(message)
    body["messages"] = messages
    return normalise(body)


def _transcript(content: Any) -> str:
    text = content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
    start = min((i for i in (text.find("[User]:"), text.find("[Assistant")) if i >= 0), default=0)
    ends = [i for i in (text.find("</conversation>"), text.find("\n# Instructions")) if i >= 0]
    return "<summary request> " + text[start : min(ends) if ends else len(text)].strip()


# --------------------------------------------------------------------------- goldens


def check_golden(name: str, outcome: Any) -> None:
    """``outcome`` equals the recorded golden file (recorded when missing or when
    ``PI_CONFORMANCE_RECORD=1``)."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(outcome, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("PI_CONFORMANCE_RECORD") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    recorded = json.loads(path.read_text())
    difference = first_difference(outcome, recorded)
    assert difference is None, f"differs from {path.name} at {difference} (PI_CONFORMANCE_RECORD=1 records it again)"


def first_difference(ours: Any, theirs: Any, where: str = "$") -> str | None:
    """Where two JSON values first differ (a readable assertion message)."""
    if type(ours) is not type(theirs) and not (isinstance(ours, int | float) and isinstance(theirs, int | float)):
        return f"{where}: {json.dumps(ours)[:300]} != {json.dumps(theirs)[:300]}"
    if isinstance(ours, dict):
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                side = "ours" if key in ours else "pi 1.6.0's"
                value = ours.get(key, theirs.get(key))
                return f"{where}.{key}: only in {side} ({json.dumps(value)[:200]})"
            found = first_difference(ours[key], theirs[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(ours, list):
        if len(ours) != len(theirs):
            return f"{where}: {len(ours)} items != {len(theirs)} items"
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found = first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if ours == theirs else f"{where}: {json.dumps(ours)[:300]} != {json.dumps(theirs)[:300]}"


Scenario = Callable[[WireServer], None]


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
