"""cookiecutter-extension: render the template offline, install what it made into a fresh
virtual environment with pi, and run the generated tests there (they must pass out of
the box), and check that pi discovers the generated plugin through its entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit_support import REPO, uv

TEMPLATE = REPO / "cookiecutter-extension"
BIN = Path(sys.executable).parent
NAMES = {
    "pluggable-pi-hello": None,
    "pluggable-pi-shell-guard": "Shell Guard",
}  # the default name, and one of two words


def cookiecutter(out: Path, *extra: str, config: Path) -> subprocess.CompletedProcess[str]:
    """The real ``cookiecutter`` command, with a private config (no replay files in ~)."""
    return subprocess.run(
        [str(BIN / "cookiecutter"), "--no-input", "--config-file", str(config), "-o", str(out), str(TEMPLATE), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rendered")
    config = out.parent / "cookiecutter-config.yaml"
    config.write_text(f"cookiecutters_dir: {out.parent / 'cc-templates'}\nreplay_dir: {out.parent / 'cc-replay'}\n")
    for name in NAMES.values():
        result = cookiecutter(out, *([f"plugin_name={name}"] if name else []), config=config)
        assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def venv(rendered: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment: pi from this checkout, the generated packages, pytest."""
    root = tmp_path_factory.mktemp("kit-venv") / "venv"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    made = subprocess.run(
        [*uv(), "venv", "--seed", "--python", sys.executable, str(root)], capture_output=True, text=True, env=env
    )
    assert made.returncode == 0, made.stderr
    editable = [arg for name in NAMES for arg in ("-e", str(rendered / name))]
    installed = subprocess.run(
        [
            *uv(),
            "pip",
            "install",
            "--python",
            str(root / "bin" / "python"),
            "-e",
            str(REPO / "hookspecs"),
            "-e",
            str(REPO),
            *editable,
            "pytest",
            "pytest-asyncio",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr
    return root


def test_the_template_renders_a_plugin_package(rendered: Path) -> None:
    for dist in NAMES:
        package = "pi_" + dist.removeprefix("pluggable-pi-").replace("-", "_")
        files = sorted(
            str(p.relative_to(rendered / dist))
            for p in (rendered / dist).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.relative_to(rendered).parts[1].startswith(".")
        )
        assert files == [
            "README.md",
            f"{package}/__init__.py",
            f"{package}/plugin.py",
            f"{package}/py.typed",
            f"{package}/settings.py",
            "pyproject.toml",
            "tests/__init__.py",
            f"tests/test_{package.removeprefix('pi_')}.py",
        ]
    pyproject = (rendered / "pluggable-pi-shell-guard" / "pyproject.toml").read_text()
    assert 'name = "pluggable-pi-shell-guard"' in pyproject
    assert 'dependencies = ["pluggable-pi-hookspecs>=1.0,<2", "pydantic>=2.7"]' in pyproject  # the contract's major
    assert 'test = ["pluggable-pi>=1.0,<2", "pytest>=8", "pytest-asyncio>=0.24"]' in pyproject
    assert '"shell_guard" = "pi_shell_guard:ShellGuardPlugin"' in pyproject
    assert '"shellGuard": {' in (rendered / "pluggable-pi-shell-guard" / "README.md").read_text()
    sources = [p for p in rendered.rglob("*") if p.suffix in (".py", ".md", ".toml", ".typed")]
    assert not [p for p in sources if "{{" in p.read_text() or "{%" in p.read_text()]


def test_the_rendered_code_is_ruff_clean(rendered: Path) -> None:
    result = subprocess.run(
        [str(BIN / "ruff"), "check", "--no-cache", "--cache-dir", str(rendered.parent / "ruff-cache"), "."],
        cwd=rendered,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rendered_package_is_mypy_strict_clean(rendered: Path) -> None:
    packages = [str(rendered / dist / ("pi_" + dist.removeprefix("pluggable-pi-").replace("-", "_"))) for dist in NAMES]
    result = subprocess.run(
        [str(BIN / "mypy"), "--strict", "--cache-dir", str(rendered.parent / "mypy-cache"), *packages],
        cwd=rendered.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dist", list(NAMES))
def test_the_generated_tests_pass_in_a_fresh_environment(venv: Path, rendered: Path, dist: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_") and k != "VIRTUAL_ENV"}
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=rendered / dist,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "10 passed" in result.stdout
    assert "warning" not in (result.stdout + result.stderr).lower()  # the template's pytest config is clean


def test_pi_discovers_the_generated_plugin(venv: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    env.pop("PI_EXTENSIONS", None)
    result = subprocess.run(
        [str(venv / "bin" / "pi"), "extensions", "list", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    plugins = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    hello = plugins["hello"]
    assert (hello["status"], hello["source"], hello["distribution"]) == ("loaded", "entrypoint", "pluggable-pi-hello")
    assert hello["tools"] == ["hello_greet"]
    assert {"tool_call", "tool_result", "session_start", "register_tools"} <= set(hello["hooks"])
    assert plugins["shell_guard"]["tools"] == ["shell_guard_greet"]


@pytest.mark.parametrize("prefix", ["pluggable-pi-", "pi-"])
def test_an_invalid_name_is_refused_with_a_reason(tmp_path: Path, prefix: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    result = cookiecutter(tmp_path / "out", f"plugin_name={prefix}hello", config=config)
    assert result.returncode != 0
    assert f"plugin_name '{prefix}hello': leave out the '{prefix}' prefix" in result.stdout + result.stderr
    assert not list((tmp_path / "out").glob("*hello*"))
