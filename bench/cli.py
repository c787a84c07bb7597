"""The ``pi`` command as a user runs it, side by side with pi 1.6.0 (TypeScript, under Bun).

docs/architecture.md, "Performance budgets" states these budgets as ratios to pi 1.6.0 measured in the same run, so every
case runs both programs in this process, interleaved (ours, theirs, ours, theirs, ...)
so that the machine's noise hits both alike, against the same local scripted endpoint
(``tests/ai/wire_server.py``). Each row prints our median, pi 1.6.0's median and the
ratio ours / theirs, for wall time and for peak memory: the max RSS of the program's
process from ``os.wait4`` (which includes children it reaped, such as an MCP server),
taken by a small launcher process (see ``LAUNCHER``); the pi 1.6.0 wrapper is ``sh``
exec'ing ``bun``, so that is bun's RSS.

* ``pi --version`` and ``pi --help``;
* ``pi -p`` text-only and with one bash tool round trip, openai-completions and
  anthropic-messages;
* ``pi -p`` with one MCP stdio server (``@modelcontextprotocol/server-everything``
  under node, installed with npm into ``~/.cache/pi-bench``; a small Python
  ``MCPServer`` if npm fails) and one call of its ``echo`` tool, exposed ``direct`` in
  both programs as ``mcp__<server>__echo``;
* resuming a 20,000-entry session (``--session FILE``, a fresh copy for every run): the
  extra cost above the same prompt with ``--no-session``. All 20,000 messages must reach
  the model (no compaction in the file, a context window neither program compacts in):
  the request the endpoint received is counted and the case fails when it is short;
* a 400-turn bash tool loop in one run (``--mode json``): turn-to-turn gaps between
  ``turn_end`` lines, median of the first 20 and the last 20, and the whole run.

Our pi is the installed console script ``.venv/bin/pi`` with a warm bytecode cache;
pi 1.6.0 is the wrapper named by ``PI_TS`` (``bench/run.py`` defaults it to the output of
``../shared/tools/install-pi-ts`` when that wrapper is installed). Without it only our
numbers print. ``PI_BENCH_RUNS`` sets the number of runs per case (default 5),
``PI_BENCH_CASES`` the cases to run (``startup,print,mcp,resume,loop``; default all); a failing
case prints its reason (the stderr tail) and the others go on.
"""

from __future__ import annotations

import contextlib
import json
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
from typing import Any, ClassVar

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


SECTIONS = {
    "startup": "_startup",
    "print": "_print_cases",
    "mcp": "_mcp_case",
    "resume": "_resume_case",
    "loop": "_loop_case",
}
"""The cases of this bench, by the names ``PI_BENCH_CASES`` takes."""


def _sections() -> list[Callable[..., list[str]]]:
    """The sections to run: all, or those ``PI_BENCH_CASES`` names (``print,resume``)."""
    chosen = [name.strip() for name in os.environ.get("PI_BENCH_CASES", "").split(",") if name.strip()]
    return [globals()[SECTIONS[name]] for name in (chosen or SECTIONS) if name in SECTIONS]


def runs() -> int:
    try:
        return max(1, int(os.environ.get("PI_BENCH_RUNS", "5")))
    except ValueError:
        return 5


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


# --------------------------------------------------------------------------- interleaving

Step = Callable[[Program], dict[str, float]]


@dataclass
class Outcome:
    samples: list[dict[str, float]] = field(default_factory=list)
    failed: str | None = None

    def median(self, key: str) -> float | None:
        if self.failed or not self.samples:
            return None
        return statistics.median(sample[key] for sample in self.samples)


def interleave(programs: list[Program], n: int, steps: dict[str, Step]) -> dict[str, dict[str, Outcome]]:
    """``n`` rounds of: every step, every program in turn (ours, theirs). A program that
    fails a step is not run for that step again; the others go on."""
    results = {key: {prog.name: Outcome() for prog in programs} for key in steps}
    for _ in range(n):
        for key, step in steps.items():
            for prog in programs:
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


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs <= 0:
        return "-"
    return f"{ours / theirs:.2f}x"


class Table:
    HEADER: ClassVar[list[str]] = ["", "pi", "pi 1.6.0", "ratio", "max RSS pi", "pi 1.6.0", "ratio"]

    def __init__(self, title: str, missing: str) -> None:
        self.title = title
        self.rows: list[list[str]] = []
        self.notes: list[str] = []
        self.missing = missing
        self._seen: set[tuple[str, str]] = set()

    def row(
        self,
        label: str,
        outcomes: dict[str, Outcome],
        key: str = "time",
        unit: str = "s",
        rss: bool = True,
        ratio: bool = True,
    ) -> None:
        ours, theirs = outcomes.get("pi"), outcomes.get("pi 1.6.0")
        cells = [label]
        for k, u, show in ((key, unit, True), ("rss", "MB", rss)):
            if not show:
                cells += ["", "", ""]
                continue
            a = ours.median(k) if ours else None
            b = theirs.median(k) if theirs else None
            cells += [
                "FAILED" if ours and ours.failed else _fmt(a, u),
                "FAILED" if theirs and theirs.failed else _fmt(b, u),
                _ratio(a, b) if ratio else "",
            ]
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
        ratio: bool = True,
        failed: tuple[str | None, str | None] = (None, None),
    ) -> None:
        self.rows.append(
            [
                label,
                "FAILED" if failed[0] else _fmt(ours, unit),
                "FAILED" if failed[1] else _fmt(theirs, unit),
                _ratio(ours, theirs) if ratio else "",
                "",
                "",
                "",
            ]
        )

    def lines(self) -> list[str]:
        out = [self.title]
        if self.missing:
            out.append(f"  ({self.missing}; only our numbers)")
        table = [self.HEADER, *self.rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(self.HEADER))]
        for r in table:
            cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
            out.append("  " + "  ".join(cells).rstrip())
        out.extend(f"  {note}" for note in self.notes)
        return out


def _table(title: str, missing: str) -> Table:
    return Table(title, missing)


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
        f"pi command vs pi 1.6.0 (median of {n} interleaved runs each; ratio = pi / pi 1.6.0)",
        f"  our pi loads the plugins pi 1.6.0 ships built in: PI_EXTENSIONS={PI_PLUGINS}",
    ]
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
            for section in _sections():
                try:
                    out.extend(section(programs, n, server, base, cwd, missing))
                except Exception as error:  # a bench prints, never raises
                    out.append(f"  ! {section.__name__} failed: {type(error).__name__}: {error}")
        finally:
            server.close()
    return out


def _startup(programs: list[Program], n: int, server: WireServer, base: Path, cwd: Path, missing: str) -> list[str]:
    def flag(name: str) -> Step:
        def step(prog: Program) -> dict[str, float]:
            run = run_once(prog, [name], cwd)
            if not run.stdout.strip():
                raise CaseFailed(f"{prog.name}: {name} printed nothing")
            return {"time": run.seconds, "rss": run.rss_kb}

        return step

    steps = {"--version": flag("--version"), "--help": flag("--help")}
    for step in steps.values():
        warm(programs, step)
    results = interleave(programs, n, steps)
    table = _table("  startup", missing)
    table.row("pi --version", results["--version"])
    table.row("pi --help", results["--help"])
    return table.lines()


def _print_cases(programs: list[Program], n: int, server: WireServer, base: Path, cwd: Path, missing: str) -> list[str]:
    def case(model: str, responses: Callable[[], list[Any]], tool: bool) -> Step:
        def step(prog: Program) -> dict[str, float]:
            server.reset()
            server.enqueue(*responses())
            run = run_once(prog, ["-p", "--no-session", "--model", model, "run it"], cwd)
            requests = [r.body for r in server.requests]
            if len(requests) != (2 if tool else 1):
                raise CaseFailed(f"{prog.name}: {len(requests)} model requests, expected {2 if tool else 1}")
            if tool and "turn" not in _tool_result_text(requests[-1]):
                raise CaseFailed(
                    f"{prog.name}: the bash result did not reach the model: {_tool_result_text(requests[-1])[:200]!r}"
                )
            if run.stdout.strip() != "done":
                raise CaseFailed(f"{prog.name}: printed {run.stdout[-200:]!r}, expected 'done'")
            return {"time": run.seconds, "rss": run.rss_kb}

        return step

    steps = {
        "text openai-completions": case("local/m", lambda: [_chat_text("done")], False),
        "text anthropic-messages": case("localant/claude-local", lambda: [_anthropic_text("done")], False),
        "bash openai-completions": case("local/m", lambda: [_chat_tool(0), _chat_text("done")], True),
        "bash anthropic-messages": case(
            "localant/claude-local", lambda: [_anthropic_tool(), _anthropic_text("done")], True
        ),
    }
    for step in steps.values():
        warm(programs, step)
    results = interleave(programs, n, steps)
    table = _table("  pi -p against a local endpoint", missing)
    table.row("pi -p hi, openai-completions", results["text openai-completions"])
    table.row("pi -p hi, anthropic-messages", results["text anthropic-messages"])
    table.row("pi -p, one bash round trip, openai-completions", results["bash openai-completions"])
    table.row("pi -p, one bash round trip, anthropic-messages", results["bash anthropic-messages"])
    return table.lines()


def _mcp_case(programs: list[Program], n: int, server: WireServer, base: Path, cwd: Path, missing: str) -> list[str]:
    mcp = _mcp_server(base)
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
        results = interleave(programs, n, {"mcp": step})
    finally:
        for prog in programs:
            (prog.agent / "mcp.json").unlink(missing_ok=True)
    table = _table(f"  pi -p with one MCP stdio server, one call of {tool} ({mcp.label})", missing)
    table.row("pi -p, one MCP tool call", results["mcp"])
    try:  # the server started alone, its stdin closed at once
        alone = _fmt(
            run_once(Program("the MCP server", mcp.command, programs[0].env, programs[0].agent), [], cwd).rss_kb, "MB"
        )
    except CaseFailed:
        alone = "?"
    table.notes.append(f"(max RSS includes the MCP server, a child each program reaps; the server alone: {alone})")
    return table.lines()


def _resume_case(programs: list[Program], n: int, server: WireServer, base: Path, cwd: Path, missing: str) -> list[str]:
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
    results = interleave(programs, n, {"plain": plain, "resume": resume(big, SESSION_ENTRIES)})
    table = _table(
        f"  resume a {SESSION_ENTRIES:,}-entry session in pi -p (all messages sent; fresh copy per run)", missing
    )
    table.row("pi -p --no-session hi", results["plain"])
    table.row(f"pi -p --session <{SESSION_ENTRIES:,} entries> hi", results["resume"])
    extra: dict[str, float | None] = {}
    failed: dict[str, str | None] = {}
    for prog in programs:
        p, r = results["plain"][prog.name], results["resume"][prog.name]
        a, b = p.median("time"), r.median("time")
        extra[prog.name] = None if a is None or b is None else b - a
        failed[prog.name] = p.failed or r.failed
    table.values(
        "extra cost of the resume",
        extra.get("pi"),
        extra.get("pi 1.6.0"),
        "s",
        failed=(failed.get("pi"), failed.get("pi 1.6.0")),
    )
    table.values(
        "messages in the resumed request",
        results["resume"]["pi"].median("messages"),
        results["resume"]["pi 1.6.0"].median("messages") if not missing else None,
        "n",
        ratio=False,
    )
    return table.lines()


def _loop_case(programs: list[Program], n: int, server: WireServer, base: Path, cwd: Path, missing: str) -> list[str]:
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

    results = interleave(programs, n, {"loop": step})["loop"]
    table = _table(
        f"  a {LOOP_TURNS}-turn bash tool loop in one pi --mode json run (turn-to-turn gaps of turn_end)", missing
    )
    table.row(f"first {EDGE} turns, median per turn", results, key="first", unit="ms", rss=False)
    table.row(f"last {EDGE} turns, median per turn", results, key="last", unit="ms", rss=False)
    table.row(f"last {EDGE} / first {EDGE} (flatness)", results, key="flat", unit="x", rss=False, ratio=False)
    table.row("whole run", results)
    return table.lines()


if __name__ == "__main__":
    default_pi_ts()
    print("\n".join(report()))
