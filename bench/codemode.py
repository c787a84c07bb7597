"""codemode: a script with two tool calls, against the same logic in a fresh Python.

Budget (docs/architecture.md, "Performance budgets"): codemode's overhead <= 1/10 of running the same script as a fresh
Python subprocess. The script reads two files and keeps their ERROR lines:

* subprocess: ``python -c`` doing the reads with pathlib (interpreter start included);
* codemode: the ``codemode`` tool in a pi session on the scripted model, the reads
  going through ``tools.read`` (the whole nested pipeline). Overhead = the tool's wall
  time minus the time of its two nested calls: sandbox checkout, type check, snapshot
  round trips, result formatting.

"warm" calls come after a pause like a model's answer time, so the spare sandbox
session prepared after the previous script is ready; "back to back" calls give it no
time (the next script waits for it). Numbers only, never assertions.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 25
THINK_SECONDS = 0.05

SCRIPT = (
    'a = tools.read(path="one.log")\n'
    'b = tools.read(path="two.log")\n'
    'text("\\n".join(line for line in (a + "\\n" + b).splitlines() if "ERROR" in line))\n'
)
NATIVE = (
    "from pathlib import Path\n"
    "a = Path('one.log').read_text()\n"
    "b = Path('two.log').read_text()\n"
    "print('\\n'.join(line for line in (a + '\\n' + b).splitlines() if 'ERROR' in line))\n"
)


def _project(root: Path) -> Path:
    project = root / "project"
    project.mkdir()
    for name in ("one.log", "two.log"):
        (project / name).write_text("".join(f"INFO line {i}\nERROR {name} {i}\n" for i in range(50)))
    return project


def _subprocess_ms(project: Path) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", NATIVE], cwd=project, capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _codemode_runs(root: Path, project: Path, *, think: float) -> list[dict[str, Any]]:
    from pi_codemode import CodemodePlugin

    from pi_core.testing import PiHarness, call

    agent = root / f"agent-{think}"
    agent.mkdir()
    previous = os.environ.get("PI_CODING_AGENT_DIR")
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    pi = PiHarness(agent, project)
    pi.use(CodemodePlugin).configure(defaultTools=["+codemode"])
    out = []
    try:
        for _ in range(ROUNDS + 1):
            pi.script(call("codemode", code=SCRIPT), "done")
            run = pi.prompt("go")
            [result] = [r for r in run.tool_results if r.tool_name == "codemode"]
            assert not result.is_error and "ERROR two.log 49" in result.text, result.text
            details = result.details
            calls = sum(c["duration_ms"] for c in details["calls"])
            out.append({"wall": details["wall_ms"], "calls": calls, "overhead": details["wall_ms"] - calls})
            if think:
                time.sleep(think)  # the model "answers": the spare session gets ready
    finally:
        pi.close()
        if previous is None:
            os.environ.pop("PI_CODING_AGENT_DIR", None)
        else:
            os.environ["PI_CODING_AGENT_DIR"] = previous
    return out


def _import_ms() -> float:
    code = "import time; t = time.perf_counter(); import pydantic_monty; print((time.perf_counter() - t) * 1000)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def report() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = _project(root)
        native = _subprocess_ms(project)
        warm = _codemode_runs(root, project, think=THINK_SECONDS)
        back_to_back = _codemode_runs(root, project, think=0)
    first, rest = warm[0], warm[1:]
    med = {key: statistics.median(r[key] for r in rest) for key in ("wall", "calls", "overhead")}
    b2b = statistics.median(r["overhead"] for r in back_to_back[1:])
    return [
        "codemode: two-call script vs the same logic in a fresh Python subprocess",
        f"  fresh python -c subprocess                 {native:8.2f} ms (median of {ROUNDS})",
        f"  codemode tool, warm (spare session ready)  {med['wall']:8.2f} ms wall, "
        f"{med['calls']:.2f} ms in the two calls",
        f"  codemode overhead, warm                    {med['overhead']:8.2f} ms = "
        f"{med['overhead'] / native:.3f}x subprocess"
        " (budget <= 0.1x)",
        f"  codemode overhead, back to back            {b2b:8.2f} ms = {b2b / native:.3f}x subprocess",
        f"  first script of the process (cold)         {first['overhead']:8.2f} ms overhead"
        f" (import pydantic_monty alone: {_import_ms():.1f} ms)",
    ]


if __name__ == "__main__":
    print("\n".join(report()))
