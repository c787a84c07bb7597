"""``pi --list-models [search]`` and ``pi models``: the models you have credentials for,
printed as pi 1.6.0 prints them; a built-in provider re-routed by ``baseUrl`` alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import PI, agent_dir
from google_wire import gemini_text
from wire_server import WireServer, responses_events, responses_stream, use_server

from pi_core.ai.auth import BEARER_ENV, ENV_API_KEYS

KEY_VARS = {name for names in ENV_API_KEYS.values() for name in names} | set(BEARER_ENV.values())
HEADER = re.compile(r"^provider +model +context +max-out +thinking +images *$")


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def pi(*args: str, cwd: Path, keys: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``pi`` with exactly the API keys given (none from the environment)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(PYTHONUNBUFFERED="1", PI_EXTENSIONS="", **(keys or {}))
    return subprocess.run([*PI, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)


def rows(output: str) -> list[list[str]]:
    lines = output.splitlines()
    assert HEADER.match(lines[0]), lines[:1]
    return [line.split() for line in lines[1:]]


def test_list_models_shows_the_providers_with_a_key(tmp_path: Path) -> None:
    done = pi("--list-models", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"})
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    providers = {row[0] for row in table}
    assert providers == {"google"}  # and no anthropic, openai, ..., nor the offline demo
    assert ["google", "gemini-2.5-pro", "1.0M", "65.5K", "yes", "yes"] in table
    ids = [row[1] for row in table if row[0] == "google"]
    assert ids == sorted(ids) and len(ids) >= 20


def test_list_models_search_and_pi_models(tmp_path: Path) -> None:
    done = pi("--list-models", "gem 2.5", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"})
    assert [row[1] for row in rows(done.stdout)] == [
        "gemini-2.5-computer-use-preview-10-2025",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-2.5-pro",
    ]
    done = pi("--list-models", "nothing-like-this", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"})
    assert done.stdout.strip() == 'No models matching "nothing-like-this"'
    same = pi("models", "gem 2.5", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"})
    assert (
        same.returncode == 0
        and same.stdout == pi("--list-models", "gem 2.5", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"}).stdout
    )
    everything = pi("models", "--all", "claude-opus-4-8", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"})
    assert ["anthropic", "claude-opus-4-8", "1M", "128K", "yes", "yes", "-"] in [
        r.split() for r in everything.stdout.splitlines()
    ]
    as_json = json.loads(pi("models", "--json", "gemini-2.5-pro", cwd=tmp_path, keys={"GEMINI_API_KEY": "x"}).stdout)
    assert [(m["provider"], m["id"], m["available"]) for m in as_json] == [("google", "gemini-2.5-pro", True)]
    assert as_json[0]["contextWindow"] == 1_048_576 and as_json[0]["cost"]["cacheRead"] == 0.125


def test_keys_from_auth_json_and_models_json(tmp_path: Path) -> None:
    agent = agent_dir()
    (agent / "auth.json").write_text(json.dumps({"groq": {"type": "api_key", "key": "gsk-stored"}}))
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "xai": {"apiKey": "xai-from-models-json"},
                    "lab": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-completions",
                        "apiKey": "k",
                        "models": [{"id": "lab-model", "contextWindow": 32000, "maxTokens": 4096}],
                    },
                }
            }
        )
    )
    table = rows(pi("--list-models", cwd=tmp_path).stdout)
    assert {row[0] for row in table} == {"groq", "lab", "xai"}
    assert ["lab", "lab-model", "32K", "4.1K", "no", "no"] in table


def test_no_model_without_keys_and_the_demo_only_under_all(tmp_path: Path) -> None:
    # the offline demo answers only when named (--model faux/offline-demo): not listed
    for args in (["--list-models"], ["models"]):
        done = pi(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("No model available: set an API key variable such as ANTHROPIC_API_KEY")
        assert f"add a provider to {agent_dir() / 'models.json'}" in done.stdout and "faux" not in done.stdout
    # every model: the demo too, as not available (never offered or picked)
    everything = pi("models", "--all", "offline-demo", cwd=tmp_path).stdout.splitlines()
    assert everything[0].split()[-1] == "key"
    assert [line.split() for line in everything[1:]] == [["faux", "offline-demo", "128K", "16.4K", "no", "no", "-"]]
    as_json = json.loads(pi("models", "--all", "--json", "offline-demo", cwd=tmp_path).stdout)
    assert [(m["provider"], m["id"], m["available"]) for m in as_json] == [("faux", "offline-demo", False)]


def test_a_catalogue_provider_rerouted_by_base_url_alone(tmp_path: Path, wire: WireServer) -> None:
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"openai": {"baseUrl": f"{wire.url}/v1"}}}))
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "routed"}])))
    done = pi("-p", "--no-session", "hi", cwd=tmp_path, keys={"OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "routed"
    request = wire.requests[0]
    assert request.path == "/v1/responses" and request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "gpt-6.2-sol"  # pi 1.6.0's default model for openai


def test_a_newcomer_with_only_a_gemini_key(tmp_path: Path, wire: WireServer) -> None:
    # google re-routed to the local server by baseUrl alone; the key comes from GEMINI_API_KEY
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"google": {"baseUrl": f"{wire.url}/v1beta"}}}))
    wire.enqueue(gemini_text("hello from gemini"))
    done = pi("-p", "--no-session", "hi", cwd=tmp_path, keys={"GEMINI_API_KEY": "gem-key"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "hello from gemini"
    request = wire.requests[0]
    assert request.path.startswith("/v1beta/models/gemini-4-argon:streamGenerateContent")  # pi 1.6.0's default
    assert request.headers["x-goog-api-key"] == "gem-key"


PI_TS = os.environ.get("PI_TS")


@pytest.mark.skipif(not PI_TS, reason="PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)")
@pytest.mark.parametrize("search", ["", "flash", "anthropic opus", "gpt5"])
def test_list_models_prints_what_pi_1_6_0_prints(tmp_path: Path, search: str) -> None:
    keys = {"GEMINI_API_KEY": "x", "ANTHROPIC_API_KEY": "x", "OPENROUTER_API_KEY": "x", "GROQ_API_KEY": "x"}
    args = ["--list-models", *([search] if search else [])]
    ours = pi(*args, cwd=tmp_path, keys=keys)
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    theirs = subprocess.run(
        [str(PI_TS), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, **keys, "PI_CODING_AGENT_DIR": str(tmp_path / "ts-agent")},
    )
    assert theirs.returncode == 0, theirs.stderr
    # the same table (pi's own offline demo is not listed: it answers only when named)
    assert [line.split() for line in ours.stdout.splitlines()] == [line.split() for line in theirs.stdout.splitlines()]
