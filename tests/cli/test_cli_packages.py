"""``pi install`` / ``list`` / ``remove`` / ``update`` with real local distributions, a
local git repository and a local package index, installed into a fresh virtual
environment that runs pi (the user never names an environment).

The environment is made the README's way (no pip in it) and, unlike the one of
tests/kit/test_plugin_loop.py, without the uv package either; no ``uv`` is on PATH. pi
then installs with the uv (or pip) of the Python the environment was made from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "kit"))

from kit_support import readme_venv, uv, without_uv_on_path  # noqa: E402

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


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pi from this checkout; neither pip nor uv in the environment."""
    return readme_venv(tmp_path_factory.mktemp("pi-venv") / "venv", with_uv=False)


def make_plugin(where: Path, version: str = "0.3.0") -> Path:
    pkg = where / f"pi-hello-{version}"
    (pkg / "pi_hello").mkdir(parents=True)
    (pkg / "pi_hello" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent("""
        [project]
        name = "pi-hello"
        version = "VERSION"
        dependencies = ["pluggable-pi-hookspecs"]

        [project.entry-points."pi.extensions"]
        hello = "pi_hello:Hello"

        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
    """).replace("VERSION", version)
    )
    return pkg


def pi(venv: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = without_uv_on_path({**os.environ, "PI_EXTENSIONS": "hello", **(env or {})})
    return subprocess.run(
        [str(venv / "bin" / "pi"), *args], cwd=cwd, capture_output=True, text=True, env=full, timeout=300
    )


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
    assert rows == [
        {
            "scope": "user",
            "source": str(plugin),
            "distribution": "pi-hello",
            "version": "0.3.0",
            "installed": True,
            "extensions": ["hello"],
        }
    ]

    out = pi(venv, "remove", "pi-hello", cwd=project)
    assert out.returncode == 0, out.stderr
    assert json.loads((agent_dir / "settings.json").read_text())["packages"] == []
    listed = json.loads(pi(venv, "extensions", "list", "--json", cwd=project).stdout)
    assert not any(p["name"] == "hello" for p in listed["plugins"])


def test_install_compiles_the_bytecode_of_what_it_installs(venv: Path, tmp_path: Path, agent_dir: Path) -> None:
    """The first run after ``pi install`` does not compile the plugin: a module of it that
    nothing imports (not even ``pi install``'s own check) has its ``.pyc`` already."""
    project = tmp_path / "project"
    project.mkdir()
    plugin = make_plugin(tmp_path)
    (plugin / "pi_hello" / "unused.py").write_text("VALUE = 1\n")
    out = pi(venv, "install", str(plugin), cwd=project)
    assert out.returncode == 0, out.stderr
    [site] = (venv / "lib").glob("python3*/site-packages")
    cache = site / "pi_hello" / "__pycache__"
    assert (cache / f"unused.{sys.implementation.cache_tag}.pyc").is_file(), sorted(p.name for p in cache.glob("*"))
    assert pi(venv, "remove", "pi-hello", cwd=project).returncode == 0


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
        (agent_dir / "settings.json").read_text()
    )
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


def test_the_installer_is_the_one_of_the_python_the_environment_was_made_from(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = pi(venv, "install", str(make_plugin(tmp_path)), cwd=project)
    assert out.returncode == 0, out.stderr
    base = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sys; print(sys._base_executable)"], capture_output=True, text=True
    ).stdout.strip()
    assert f"Installing into {venv}/bin/python with {Path(base).name} -m " in out.stdout  # its uv, else its pip
    assert pi(venv, "remove", "pi-hello", cwd=project).returncode == 0


def git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_a_git_url_installs_records_and_removes(venv: Path, tmp_path: Path, agent_dir: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    repo = make_plugin(tmp_path)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "first", cwd=repo)
    git("tag", "v0.3.0", cwd=repo)
    url = f"git+file://{repo}@v0.3.0"
    out = pi(venv, "install", url, cwd=project)
    assert out.returncode == 0, out.stderr
    assert f"{url}: installed pi-hello 0.3.0; extensions: hello" in out.stdout
    assert json.loads((agent_dir / "settings.json").read_text())["packages"] == [
        {"source": url, "distribution": "pi-hello"}
    ]
    again = pi(venv, "install", url, cwd=project)  # the same revision: nothing changes, nothing is doubled
    assert again.returncode == 0 and again.stderr == ""
    assert len(json.loads((agent_dir / "settings.json").read_text())["packages"]) == 1
    out = pi(venv, "remove", url, cwd=project)
    assert out.returncode == 0 and "Removed pi-hello" in out.stdout
    assert json.loads((agent_dir / "settings.json").read_text())["packages"] == []


def test_a_requirement_from_an_index_and_update_shows_the_versions(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    wheels = tmp_path / "wheels"

    def build(version: str) -> None:
        made = subprocess.run(
            [*uv(), "build", "--wheel", "-q", "-o", str(wheels), str(make_plugin(tmp_path, version))],
            capture_output=True,
            text=True,
            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        )
        assert made.returncode == 0, made.stderr

    build("0.3.0")
    index = {"UV_FIND_LINKS": str(wheels), "UV_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_NO_INDEX": "1"}
    out = pi(venv, "install", "pi-hello>=0.3", cwd=project, env=index)
    assert out.returncode == 0, out.stderr
    assert "pi-hello>=0.3: installed pi-hello 0.3.0; extensions: hello" in out.stdout
    out = pi(venv, "update", cwd=project, env=index)
    assert "pi-hello>=0.3: pi-hello 0.3.0 (already the newest)" in out.stdout
    build("0.4.0")
    out = pi(venv, "update", "pi-hello", cwd=project, env=index)
    assert out.returncode == 0, out.stderr
    assert "pi-hello>=0.3: pi-hello 0.3.0 -> 0.4.0" in out.stdout
    listed = pi(venv, "list", cwd=project).stdout
    assert "  pi-hello>=0.3  pi-hello 0.4.0  extensions: hello" in listed
    assert pi(venv, "remove", "pi-hello>=0.3", cwd=project).returncode == 0


def test_list_names_what_is_missing_and_what_nobody_recorded(venv: Path, tmp_path: Path, agent_dir: Path) -> None:
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    plugin = make_plugin(tmp_path)
    (agent_dir / "settings.json").write_text(json.dumps({"packages": [f"-e {tmp_path / 'gone'}"]}))
    (project / ".pi" / "settings.json").write_text(json.dumps({"packages": ["pi-absent>=2"]}))
    subprocess.run(
        [*uv(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(plugin)],
        check=True,
        capture_output=True,
    )
    try:
        listed = pi(venv, "list", cwd=project).stdout
    finally:
        subprocess.run(
            [*uv(), "pip", "uninstall", "-q", "--python", str(venv / "bin" / "python"), "pi-hello"],
            check=True,
            capture_output=True,
        )
    assert f"  -e {tmp_path / 'gone'}  MISSING, install it with: pi install -e {tmp_path / 'gone'}" in listed
    assert "  pi-absent>=2  pi-absent MISSING, install it with: pi install -l 'pi-absent>=2'" in listed
    assert "without a record here" in listed and "  pi-hello 0.3.0  extensions: hello" in listed


def test_remove_of_something_neither_recorded_nor_installed_says_so(venv: Path, tmp_path: Path) -> None:
    out = pi(venv, "remove", "pi-never-heard-of", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f"pi remove: pi-never-heard-of is neither installed nor recorded in {os.environ['PI_CODING_AGENT_DIR']}"
        "/settings.json"
    ]


@pytest.mark.parametrize(
    ("spec", "name", "is_path"),
    [
        ("pi-foo", "pi-foo", False),
        ("pi-foo==1.2", "pi-foo", False),
        ("pi-foo[extra]>=1,<2", "pi-foo", False),
        ("pi-foo @ git+https://example.com/o/pi-foo.git@v1", "pi-foo", False),
        ("git+https://example.com/o/pi-foo.git@v1#egg=pi-bar", "pi-bar", False),
        ("git+ssh://git@example.com/o/pi-foo.git", None, False),
        ("tests", "tests", False),  # a bare word is a requirement even when such a folder exists (pip's rule)
        ("./tests", None, True),
    ],
)
def test_specs_read_as_pip_reads_them(
    spec: str, name: str | None, is_path: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_core.cli.packages import parse_spec

    monkeypatch.chdir(REPO)
    parsed = parse_spec(spec)
    assert (parsed.name, parsed.path is not None) == (name, is_path)
    assert parse_spec(spec, editable=True).record.startswith("-e /") or not is_path


def test_minus_e_with_a_url_is_refused_with_the_command_to_use(capsys: pytest.CaptureFixture[str]) -> None:
    from pi_core.cli import cli_main as main  # pi_core.cli.main is also a submodule

    with pytest.raises(SystemExit) as exit_info:
        main(["install", "-e", "git+https://example.com/o/pi-foo.git"])
    assert exit_info.value.code == 1
    # ``in``, not ``==``: this runs in the test process, where a thread an earlier test
    # left behind may write to stderr meanwhile.
    assert (
        "pi install: -e git+https://example.com/o/pi-foo.git: -e takes a local project folder; install a URL "
        "without it: pi install git+https://example.com/o/pi-foo.git"
    ) in capsys.readouterr().err.splitlines()


def test_remove_never_uninstalls_what_is_not_a_plugin(venv: Path, tmp_path: Path) -> None:
    out = pi(venv, "remove", "pydantic", cwd=tmp_path)
    assert out.returncode == 1
    assert "pi remove: pydantic is not a plugin package (no pi.extensions entry point)" in out.stderr
    still = subprocess.run([str(venv / "bin" / "python"), "-c", "import pydantic"], capture_output=True)
    assert still.returncode == 0  # pi's own dependency is still there


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No uv beside pi's Python, no uv package, none on PATH, no pip: a venv made from
    ``tmp_path/base-python`` (a script the test writes)."""
    import importlib.util
    import shutil
    import sysconfig

    import pi_core.cli.packages as packages

    packages.find_installer.cache_clear()
    empty = tmp_path / "bin"
    empty.mkdir()
    real_get_path = sysconfig.get_path
    monkeypatch.setattr(
        sysconfig, "get_path", lambda name, *a, **k: str(empty) if name == "scripts" else real_get_path(name, *a, **k)
    )
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("uv", "pip") else real_find_spec(name, *a)
    )
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "_base_executable", str(tmp_path / "base-python"), raising=False)
    yield tmp_path / "base-python"
    packages.find_installer.cache_clear()


def test_without_any_installer_the_message_says_how_to_get_one(bare: Path) -> None:
    from pi_core.cli.packages import NoInstaller, find_installer

    bare.write_text("#!/bin/sh\nexit 1\n")
    bare.chmod(0o755)
    with pytest.raises(NoInstaller) as error:
        find_installer()
    assert str(error.value) == (
        f"no installer for {sys.executable}: uv is not in its environment nor on PATH, and it has no pip; "
        f"add one with: {sys.executable} -m ensurepip   (or install uv: https://docs.astral.sh/uv/)"
    )


def test_the_base_python_s_pip_is_aimed_at_pi_s_environment(bare: Path) -> None:
    from pi_core.cli.packages import find_installer

    # `-m uv` fails, `-m pip --help` lists --python (pip >= 22.3)
    bare.write_text(
        '#!/bin/sh\n[ "$2" = "pip" ] && echo "  --python <python>  Run pip with the specified Python"'
        " && exit 0\nexit 1\n"
    )
    bare.chmod(0o755)
    installer = find_installer()
    assert (installer.kind, installer.describe()) == ("pip", "base-python -m pip")
    assert installer.argv("install", ["pi-foo"]) == [
        str(bare),
        "-m",
        "pip",
        "--python",
        sys.executable,
        "install",
        "pi-foo",
    ]


def test_install_a_built_wheel_records_the_distribution_by_its_name(
    venv: Path, tmp_path: Path, agent_dir: Path
) -> None:
    """A wheel file spells the distribution with "_" (``pi_hello-0.3.0-py3-none-any.whl``):
    pi reports and records it as the distribution is named, so ``pi remove pi-hello`` finds it."""
    project = tmp_path / "project"
    project.mkdir()
    built = tmp_path / "dist"
    subprocess.run(
        [*uv(), "build", "--wheel", "-q", "-o", str(built), str(make_plugin(tmp_path))],
        check=True,
        capture_output=True,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
    )
    (wheel,) = built.glob("pi_hello-0.3.0-*.whl")
    out = pi(venv, "install", str(wheel), cwd=project)
    assert out.returncode == 0, out.stderr
    assert f"{wheel}: installed pi-hello 0.3.0; extensions: hello" in out.stdout
    assert json.loads((agent_dir / "settings.json").read_text())["packages"] == [
        {"source": str(wheel), "distribution": "pi-hello"}
    ]
    out = pi(venv, "remove", "pi-hello", cwd=project)
    assert out.returncode == 0 and "Removed pi-hello" in out.stdout, out.stderr
