"""The ``pi`` command as a user runs it, side by side with pi 1.6.0 (TypeScript, under Bun).

docs/architecture.md, "Performance budgets" states these budgets as ratios to pi 1.6.0
measured in the same run. Every case runs both programs in this process against the same
local scripted endpoint (``tests/ai/wire_server.py``), in **slots**: in each slot our pi
and pi 1.6.0 run the case back to back, which one goes first alternating from slot to
slot, so that the machine's noise hits both alike and a slow moment spoils one pair, not
one program. Each slot gives one ratio ours / theirs; a case reports the median of its
per-slot ratios with a 90% interval, and a budget is met only when the interval's upper
end is under it.

The interval is the distribution-free order-statistic (binomial) confidence interval for
the median of the per-slot ratios: with ``n`` ratios sorted, ``[x(k+1), x(n-k)]`` for the
largest ``k`` with ``P(Binomial(n, 1/2) <= k) <= 5%``, so its coverage is at least 90%
whatever the distribution of the ratios (96.5% at 15 slots, 93.0% at 8; fewer than 5
slots give none). No resampling, no random numbers: the same ratios always give the same
interval.

Times are wall times; memory is the max RSS of the program's process from ``os.wait4``
(which includes children it reaped, such as an MCP server), taken by a small launcher
process (see ``LAUNCHER``); the pi 1.6.0 wrapper is ``sh`` exec'ing ``bun``, so that is
bun's RSS. The cases (``PI_BENCH_CASES`` names them):

* ``startup``: ``pi --version`` and ``pi --help``;
* ``print``: ``pi -p`` text-only and with one bash tool round trip, openai-completions and
  anthropic-messages, our pi loading the plugins pi 1.6.0 ships
  (``PI_EXTENSIONS=mcp,codemode,tool_search``);
* ``all-plugins``: the same with every plugin of the workspace installed and enabled (the
  README's ``.venv``, no ``PI_EXTENSIONS``: pluggable-pi-sandbox confines the bash call);
* ``mcp``: ``pi -p`` with one MCP stdio server (``@modelcontextprotocol/server-everything``
  under node, installed with npm into ``~/.cache/pi-bench``; a small Python ``MCPServer``
  if npm fails) and one call of its ``echo`` tool, exposed ``direct`` in both programs as
  ``mcp__<server>__echo``;
* ``resume``: resuming a 20,000-entry session (``--session FILE``, a fresh copy for every
  run): the extra cost above the same prompt with ``--no-session``, per slot. All 20,000
  messages must reach the model (no compaction in the file, a context window neither
  program compacts in): the request the endpoint received is counted and the case fails
  when it is short;
* ``loop``: a 400-turn bash tool loop in one run (``--mode json``): turn-to-turn gaps
  between ``turn_end`` lines, median of the first 20 and the last 20 (their ratio is the
  per-turn growth), and the whole run. It is slow: ``min(PI_BENCH_RUNS, 8)`` slots unless
  ``PI_BENCH_LOOP_RUNS`` says otherwise (the output says how many);
* ``first-run``: ours only, the first ``pi -p`` after an install against the second one:
  each slot builds a fresh environment the way ``python3 tasks.py install`` does (``uv
  venv`` + ``uv pip install --compile-bytecode`` of ``pluggable-pi[standard]`` from
  wheels of this workspace built once, third-party packages pinned to ``.venv``'s
  versions, from uv's cache) and a fresh agent folder, runs ``pi -p`` twice and takes the
  ratio first / second. What the first run pays on top (creating the agent folder, schema
  caches written beside the bytecode, bytecode missing) is what a user meets; the OS page
  cache is warm in both (the install just wrote the files). ``PI_BENCH_NO_COMPILE=1``
  installs without ``--compile-bytecode``, to see what compiling at install saves.

Our pi is the installed console script ``.venv/bin/pi`` with a warm bytecode cache (the
first-run case excepted); pi 1.6.0 is the wrapper named by ``PI_TS`` (``bench/run.py``
defaults it to the output of ``../shared/tools/install-pi-ts`` when that wrapper is
installed). Without it only our numbers print, and no budget is judged.
``PI_BENCH_RUNS`` sets the number of slots (default 15), ``PI_BENCH_CASES`` the cases to
run (``startup,print,all-plugins,mcp,resume,loop,first-run``; default all); a failing case
prints its reason (the stderr tail) and the others go on. The last table lists every
budget: the case, its slots, the median ratio, the 90% interval, the budget and whether
it is met (rows without a budget print in their case's table only).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ai"))

from wire_server import WireServer, anthropic_message, anthropic_stream, chat_chunks  # noqa: E402

OUR_PI = ROOT / ".venv" / "bin" / "pi"
VENV_PY = ROOT / ".venv" / "bin" / "python"
INSTALL_PI_TS = ROOT.parent / "shared" / "tools" / "install-pi-ts"
BENCH_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pi-bench"
SESSION_ENTRIES = 20_000
LOOP_TURNS = 400
EDGE = 20  # turns at each end of the loop
TIMEOUT = 180.0
LOOP_TIMEOUT = 900.0
CONTEXT_WINDOW = 4_000_000  # far above the 20,000-entry session: neither program compacts
NOT_INSTALLED = 'pi 1.6.0 not installed: export PI_TS="$(../shared/tools/install-pi-ts)"'
DEFAULT_SLOTS = 15
LOOP_SLOTS = 8
"""The loop case's slots unless ``PI_BENCH_LOOP_RUNS`` says otherwise (at most ``PI_BENCH_RUNS``)."""
LEVEL = 0.90
"""The least coverage of the interval of each median ratio."""


SECTIONS = {
    "startup": "_startup",
    "print": "_print_cases",
    "all-plugins": "_all_plugins_cases",
    "mcp": "_mcp_case",
    "resume": "_resume_case",
    "loop": "_loop_case",
    "first-run": "_first_run_case",
}
"""The cases of this bench, by the names ``PI_BENCH_CASES`` takes."""


def _sections() -> list[Callable[[Bench], list[str]]]:
    """The sections to run: all, or those ``PI_BENCH_CASES`` names (``print,resume``)."""
    chosen = [name.strip() for name in os.environ.get("PI_BENCH_CASES", "").split(",") if name.strip()]
    return [globals()[SECTIONS[name]] for name in (chosen or SECTIONS) if name in SECTIONS]


def _count(variable: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(variable, str(default))))
    except ValueError:
        return default


def runs() -> int:
    """The slots of every case (``PI_BENCH_RUNS``, default 15)."""
    return _count("PI_BENCH_RUNS", DEFAULT_SLOTS)


def loop_runs(n: int) -> int:
    """The loop case's slots: ``PI_BENCH_LOOP_RUNS``, else ``min(n, LOOP_SLOTS)``."""
    return _count("PI_BENCH_LOOP_RUNS", min(n, LOOP_SLOTS))


def default_pi_ts() -> None:
    """Set ``PI_TS`` to the output of ``install-pi-ts`` when the wrapper is already installed
    at its default path (never installs it); leave an existing ``PI_TS`` alone."""
    if os.environ.get("PI_TS"):
        return
    wrapper = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pi-ts-1.6.0" / "pi-ts"
    if not wrapper.is_file():
        return
    path = str(wrapper)
    if INSTALL_PI_TS.is_file():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run([str(INSTALL_PI_TS)], capture_output=True, text=True, timeout=120)
            lines = done.stdout.strip().splitlines()
            if done.returncode == 0 and lines and Path(lines[-1]).is_file():
                path = lines[-1]
    os.environ["PI_TS"] = path


# --------------------------------------------------------------------------- running one child


class CaseFailed(Exception):
    pass


@dataclass
class Program:
    name: str
    cmd: list[str]
    env: dict[str, str]
    agent: Path


@dataclass
class Run:
    seconds: float
    rss_kb: int
    stdout: str
    stderr: str
    stamps: list[float] = field(default_factory=list)


def _tail(text: str, lines: int = 6, chars: int = 600) -> str:
    tail = "\n".join(text.strip().splitlines()[-lines:])
    return tail[-chars:] or "(no stderr)"


# A small launcher spawns each measured program and reports its wall time and ``wait4``
# rusage. Spawning it from this process instead would be wrong: Linux carries the RSS of
# the address space a process had before ``exec`` (a copy of this large process after
# fork, or this process itself after vfork / posix_spawn) into its ``ru_maxrss``. The
# launcher's own few MB are that floor instead (printed with the tables).
LAUNCHER = """
import os, sys, time
result, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
with open(result, "w") as fh:
    fh.write(f"{seconds!r} {usage.ru_maxrss} {status}")
"""


def run_once(prog: Program, args: list[str], cwd: Path, *, timeout: float = TIMEOUT, stamp: str | None = None) -> Run:
    """Run ``prog args`` to its end through the launcher: wall time and max RSS of the
    program's process (its ``os.wait4`` rusage). With ``stamp``, the arrival time of every
    stdout line containing it is recorded."""
    with tempfile.TemporaryDirectory(prefix="pi-bench-run-") as tmp:
        result = Path(tmp) / "result"
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with out_path.open("w+") as out, err_path.open("w+") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", LAUNCHER, str(result), *prog.cmd, *args],
                env=prog.env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if stamp else out,
                stderr=err,
                text=True,
                start_new_session=True,
            )
            timed_out = threading.Event()

            def kill() -> None:
                timed_out.set()
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill)
            timer.start()
            stamps: list[float] = []
            try:
                if stamp:
                    assert proc.stdout is not None
                    for line in proc.stdout:
                        if stamp in line:
                            stamps.append(time.perf_counter())
                        out.write(line)
                proc.wait()
            finally:
                timer.cancel()
                if proc.stdout is not None:
                    proc.stdout.close()
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)  # stragglers of its group (MCP servers)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        if timed_out.is_set():
            raise CaseFailed(f"{prog.name}: timed out after {timeout:.0f} s; stderr: {_tail(stderr)}")
        try:
            seconds, rss, status = result.read_text().split()
        except (OSError, ValueError):
            raise CaseFailed(
                f"{prog.name}: the launcher failed (status {proc.returncode}); stderr: {_tail(stderr)}"
            ) from None
    code = os.waitstatus_to_exitcode(int(status))
    if code != 0:
        raise CaseFailed(f"{prog.name}: exit status {code}; stderr: {_tail(stderr)}")
    return Run(float(seconds), int(rss), stdout, stderr, stamps)


def launcher_floor_kb(cwd: Path) -> int | None:
    """The max RSS the launcher reports for ``true``: no run can read below it."""
    try:
        return run_once(Program("true", ["true"], dict(os.environ), cwd), [], cwd).rss_kb
    except CaseFailed:
        return None


# --------------------------------------------------------------------------- the scripted model


def _chat_tool(i: int, name: str = "bash", arguments: dict[str, Any] | None = None) -> Any:
    args = json.dumps(arguments or {"command": "echo turn"})
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {"index": 0, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
                ]
            }
        ],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    )


def _chat_text(text: str) -> Any:
    return chat_chunks([{"content": text}], usage={"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105})


def _anthropic_tool() -> Any:
    block = {"type": "tool_use", "id": "toolu_1", "name": "bash", "json": [json.dumps({"command": "echo turn"})]}
    return anthropic_stream(anthropic_message([block], stop_reason="tool_use"))


def _anthropic_text(text: str) -> Any:
    return anthropic_stream(anthropic_message([{"type": "text", "text": text}]))


def _models_json(agent: Path, url: str) -> None:
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-completions",
                        "apiKey": "k",
                        "models": [{"id": "m", "contextWindow": CONTEXT_WINDOW, "maxTokens": 1024}],
                    },
                    "localant": {
                        "baseUrl": url,
                        "api": "anthropic-messages",
                        "apiKey": "k",
                        "models": [{"id": "claude-local", "contextWindow": CONTEXT_WINDOW, "maxTokens": 1024}],
                    },
                }
            }
        )
    )


PI_PLUGINS = "mcp,codemode,tool_search"
"""The installed plugins our pi loads in these runs (``PI_EXTENSIONS``)."""


def _env(agent: Path, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["PI_CODING_AGENT_DIR"] = str(agent)
    # Like for like with pi 1.6.0, which ships MCP, codemode and tool_search: the
    # organisation plugins of the workspace (pluggable-pi-sandbox confines every bash call,
    # pluggable-pi-otel exports telemetry) stay off here; bench/sandbox.py measures the sandbox.
    env["PI_EXTENSIONS"] = PI_PLUGINS
    for name in list(env):
        if name.endswith(("_API_KEY", "_AUTH_TOKEN")) or name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
            del env[name]
    return env


def _tool_result_text(body: Any) -> str:
    """The text of the tool result(s) in the last message of a request (either API)."""
    if not isinstance(body, dict) or not body.get("messages"):
        return ""
    last = body["messages"][-1]
    content = last.get("content")
    parts: list[Any] = []
    if last.get("role") == "tool":
        parts = [content]
    elif isinstance(content, list):
        parts = [
            block.get("content") for block in content if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, list):
            texts.extend(str(block.get("text", "")) for block in part if isinstance(block, dict))
    return "\n".join(texts)


def _tool_names(body: Any) -> list[str]:
    names = []
    for tool in (body or {}).get("tools", []) if isinstance(body, dict) else []:
        names.append(tool.get("function", {}).get("name") or tool.get("name") or "?")
    return names


def _big_session(path: Path, cwd: Path, entries: int) -> None:
    """A v3 session of ``entries`` alternating user / assistant messages, no compaction."""
    lines = [
        json.dumps(
            {
                "type": "session",
                "version": 3,
                "id": "bench-resume",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": str(cwd),
            }
        )
    ]
    parent = None
    for i in range(entries):
        role = ("user", "assistant")[i % 2]
        message: dict[str, Any] = {"role": role, "timestamp": 1767225600000 + i}
        if role == "user":
            message["content"] = f"question {i} " * 5
        else:
            message.update(
                content=[{"type": "text", "text": f"answer {i} " * 10}],
                api="openai-completions",
                provider="local",
                model="m",
                stopReason="stop",
                usage={
                    "input": 10,
                    "output": 10,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 20,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
            )
        entry_id = f"{i:08x}"
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": message,
                }
            )
        )
        parent = entry_id
    path.write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- the MCP server


@dataclass
class McpServer:
    name: str
    label: str
    command: list[str]


PY_ECHO_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("pyecho")


@server.tool()
def echo(message: str) -> str:
    """Echoes back the input string."""
    return f"Echo: {message}"


server.run()
'''


def _mcp_server(base: Path) -> McpServer:
    """server-everything under node (npm-installed once into the bench cache), else a Python one."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    entry = BENCH_CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    why = "node/npm not found"
    if node and npm:
        if not entry.is_file():
            try:
                BENCH_CACHE.mkdir(parents=True, exist_ok=True)
                if not (BENCH_CACHE / "package.json").exists():
                    (BENCH_CACHE / "package.json").write_text('{"name": "pi-bench", "private": true}\n')
                done = subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "@modelcontextprotocol/server-everything"],
                    cwd=BENCH_CACHE,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                why = f"npm install failed: {_tail(done.stderr, 2, 200)}"
            except (OSError, subprocess.SubprocessError) as error:
                why = f"npm install failed: {error}"
        if entry.is_file():
            return McpServer("everything", "server-everything (node)", [node, str(entry), "stdio"])
    script = base / "pyecho_server.py"
    script.write_text(PY_ECHO_SERVER)
    python = str(VENV_PY if VENV_PY.exists() else Path(sys.executable))
    return McpServer("pyecho", f"Python MCPServer ({why})", [python, str(script)])


# --------------------------------------------------------------------------- the median ratio and its interval


@dataclass(frozen=True)
class Interval:
    """The median of ``n`` per-slot ratios and its order-statistic interval (``low`` and
    ``high`` None when ``n`` is too small for one of the required coverage)."""

    median: float
    low: float | None
    high: float | None
    coverage: float | None
    n: int


def median_interval(values: list[float], level: float = LEVEL) -> Interval:
    """The distribution-free confidence interval for the median: sorted ``x``, the
    interval ``[x(k+1), x(n-k)]`` (1-based) covers the median with probability
    ``1 - 2 P(Binomial(n, 1/2) <= k)``; ``k`` is the largest for which that is at least
    ``level``."""
    xs = sorted(values)
    n = len(xs)
    median = statistics.median(xs)
    tail = (1 - level) / 2
    cdf = 0.0
    best: tuple[int, float] | None = None
    for k in range(n // 2):
        cdf += math.comb(n, k) / 2**n
        if cdf > tail:
            break
        best = (k, 1 - 2 * cdf)
    if best is None:
        return Interval(median, None, None, None, n)
    k, coverage = best
    return Interval(median, xs[k], xs[n - 1 - k], coverage, n)


@dataclass
class Verdict:
    """One budget: the per-slot ratios of a case (None when it could not be measured, and
    ``why`` says so) against its target (None: shown, not judged)."""

    case: str
    ratios: list[float] | None
    target: float | None
    why: str = ""

    def cells(self) -> list[str]:
        target = f"<= {self.target:.2f}x" if self.target is not None else "-"
        if not self.ratios:
            return [self.case, "-", "-", "-", target, self.why or "no data"]
        iv = median_interval(self.ratios)
        interval = f"[{iv.low:.2f}, {iv.high:.2f}]" if iv.high is not None and iv.low is not None else "(too few)"
        if self.target is None:
            verdict = ""
        elif iv.high is None:
            verdict = "not met (too few slots)"
        else:
            verdict = "met" if iv.high < self.target else "not met"
        return [self.case, str(iv.n), f"{iv.median:.2f}x", interval, target, verdict]


def _ratio_cell(ratios: list[float] | None) -> str:
    if not ratios:
        return "-"
    iv = median_interval(ratios)
    if iv.low is None or iv.high is None:
        return f"{iv.median:.2f}x"
    return f"{iv.median:.2f}x [{iv.low:.2f}, {iv.high:.2f}]"


# --------------------------------------------------------------------------- interleaving

Step = Callable[[Program], dict[str, float]]


@dataclass
class Outcome:
    """One program's samples of one step, one per slot, in slot order."""

    samples: list[dict[str, float]] = field(default_factory=list)
    failed: str | None = None

    def median(self, key: str) -> float | None:
        if self.failed or not self.samples:
            return None
        return statistics.median(sample[key] for sample in self.samples)

    def values(self, key: str) -> list[float]:
        return [sample[key] for sample in self.samples]


def interleave(programs: list[Program], n: int, steps: dict[str, Step]) -> dict[str, dict[str, Outcome]]:
    """``n`` slots; in each, every step runs every program back to back, the first program
    of one slot last in the next (ours, theirs; theirs, ours; ...). A program that fails a
    step is not run for that step again; the others go on."""
    results = {key: {prog.name: Outcome() for prog in programs} for key in steps}
    for slot in range(n):
        order = programs if slot % 2 == 0 else programs[::-1]
        for key, step in steps.items():
            for prog in order:
                outcome = results[key][prog.name]
                if outcome.failed:
                    continue
                try:
                    outcome.samples.append(step(prog))
                except CaseFailed as error:
                    outcome.failed = str(error)
                except Exception as error:  # a bench prints, never raises
                    outcome.failed = f"{prog.name}: {type(error).__name__}: {error}"
    return results


def warm(programs: list[Program], step: Step) -> None:
    for prog in programs:
        with contextlib.suppress(Exception):
            step(prog)


def per_slot(ours: list[float], theirs: list[float]) -> list[float]:
    """The ratio ours / theirs of each slot (a slot whose denominator is not positive is left out)."""
    return [a / b for a, b in zip(ours, theirs, strict=False) if b > 0]


def paired(outcomes: dict[str, Outcome], key: str) -> tuple[list[float] | None, str]:
    """Our per-slot ratios to pi 1.6.0 for ``key``, or None and why not."""
    ours, theirs = outcomes.get("pi"), outcomes.get("pi 1.6.0")
    if ours is None or ours.failed:
        return None, "FAILED"
    if theirs is None:
        return None, "no pi 1.6.0"
    if theirs.failed:
        return None, "pi 1.6.0 FAILED"
    return per_slot(ours.values(key), theirs.values(key)), ""


# --------------------------------------------------------------------------- printing


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "ms":
        return f"{value * 1000:.1f} ms"
    if unit == "MB":
        return f"{value / 1024:.0f} MB"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "n":
        return f"{value:,.0f}"
    return f"{value:g}"


@dataclass
class Bench:
    """What every case gets: the programs (ours first), the slots, the endpoint, the
    folders, why pi 1.6.0 is missing (or ""), and the list every budget joins."""

    programs: list[Program]
    n: int
    server: WireServer
    base: Path
    cwd: Path
    missing: str
    verdicts: list[Verdict] = field(default_factory=list)


RATIO = "ratio [90%]"


class Table:
    def __init__(
        self, bench: Bench, title: str, header: tuple[str, str] = ("pi", "pi 1.6.0"), ours_only: bool = False
    ) -> None:
        self.bench = bench
        self.title = title
        self.ours_only = ours_only
        self.header = ["", header[0], header[1], RATIO, f"max RSS {header[0]}", header[1], RATIO]
        self.rows: list[list[str]] = []
        self.notes: list[str] = []
        self._seen: set[tuple[str, str]] = set()

    def row(
        self,
        label: str,
        outcomes: dict[str, Outcome],
        key: str = "time",
        unit: str = "s",
        rss: bool = True,
        target: float | None = None,
        rss_target: float | None = None,
        ratio: bool = True,
        case: str | None = None,
    ) -> None:
        """Medians of both programs and the median per-slot ratio with its interval, for
        ``key`` and (``rss``) peak memory; a ratio with a target joins the budgets, named
        ``case`` (default ``label``)."""
        ours, theirs = outcomes.get("pi"), outcomes.get("pi 1.6.0")
        cells = [label]
        for k, u, show, goal, name in (
            (key, unit, True, target, case or label),
            ("rss", "MB", rss, rss_target, f"{case or label}: peak memory"),
        ):
            if not show:
                cells += ["", "", ""]
                continue
            ratios, why = paired(outcomes, k) if ratio else (None, "")
            cells += [
                "FAILED" if ours and ours.failed else _fmt(ours.median(k) if ours else None, u),
                "FAILED" if theirs and theirs.failed else _fmt(theirs.median(k) if theirs else None, u),
                _ratio_cell(ratios) if ratio else "",
            ]
            if ratio and goal is not None:
                self.bench.verdicts.append(Verdict(name, ratios, goal, why))
        self.rows.append(cells)
        for outcome in (ours, theirs):
            if outcome and outcome.failed and (label, outcome.failed) not in self._seen:
                self._seen.add((label, outcome.failed))
                self.notes.append(f"! {label}: {outcome.failed}")

    def values(
        self,
        label: str,
        ours: float | None,
        theirs: float | None,
        unit: str,
        ratios: list[float] | None = None,
        failed: tuple[str | None, str | None] = (None, None),
    ) -> None:
        self.rows.append(
            [
                label,
                "FAILED" if failed[0] else _fmt(ours, unit),
                "FAILED" if failed[1] else _fmt(theirs, unit),
                _ratio_cell(ratios),
                "",
                "",
                "",
            ]
        )

    def lines(self) -> list[str]:
        out = [self.title]
        if self.bench.missing and not self.ours_only:
            out.append(f"  ({self.bench.missing}; only our numbers)")
        out += _columns([self.header, *self.rows], indent="  ")
        out.extend(f"  {note}" for note in self.notes)
        return out


def _columns(table: list[list[str]], indent: str) -> list[str]:
    """The first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    out = []
    for r in table:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        out.append(indent + "  ".join(cells).rstrip())
    return out


def budgets(verdicts: list[Verdict]) -> list[str]:
    """The final table: every ratio, its interval, its budget and whether it is met."""
    header = ["case", "slots", "median ratio", "90% interval", "budget", "met?"]
    rows = [v.cells() for v in verdicts]
    judged = [r for r, v in zip(rows, verdicts, strict=True) if v.target is not None]
    met = sum(1 for r in judged if r[-1] == "met")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = [
        f"budgets (met when the upper end of the 90% interval is under the budget): {met} of {len(judged)} met",
        "  interval: order-statistic (binomial) interval for the median of the per-slot ratios, coverage >= 90%",
    ]
    counts = sorted({len(v.ratios) for v in verdicts if v.ratios})
    if counts:
        exact = []
        for count in counts:
            coverage = median_interval([0.0] * count).coverage
            exact.append(f"{coverage:.1%} at {count} slots" if coverage else f"none at {count} slots")
        out[-1] += f" (exactly {', '.join(exact)})"
    for r in [header, *rows]:
        cells = [r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2]), r[3].rjust(widths[3])]
        cells += [r[4].rjust(widths[4]), r[5]]
        out.append("  " + "  ".join(cells).rstrip())
    return out


# --------------------------------------------------------------------------- the cases


def _pi_ts() -> tuple[list[str] | None, str]:
    path = os.environ.get("PI_TS", "")
    if not path:
        return None, NOT_INSTALLED
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None, f"PI_TS={path} is not an executable file; {NOT_INSTALLED}"
    return [path], ""


def report() -> list[str]:
    n = runs()
    theirs_cmd, missing = _pi_ts()
    out = [
        f"pi command vs pi 1.6.0: {n} slots per case, each running both programs back to back, alternating "
        "which goes first;",
        "  ratio = pi / pi 1.6.0 per slot: its median and 90% interval (order-statistic interval for the median)",
        f"  our pi loads the plugins pi 1.6.0 ships built in: PI_EXTENSIONS={PI_PLUGINS} (all-plugins: every one)",
    ]
    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="pi-bench-cli-") as tmp:
        base = Path(tmp)
        cwd = base / "project"
        cwd.mkdir()
        floor = launcher_floor_kb(cwd)
        out.append(
            "  max RSS: of the program's process (and of children it reaped, such as an MCP server), from wait4; "
            f"no reading goes below the launcher's floor of {_fmt(floor, 'MB') if floor else '?'}"
        )
        server = WireServer()
        server.httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        try:
            programs = [Program("pi", [str(OUR_PI)], _env(base / "agent-py", base / "pycache"), base / "agent-py")]
            if theirs_cmd:
                programs.append(
                    Program("pi 1.6.0", theirs_cmd, _env(base / "agent-ts", base / "pycache"), base / "agent-ts")
                )
            for prog in programs:
                _models_json(prog.agent, server.url)
            bench = Bench(programs, n, server, base, cwd, missing, verdicts)
            for section in _sections():
                out.append("")
                try:
                    out.extend(section(bench))
                except Exception as error:  # a bench prints, never raises
                    out.append(f"  ! {section.__name__} failed: {type(error).__name__}: {error}")
        finally:
            server.close()
    out += ["", *budgets(verdicts)]
    return out


def _startup(bench: Bench) -> list[str]:
    def flag(name: str) -> Step:
        def step(prog: Program) -> dict[str, float]:
            run = run_once(prog, [name], bench.cwd)
            if not run.stdout.strip():
                raise CaseFailed(f"{prog.name}: {name} printed nothing")
            return {"time": run.seconds, "rss": run.rss_kb}

        return step

    steps = {"--version": flag("--version"), "--help": flag("--help")}
    for step in steps.values():
        warm(bench.programs, step)
    results = interleave(bench.programs, bench.n, steps)
    table = Table(bench, "startup")
    table.row("pi --version", results["--version"], target=1.0)
    table.row("pi --help", results["--help"], target=1.0)
    return table.lines()


def _print_step(bench: Bench, model: str, responses: Callable[[], list[Any]], tool: bool) -> Step:
    """``pi -p`` against the scripted model: text only, or one bash round trip first."""
    server = bench.server

    def step(prog: Program) -> dict[str, float]:
        server.reset()
        server.enqueue(*responses())
        run = run_once(prog, ["-p", "--no-session", "--model", model, "run it"], bench.cwd)
        requests = [r.body for r in server.requests]
        if len(requests) != (2 if tool else 1):
            raise CaseFailed(
                f"{prog.name}: {len(requests)} model requests, expected {2 if tool else 1}; stderr: {_tail(run.stderr)}"
            )
        if tool and "turn" not in _tool_result_text(requests[-1]):
            raise CaseFailed(
                f"{prog.name}: the bash result did not reach the model: {_tool_result_text(requests[-1])[:200]!r}"
            )
        if run.stdout.strip() != "done":
            raise CaseFailed(f"{prog.name}: printed {run.stdout[-200:]!r}, expected 'done'")
        return {"time": run.seconds, "rss": run.rss_kb}

    return step


PRINT_CASES: list[tuple[str, str, Callable[[], list[Any]], bool]] = [
    ("pi -p hi, openai-completions", "local/m", lambda: [_chat_text("done")], False),
    ("pi -p hi, anthropic-messages", "localant/claude-local", lambda: [_anthropic_text("done")], False),
    ("pi -p, one bash round trip, openai-completions", "local/m", lambda: [_chat_tool(0), _chat_text("done")], True),
    (
        "pi -p, one bash round trip, anthropic-messages",
        "localant/claude-local",
        lambda: [_anthropic_tool(), _anthropic_text("done")],
        True,
    ),
]
"""``pi -p`` text-only and with one bash round trip, on both wire APIs: label, model, replies, whether a tool runs."""


def _print_table(bench: Bench, title: str, suffix: str, target: float) -> list[str]:
    steps = {label: _print_step(bench, model, responses, tool) for label, model, responses, tool in PRINT_CASES}
    for step in steps.values():
        warm(bench.programs, step)
    results = interleave(bench.programs, bench.n, steps)
    table = Table(bench, title)
    for label in steps:
        table.row(label + suffix, results[label], target=target, rss_target=0.7)
    return table.lines()


def _print_cases(bench: Bench) -> list[str]:
    return _print_table(bench, f"pi -p against a local endpoint (PI_EXTENSIONS={PI_PLUGINS})", "", 0.7)


def _all_plugins_cases(bench: Bench) -> list[str]:
    """The print cases with every plugin of the workspace installed and enabled: ``.venv``
    without ``PI_EXTENSIONS`` (an agent folder of its own)."""
    agent = bench.base / "agent-py-all"
    _models_json(agent, bench.server.url)
    ours = bench.programs[0]
    env = {k: v for k, v in ours.env.items() if k != "PI_EXTENSIONS"}
    env["PI_CODING_AGENT_DIR"] = str(agent)
    everything = Program("pi", ours.cmd, env, agent)
    listed = subprocess.run(
        [*ours.cmd, "extensions", "list"], env=env, cwd=bench.cwd, capture_output=True, text=True, timeout=TIMEOUT
    )
    names = sorted(line.split()[0] for line in listed.stdout.splitlines() if "  [entry point]  " in line)
    sub = Bench([everything, *bench.programs[1:]], bench.n, bench.server, bench.base, bench.cwd, bench.missing)
    sub.verdicts = bench.verdicts  # the same list: its budgets join the others
    lines = _print_table(
        sub, "pi -p against a local endpoint, every plugin of the workspace enabled", " (all plugins)", 0.8
    )
    lines.insert(1, f"  our pi's plugins: {', '.join(names) or '?'}")
    return lines


def _mcp_case(bench: Bench) -> list[str]:
    programs, server, cwd = bench.programs, bench.server, bench.cwd
    mcp = _mcp_server(bench.base)
    tool = f"mcp__{mcp.name}__echo"  # both programs: mcp__<server>__<tool>, declared when exposure is direct
    config = {"mcpServers": {mcp.name: {"command": mcp.command[0], "args": mcp.command[1:], "exposure": "direct"}}}
    for prog in programs:
        (prog.agent / "mcp.json").write_text(json.dumps(config))

    def step(prog: Program) -> dict[str, float]:
        server.reset()
        server.enqueue(_chat_tool(0, tool, {"message": "bench"}), _chat_text("done"))
        run = run_once(prog, ["-p", "--no-session", "--model", "local/m", "echo it"], cwd)
        requests = [r.body for r in server.requests]
        if not requests or tool not in _tool_names(requests[0]):
            names = _tool_names(requests[0]) if requests else []
            raise CaseFailed(
                f"{prog.name}: {tool} was not declared to the model (tools: {names}); stderr: {_tail(run.stderr)}"
            )
        result = _tool_result_text(requests[-1]) if len(requests) == 2 else ""
        if "Echo: bench" not in result:
            raise CaseFailed(
                f"{prog.name}: the echo tool's result did not reach the model "
                f"({len(requests)} requests; result {result[:200]!r}); stderr: {_tail(run.stderr)}"
            )
        return {"time": run.seconds, "rss": run.rss_kb}

    try:
        warm(programs, step)
        results = interleave(programs, bench.n, {"mcp": step})
    finally:
        for prog in programs:
            (prog.agent / "mcp.json").unlink(missing_ok=True)
    table = Table(bench, f"pi -p with one MCP stdio server, one call of {tool} ({mcp.label})")
    table.row("pi -p, one MCP tool call", results["mcp"], target=0.85, rss_target=0.7)
    try:  # the server started alone, its stdin closed at once
        alone = _fmt(
            run_once(Program("the MCP server", mcp.command, programs[0].env, programs[0].agent), [], cwd).rss_kb, "MB"
        )
    except CaseFailed:
        alone = "?"
    table.notes.append(f"(max RSS includes the MCP server, a child each program reaps; the server alone: {alone})")
    return table.lines()


def _resume_case(bench: Bench) -> list[str]:
    programs, server, base, cwd = bench.programs, bench.server, bench.base, bench.cwd
    big = base / "big.jsonl"
    _big_session(big, cwd, SESSION_ENTRIES)
    small = base / "small.jsonl"
    _big_session(small, cwd, 10)
    copy = base / "resume.jsonl"

    def plain(prog: Program) -> dict[str, float]:
        server.reset()
        server.enqueue(_chat_text("ok"))
        run = run_once(prog, ["-p", "--no-session", "--model", "local/m", "hi"], cwd)
        if len(server.requests) != 1:
            raise CaseFailed(f"{prog.name}: {len(server.requests)} model requests, expected 1")
        return {"time": run.seconds, "rss": run.rss_kb, "messages": len(server.requests[0].body.get("messages", []))}

    def resume(source: Path, entries: int) -> Step:
        def step(prog: Program) -> dict[str, float]:
            shutil.copyfile(source, copy)  # both programs append to it: a fresh copy every run
            size = copy.stat().st_size
            server.reset()
            server.enqueue(_chat_text("ok"))
            run = run_once(prog, ["-p", "--session", str(copy), "--model", "local/m", "hi"], cwd)
            if len(server.requests) != 1:
                raise CaseFailed(f"{prog.name}: {len(server.requests)} model requests, expected 1")
            messages = server.requests[0].body.get("messages", [])
            roles = [m.get("role") for m in messages]
            sent = sum(1 for role in roles if role in ("user", "assistant"))
            if sent < entries + 1:
                raise CaseFailed(
                    f"{prog.name}: the resumed request sent {len(messages)} messages ({sent} user/assistant), "
                    f"expected at least {entries + 1}: it started fresh or compacted"
                )
            with copy.open("rb") as fh:
                fh.seek(size)
                appended = fh.read().decode("utf-8", "replace")
            if not appended.strip():
                raise CaseFailed(f"{prog.name}: appended nothing to the session file it was given")
            if '"type":"compaction"' in appended.replace(" ", ""):
                raise CaseFailed(f"{prog.name}: compacted the resumed session")
            return {"time": run.seconds, "rss": run.rss_kb, "messages": len(messages)}

        return step

    warm(programs, resume(small, 10))
    warm(programs, plain)
    # each slot: the plain run and the resume of both programs, so that each slot has an extra cost of each
    results = interleave(programs, bench.n, {"plain": plain, "resume": resume(big, SESSION_ENTRIES)})
    table = Table(bench, f"resume a {SESSION_ENTRIES:,}-entry session in pi -p (all messages sent; fresh copy per run)")
    table.row("pi -p --no-session hi", results["plain"])
    table.row(f"pi -p --session <{SESSION_ENTRIES:,} entries> hi", results["resume"], rss_target=0.7)
    extra: dict[str, list[float]] = {}
    failed: dict[str, str | None] = {}
    for prog in programs:
        p, r = results["plain"][prog.name], results["resume"][prog.name]
        failed[prog.name] = p.failed or r.failed
        extra[prog.name] = [b - a for a, b in zip(p.values("time"), r.values("time"), strict=False)]
    ratios: list[float] | None = None
    why = "no pi 1.6.0" if bench.missing else ""
    if failed.get("pi"):
        why = "FAILED"
    elif failed.get("pi 1.6.0"):
        why = "pi 1.6.0 FAILED"
    elif "pi 1.6.0" in extra:
        ratios = per_slot(extra["pi"], extra["pi 1.6.0"])
        if len(ratios) < len(extra["pi"]):
            table.notes.append(
                f"! {len(extra['pi']) - len(ratios)} slot(s) left out of the extra cost's ratio: "
                "pi 1.6.0's resume was not slower than its plain run there (noise)"
            )
    table.values(
        "extra cost of the resume (per slot: resume - plain)",
        statistics.median(extra["pi"]) if extra.get("pi") else None,
        statistics.median(extra["pi 1.6.0"]) if extra.get("pi 1.6.0") else None,
        "s",
        ratios,
        failed=(failed.get("pi"), failed.get("pi 1.6.0")),
    )
    bench.verdicts.append(Verdict(f"resume a {SESSION_ENTRIES:,}-entry session: extra cost", ratios, 0.7, why))
    table.values(
        "messages in the resumed request",
        results["resume"]["pi"].median("messages"),
        results["resume"]["pi 1.6.0"].median("messages") if "pi 1.6.0" in results["resume"] else None,
        "n",
    )
    return table.lines()


def _loop_case(bench: Bench) -> list[str]:
    server, cwd = bench.server, bench.cwd
    n = loop_runs(bench.n)

    def step(prog: Program) -> dict[str, float]:
        server.reset()
        server.enqueue(*[_chat_tool(i) for i in range(LOOP_TURNS - 1)], _chat_text("finished"))
        run = run_once(
            prog,
            ["--mode", "json", "--no-session", "--model", "local/m", "loop"],
            cwd,
            timeout=LOOP_TIMEOUT,
            stamp='"type":"turn_end"',
        )
        if len(run.stamps) != LOOP_TURNS or len(server.requests) != LOOP_TURNS:
            raise CaseFailed(
                f"{prog.name}: {len(run.stamps)} turn_end lines and {len(server.requests)} model requests, "
                f"expected {LOOP_TURNS} of each; stderr: {_tail(run.stderr)}"
            )
        gaps = [b - a for a, b in zip(run.stamps, run.stamps[1:], strict=False)]
        first, last = statistics.median(gaps[:EDGE]), statistics.median(gaps[-EDGE:])
        return {"time": run.seconds, "rss": run.rss_kb, "first": first, "last": last, "flat": last / first}

    results = interleave(bench.programs, n, {"loop": step})["loop"]
    fewer = f"; {n} slots, fewer than the other cases: it is slow" if n < bench.n else f"; {n} slots"
    table = Table(
        bench, f"a {LOOP_TURNS}-turn bash tool loop in one pi --mode json run (turn-to-turn gaps of turn_end{fewer})"
    )
    table.row(f"first {EDGE} turns, median per turn", results, key="first", unit="ms", rss=False, ratio=False)
    table.row(f"last {EDGE} turns, median per turn", results, key="last", unit="ms", rss=False, ratio=False)
    table.row(f"{LOOP_TURNS}-turn loop: per-turn growth (last {EDGE} / first {EDGE})", results, "flat", "x", False)
    table.row(f"{LOOP_TURNS}-turn loop: whole run", results, target=0.6, rss_target=0.7)
    # the growth's budget is our own (docs/architecture.md): the last turns at most 1.2x the first
    ours = results.get("pi")
    growth = ours.values("flat") if ours is not None and not ours.failed else None
    bench.verdicts.append(
        Verdict(f"{LOOP_TURNS}-turn loop: our last {EDGE} turns / our first {EDGE}", growth, 1.2, "no run")
    )
    return table.lines()


# --------------------------------------------------------------------------- the first run after an install


def _tasks() -> ModuleType:
    """``tasks.py`` (not a package), for its ``wheels_for``."""
    spec = importlib.util.spec_from_file_location("pi_tasks", ROOT / "tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("pi_tasks", module)
    spec.loader.exec_module(module)
    return module


def _uv() -> list[str]:
    beside = ROOT / ".venv" / "bin" / "uv"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("uv")
    if found:
        return [found]
    raise CaseFailed("uv not found (neither in .venv nor on PATH)")


def _uv_run(args: list[str], what: str, timeout: float = 900.0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    done = subprocess.run([*_uv(), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise CaseFailed(f"{what} failed: {_tail(done.stderr)}")
    return done


class Installer:
    """Fresh environments with pi as ``python3 tasks.py install`` puts it there: the
    workspace's wheels (built once), ``pluggable-pi[standard]`` and the plugins it needs,
    third-party packages at ``.venv``'s versions, bytecode compiled at install."""

    def __init__(self, base: Path) -> None:
        wheels = base / "wheels"
        _uv_run(["build", "--all-packages", "--wheel", "--python", str(VENV_PY), "--out-dir", str(wheels)], "uv build")
        core, plugins = _tasks().wheels_for(wheels, "standard")
        frozen = _uv_run(["pip", "freeze", "--python", str(VENV_PY), "--exclude-editable"], "uv pip freeze").stdout
        self.constraints = base / "constraints.txt"
        self.constraints.write_text(frozen)
        self.requirements = [f"pluggable-pi[standard] @ {core.as_uri()}", *map(str, plugins)]
        self.offline = True
        self.seconds: list[float] = []
        self.compile = [] if os.environ.get("PI_BENCH_NO_COMPILE") == "1" else ["--compile-bytecode"]

    def flags(self) -> list[str]:
        return [*self.compile, *(["--offline"] if self.offline else [])] or ["(no bytecode compiled)"]

    def install(self, where: Path) -> Path:
        """A new environment in ``where``; its ``pi``."""
        start = time.perf_counter()
        _uv_run(["venv", "--quiet", "--python", str(VENV_PY), str(where)], "uv venv")
        args = ["pip", "install", "--quiet", *self.compile, "--python", str(where / "bin" / "python")]
        args += ["-c", str(self.constraints), *self.requirements]
        try:
            _uv_run([*args, *(["--offline"] if self.offline else [])], "uv pip install --offline")
        except CaseFailed:
            if not self.offline:
                raise
            self.offline = False  # something is not in uv's cache: from the index
            _uv_run(args, "uv pip install")
        self.seconds.append(time.perf_counter() - start)
        return where / "bin" / "pi"


def _first_run_case(bench: Bench) -> list[str]:
    """Ours only: per slot, a fresh install and agent folder, then ``pi -p`` twice: the
    ratio first / second. Python writes bytecode as a user's does (no cache prefix)."""
    label, model, responses, tool = PRINT_CASES[0]
    step = _print_step(bench, model, responses, tool)
    installer = Installer(bench.base)
    first, second = Outcome(), Outcome()
    for slot in range(bench.n):
        where = bench.base / f"first-run-{slot}"
        try:
            pi = installer.install(where / "venv")
            agent = where / "agent"
            _models_json(agent, bench.server.url)
            env = {k: v for k, v in _env(agent, where / "unused").items() if k not in ("PYTHONPYCACHEPREFIX",)}
            env.pop("PI_EXTENSIONS", None)  # what a user has: every installed plugin loads
            prog = Program("pi", [str(pi)], env, agent)
            first.samples.append(step(prog))
            second.samples.append(step(prog))
        except CaseFailed as error:
            first.failed = str(error)
            break
        finally:
            shutil.rmtree(where, ignore_errors=True)
    table = Table(
        bench, f"first run after an install vs the second run (ours only: {label})", ("first", "second"), True
    )
    outcomes = {"pi": first, "pi 1.6.0": second}
    table.row(
        f"{label}, first run / second run", outcomes, target=1.1, case="first pi -p after an install / the second"
    )
    if installer.seconds:
        table.notes.append(
            f"(each slot: uv venv + uv pip install {' '.join(installer.flags())}, "
            f"median {statistics.median(installer.seconds):.1f} s; pluggable-pi[standard] from this workspace's wheels)"
        )
    return table.lines()


if __name__ == "__main__":
    default_pi_ts()
    print("\n".join(report()))
