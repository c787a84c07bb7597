#!/usr/bin/env python3
"""Set up and run pi's development tasks with nothing but python3 (>= 3.11) and pip.

    python3 tasks.py demo     # set up .venv, then an offline pi session (no API key needed)
    python3 tasks.py test     # set up .venv, then ruff (lint and format), mypy and the whole test suite
    python3 tasks.py test -k EXPR | PATH...   # set up .venv, then only pytest with these arguments
    python3 tasks.py bench    # set up .venv, then every benchmark
    python3 tasks.py release [--strict]   # build every wheel and sdist into dist/ and check them
    python3 tasks.py install [--all]      # build the wheels, then `uv tool install` pi from them
    python3 tasks.py setup    # only set up .venv

Setting up installs uv with pip when it is missing, then runs ``uv sync
--all-packages``, which creates ``.venv`` with pluggable-pi, pluggable-pi-hookspecs, every plugin of
the workspace and the development tools. Every step is idempotent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def run(*cmd: str, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(cmd, cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(result.returncode)


def uv_command() -> list[str]:
    """``uv`` from PATH, or the one pip installed for this Python."""
    found = shutil.which("uv")
    if found:
        return [found]
    probe = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True)
    if probe.returncode == 0:
        return [sys.executable, "-m", "uv"]
    say("installing uv with pip")
    attempts = [
        [sys.executable, "-m", "pip", "install", "--quiet", "uv"],
        [sys.executable, "-m", "pip", "install", "--quiet", "--user", "uv"],
        [sys.executable, "-m", "pip", "install", "--quiet", "--user", "--break-system-packages", "uv"],
    ]
    for attempt in attempts:
        if subprocess.run(attempt).returncode == 0:
            break
    else:
        sys.exit("could not install uv with pip; install it yourself: https://docs.astral.sh/uv/")
    return [sys.executable, "-m", "uv"]


def uv_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("UV_PYTHON_DOWNLOADS", "never")  # use this machine's Python, never download one
    env.pop("VIRTUAL_ENV", None)
    return env


WORKSPACE_SOURCES = [
    "pi_core",
    "hookspecs/pi_hookspecs",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "plugins").glob("*/pi_*")),
]
"""The workspace's import packages, installed editable: their bytecode is written beside the sources."""


def setup() -> list[str]:
    """``.venv`` with bytecode compiled at install, so that the first run is as fast as the
    next: ``uv sync --compile-bytecode`` compiles site-packages (a second or two, each time), and
    ``compileall`` the workspace's editable sources (only what changed)."""
    uv = uv_command()
    say("uv sync --all-packages --compile-bytecode")
    run(*uv, "sync", "--all-packages", "--compile-bytecode", "--python", sys.executable, env=uv_env())
    python = ROOT / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run(str(python), "-m", "compileall", "-q", "-j", "0", *WORKSPACE_SOURCES)
    return uv


PLUGIN_PACKAGES = [
    "plugins/toolindex/pi_toolindex",
    "plugins/tool_search/pi_tool_search",
    "plugins/mcp/pi_mcp",
    "plugins/codemode/pi_codemode",
    "plugins/otel/pi_otel",
    "plugins/sandbox/pi_sandbox",
    "plugins/vertex/pi_vertex",
    "plugins/bedrock/pi_bedrock",
    "plugins/acp/pi_acp",
    "plugins/llama/pi_llama",
    "plugins/fleet/pi_fleet",
    "examples/pluggable-pi-policy/pi_policy",
]

TOOLS = [
    # the development tools that are mypy --strict clean
    "tools/release_check.py",
]


CORE_PACKAGES = [
    # pi_core's layers that are mypy --strict clean (the rest join as they get there)
    "pi_core/_paths.py",
    "pi_core/_fs.py",
    "pi_core/_async.py",
    "pi_core/ai",
    "pi_core/agent",
    "pi_core/compaction",
    "pi_core/resources",
    "pi_core/tools",
    "pi_core/testing",
    "pi_core/runtime",
    "pi_core/session",
    "pi_core/extensions",
    "pi_core/cli",
    "pi_core/export",
    "pi_core/builtins.py",
    "pi_core/__init__.py",
    "pi_core/__main__.py",
]


def test(*pytest_args: str) -> None:
    """ruff, mypy and every test; with arguments only ``pytest ARGS`` (a subset: ``-k
    EXPR``, test files, ``-x`` …), without ruff and mypy."""
    uv = setup()
    env = uv_env()
    if pytest_args:
        say(f"pytest {' '.join(pytest_args)}")
        run(*uv, "run", "--no-sync", "pytest", *pytest_args, env=env)
        return
    say("ruff check and ruff format --check")
    run(*uv, "run", "--no-sync", "ruff", "check", ".", env=env)
    run(*uv, "run", "--no-sync", "ruff", "format", "--check", ".", env=env)
    say("mypy --strict on the plugin contract, the core and the plugins")
    run(*uv, "run", "--no-sync", "mypy", "hookspecs/pi_hookspecs", *CORE_PACKAGES, *PLUGIN_PACKAGES, *TOOLS, env=env)
    # One pytest worker per core; a test file's tests stay in one worker (their
    # module fixtures, such as the throwaway venvs, are built once).
    say("pytest -n auto --dist loadfile")
    run(*uv, "run", "--no-sync", "pytest", "-q", "-n", "auto", "--dist", "loadfile", env=env)


DEMO_FILES = {
    "README.md": "# demo project\n\nA tiny folder for pi's offline demo.\n",
    "hello.py": "print('hello from the demo project')\n",
}


def demo() -> None:
    """An offline pi session: the scripted model calls the bash tool, the example audit
    plugin intercepts the call through its tool_call hook, the tool runs, and the
    session is saved as JSONL."""
    import json

    setup()
    demo_dir = ROOT / ".demo"
    project = demo_dir / "project"
    project.mkdir(parents=True, exist_ok=True)
    for name, text in DEMO_FILES.items():
        (project / name).write_text(text)
    env = dict(os.environ)
    env["PI_CODING_AGENT_DIR"] = str(demo_dir / "agent")  # keeps your own ~/.pi untouched
    pi = ROOT / ".venv" / ("Scripts" if os.name == "nt" else "bin") / "pi"
    plugin = ROOT / "examples" / "audit_plugin.py"
    prompt = "What is in this folder?"
    cmd = [str(pi), "-p", "--model", "faux/offline-demo", "-e", str(plugin), prompt]
    say(f"cd .demo/project && pi -p --model faux/offline-demo -e examples/audit_plugin.py {prompt!r}")
    result = subprocess.run(cmd, cwd=project, env=env)
    if result.returncode != 0:
        sys.exit(result.returncode)
    sessions = sorted((demo_dir / "agent" / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not sessions:
        sys.exit("the demo session was not saved")
    latest = sessions[-1]
    entries = [json.loads(line) for line in latest.read_text().splitlines()]
    roles = [e["message"]["role"] for e in entries if e.get("type") == "message"]
    say(f"session saved: {latest.relative_to(ROOT)}")
    print(f"    {len(entries) - 1} entries: {', '.join(roles)}")
    print(f"    resume it: PI_CODING_AGENT_DIR=.demo/agent .venv/bin/pi --session {latest.relative_to(ROOT)}")


def bench() -> None:
    uv = setup()
    run(*uv, "run", "--no-sync", "python", "bench/run.py", env=uv_env())


DIST = ROOT / "dist"
EXAMPLES = ["examples/pluggable-pi-policy"]
"""Projects built with the release that are not members of the workspace (into dist/examples/,
so that ``dist/*`` holds pi's own distributions only)."""


def build(uv: list[str], out: Path = DIST, *, wheels_only: bool = False) -> None:
    """Every wheel and sdist of the workspace into ``out`` (emptied first), the examples
    into ``out/examples``."""
    shutil.rmtree(out, ignore_errors=True)
    kinds = ["--wheel"] if wheels_only else []
    say(f"uv build --all-packages {' '.join(kinds)} -o {_shown(out)}".replace("  ", " "))
    run(*uv, "build", "--all-packages", *kinds, "--python", sys.executable, "--out-dir", str(out), env=uv_env())
    for example in EXAMPLES:
        say(f"uv build {example} {' '.join(kinds)} -o {_shown(out / 'examples')}".replace("  ", " "))
        run(*uv, "build", example, *kinds, "--python", sys.executable, "--out-dir", str(out / "examples"), env=uv_env())


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def release(*args: str) -> None:
    """Build every distribution into dist/ and check what a package index would see:
    tools/release_check.py (``--strict``: warnings such as missing project URLs fail too)."""
    strict = [a for a in args if a == "--strict"]
    uv = setup()
    build(uv)
    folders = [_shown(DIST)] + ([_shown(DIST / "examples")] if EXAMPLES else [])
    say(f"tools/release_check.py {' '.join([*folders, *strict])}")
    run(*uv, "run", "--no-sync", "python", "tools/release_check.py", *folders, *strict, env=uv_env())


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_requirements(wheel: Path) -> tuple[str, list[tuple[str, str | None]]]:
    """A wheel's distribution name and its ``Requires-Dist`` as (name, extra or None)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        text = archive.read(metadata).decode("utf-8")
    name = ""
    requires: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        if key == "Name":
            name = _normalize(value.strip())
        elif key == "Requires-Dist":
            requirement = re.match(r"\s*([A-Za-z0-9._-]+)", value)
            extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", value)
            if requirement:
                requires.append((_normalize(requirement.group(1)), extra.group(1) if extra else None))
    return name, requires


def wheels_for(dist: Path, extra: str) -> tuple[Path, list[Path]]:
    """pluggable-pi's wheel in ``dist`` and the workspace wheels that ``pluggable-pi[extra]``
    needs (the plugins of the extra and what they require from the workspace)."""
    wheels = {}
    for wheel in sorted(dist.glob("*.whl")):
        name, requires = _wheel_requirements(wheel)
        wheels[name] = (wheel, requires)
    if "pluggable-pi" not in wheels:
        sys.exit(f"no pluggable-pi wheel in {dist}")
    needed: list[str] = []
    todo = [name for name, wanted in wheels["pluggable-pi"][1] if wanted in (None, extra)]
    while todo:
        name = todo.pop(0)
        if name in wheels and name not in needed and name != "pluggable-pi":
            needed.append(name)
            todo += [dep for dep, wanted in wheels[name][1] if wanted is None]
    return wheels["pluggable-pi"][0], [wheels[name][0] for name in needed]


def tool_install(uv: list[str], dist: Path, *, everything: bool = False) -> Path:
    """``uv tool install`` pi from the wheels in ``dist``: ``pluggable-pi[standard]`` (or
    ``[all]``), every distribution of the workspace taken from its wheel (never from an
    index, where another project may hold the name), third-party ones from PyPI.
    Returns the installed ``pi``."""
    extra = "all" if everything else "standard"
    core, plugins = wheels_for(dist, extra)
    with_args = [arg for wheel in plugins for arg in ("--with", str(wheel))]
    requirement = f"pluggable-pi[{extra}] @ {core.as_uri()}"
    say(
        f"uv tool install --force --compile-bytecode '{requirement}' "
        + " ".join(f"--with {_shown(w)}" for w in plugins)
    )
    run(
        *uv,
        "tool",
        "install",
        "--force",
        "--compile-bytecode",
        "--python",
        sys.executable,
        requirement,
        *with_args,
        env=uv_env(),
    )
    found = subprocess.run([*uv, "tool", "dir", "--bin"], capture_output=True, text=True, env=uv_env())
    if found.returncode != 0 or not found.stdout.strip():
        sys.exit(f"uv tool dir --bin failed: {found.stderr.strip()}")
    return Path(found.stdout.strip()) / ("pi.exe" if os.name == "nt" else "pi")


def install(*args: str) -> None:
    """Build the wheels and install pi from them the way a user would: ``uv tool install``
    with the ``standard`` extra (``--all``: every plugin). Prints where ``pi`` is."""
    uv = setup()
    build(uv, wheels_only=True)
    pi = tool_install(uv, DIST, everything="--all" in args)
    version = subprocess.run([str(pi), "--version"], capture_output=True, text=True)
    say(f"{version.stdout.strip() or 'pi'} is installed: {pi}")
    folders = os.environ.get("PATH", "").split(os.pathsep)
    if str(pi.parent) not in folders:
        print(f"    {pi.parent} is not on PATH: run `uv tool update-shell`, or call {pi}")


TASKS = {"setup": setup, "demo": demo, "test": test, "bench": bench, "release": release, "install": install}
TASK_OPTIONS = {"release": {"--strict"}, "install": {"--all"}}
USAGE = f"""usage: python3 tasks.py {{{"|".join(TASKS)}}}
       python3 tasks.py test [PYTEST ARGS...]   e.g. test -k install, test tests/cli/test_cli_packages.py -x
       python3 tasks.py release [--strict]      --strict: warnings (no project URLs) fail too, for a real publish
       python3 tasks.py install [--all]         --all: every plugin, not only the standard ones"""

if __name__ == "__main__":
    task, extra = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if task in ("-h", "--help", "help"):
        print(__doc__.strip())
        sys.exit(0)
    if task not in TASKS or (extra and task != "test" and not set(extra) <= TASK_OPTIONS.get(task, set())):
        sys.exit(USAGE)
    TASKS[task](*extra)
