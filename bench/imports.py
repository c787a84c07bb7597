"""What ``pi -p`` imports: module count and import time, from ``python -X importtime``.

    .venv/bin/python bench/imports.py [--top N] [--runs N] [--show NAME]

Runs ``pi -p`` with one bash tool round trip against the local scripted endpoint
(``tests/ai/wire_server.py``), bytecode written as users have it, in two set-ups: the
plugins pi 1.6.0 ships (``PI_EXTENSIONS=mcp,codemode,tool_search``) and every plugin of
the workspace. Prints, per set-up, the number of modules imported (deterministic) and the
sum of their own import times (the median over ``--runs``; less noisy than wall time but
still a time), then the ``--top`` modules by cumulative time. ``--show NAME`` also lists
every module imported whose name starts with NAME. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
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


def profile(server: WireServer, agent: Path, cwd: Path, plugins: str | None) -> tuple[dict[str, tuple[int, int]], int]:
    """``{module: (self µs, cumulative µs)}`` of one run, and the modules loaded at its end."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PI_EXTENSIONS", None)
    env["PI_CODING_AGENT_DIR"] = str(agent)
    if plugins is not None:
        env["PI_EXTENSIONS"] = plugins
    server.reset()
    server.enqueue(*_replies())
    proc = subprocess.run(
        [str(VENV_PY), "-X", "importtime", "-c", COUNTING_MAIN, "-p", "--no-session", "--model", "local/m", "run it"],
        env=env,
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
