"""Run the real ``pi`` command in a subprocess, optionally against a local
OpenAI-compatible endpoint configured through ``models.json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))

from wire_server import Canned, chat_chunks

PI = [sys.executable, "-m", "pi_core"]


def agent_dir() -> Path:
    return Path(os.environ["PI_CODING_AGENT_DIR"])


def write_wire_models(url: str) -> None:
    """``models.json`` with one model ``m`` on each core wire API of the local server
    at ``url``: providers ``chat`` (openai-completions), ``resp`` (openai-responses) and
    ``ant`` (anthropic-messages)."""
    path = agent_dir() / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    model = {"id": "m", "contextWindow": 32000, "maxTokens": 1024}
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "chat": {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "k", "models": [model]},
                    "resp": {"baseUrl": f"{url}/v1", "api": "openai-responses", "apiKey": "k", "models": [model]},
                    "ant": {"baseUrl": url, "api": "anthropic-messages", "apiKey": "k", "models": [model]},
                }
            }
        )
    )


def run_pi(
    *args: str,
    cwd: Path,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    # PI_EXTENSIONS="": no installed plugin loads (the workspace's own are installed
    # next to pi); tests load what they need with -e.
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PI_EXTENSIONS": "", **(env or {})}
    return subprocess.run(
        [*PI, *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=full_env, timeout=timeout
    )


def configure_local_endpoint(
    url: str, *, provider: str = "local", model: str = "local-model", **model_fields: Any
) -> str:
    """Write models.json for an OpenAI-compatible server at ``url``; returns ``provider/model``."""
    path = agent_dir() / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "providers": {
                    provider: {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-completions",
                        "apiKey": "test-key",
                        "models": [{"id": model, "contextWindow": 32000, "maxTokens": 1024, **model_fields}],
                    }
                }
            }
        )
    )
    return f"{provider}/{model}"


def text_reply(text: str) -> Canned:
    return chat_chunks(
        [{"content": text[i : i + 8]} for i in range(0, len(text), 8)],
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
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
            {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]},
        ],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
