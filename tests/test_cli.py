"""The real ``pi`` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_discovery import install_broken, install_good

from conftest import make_distribution

PI = [sys.executable, "-m", "pi_core"]


def run_pi(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # only the test distributions: not the workspace plugins installed next to pi
    full_env = {**os.environ, "PI_EXTENSIONS": "good,broken,cmd", **(env or {})}
    return subprocess.run([*PI, *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=60)


def test_version() -> None:
    """``pi --version`` is pluggable-pi's version, single-sourced from ``pi_core.__version__``."""
    import pi_core

    out = run_pi("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"pi {pi_core.__version__}"


def test_extensions_list_json_shows_third_party_and_broken_plugins(site_dir: Path, tmp_path: Path) -> None:
    install_good(site_dir)
    install_broken(site_dir)
    make_distribution(
        site_dir,
        dist="pi-test-cmd",
        version="2.0",
        module="pi_test_cmd",
        code="from pi_hookspecs import hookimpl\nclass P:\n    @hookimpl\n    def register_commands(self, register):\n"
        "        register('hello', lambda args, ctx: None, description='Say hello')\n",
        entry_points={"cmd": "pi_test_cmd:P"},
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site_dir), os.environ.get("PYTHONPATH", "")])}
    out = run_pi("extensions", "list", "--json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    plugins = {p["name"]: p for p in data["plugins"]}
    good = plugins["good"]
    assert good["source"] == "entrypoint" and good["status"] == "loaded"
    assert (good["distribution"], good["version"]) == ("pi-test-good", "1.2.3")
    assert good["hooks"] == ["register_tools", "tool_call"] and good["tools"] == ["weather"]
    assert plugins["cmd"]["commands"] == ["hello"]
    broken = plugins["broken"]
    assert broken["status"] == "error" and "No module named 'pi_test_this_module_does_not_exist'" in broken["error"]
    # pi's own providers are a built-in plugin like its tools, listed with what they register
    providers = plugins["pi-providers"]
    assert (providers["source"], providers["status"], providers["hooks"]) == (
        "builtin",
        "loaded",
        ["register_providers"],
    )
    assert {"anthropic", "openai"} <= set(providers["providers"]) and "openai-completions" in providers["apis"]


def test_extensions_list_text(site_dir: Path, tmp_path: Path) -> None:
    install_good(site_dir)
    install_broken(site_dir)
    env = {"PYTHONPATH": str(site_dir)}
    out = run_pi("extensions", "list", env=env, cwd=tmp_path)
    assert "good  [entry point]  loaded" in out.stdout
    assert "from: pi-test-good 1.2.3" in out.stdout and "tools: weather" in out.stdout
    assert "broken  [entry point]  error" in out.stdout
    out = run_pi("extensions", "list", env={**env, "PI_EXTENSIONS": "good"}, cwd=tmp_path)  # broken: disabled
    assert "broken  [entry point]  disabled" in out.stdout


def test_unknown_option_is_a_usage_error() -> None:
    out = run_pi("--frobnicate")
    assert out.returncode == 2 and "unrecognized arguments: --frobnicate" in out.stderr
