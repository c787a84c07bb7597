"""``pi install`` / ``list`` / ``remove`` with a real local distribution, installed into
a fresh virtual environment that runs pi (the user never names an environment)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PLUGIN = '''
import sys

from pi_hookspecs import hookimpl, tool


@tool
def hello(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


class Hello:
    @hookimpl
    def register_tools(self, register):
        register(hello)

    @hookimpl
    def tool_call(self, event):
        print(f"[pi-hello] saw {event.tool_name}", file=sys.stderr)
'''


def uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    return [sys.executable, "-m", "uv"]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with pi installed from this checkout."""
    root = tmp_path_factory.mktemp("pi-venv") / "venv"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run([*uv(), "venv", "--seed", "--python", sys.executable, str(root)], check=True, capture_output=True,
                   env=env)
    python = root / "bin" / "python"
    result = subprocess.run(
        [*uv(), "pip", "install", "--python", str(python), "-e", str(REPO / "hookspecs"), "-e", str(REPO)],
        capture_output=True, text=True, env=env,
    )
    assert result.returncode == 0, result.stderr
    return root


def make_plugin(where: Path) -> Path:
    pkg = where / "pi-hello"
    (pkg / "pi_hello").mkdir(parents=True)
    (pkg / "pi_hello" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (pkg / "pyproject.toml").write_text(textwrap.dedent("""
        [project]
        name = "pi-hello"
        version = "0.3.0"
        dependencies = ["pi-hookspecs"]

        [project.entry-points."pi.extensions"]
        hello = "pi_hello:Hello"

        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
    """))
    return pkg


def pi(venv: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PI_EXTENSIONS": "hello", **(env or {})}
    full.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(venv / "bin" / "pi"), *args], cwd=cwd, capture_output=True, text=True, env=full,
                          timeout=300)


def test_install_list_use_remove(venv: Path, tmp_path: Path, agent_dir: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    plugin = make_plugin(tmp_path)
    out = pi(venv, "install", str(plugin), cwd=project)
    assert out.returncode == 0, out.stderr
    assert "installed pi-hello 0.3.0; extensions: hello" in out.stdout
    recorded = json.loads((agent_dir / "settings.json").read_text())["packages"]
    assert recorded == [{"source": str(plugin), "distribution": "pi-hello"}]

    listed = json.loads(pi(venv, "extensions", "list", "--json", cwd=project).stdout)
    hello = next(p for p in listed["plugins"] if p["name"] == "hello")
    assert hello["status"] == "loaded" and hello["distribution"] == "pi-hello" and hello["tools"] == ["hello"]

    run = pi(venv, "-p", "--model", "faux/offline-demo", "what is here?", cwd=project)
    assert run.returncode == 0, run.stderr
    assert "[pi-hello] saw bash" in run.stderr

    rows = json.loads(pi(venv, "list", "--json", cwd=project).stdout)
    assert rows == [{"scope": "user", "source": str(plugin), "distribution": "pi-hello", "version": "0.3.0",
                     "installed": True, "extensions": ["hello"]}]

    out = pi(venv, "remove", "pi-hello", cwd=project)
    assert out.returncode == 0, out.stderr
    assert json.loads((agent_dir / "settings.json").read_text())["packages"] == []
    listed = json.loads(pi(venv, "extensions", "list", "--json", cwd=project).stdout)
    assert not any(p["name"] == "hello" for p in listed["plugins"])


def test_local_install_writes_project_settings_and_missing_packages_are_named(
    venv: Path, tmp_path: Path, agent_dir: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    plugin = make_plugin(tmp_path)
    out = pi(venv, "install", "-l", str(plugin), cwd=project)
    assert out.returncode == 0, out.stderr
    settings = json.loads((project / ".pi" / "settings.json").read_text())
    assert settings["packages"][0]["distribution"] == "pi-hello"
    assert not (agent_dir / "settings.json").exists() or "packages" not in json.loads(
        (agent_dir / "settings.json").read_text())
    pi(venv, "remove", "-l", "pi-hello", cwd=project)

    (project / ".pi" / "settings.json").write_text(json.dumps({"packages": ["pi-not-installed-anywhere>=1"]}))
    run = pi(venv, "-p", "--approve", "--model", "faux/offline-demo", "hi", cwd=project)
    assert run.returncode == 0, run.stderr
    assert "pi install -l 'pi-not-installed-anywhere>=1'" in run.stderr
    untrusted = pi(venv, "-p", "--no-approve", "--model", "faux/offline-demo", "hi", cwd=project)
    assert "pi-not-installed-anywhere" not in untrusted.stderr  # never for an untrusted project


def test_unknown_package_and_package_without_extensions(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = pi(venv, "install", "pi-this-package-does-not-exist-xyz", cwd=project)
    assert out.returncode == 1 and "does not exist on the package index" in out.stderr
    plain = tmp_path / "plain-lib"
    (plain / "plain_lib").mkdir(parents=True)
    (plain / "plain_lib" / "__init__.py").write_text("")
    (plain / "pyproject.toml").write_text(
        '[project]\nname = "plain-lib"\nversion = "1.0"\n[build-system]\nrequires = ["hatchling"]\n'
        'build-backend = "hatchling.build"\n'
    )
    out = pi(venv, "install", str(plain), cwd=project)
    assert out.returncode == 0, out.stderr
    assert "provides no pi.extensions entry point" in out.stderr
