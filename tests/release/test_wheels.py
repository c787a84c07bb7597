"""pi from its built wheels, installed the ways a user installs it: plain ``python -m venv``
and ``pip`` (no uv, no workspace), ``uv tool install`` (``python3 tasks.py install``) and
pipx. Third-party packages come from the package index (PyPI must be reachable, as for
the setup); pi's own distributions come from the wheels only. Each way compiles pi's
bytecode at install (``assert_compiled``), so the first run is as fast as the next.

The wheels and sdists are built once for the module (the suite runs with ``--dist
loadfile``: this file's tests share one worker).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from release_support import REPO, release_check, tasks

import pi_core

VERSION = pi_core.__version__
STANDARD = ["codemode", "llama", "mcp", "tool_search"]


def run(
    cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the development venv: no ``VIRTUAL_ENV``, its
    ``bin`` off ``PATH``, no ``PYTHONPATH``, no plugin filter."""
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PI_EXTENSIONS")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return {**env, **extra}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every wheel and sdist of the workspace, and the example policy in ``examples/``,
    built as ``python3 tasks.py release`` builds them."""
    out = tmp_path_factory.mktemp("release") / "dist"  # a clone's dist/, as the docs name it
    uv = [sys.executable, "-m", "uv"]
    env = clean_env()
    run([*uv, "build", "--all-packages", "--python", sys.executable, "--out-dir", str(out)], env=env, cwd=REPO)
    run(
        [*uv, "build", "examples/pluggable-pi-policy", "--python", sys.executable, "--out-dir", str(out / "examples")],
        env=env,
        cwd=REPO,
    )
    return out


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A project folder with two files and a private agent folder."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# demo project\n")
    (project / "hello.py").write_text("print('hello')\n")
    yield {"project": project, "agent": tmp_path / "agent"}


def plugins_of(pi: Path, home: dict[str, Path]) -> dict[str, str]:
    listed = run(
        [str(pi), "extensions", "list"], env=clean_env(PI_CODING_AGENT_DIR=str(home["agent"])), cwd=home["project"]
    ).stdout
    rows = [line.split() for line in listed.splitlines() if "  [entry point]  " in line]
    return {row[0]: row[-1] for row in rows}


def assert_compiled(root: Path) -> None:
    """Every module of pi_core in the environment ``root`` has its ``.pyc`` beside it: compiled
    at install, not by a run (``pi --version`` imports a few modules, pi_core has hundreds)."""
    [site] = root.glob("lib/python3*/site-packages")
    sources = sorted((site / "pi_core").rglob("*.py"))
    assert len(sources) > 50, f"pi_core not found in {site}"
    tag = sys.implementation.cache_tag
    missing = [
        str(s.relative_to(site)) for s in sources if not (s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").is_file()
    ]
    assert missing == [], f"no bytecode for {len(missing)} of {len(sources)} modules of pi_core: {missing[:5]}"


def wheel(dist: Path, name: str) -> Path:
    [found] = dist.glob(f"{name.replace('-', '_')}-{VERSION}-*.whl")
    return found


def test_the_release_check_passes_on_what_was_built(dist: Path) -> None:
    problems = release_check().check([dist, dist / "examples"])
    assert [p.format() for p in problems if p.level == "error"] == []
    assert {p.field for p in problems} <= {"Project-URL", "Description"}  # no public home yet: warnings


def test_pip_in_a_plain_venv_installs_pi_with_the_standard_plugins(
    dist: Path, tmp_path: Path, home: dict[str, Path]
) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], env=clean_env())
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    run([*pip, "install", "--quiet", "--find-links", str(dist), "pluggable-pi[standard]"], env=clean_env())
    assert_compiled(venv)  # pip compiles by default
    installed = run([*pip, "list", "--format=freeze"], env=clean_env()).stdout.lower().splitlines()
    ours = {line for line in installed if line.startswith("pluggable-pi")}
    assert ours == {
        f"{name}=={VERSION}"
        for name in (
            "pluggable-pi",
            "pluggable-pi-codemode",
            "pluggable-pi-hookspecs",
            "pluggable-pi-llama",
            "pluggable-pi-mcp",
            "pluggable-pi-tool-search",
            "pluggable-pi-toolindex",
        )
    }
    pi = venv / "bin" / "pi"
    assert run([str(pi), "--version"], env=clean_env()).stdout.strip() == f"pi {VERSION}"
    answer = run(
        [str(pi), "-p", "--model", "faux/offline-demo", "what is here?"],
        cwd=home["project"],
        env=clean_env(PI_CODING_AGENT_DIR=str(home["agent"])),
    )
    assert answer.stdout.startswith("The `ls` command listed 2 entries: README.md, hello.py."), answer.stdout
    assert answer.stderr == ""
    assert plugins_of(pi, home) == dict.fromkeys(STANDARD, "loaded")
    # an administrator adds the organisation's plugin from its wheel
    policy = wheel(dist / "examples", "pluggable-pi-policy")
    run([str(pi), "install", str(policy)], cwd=home["project"], env=clean_env(PI_CODING_AGENT_DIR=str(home["agent"])))
    assert plugins_of(pi, home) == {**dict.fromkeys(STANDARD, "loaded"), "policy": "loaded"}


def test_tasks_install_puts_pi_in_a_uv_tool_environment(
    dist: Path, tmp_path: Path, home: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python3 tasks.py install`` without its setup and build: ``uv tool install`` from
    the wheels, into a tool folder of this test."""
    for key, value in clean_env(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin")).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    pi = tasks().tool_install([sys.executable, "-m", "uv"], dist)
    assert pi == tmp_path / "bin" / "pi" and pi.exists()
    assert_compiled(tmp_path / "tools" / "pluggable-pi")  # uv only with --compile-bytecode
    assert run([str(pi), "--version"], env=clean_env()).stdout.strip() == f"pi {VERSION}"
    assert plugins_of(pi, home) == dict.fromkeys(STANDARD, "loaded")
    pi = tasks().tool_install([sys.executable, "-m", "uv"], dist, everything=True)
    assert set(plugins_of(pi, home)) == {*STANDARD, "acp", "bedrock", "fleet", "otel", "sandbox", "vertex"}


def test_uvx_runs_pi_from_the_wheels_without_installing_it(dist: Path, tmp_path: Path, home: dict[str, Path]) -> None:
    """The one-off form of docs/install.md: ``uvx --compile-bytecode --from "pluggable-pi[standard] @ WHEEL"
    --with WHEEL… pi``, every distribution of the workspace named by its wheel."""
    core, plugins = tasks().wheels_for(dist, "standard")
    env = clean_env(UV_TOOL_DIR=str(tmp_path / "tools"), PI_CODING_AGENT_DIR=str(home["agent"]))
    with_args = [arg for wheel in plugins for arg in ("--with", str(wheel))]
    uvx = [
        sys.executable,
        "-m",
        "uv",
        "tool",
        "run",
        "--compile-bytecode",
        "--python",
        sys.executable,
        "--from",
        f"pluggable-pi[standard] @ {core.as_uri()}",
        *with_args,
        "pi",
    ]
    assert run([*uvx, "--version"], env=env).stdout.strip() == f"pi {VERSION}"
    answer = run([*uvx, "-p", "--model", "faux/offline-demo", "what is here?"], env=env, cwd=home["project"])
    assert answer.stdout.startswith("The `ls` command listed 2 entries: README.md, hello.py."), answer.stdout


def test_uv_installs_pi_with_the_standard_plugins_from_the_git_url(tmp_path: Path, home: dict[str, Path]) -> None:
    """docs/install.md's git form: uv finds the other distributions in the repository's
    workspace (this clone's committed state, as ``git+file://``)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git clone: the git URL form needs the repository's history")
    env = clean_env(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    run(
        [
            sys.executable,
            "-m",
            "uv",
            "tool",
            "install",
            "--compile-bytecode",
            "--python",
            sys.executable,
            f"pluggable-pi[standard] @ git+{REPO.as_uri()}",
        ],
        env=env,
    )
    assert_compiled(tmp_path / "tools" / "pluggable-pi")
    pi = tmp_path / "bin" / "pi"
    assert run([str(pi), "--version"], env=clean_env()).stdout.strip() == f"pi {VERSION}"
    assert plugins_of(pi, home) == dict.fromkeys(STANDARD, "loaded")


def test_pipx_installs_pi_from_the_wheels_and_injects_a_plugin(
    dist: Path, tmp_path: Path, home: dict[str, Path]
) -> None:
    tool = tmp_path / "pipx-venv"
    run([sys.executable, "-m", "venv", str(tool)], env=clean_env())
    got = subprocess.run(
        [str(tool / "bin" / "python"), "-m", "pip", "install", "--quiet", "pipx"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    if got.returncode != 0:
        pytest.skip(f"pipx could not be installed: {got.stderr.strip()[-300:]}")
    env = clean_env(
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "bin"),
        PIPX_MAN_DIR=str(tmp_path / "man"),
        UV_COMPILE_BYTECODE="1",  # as the docs say: a recent pipx installs with uv when it finds uv
    )
    pipx = [str(tool / "bin" / "pipx")]
    # the commands the docs give, run in a clone's folder
    run(
        [*pipx, "install", f"dist/{wheel(dist, 'pluggable-pi').name}[standard]", "--pip-args=--find-links dist"],
        env=env,
        cwd=dist.parent,
    )
    assert_compiled(tmp_path / "pipx" / "venvs" / "pluggable-pi")  # pip compiles; uv as told
    pi = tmp_path / "bin" / "pi"
    assert run([str(pi), "--version"], env=clean_env()).stdout.strip() == f"pi {VERSION}"
    policy = wheel(dist / "examples", "pluggable-pi-policy")
    run([*pipx, "inject", "pluggable-pi", f"dist/examples/{policy.name}"], env=env, cwd=dist.parent)
    assert plugins_of(pi, home) == {**dict.fromkeys(STANDARD, "loaded"), "policy": "loaded"}
