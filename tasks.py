#!/usr/bin/env python3
"""Set up and run pi's development tasks with nothing but python3 (>= 3.11) and pip.

    python3 tasks.py demo     # set up .venv, then an offline pi session (no API key needed)
    python3 tasks.py test     # set up .venv, then ruff, mypy and the whole test suite
    python3 tasks.py test -k EXPR | PATH...   # set up .venv, then only pytest with these arguments
    python3 tasks.py bench    # set up .venv, then every benchmark
    python3 tasks.py setup    # only set up .venv

Setting up installs uv with pip when it is missing, then runs ``uv sync
--all-packages``, which creates ``.venv`` with pluggable-pi, pluggable-pi-hookspecs, every plugin of
the workspace and the development tools. Every step is idempotent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def setup() -> list[str]:
    uv = uv_command()
    say("uv sync --all-packages")
    run(*uv, "sync", "--all-packages", "--python", sys.executable, env=uv_env())
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
    "examples/pluggable-pi-policy/pi_policy",
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
    say("ruff check")
    run(*uv, "run", "--no-sync", "ruff", "check", ".", env=env)
    say("mypy --strict on the plugin contract, the core and the plugins")
    run(*uv, "run", "--no-sync", "mypy", "hookspecs/pi_hookspecs", *CORE_PACKAGES, *PLUGIN_PACKAGES, env=env)
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


TASKS = {"setup": setup, "demo": demo, "test": test, "bench": bench}
USAGE = f"""usage: python3 tasks.py {{{'|'.join(TASKS)}}}
       python3 tasks.py test [PYTEST ARGS...]   e.g. test -k install, test tests/cli/test_cli_packages.py -x"""

if __name__ == "__main__":
    task, extra = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if task in ("-h", "--help", "help"):
        print(__doc__.strip())
        sys.exit(0)
    if task not in TASKS or (extra and task != "test"):
        sys.exit(USAGE)
    TASKS[task](*extra)
