"""mcp.json: validation, merging, trust gating, expansion, names and exposure."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp_testkit import write_json, write_mcp_json

from pi_mcp.config import (
    ConfigValueError,
    ServerConfig,
    expand_home,
    expand_value,
    load_config,
    parse_server,
    saved_project_trust,
)
from pi_mcp.names import tool_exposure, tool_names


def test_stdio_and_http_entries_are_typed(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(
        pi_agent_dir,
        {
            "files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}, "cwd": "sub"},
            "docs": {"url": "https://example.com/mcp", "headers": {"X": "y"}, "description": "Docs", "timeout": 5},
            "typed": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp", "exposure": "codemode-deferred"},
        },
    )
    loaded = load_config(cwd=pi_project, project_trusted=False)
    assert loaded.errors == []
    files, docs, typed = (loaded.servers[n].config for n in ("files", "docs", "typed"))
    assert files.transport == "stdio" and files.args == ["-y", "srv"] and files.exposure == "codemode"
    assert docs.transport == "http" and docs.timeout == 5 and docs.description == "Docs"
    assert typed.exposure == "codemode"  # the documented alias
    assert loaded.servers["files"].source == str(pi_agent_dir / "mcp.json")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "sse", "url": "http://x/sse"}, "legacy SSE transport is not supported"),
        ({"type": "ws", "url": "http://x"}, '"type"'),
        ({"type": "stdio", "url": "http://x"}, 'type "stdio" needs "command"'),
        ({"args": ["x"]}, 'needs either "command" (stdio) or "url" (streamable HTTP)'),
        ({"command": "a", "url": "http://x"}, 'has both "command" and "url"'),
        ({"command": "a", "args": "x y"}, '"args"'),
        ({"command": "a", "env": {"K": 1}}, '"env.K"'),
        ({"command": "a", "enabled": "yes"}, '"enabled"'),
        ({"command": "a", "timeout": 0}, '"timeout"'),
        ({"command": "a", "exposure": "sometimes"}, '"exposure": must be "codemode", "deferred", "direct" or "hidden"'),
        ({"command": "a", "toolExposure": {"x": "loud"}}, '"toolExposure.x"'),
        ({"url": "ftp://x"}, "must be an http:// or https:// URL"),
        ({"url": "http://x", "oauth": {"callbackPort": 70000}}, '"oauth.callbackPort"'),
        ({"url": "http://x", "oauth": {"callbackUrl": "http://example.com/cb"}}, "localhost"),
        ({"url": "http://x", "oauth": {"clientRegistration": "cimd", "clientId": "c"}}, "cimd"),
        ({"url": "http://x", "auth": {"provider": "github"}}, "not supported by pluggable-pi-mcp"),
        ({"command": "a", "headers": {"A": "b"}}, '"headers" and "oauth" belong to HTTP servers'),
        ("npx server", "must be an object"),
    ],
)
def test_an_invalid_entry_is_reported_with_file_server_and_field_and_the_others_load(
    pi_agent_dir: Path, pi_project: Path, entry: object, message: str
) -> None:
    write_mcp_json(pi_agent_dir, {"bad": entry, "good": {"command": "ok"}})
    loaded = load_config(cwd=pi_project, project_trusted=False)
    assert list(loaded.servers) == ["good"]
    assert len(loaded.errors) == 1
    error = loaded.errors[0]
    assert error.startswith(f'{pi_agent_dir / "mcp.json"}: server "bad": ')
    assert message in error


def test_server_name_rules(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(
        pi_agent_dir, {"bad name": {"command": "a"}, "dev-radius": {"command": "a"}, "dev_radius": {"command": "b"}}
    )
    loaded = load_config(cwd=pi_project, project_trusted=False)
    assert list(loaded.servers) == ["dev-radius"]
    assert any('invalid server name "bad name"' in e for e in loaded.errors)
    assert any('"dev_radius": names the same server as "dev-radius"' in e for e in loaded.errors)


def test_broken_files_are_reported_by_path(pi_agent_dir: Path, pi_project: Path) -> None:
    (pi_agent_dir / "mcp.json").write_text("{ nope", encoding="utf-8")
    loaded = load_config(cwd=pi_project, project_trusted=False)
    assert loaded.servers == {} and loaded.errors[0].startswith(f"{pi_agent_dir / 'mcp.json'}: invalid JSON at line 1")
    write_json(pi_agent_dir / "mcp.json", {"mcpServers": ["x"]})
    assert '"mcpServers" must be an object' in load_config(cwd=pi_project, project_trusted=False).errors[0]


def test_project_file_only_in_trusted_projects_and_replaces_or_overrides_user_entries(
    pi_agent_dir: Path, pi_project: Path
) -> None:
    write_mcp_json(
        pi_agent_dir,
        {
            "shared": {"command": "user-cmd", "env": {"TOKEN": "secret"}},
            "internal": {
                "url": "https://internal/mcp",
                "headers": {"Authorization": "Bearer x"},
                "exposure": "deferred",
            },
        },
    )
    write_mcp_json(
        pi_project / ".pi",
        {
            "shared": {"command": "project-cmd"},
            "internal": {"enabled": False, "toolExposure": {"search": "direct"}},
            "local": {"command": "local-cmd"},
        },
    )
    untrusted = load_config(cwd=pi_project, project_trusted=False)
    assert list(untrusted.servers) == ["shared", "internal"]
    assert untrusted.servers["shared"].config.command == "user-cmd"
    assert untrusted.notes == [
        f"{pi_project / '.pi' / 'mcp.json'} (servers internal, local, shared) is not read: the project is not "
        "trusted (start pi in the project and trust it, or run pi with --approve)"
    ]

    trusted = load_config(cwd=pi_project, project_trusted=True)
    assert trusted.errors == []
    assert trusted.servers["shared"].config.command == "project-cmd"
    assert trusted.servers["shared"].config.env == {}  # replaced entirely
    assert trusted.servers["shared"].scope == "project"
    internal = trusted.servers["internal"]
    assert internal.config.enabled is False and internal.config.tool_exposure == {"search": "direct"}
    assert internal.config.headers == {"Authorization": "Bearer x"} and internal.config.exposure == "deferred"
    assert internal.source == str(pi_agent_dir / "mcp.json") and internal.overridden_by == str(
        pi_project / ".pi" / "mcp.json"
    )
    assert trusted.servers["local"].config.command == "local-cmd"


def test_project_override_rules(pi_agent_dir: Path, pi_project: Path) -> None:
    write_mcp_json(pi_agent_dir, {"known": {"command": "a"}})
    write_mcp_json(
        pi_project / ".pi",
        {
            "unknown": {"enabled": False},
            "known": {"enabled": False, "description": "not allowed here"},
            "borrow": {"url": "https://x/mcp", "auth": {"provider": "github"}},
        },
        autoEnableCodemode=False,
    )
    loaded = load_config(cwd=pi_project, project_trusted=True)
    path = pi_project / ".pi" / "mcp.json"
    assert any(e.startswith(f'{path}: server "unknown": has no "command" or "url"') for e in loaded.errors)
    assert any(f'{path}: server "known": "description": unknown field' in e for e in loaded.errors)
    assert any('"auth.provider" may only be set in the user-level mcp.json' in e for e in loaded.errors)
    assert loaded.servers["known"].config.enabled is True
    assert loaded.auto_enable_codemode is False


def test_expansion_of_variables_defaults_and_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", "t0k")
    monkeypatch.delenv("MISSING", raising=False)
    monkeypatch.setenv("EMPTY", "")
    assert expand_value("Bearer ${TOKEN}", "h") == "Bearer t0k"
    assert expand_value("${MISSING:-fallback}/${EMPTY:-e}", "h") == "fallback/e"
    assert expand_value("a${EMPTY}b", "h") == "ab"
    assert expand_value("!printf 'from %s' $TOKEN", "h") == "from t0k"
    assert expand_value("not !a command", "h") == "not !a command"
    with pytest.raises(ConfigValueError, match=r'MCP server "s" env "K": environment variable MISSING is not set'):
        expand_value("${MISSING}", 'MCP server "s" env "K"')
    with pytest.raises(ConfigValueError, match="failed with exit status 3"):
        expand_value("!exit 3", "h")
    assert expand_home("~/bin/x") == str(Path.home() / "bin" / "x")
    assert expand_home("a/~/b") == "a/~/b"


def test_tool_names_are_cleaned_and_collisions_get_a_hash() -> None:
    names = tool_names("dev-radius", ["search", "get.item", "get_item", "x" * 80])
    assert names["search"] == "mcp__dev_radius__search"
    assert names["get.item"] != names["get_item"]
    assert (
        names["get.item"].startswith("mcp__dev_radius__get_item_")
        and len(names["get.item"]) == len("mcp__dev_radius__get_item_") + 8
    )
    assert len(names["x" * 80]) == 64
    assert tool_names("dev-radius", ["get.item"])["get.item"] == "mcp__dev_radius__get_item"


def test_tool_exposure_exact_names_beat_patterns_and_the_first_pattern_wins() -> None:
    overrides = {"get_*": "codemode", "get_secret": "hidden", "*": "direct", "get_s*": "deferred"}
    assert tool_exposure("deferred", overrides, "get_secret") == "hidden"
    assert tool_exposure("deferred", overrides, "get_status") == "codemode"
    assert tool_exposure("deferred", overrides, "list") == "direct"
    assert tool_exposure("hidden", {"search_code": "direct"}, "delete") == "hidden"


def test_parse_server_for_registrations() -> None:
    config = parse_server("jira", {"url": "https://x/mcp", "exposure": "direct"})
    assert isinstance(config, ServerConfig) and config.uses_oauth()
    assert not parse_server("j", {"url": "https://x", "headers": {"authorization": "t"}}).uses_oauth()
    with pytest.raises(ValueError, match="invalid server name"):
        parse_server("a b", {"command": "x"})


def test_saved_project_trust_for_shell_commands(pi_agent_dir: Path, pi_project: Path) -> None:
    assert saved_project_trust(pi_project) is False
    write_json(pi_agent_dir / "trust.json", {os.path.realpath(pi_project.parent): True})
    assert saved_project_trust(pi_project) is True
    write_json(
        pi_agent_dir / "trust.json", {os.path.realpath(pi_project): False, os.path.realpath(pi_project.parent): True}
    )
    assert saved_project_trust(pi_project) is False
    (pi_agent_dir / "trust.json").unlink()
    write_json(pi_agent_dir / "settings.json", {"defaultProjectTrust": "always"})
    assert saved_project_trust(pi_project) is True


def test_the_plugin_imports_without_the_mcp_sdk() -> None:
    import subprocess

    code = "import sys, pi_mcp; print('mcp' in sys.modules, 'httpx2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
