"""What ``pi -p`` imports: module count and import time, from ``python -X importtime``.

    .venv/bin/python bench/imports.py [--top N] [--runs N] [--show NAME]

Runs ``pi -p`` with one bash tool round trip against the local scripted endpoint
(``tests/ai/wire_server.py``), bytecode written as users have it, in two set-ups: the
plugins pi 1.6.0 ships (``PI_EXTENSIONS=mcp,codemode,tool_search``) and every plugin of
the workspace. Prints, per set-up, the number of modules imported (deterministic) and the
sum of their own import times (the median over ``--runs``; less noisy than wall time but
still a time), that sum by group (pydantic and its dependencies, the plugin contract,
pi_core, the plugins, the standard library ...), then the ``--top`` modules by cumulative
time. ``--show NAME`` also lists every module imported whose name starts with NAME.

Then where the wall time of the same run goes, without ``-X importtime`` (which slows
every import): the interpreter's own start (``python -c pass``), the time spent inside
imports (the outermost ``import`` statements and ``importlib.import_module`` calls of the
main thread, module bodies included: a pydantic model class is made while its module is
imported), and the rest (reading settings, loading plugins, the request, the answer).
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ai"))

from wire_server import WireServer, chat_chunks  # noqa: E402

VENV_PY = ROOT / ".venv" / "bin" / "python"
SHIPPED = "mcp,codemode,tool_search"


def _replies() -> list[Any]:
    arguments = json.dumps({"command": "echo turn"})
    call = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [
        chat_chunks([{"tool_calls": [call]}], finish_reason="tool_calls"),
        chat_chunks([{"content": "done"}]),
    ]


COUNTING_MAIN = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write(f'pi-modules: {len(sys.modules)}\\n'))\n"
    "from pi_core.cli import main\n"
    "main()\n"
)
"""``pi`` as its console script runs it, telling the number of modules in ``sys.modules`` at
exit: ``-X importtime`` does not list modules imported with ``importlib.import_module``
(the plugins' own packages)."""

SPLITTING_MAIN = """\
import time
start = time.perf_counter()
import builtins, importlib, os, sys
inside = [0.0]
busy = [False]
def timed(original):
    def run(*args, **kwargs):
        if busy[0]:
            return original(*args, **kwargs)
        busy[0] = True
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            busy[0] = False
            inside[0] += time.perf_counter() - began
    return run
builtins.__import__ = timed(builtins.__import__)
importlib.import_module = timed(importlib.import_module)
leave = os._exit
def report_and_leave(code):
    total = time.perf_counter() - start
    sys.stderr.write(f"pi-split: {total:.6f} {inside[0]:.6f}\\n")
    sys.stderr.flush()
    leave(code)
os._exit = report_and_leave
from pi_core.cli import main
main()
"""
"""``pi`` as its console script runs it, telling how long the run took from its first line
to the quick exit (``os._exit``, which ``pi -p`` leaves by) and how much of that was
spent inside imports (only the outermost import of the main thread is timed: what it
imports in turn is inside it)."""

GROUPS = (
    (
        "pydantic and its dependencies",
        ("pydantic", "pydantic_core", "annotated_types", "typing_extensions", "typing_inspection"),
    ),
    ("the plugin contract (pi_hookspecs)", ("pi_hookspecs",)),
    ("pi_core", ("pi_core",)),
    ("pluggy", ("pluggy",)),
    ("h11 (HTTP/1.1)", ("h11",)),
)
"""Named groups of the import time, by top-level package; the other ``pi_*`` packages
are the plugins, the rest the standard library or other third-party packages."""


def group_of(module: str) -> str:
    """The group a module's import time is counted in."""
    top = module.split(".", 1)[0]
    for label, packages in GROUPS:
        if top in packages:
            return label
    if top.startswith("pi_"):
        return "the plugins (pi_mcp, pi_codemode ...)"
    if top in sys.stdlib_module_names or top in ("encodings", "sitecustomize"):
        return "the standard library"
    return "other third-party packages"


def profile(server: WireServer, agent: Path, cwd: Path, plugins: str | None) -> tuple[dict[str, tuple[int, int]], int]:
    """``{module: (self µs, cumulative µs)}`` of one run, and the modules loaded at its end."""
    server.reset()
    server.enqueue(*_replies())
    proc = subprocess.run(
        [str(VENV_PY), "-X", "importtime", "-c", COUNTING_MAIN, "-p", "--no-session", "--model", "local/m", "run it"],
        env=_run_env(agent, plugins),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0 or proc.stdout.strip() != "done":
        tail = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("import time:"))[-800:]
        raise SystemExit(f"pi -p failed (status {proc.returncode}): {proc.stdout[-200:]!r}\n{tail}")
    modules: dict[str, tuple[int, int]] = {}
    loaded = 0
    for line in proc.stderr.splitlines():
        if line.startswith("pi-modules: "):
            loaded = int(line.split()[1])
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, total, name = line[len("import time:") :].split("|", 2)
        modules[name.strip()] = (int(own), int(total))
    return modules, loaded


def _run_env(agent: Path, plugins: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PI_EXTENSIONS", None)
    env["PI_CODING_AGENT_DIR"] = str(agent)
    if plugins is not None:
        env["PI_EXTENSIONS"] = plugins
    return env


def wall_split(server: WireServer, agent: Path, cwd: Path, plugins: str | None) -> tuple[float, float]:
    """Seconds of one run (from its first line to its exit) and of them inside imports."""
    server.reset()
    server.enqueue(*_replies())
    proc = subprocess.run(
        [str(VENV_PY), "-c", SPLITTING_MAIN, "-p", "--no-session", "--model", "local/m", "run it"],
        env=_run_env(agent, plugins),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    for line in proc.stderr.splitlines():
        if line.startswith("pi-split: ") and proc.stdout.strip() == "done":
            total, inside = line.split()[1:3]
            return float(total), float(inside)
    raise SystemExit(f"pi -p failed (status {proc.returncode}): {proc.stdout[-200:]!r}\n{proc.stderr[-800:]}")


def _bare_start() -> float:
    """Seconds of ``python -c pass`` in the same environment (the interpreter's start and exit)."""
    began = time.perf_counter()
    subprocess.run([str(VENV_PY), "-c", "pass"], check=True)
    return time.perf_counter() - began


def report(runs: int = 3, top: int = 0, show: str | None = None) -> list[str]:
    """The numbers of both set-ups, as lines (``bench/run.py`` prints them)."""
    lines = ["what pi -p imports (python -X importtime; one bash round trip)"]
    server = WireServer()
    try:
        with tempfile.TemporaryDirectory(prefix="pi-imports-") as tmp:
            agent, cwd = Path(tmp) / "agent", Path(tmp) / "work"
            agent.mkdir()
            cwd.mkdir()
            (agent / "models.json").write_text(
                json.dumps(
                    {
                        "providers": {
                            "local": {
                                "baseUrl": f"{server.url}/v1",
                                "api": "openai-completions",
                                "apiKey": "k",
                                "models": [{"id": "m", "contextWindow": 100000, "maxTokens": 1024}],
                            }
                        }
                    }
                )
            )
            for label, plugins in ((f"PI_EXTENSIONS={SHIPPED}", SHIPPED), ("every plugin", None)):
                profile(server, agent, cwd, plugins)  # bytecode, caches and the plugin index written
                profiles = [profile(server, agent, cwd, plugins) for _ in range(max(1, runs))]
                found = [modules for modules, _ in profiles]
                counts = {loaded for _, loaded in profiles}
                # a thread importing while another does upsets importtime's accounting (a
                # negative self time, added to another module): counted as 0
                total = statistics.median(sum(max(own, 0) for own, _ in run.values()) for run in found)
                lines.append(f"  {label}")
                lines.append(f"    modules in sys.modules at exit: {'/'.join(str(c) for c in sorted(counts))}")
                lines.append(f"    import time (sum of self times, median of {len(found)}): {total / 1000:.1f} ms")
                groups: dict[str, list[int]] = {}
                for run in found:
                    sums: dict[str, int] = {}
                    for name, (own, _total) in run.items():
                        label = group_of(name)
                        sums[label] = sums.get(label, 0) + max(own, 0)
                    for label, value in sums.items():
                        groups.setdefault(label, []).append(value)
                for label, values in sorted(groups.items(), key=lambda item: -statistics.median(item[1])):
                    lines.append(f"      {statistics.median(values) / 1000:6.1f} ms  {label}")
                split = [wall_split(server, agent, cwd, plugins) for _ in range(max(1, runs))]
                bare = statistics.median(_bare_start() for _ in range(max(1, runs)))
                run_s = statistics.median(total for total, _ in split)
                inside = statistics.median(imports for _, imports in split)
                lines.append(
                    f"    wall time (medians of {len(split)}, no importtime): the interpreter's start "
                    f"{bare * 1000:.1f} ms, then the run {run_s * 1000:.1f} ms: inside imports "
                    f"{inside * 1000:.1f} ms, the rest {(run_s - inside) * 1000:.1f} ms"
                )
                last = found[-1]
                if top:
                    lines.append(f"    top {top} by cumulative time (last run):")
                    for name, (_own, cumulative) in sorted(last.items(), key=lambda item: -item[1][1])[:top]:
                        lines.append(f"      {cumulative / 1000:7.1f} ms  {name}")
                if show:
                    shown = sorted(n for n in last if n.startswith(show))
                    lines.append(f"    {len(shown)} modules starting with {show!r}: {' '.join(shown)}")
    finally:
        server.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per set-up (the time is their median)")
    parser.add_argument("--top", type=int, default=15, help="modules listed by cumulative time")
    parser.add_argument("--show", default=None, help="list the imported modules whose name starts with this")
    args = parser.parse_args()
    print("\n".join(report(args.runs, args.top, args.show)))


if __name__ == "__main__":
    main()
