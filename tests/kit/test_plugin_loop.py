"""The plugin author's loop, end to end, in a fresh environment made the README's way
(no pip in it) with no ``uv`` on PATH: render the template, ``pi install`` it, run a
real ``pi -p`` on a scripted model, edit, reinstall, list, install editable, update,
remove — every step asserted from pi's own output and ``settings.json``.

And the template's policy holds whatever a trusted project's ``.pi/settings.json`` says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit_support import REPO, readme_venv, without_uv_on_path

sys.path.insert(0, str(REPO / "tests" / "cli"))

from cli_helpers import configure_local_endpoint, text_reply, tool_reply
from wire_server import WireServer, use_server

TEMPLATE = REPO / "cookiecutter-extension"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return readme_venv(tmp_path_factory.mktemp("loop") / "venv")


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """``cookiecutter --no-input``: the package pluggable-pi-hello (plugin ``hello``)."""
    config = tmp_path / "cookiecutter.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    out = tmp_path / "src"
    made = subprocess.run(
        [str(BIN / "cookiecutter"), "--no-input", "--config-file", str(config), "-o", str(out), str(TEMPLATE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    return out / "pluggable-pi-hello"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def pi(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = without_uv_on_path({k: v for k, v in os.environ.items() if k != "PI_EXTENSIONS"})
    return subprocess.run(
        [str(venv / "bin" / "pi"), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def packages(agent_dir: Path) -> Any:
    return json.loads((agent_dir / "settings.json").read_text())["packages"]


def greet(venv: Path, wire: WireServer, project: Path) -> str:
    """``pi -p`` on the local scripted endpoint: the model calls ``hello_greet``; the
    tool's result is what the second request carried back to the model."""
    model = configure_local_endpoint(wire.url)
    wire.reset()
    wire.enqueue(tool_reply("hello_greet", {"name": "Ada"}), text_reply("done"))
    run = ok(pi(venv, "-p", "--model", model, "greet Ada", cwd=project))
    assert run.stdout.strip() == "done"
    assert "error" not in run.stderr.lower(), run.stderr
    return str(wire.requests[1].body["messages"][-1]["content"])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path} has no {old!r}"
    path.write_text(text.replace(old, new, 1))


def test_render_install_run_edit_reinstall_list_editable_update_remove(
    venv: Path, plugin: Path, project: Path, agent_dir: Path, wire: WireServer
) -> None:
    # install: uv from pi's own environment (no pip there, none on PATH)
    out = ok(pi(venv, "install", str(plugin), cwd=project))
    assert f"Installing into {venv}/bin/python with uv ..." in out.stdout
    assert f"{plugin}: installed pluggable-pi-hello 0.1.0; extensions: hello" in out.stdout
    assert out.stderr == ""
    assert packages(agent_dir) == [{"source": str(plugin), "distribution": "pluggable-pi-hello"}]
    assert greet(venv, wire, project) == "Hello, Ada!"

    # edit, reinstall: the edit is in, one record, no false warning
    edit(plugin / "pi_hello" / "settings.py", 'greeting: str = "Hello"', 'greeting: str = "Howdy"')
    out = ok(pi(venv, "install", str(plugin), cwd=project))
    assert f"{plugin}: installed pluggable-pi-hello 0.1.0; extensions: hello" in out.stdout
    assert out.stderr == ""
    assert packages(agent_dir) == [{"source": str(plugin), "distribution": "pluggable-pi-hello"}]
    assert greet(venv, wire, project) == "Howdy, Ada!"

    # list: the record, the installed version, what it provides
    listed = ok(pi(venv, "list", cwd=project)).stdout
    assert f"Recorded in {agent_dir / 'settings.json'} (this agent folder):" in listed
    assert f"  {plugin}  pluggable-pi-hello 0.1.0  extensions: hello" in listed
    rows = json.loads(ok(pi(venv, "list", "--json", cwd=project)).stdout)
    assert rows == [
        {
            "scope": "user",
            "source": str(plugin),
            "distribution": "pluggable-pi-hello",
            "version": "0.1.0",
            "installed": True,
            "extensions": ["hello"],
        }
    ]

    # editable: replaces the record; its first session loads it; edits apply without reinstalling
    out = ok(pi(venv, "install", "-e", str(plugin), cwd=project))
    assert f"-e {plugin}: installed pluggable-pi-hello 0.1.0; extensions: hello" in out.stdout
    assert out.stderr == ""
    assert packages(agent_dir) == [{"source": f"-e {plugin}", "distribution": "pluggable-pi-hello"}]
    plugins = json.loads(ok(pi(venv, "extensions", "list", "--json", cwd=project)).stdout)
    hello = next(p for p in plugins["plugins"] if p["name"] == "hello")
    assert (hello["status"], hello["tools"]) == ("loaded", ["hello_greet"])
    edit(plugin / "pi_hello" / "settings.py", 'greeting: str = "Howdy"', 'greeting: str = "Hi there"')
    assert greet(venv, wire, project) == "Hi there, Ada!"

    # update: versions, never "None ?"
    out = ok(pi(venv, "update", cwd=project))
    assert f"-e {plugin}: pluggable-pi-hello 0.1.0 (already the newest)" in out.stdout
    edit(plugin / "pyproject.toml", 'version = "0.1.0"', 'version = "0.2.0"')
    out = ok(pi(venv, "update", cwd=project))
    assert f"-e {plugin}: pluggable-pi-hello 0.1.0 -> 0.2.0" in out.stdout
    assert "None" not in out.stdout

    # remove by path: uninstalled, the record dropped, the plugin gone
    out = ok(pi(venv, "remove", str(plugin), cwd=project))
    assert "Removed pluggable-pi-hello" in out.stdout
    assert packages(agent_dir) == []
    plugins = json.loads(ok(pi(venv, "extensions", "list", "--json", cwd=project)).stdout)
    assert not [p for p in plugins["plugins"] if p["name"] == "hello"]
    assert f"No packages recorded in {agent_dir / 'settings.json'} or " in ok(pi(venv, "list", cwd=project)).stdout

    # and by name
    ok(pi(venv, "install", str(plugin), cwd=project))
    assert packages(agent_dir) == [{"source": str(plugin), "distribution": "pluggable-pi-hello"}]
    out = ok(pi(venv, "remove", "pluggable-pi-hello", cwd=project))
    assert "Removed pluggable-pi-hello" in out.stdout and packages(agent_dir) == []


def test_the_template_s_policy_blocks_the_same_command_whatever_a_trusted_project_says(
    venv: Path, plugin: Path, project: Path, agent_dir: Path, wire: WireServer
) -> None:
    ok(pi(venv, "install", str(plugin), cwd=project))
    model = configure_local_endpoint(wire.url)
    (project / ".pi").mkdir()
    verdicts = {}
    for name, project_settings, trust in [
        ("no project settings", None, "--approve"),
        ("trusted, empty blocklist", {"hello": {"blockedCommands": []}}, "--approve"),
        (
            "trusted, snake_case, disabledExtensions",
            {"hello": {"blocked_commands": ["nothing"]}, "disabledExtensions": ["hello"]},
            "--approve",
        ),
        ("untrusted, empty blocklist", {"hello": {"blockedCommands": []}}, "--no-approve"),
    ]:
        if project_settings is not None:
            (project / ".pi" / "settings.json").write_text(json.dumps(project_settings))
        wire.reset()
        wire.enqueue(tool_reply("bash", {"command": "rm -rf /"}), text_reply("ok"))
        run = ok(pi(venv, "-p", trust, "--model", model, "clean the disk", cwd=project))
        result = wire.requests[1].body["messages"][-1]["content"]
        verdicts[name] = str(result)
        if trust == "--approve" and project_settings and "blockedCommands" in str(project_settings):
            assert (
                "[warning] hello: ignored hello.blockedCommands of the project's .pi/settings.json: "
                "policy settings count only in your user settings"
            ) in run.stderr
        if trust == "--approve" and project_settings and "disabledExtensions" in project_settings:
            assert (
                "disabledExtensions of the project ignored for 'hello': a project switches off only its own "
                "plugins, and 'hello' is installed"
            ) in run.stderr
    assert set(verdicts.values()) == {"hello: the command matches '\\\\brm\\\\s+-rf\\\\s+/(\\\\s|$)'"}, verdicts
