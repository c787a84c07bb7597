"""A user with only ``GEMINI_API_KEY``: ``pi -p`` on a Gemini model runs a tool and
answers, against a local server speaking the Gemini API (``models.json`` points the
``google`` provider at it). The run imports no ``google`` package: the Gemini API is
plain HTTP + SSE."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import PI, agent_dir, run_pi  # also puts tests/ai on the path
from google_wire import chunk, gemini_call, gemini_stream, gemini_text
from wire_server import Canned, WireServer, sse, use_server

from pi_core.ai import ENV_API_KEYS


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def test_pi_print_with_only_a_gemini_key(wire: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for names in ENV_API_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    for name in ("ANTHROPIC_AUTH_TOKEN", "GOOGLE_CLOUD_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)
    path = agent_dir() / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # no apiKey here: the key is GEMINI_API_KEY, the google provider's variable
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "google": {
                        "baseUrl": f"{wire.url}/v1beta",
                        "api": "google-generative-ai",
                        "models": [
                            {
                                "id": "gemini-2.5-flash",
                                "reasoning": True,
                                "input": ["text", "image"],
                                "contextWindow": 1048576,
                                "maxTokens": 65536,
                            }
                        ],
                    }
                }
            }
        )
    )
    wire.enqueue(gemini_call("bash", {"command": "echo from-bash"}, call_id="call-1"), gemini_text("all done"))

    done = run_pi(
        "-p",
        "--no-session",
        "--model",
        "google/gemini-2.5-flash",
        "run it",
        cwd=tmp_path,
        env={"GEMINI_API_KEY": "gemini-test-key", "PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "all done"
    first, second = wire.requests
    assert first.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert first.headers["x-goog-api-key"] == "gemini-test-key"
    # the tool ran and its output went back as the call's function response
    answer = second.body["contents"][-1]["parts"][0]["functionResponse"]
    assert answer["name"] == "bash" and "from-bash" in answer["response"]["output"]
    imported = {
        m.group(1).split(".")[0]
        for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE)
    }
    assert "h11" in imported and "httpx2" not in imported  # the list is real; no HTTP library
    assert "google" not in imported


# --------------------------------------------------------------------------- the same run through pi 1.6.0

PI_TS = os.environ.get("PI_TS")
needs_pi_ts = pytest.mark.skipif(
    not PI_TS, reason="PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)"
)
SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0"


def _mistral_chunks(deltas: list[dict[str, Any]], finish: str) -> Canned:
    events: list[tuple[str | None, Any]] = [
        (
            None,
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish if last else None}],
            },
        )
        for delta, last in zip(deltas, [False] * (len(deltas) - 1) + [True], strict=True)
    ]
    return Canned(body=sse([*events, (None, "[DONE]")]))


MODELS = {  # as pi 1.6.0's catalogue has them, so that both programs see the same models
    "google": {
        "baseUrl": "/v1beta",
        "api": "google-generative-ai",
        "models": [
            {
                "id": "gemini-2.5-flash",
                "reasoning": True,
                "input": ["text", "image"],
                "contextWindow": 1048576,
                "maxTokens": 65536,
            }
        ],
    },
    "mistral": {
        "baseUrl": "",
        "api": "mistral-conversations",
        "models": [
            {
                "id": "magistral-medium-latest",
                "reasoning": True,
                "input": ["text", "image"],
                "contextWindow": 262144,
                "maxTokens": 16384,
                "thinkingLevelMap": {
                    "off": "none",
                    "minimal": None,
                    "low": None,
                    "medium": None,
                    "high": "high",
                    "xhigh": None,
                    "max": None,
                },
            }
        ],
    },
}


def _requests_of(
    program: list[str],
    provider: str,
    model: str,
    wire: WireServer,
    tmp_path: Path,
    replies: list[Canned],
    key: dict[str, str],
) -> list[Any]:
    wire.reset()
    wire.enqueue(*replies)
    agent = tmp_path / f"agent-{len(list(tmp_path.iterdir()))}"
    agent.mkdir()
    config = {**MODELS[provider], "baseUrl": wire.url + MODELS[provider]["baseUrl"]}
    (agent / "models.json").write_text(json.dumps({"providers": {provider: config}}))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(key, PI_CODING_AGENT_DIR=str(agent), PI_EXTENSIONS="")
    done = subprocess.run(
        [*program, "-p", "--no-session", "--model", f"{provider}/{model}", "--thinking", "high", "run it"],
        env=env,
        cwd=agent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "all done", done.stderr[-2000:]
    return [request.body for request in wire.requests]


@needs_pi_ts
@pytest.mark.parametrize("provider", ["google", "mistral"])
def test_requests_match_pi_1_6_0(wire: WireServer, tmp_path: Path, provider: str) -> None:
    """A tool round trip with thinking through pi 1.6.0 and through pi: the same turns,
    thinking (and signatures) replayed the same way, the same generation settings. The
    system prompts and the built-in tools' schemas are each program's own."""
    if provider == "google":
        model, key = "gemini-2.5-flash", {"GEMINI_API_KEY": "k"}
        replies = [
            gemini_stream(
                [
                    chunk([{"text": "plan", "thought": True, "thoughtSignature": SIGNATURE}]),
                    chunk(
                        [
                            {
                                "functionCall": {"name": "bash", "args": {"command": "echo hi"}},
                                "thoughtSignature": SIGNATURE,
                            }
                        ],
                        finish="STOP",
                    ),
                ]
            ),
            gemini_text("all done"),
        ]
    else:
        model, key = "magistral-medium-latest", {"MISTRAL_API_KEY": "k"}
        replies = [
            _mistral_chunks(
                [
                    {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "plan"}]}]},
                    {"content": "ok "},
                    {
                        "tool_calls": [
                            {
                                "id": "AbCdEf123",
                                "index": 0,
                                "function": {"name": "bash", "arguments": '{"command": "echo hi"}'},
                            }
                        ]
                    },
                ],
                "tool_calls",
            ),
            _mistral_chunks([{"content": "all done"}], "stop"),
        ]
    assert PI_TS
    theirs = _requests_of([PI_TS], provider, model, wire, tmp_path, replies, key)
    ours = _requests_of(PI, provider, model, wire, tmp_path, replies, key)
    assert len(theirs) == len(ours) == 2

    def comparable(body: dict[str, Any]) -> dict[str, Any]:
        body = {k: v for k, v in body.items() if k not in ("tools", "systemInstruction", "prompt_cache_key")}
        if provider == "mistral":  # pi 1.6.0's runtime sends a prompt as a list of parts, pi as a string
            body["messages"] = [m for m in body["messages"] if m["role"] not in ("system", "user")]
        return body

    for their_body, our_body in zip(theirs, ours, strict=True):
        assert comparable(our_body) == comparable(their_body)
