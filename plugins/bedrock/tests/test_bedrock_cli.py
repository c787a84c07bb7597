"""The real ``pi -p`` through pluggable-pi-bedrock (found through its entry point) against a
loopback server speaking Bedrock's wire format; core runs never import botocore; a
Bedrock model without the plugin fails with one line saying what to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bedrock_kit import ACCESS_KEY, SECRET_KEY, converse_frames, verify_sigv4
from wire_server import WireServer, aws_event_stream, use_server

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "cli"))

from cli_helpers import configure_local_endpoint, run_pi, text_reply

MODEL = "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def aws(pi_agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: WireServer) -> dict[str, str]:
    """A private agent dir (the kit's ``pi_agent_dir``), and the environment of a user
    with AWS keys whose Bedrock endpoint is the loopback server."""
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ENDPOINT_URL",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.delenv(name, raising=False)
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-west-2",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": wire.url,
        "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def test_print_mode_answers_through_pi_bedrock(wire: WireServer, aws: dict[str, str], tmp_path: Path) -> None:
    wire.enqueue(
        aws_event_stream(
            converse_frames(
                [{"type": "tool", "id": "tooluse_1", "name": "bash", "json": ['{"command": ', '"echo from-bash"}']}],
                stop_reason="tool_use",
            )
        ),
        aws_event_stream(
            converse_frames(
                [{"type": "text", "text": "The command printed from-bash."}],
                usage={"inputTokens": 50, "outputTokens": 9, "totalTokens": 59, "cacheReadInputTokens": 40},
            )
        ),
    )
    env = {**aws, "PI_EXTENSIONS": "bedrock", "PYTHONPROFILEIMPORTTIME": "1"}
    done = run_pi("-p", "--no-session", "--model", MODEL, "run it", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "The command printed from-bash."
    assert "botocore.auth" in done.stderr  # the plugin signed with botocore

    first, second = wire.requests
    assert first.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert verify_sigv4(first)["region"] == "us-west-2"
    verify_sigv4(second)
    tool_turn = second.body["messages"]
    assert tool_turn[1]["content"][0]["toolUse"] == {
        "toolUseId": "tooluse_1",
        "name": "bash",
        "input": {"command": "echo from-bash"},
    }
    result = tool_turn[2]["content"][0]["toolResult"]
    assert result["toolUseId"] == "tooluse_1" and "from-bash" in json.dumps(result["content"])


LAUNCHER = """
import atexit, os, sys

@atexit.register
def report():
    with open(os.environ["MODULES_FILE"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))

from pi_core.cli import main
sys.argv[0] = "pi"
main()
"""


def test_core_runs_never_import_botocore(wire: WireServer, aws: dict[str, str], tmp_path: Path) -> None:
    """pi as its own entry point (the exit path runs atexit handlers), loading pluggable-pi-bedrock,
    answering with a model of a built-in API: botocore is never imported."""
    wire.enqueue(text_reply("plain answer"))
    model = configure_local_endpoint(wire.url)
    modules = tmp_path / "modules.txt"
    env = {**os.environ, **aws, "PI_EXTENSIONS": "bedrock", "MODULES_FILE": str(modules)}
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, "-p", "--no-session", "--model", model, "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "plain answer"
    loaded = set(modules.read_text().split())
    assert "pi_bedrock" in loaded  # the plugin was loaded...
    assert not {name for name in loaded if name.split(".")[0] == "botocore"}  # ...and costs nothing until used


def test_without_the_plugin_one_line_says_what_to_install(
    wire: WireServer, aws: dict[str, str], tmp_path: Path
) -> None:
    done = run_pi("-p", "--no-session", "--model", MODEL, "hi", cwd=tmp_path, env={**aws, "PI_EXTENSIONS": ""})
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "pi install pluggable-pi-bedrock" in lines[0], done.stderr
    assert wire.requests == []
