"""pluggable-pi-fleet: 20 scripted tasks through ``pi fleet run`` with ``--max-parallel 1``
and ``--max-parallel 2``, and the ratio of the two wall times.

Each run is the real ``pi fleet run`` (a fresh embedded local Ray with 2 CPUs, started
and stopped by the run, counted in its time) over 20 tasks in 4 throwaway git
repositories, against the scripted OpenAI-compatible model of the fleet tests
(plugins/fleet/tests/fleet_kit.py): every task is a ``write`` tool call and a closing
answer, so the time is pi's and Ray's, not a model's. Printed, never asserted. The wall
time includes the fixed cost of starting and stopping Ray (several seconds) and of each
new worker process's first import of pi, so with tasks this short the ratio stays well
above the ideal 0.5; "the tasks' own time" sums each task's ``duration_s`` (on its worker).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins" / "fleet" / "tests"))

from fleet_kit import (  # noqa: E402
    ScriptedModel,
    fleet_env,
    make_repo,
    results,
    run_args,
    run_fleet,
    write_models,
    write_tasks,
)

TASKS = 20
REPOS = 4


def _run(base: Path, tasks: Path, env: dict[str, str], parallel: int) -> tuple[float, int, float]:
    out = base / f"out-{parallel}"
    start = time.perf_counter()
    done = run_fleet(
        *run_args(tasks, out, "--num-cpus", "2", "--max-parallel", str(parallel)), env=env, cwd=base, timeout=900
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"pi fleet run --max-parallel {parallel} exited {done.returncode}: {done.stderr[-500:]}")
    lines = results(out)
    return elapsed, sum(r["status"] == "ok" for r in lines), sum(r["duration_s"] for r in lines)


def report() -> list[str]:
    try:
        import ray  # noqa: F401
    except ImportError:
        return ["pluggable-pi-fleet: skipped (Ray is not installed)"]
    server = ScriptedModel().start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
            base = Path(tmp)
            agent = base / "agent"
            write_models(agent, server.url)
            repos = [make_repo(base / f"repo{n}", {"README.md": f"repo {n}\n"}) for n in range(REPOS)]
            tasks = write_tasks(
                base / "tasks.jsonl",
                [
                    {"id": f"t{n:02d}", "repo": str(repos[n % REPOS]), "prompt": f"write NOTE{n}.md: task {n}"}
                    for n in range(TASKS)
                ],
            )
            env = fleet_env(agent)
            one, ok_one, work_one = _run(base, tasks, env, 1)
            two, ok_two, work_two = _run(base, tasks, env, 2)
    finally:
        server.close()
    return [
        f"pluggable-pi-fleet: {TASKS} scripted tasks over {REPOS} repositories, pi fleet run, local Ray with 2 CPUs",
        f"  --max-parallel 1   {one:7.2f} s  ({ok_one} ok; the tasks' own time {work_one:6.2f} s)",
        f"  --max-parallel 2   {two:7.2f} s  ({ok_two} ok; the tasks' own time {work_two:6.2f} s)",
        f"  ratio (2 / 1)      {two / one:7.2f}  (wall time, Ray's start and stop included)",
    ]


if __name__ == "__main__":
    print("\n".join(report()))
