"""``pi mcp``: add, remove, list (in a real ``pi`` subprocess), logout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_testkit import (
    FIXTURE,
    TOOL_COUNT,
    env_without_pi,
    stdio,
    write_json,
    write_local_models,
    write_mcp_json,
)

from pi_mcp.cli import main
from pi_mcp.oauth import AUTH_FILE_NAME, CredentialStore


@pytest.fixture(autouse=True)
def in_project(pi_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(pi_project)


def servers(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["mcpServers"]  # type: ignore[no-any-return]


async def test_add_stdio_and_http_servers(
    pi_agent_dir: Path, pi_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_json(pi_agent_dir / "mcp.json", {"autoEnableCodemode": False, "mcpServers": {"keep": {"command": "k"}}})
    assert (
        await main(
            ["add", "files", "--env", "ROOT=${HOME}", "--exposure", "direct", "--", "npx", "-y", "srv", "--flag"]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith(f'Added stdio server "files" in {pi_agent_dir / "mcp.json"}')
    assert (
        await main(
            [
                "add",
                "docs",
                "--url",
                "https://example.com/mcp",
                "--header",
                "X-A=1",
                "--bearer-token-env-var",
                "DOCS_TOKEN",
                "--oauth-client-id",
                "cid",
                "--oauth-callback-port",
                "8765",
                "--description",
                "Docs",
            ]
        )
        == 0
    )
    data = json.loads((pi_agent_dir / "mcp.json").read_text())
    assert data["autoEnableCodemode"] is False and list(data["mcpServers"]) == ["keep", "files", "docs"]
    assert data["mcpServers"]["files"] == {
        "command": "npx",
        "args": ["-y", "srv", "--flag"],
        "env": {"ROOT": "${HOME}"},
        "exposure": "direct",
    }
    assert data["mcpServers"]["docs"] == {
        "url": "https://example.com/mcp",
        "headers": {"X-A": "1", "Authorization": "Bearer ${DOCS_TOKEN}"},
        "oauth": {"clientId": "cid", "callbackPort": 8765},
        "description": "Docs",
    }
    assert await main(["add", "files", "--", "uvx", "other"]) == 0
    assert "Replaced" in capsys.readouterr().out
    assert servers(pi_agent_dir / "mcp.json")["files"] == {"command": "uvx", "args": ["other"]}


async def test_add_to_the_project_and_remove(
    pi_agent_dir: Path, pi_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await main(["add", "-l", "tools", "--", "tools-mcp"]) == 0
    assert servers(pi_project / ".pi" / "mcp.json") == {"tools": {"command": "tools-mcp"}}
    assert not (pi_agent_dir / "mcp.json").exists()
    assert await main(["remove", "--local", "tools"]) == 0
    assert servers(pi_project / ".pi" / "mcp.json") == {}
    assert await main(["remove", "tools"]) == 1
    assert f'no server "tools" in {pi_agent_dir / "mcp.json"}' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["add", "bad name", "--", "x"], 'invalid server name "bad name"'),
        (["add", "x"], "give the server"),
        (["add", "x", "--url", "http://a/mcp", "--", "cmd"], "not both"),
        (["add", "x", "--url", "ftp://a"], '"url" must be an http:// or https:// URL'),
        (["add", "x", "--env", "NOEQUALS", "--", "cmd"], "must look like KEY=VALUE"),
        (["add", "x", "--header", "A=1", "--", "cmd"], "are for --url servers"),
        (["list", "--", "cmd"], "only go with pi mcp add"),
    ],
)
async def test_usage_errors_are_explained(
    argv: list[str], message: str, pi_agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (pi_agent_dir / "mcp.json").exists()


async def test_a_broken_file_is_not_overwritten(pi_agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (pi_agent_dir / "mcp.json").write_text("{ broken")
    assert await main(["add", "x", "--", "cmd"]) == 2
    assert "invalid JSON" in capsys.readouterr().err and (pi_agent_dir / "mcp.json").read_text() == "{ broken"


async def test_logout_removes_stored_credentials(pi_agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_mcp_json(pi_agent_dir, {"docs": {"url": "https://example.com/mcp"}, "local": {"command": "x"}})
    store = CredentialStore(pi_agent_dir / AUTH_FILE_NAME)
    store.update("docs", "https://example.com/mcp", lambda s: s.update(tokens={"access_token": "a"}))
    assert await main(["logout", "docs"]) == 0
    assert capsys.readouterr().out.strip() == 'Signed out of MCP server "docs".'
    assert await main(["logout", "docs"]) == 0
    assert "No stored credentials" in capsys.readouterr().out
    assert await main(["logout", "local"]) == 2
    assert "stdio server" in capsys.readouterr().err
    assert await main(["logout", "-l", "docs"]) == 2
    assert "the project is not trusted" in capsys.readouterr().err


def run_pi(pi_agent_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = env_without_pi()
    env.update(PI_CODING_AGENT_DIR=str(pi_agent_dir), PI_EXTENSIONS="mcp")
    return subprocess.run(
        [sys.executable, "-m", "pi_core", "mcp", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_pi_mcp_list_in_a_subprocess(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"fx": stdio(toolExposure={"echo": "direct"}), "off": stdio(enabled=False)})
    write_mcp_json(pi_project / ".pi", {"proj": stdio(exposure="deferred")})
    write_json(pi_agent_dir / "trust.json", {os.path.realpath(pi_project): True})
    done = run_pi(pi_agent_dir, pi_project, "list")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"fx: connected, {TOOL_COUNT} tools, resources (codemode) {pi_agent_dir / 'mcp.json'}" in done.stdout
    assert "    mcp__fx__echo  [direct]" in done.stdout and "    mcp__fx__add\n" in done.stdout
    assert "off: disabled" in done.stdout
    # the trusted project's servers are listed too
    assert f"proj: connected, {TOOL_COUNT} tools, resources (deferred) {pi_project / '.pi' / 'mcp.json'}" in done.stdout

    (pi_agent_dir / "trust.json").unlink()
    write_mcp_json(
        pi_agent_dir,
        {
            "fx": stdio(),
            "stuck": stdio("--hang", timeout=0.5),
            "gone": {"command": "pi-no-such-command"},
            "bad": {"type": "sse", "url": "http://x"},
        },
    )
    done = run_pi(pi_agent_dir, pi_project, "list", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    states = {s["name"]: s["state"] for s in report["servers"]}
    assert states == {"fx": "connected", "stuck": "failed", "gone": "failed"}
    errors = {s["name"]: s.get("error", "") for s in report["servers"]}
    assert (
        "did not finish starting within 0.5s" in errors["stuck"]
        and "cannot start 'pi-no-such-command'" in errors["gone"]
    )
    assert report["errors"][0].startswith(f'{pi_agent_dir / "mcp.json"}: server "bad": type "sse"')
    assert report["notes"] == [
        f"{pi_project / '.pi' / 'mcp.json'} (servers proj) is not read: the project is not trusted "
        "(start pi in the project and trust it, or run pi with --approve)"
    ]


def test_pi_mcp_help_and_empty_list(pi_agent_dir: Path, pi_project: Path) -> None:
    done = run_pi(pi_agent_dir, pi_project, "list")
    assert done.returncode == 0 and done.stdout.startswith("No MCP servers configured.")
    done = run_pi(pi_agent_dir, pi_project, "--help")
    assert done.returncode == 0 and "add,remove,list,login,logout" in done.stdout
    assert str(FIXTURE).endswith("fixture_server.py")


def test_pi_print_mode_round_trips_a_direct_tool_of_an_installed_pi_mcp(pi_agent_dir: Path, pi_project: Path) -> None:
    """The whole path a user takes: pluggable-pi-mcp installed next to pluggable-pi (found through its
    entry point), a server in ``mcp.json``, ``pi -p`` against an OpenAI-compatible endpoint
    (the real openai SDK over loopback) that calls the server's tool."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "ai"))
    from wire_server import WireServer, chat_chunks

    server = WireServer()
    try:
        write_mcp_json(pi_agent_dir, {"fx": stdio(toolExposure={"echo": "direct"})})
        write_local_models(pi_agent_dir, server.url)
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        server.enqueue(
            chat_chunks(
                [
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "mcp__fx__echo", "arguments": ""},
                            }
                        ]
                    },
                    {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"text": "over the wire"})}}]},
                ],
                finish_reason="tool_calls",
                usage=usage,
            ),
            chat_chunks([{"content": "The server echoed it."}], usage=usage),
        )
        env = env_without_pi()
        env.update(PI_CODING_AGENT_DIR=str(pi_agent_dir), PI_EXTENSIONS="mcp")
        done = subprocess.run(
            [sys.executable, "-m", "pi_core", "-p", "--no-session", "--model", "local/m", "echo it"],
            cwd=pi_project,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "The server echoed it."
        first, second = (request.body for request in server.requests)
        assert "mcp__fx__echo" in [tool["function"]["name"] for tool in first["tools"]]
        result = next(m for m in second["messages"] if m["role"] == "tool")
        assert result["tool_call_id"] == "call_1" and "over the wire" in json.dumps(result["content"])
    finally:
        server.close()
