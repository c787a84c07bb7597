"""The adversarial probe suite: every probe of ``sandbox_probes``
through the model's ``bash`` tool in a real pi session, for both Linux backends, with
pi running as root and as a normal user.

Each cell of the matrix (backend × user) is one pi process, the driver of
``sandbox_probes.py``, started by this test: as root with the development venv's Python,
as a normal user (uid 65534, when the tests run as root; no account is created) with the
system's Python of the same minor version and the workspace on ``PYTHONPATH``. The
secrets pi holds in its own environment are given to the driver when it starts.

A probe expected ``blocked`` that escapes fails its cell's test; the table of every
probe (blocked / ESCAPED / not-contained) is printed by each test (``pytest -rA`` shows
it), in the terminal summary of a run without xdist, and written to the file named by
``PI_SANDBOX_PROBE_REPORT`` when that variable is set. The control runs (no sandbox)
check that every oracle does see the action when nothing stops it: a probe whose
oracle is blind would be "blocked" for the wrong reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import sandbox_probes as probes
from sandbox_testkit import BACKENDS, Machine, machine, need  # noqa: F401

from pi_core.testing import ECHO, PiHarness, call
from pi_sandbox import SandboxPlugin

REPO = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("sandbox_probes.py")
NOBODY = 65534
DRIVER_TIMEOUT = 300.0
"""Seconds one cell may take before its driver is killed (every tool call has its own
timeout as well)."""
SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
REPORT_ENV = "PI_SANDBOX_PROBE_REPORT"

_CELLS: list[dict[str, Any]] = []
"""The cells this process ran (for the terminal summary)."""


# --------------------------------------------------------------------------- running a cell


def _traversable_tmp() -> str:
    """A temporary folder every user can reach (the driver of the normal user lives there)."""
    base = tempfile.gettempdir()
    path = Path(base)
    for folder in (path, *path.parents):
        if not os.stat(folder).st_mode & 0o001:
            return "/tmp"
    return base


def _normal_user() -> tuple[str, int | None, dict[str, str]]:
    """(python, uid to switch to or None, extra environment) for the normal-user half."""
    if os.geteuid() != 0:
        return sys.executable, None, {}  # the tests already run as a normal user
    if not SYSTEM_PYTHON.exists():
        pytest.skip(
            f"the normal-user half needs {SYSTEM_PYTHON} (the dev venv's Python lives under /root, "
            f"unreachable for uid {NOBODY})"
        )
    version = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    )
    if version.stdout.split() != [str(sys.version_info.major), str(sys.version_info.minor)]:
        pytest.skip(
            f"{SYSTEM_PYTHON} is not Python {sys.version_info.major}.{sys.version_info.minor} "
            "(the venv's packages are built for it)"
        )
    paths = [REPO, REPO / "hookspecs", REPO / "plugins" / "sandbox", Path(sysconfig.get_path("purelib"))]
    unreachable = [str(p) for p in paths if not _reachable_by_others(p)]
    if unreachable:
        pytest.skip(f"uid {NOBODY} cannot read {', '.join(unreachable)}")
    return str(SYSTEM_PYTHON), NOBODY, {"PYTHONPATH": os.pathsep.join(str(p) for p in paths)}


def _reachable_by_others(path: Path) -> bool:
    return all(os.stat(folder).st_mode & 0o005 == 0o005 for folder in (path, *path.parents))


def _stopped(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text.rpartition(")")[2].split()[0] in ("T", "t")


def _unmount_below(root: Path) -> None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4]
            if point.startswith(str(root) + "/"):
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def run_driver(backend: str, user: str, *, control: bool = False) -> dict[str, Any]:
    """Run one cell's driver and return its results (``{"skip": reason}`` when the
    backend is not available to that user)."""
    extra: dict[str, str] = {}
    uid: int | None = None
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip(f"the root half needs the tests to run as root (they run as uid {os.geteuid()})")
        python = sys.executable
    else:
        python, uid, extra = _normal_user()
    root = Path(tempfile.mkdtemp(prefix="pi-probes-", dir=_traversable_tmp()))
    root.chmod(0o711)  # the cells of the other user may reach its sockets (see the driver's Lab.build)
    run_id = secrets.token_hex(4)
    env = {
        "PATH": probes.SYSTEM_PATH,
        "LANG": "C.UTF-8",
        "HOME": str(root / "home"),
        "TMPDIR": str(root / "tmp"),
        "PI_CODING_AGENT_DIR": str(root / "home" / ".pi" / "agent"),
        "XDG_RUNTIME_DIR": str(root / "run"),
        # pi's own secrets: in the driver's initial environment, where /proc shows them
        "PROBE_SECRET_API_KEY": secrets.token_hex(16),
        "DATABASE_URL": f"postgres://app:{secrets.token_hex(12)}@db.internal:5432/app",
        "SENTRY_DSN": f"https://{secrets.token_hex(16)}@o4505.ingest.sentry.io/42",
        **extra,
    }
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        env["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
    argv = [
        python,
        str(DRIVER),
        "run",
        "--backend",
        backend,
        "--user",
        user,
        "--root",
        str(root),
        "--run-id",
        run_id,
        "--out",
        str(root / "result.json"),
    ]
    if control:
        argv.append("--control")
    notes: list[str] = []
    try:
        if uid is not None:
            os.chown(root, uid, uid)
        with open(root.parent / f"{root.name}.log", "w+b") as log:
            started = time.monotonic()
            process = subprocess.Popen(
                argv,
                env=env,
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=uid,
                group=uid,
                extra_groups=[] if uid is not None else None,
            )
            stopped_since: float | None = None
            while process.poll() is None:
                now = time.monotonic()
                if now - started > DRIVER_TIMEOUT:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                    notes.append(f"the driver was killed after {DRIVER_TIMEOUT:g} s")
                    break
                if _stopped(process.pid):
                    stopped_since = stopped_since or now
                    if now - stopped_since > 2:  # a probe stopped pi and did not resume it
                        os.kill(process.pid, signal.SIGCONT)
                        notes.append("pi was stopped for 2 s: the test resumed it with SIGCONT")
                        stopped_since = None
                else:
                    stopped_since = None
                time.sleep(0.1)
            log.seek(0)
            output = log.read().decode(errors="replace")
        out = root / "result.json"
        if not out.exists():
            pytest.fail(f"the {backend}/{user} driver wrote no results ({'; '.join(notes)}):\n{output[-4000:]}")
        cell: dict[str, Any] = json.loads(out.read_text())
        cell["notes"] = notes
        cell["wall_seconds"] = round(time.monotonic() - started, 2)
        return cell
    finally:
        left = probes.sweep(run_id)
        if left:
            notes.append("removed after the driver: " + ", ".join(left))
        _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)
        with contextlib.suppress(OSError):
            (root.parent / f"{root.name}.log").unlink()


CELLS = [
    *((backend, user, False) for backend, user in probes.CELL_ORDER),
    ("bwrap", "root", True),
    ("bwrap", "user", True),
]
"""Every run of this module: the matrix, then the two control runs (no sandbox)."""


class Cells:
    """The cells' drivers, each run once per process. When this process runs the whole
    module (no xdist, or xdist handing out whole files), every cell is started at the
    first request, two at a time (the machine's two cores), so the matrix takes about
    half as long; with xdist handing out single tests, each starts when its test asks."""

    def __init__(self, prefetch: bool) -> None:
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pi-probes")
        self.futures: dict[tuple[str, str, bool], Future[dict[str, Any]]] = {}
        self.prefetch = prefetch

    def get(self, backend: str, user: str, control: bool = False) -> dict[str, Any]:
        key = (backend, user, control)
        if key not in self.futures:
            wanted = [k for k in CELLS if k not in self.futures] if self.prefetch else []
            for other in [key, *(k for k in wanted if k != key)]:
                self.futures[other] = self.pool.submit(run_driver, *other[:2], control=other[2])
        return self.futures[key].result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def cells(request: pytest.FixtureRequest) -> Iterator[Cells]:
    dist = getattr(request.config.option, "dist", "no")
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    pool = Cells(prefetch=not workers or dist in ("loadfile", "loadscope", "no"))
    try:
        yield pool
    finally:
        pool.close()


# --------------------------------------------------------------------------- the report


class _Summary:
    """Prints the matrix of every cell this process ran at the end of the run."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _CELLS:
            terminalreporter.write_sep("=", "pluggable-pi-sandbox adversarial probes")
            terminalreporter.write_line(probes.render_matrix(_CELLS))


def _write_report(cell: dict[str, Any]) -> None:
    """Merge ``cell`` into the report file of this run (xdist workers share it)."""
    target = os.environ.get(REPORT_ENV)
    if not target:
        return
    path = Path(target)
    run = (
        os.environ.get("PYTEST_XDIST_TESTRUNUID")
        or f"pid-{os.getppid() if os.environ.get('PYTEST_XDIST_WORKER') else os.getpid()}"
    )
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data: dict[str, Any] = {"run": run, "cells": []}
        with contextlib.suppress(OSError, ValueError):
            stored = json.loads(Path(f"{path}.json").read_text())
            if stored.get("run") == run:
                data = stored
        key = (cell["backend"], cell["user"], bool(cell.get("control")))
        data["cells"] = [c for c in data["cells"] if (c["backend"], c["user"], bool(c.get("control"))) != key] + [cell]
        Path(f"{path}.json").write_text(json.dumps(data))
        main = [c for c in data["cells"] if not c.get("control")]
        parts = [probes.render_matrix(main), *(probes.render_cell(c) for c in data["cells"])]
        path.write_text("\n\n".join(parts) + "\n")


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Iterator[Callable[[dict[str, Any]], None]]:
    manager = request.config.pluginmanager
    if not manager.has_plugin("pi-sandbox-probe-summary"):
        manager.register(_Summary(), "pi-sandbox-probe-summary")

    def record(cell: dict[str, Any]) -> None:
        _CELLS[:] = [
            c
            for c in _CELLS
            if (c["backend"], c["user"], c.get("control")) != (cell["backend"], cell["user"], cell.get("control"))
        ]
        _CELLS.append(cell)
        print(probes.render_cell(cell))
        for note in cell.get("notes", []):
            print("note:", note)
        request.node.user_properties.append(("sandbox_probes", json.dumps(cell)))
        _write_report(cell)

    yield record


def _explain(results: list[probes.Result], statuses: tuple[str, ...], control: bool = False) -> str:
    return "\n".join(
        f"  {r.id} [{r.cls}] {r.status(control)}: {r.detail[:300]}" for r in results if r.status(control) in statuses
    )


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize(("backend", "user"), [pytest.param(b, u, id=f"{b}-{u}") for b, u in probes.CELL_ORDER])
def test_the_sandbox_withstands_every_probe(
    backend: str, user: str, cells: Cells, report: Callable[[dict[str, Any]], None]
) -> None:
    need(backend)
    cell = cells.get(backend, user)
    report(cell)
    if "skip" in cell:
        pytest.skip(cell["skip"])
    results = probes.results_of(cell)
    missing = sorted({p.id for p in probes.catalogue()} - {r.id for r in results})
    failed = [r for r in results if r.status() in ("ESCAPED", "ERROR")]
    assert not missing, f"probes that never ran on {backend}/{user}: {missing}"
    assert not failed, (
        f"{len(failed)} of {len(results)} probes escaped the sandbox (or could not be decided) on {backend}/{user}:\n"
        + _explain(results, ("ESCAPED", "ERROR"))
    )


@pytest.mark.parametrize("user", ["root", "user"])
def test_every_oracle_sees_the_action_without_a_sandbox(
    user: str, cells: Cells, report: Callable[[dict[str, Any]], None]
) -> None:
    """The control: the probes that are safe to run unconfined, with ``preset: off``.
    Each must be *detected*; a blind oracle would report "blocked" for nothing."""
    cell = dict(cells.get("bwrap", user, control=True), backend="none")
    report(cell)
    results = probes.results_of(cell)
    assert {r.id for r in results} == {p.id for p in probes.catalogue() if p.controlled(user)}
    blind = [r for r in results if r.status(control=True) in ("BLIND", "ERROR")]
    assert not blind, "oracles that did not see an unconfined command succeed:\n" + _explain(
        results, ("BLIND", "ERROR"), True
    )


def test_the_catalogue_is_large_and_explained() -> None:
    catalogue = probes.catalogue()
    assert len(catalogue) >= 40
    for probe in catalogue:
        assert probe.what and probe.cls and probe.command
        for backend in ("bwrap", "landlock"):
            expect = probe.expectation(backend, 1)
            assert expect.outcome in (probes.BLOCKED, probes.NOT_CONTAINED)
            assert expect.outcome == probes.BLOCKED or expect.reason


def test_every_accepted_escape_is_documented_under_not_contained() -> None:
    """Each not-contained expectation (other than an ``acceptWeaker`` choice) is stated,
    with its reason, in docs/sandbox.md's "Not contained" list."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "sandbox.md").read_text(encoding="utf-8")
    section = doc[doc.index("**Not contained**") :]
    section = " ".join(section[: section.index("\n## ")].replace("*", "").replace("`", "").split())
    reasons = {
        expect.reason
        for probe in probes.catalogue()
        for backend in ("bwrap", "landlock")
        if (expect := probe.expectation(backend, 7)).outcome == probes.NOT_CONTAINED
    }
    missing = [reason for reason in sorted(reasons) if reason.split(":")[0].strip() not in section]
    assert not missing, "accepted escapes missing from docs/sandbox.md's Not contained list:\n" + "\n".join(missing)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_socket_pi_cannot_reach_does_not_stop_the_sandbox(pi: PiHarness, machine: Machine, backend: str) -> None:
    """Another user's unix socket in a folder pi cannot enter (``/run/user/1000/bus`` of
    a user logged in beside pi, a socket in another user's private temp folder) is
    listed in ``/proc/net/unix``; the sandbox must still run commands. Found by the
    probe matrix: two cells running side by side as different users broke each other."""
    need(backend)
    if os.geteuid() != 0:
        pytest.skip("making a socket of another user needs root")
    python = shutil.which("python3", path=probes.SYSTEM_PATH)
    if python is None:
        pytest.skip("no system python3 to run as another user")
    folder = Path(tempfile.mkdtemp(prefix=f"{probes.PROBE_PREFIX}foreign-", dir=_traversable_tmp()))
    os.chown(folder, NOBODY, NOBODY)  # mode 0700: pi (root in bubblewrap's namespace) cannot enter it
    code = (
        "import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); "
        "print(1, flush=True); time.sleep(120)"
    )
    listener = subprocess.Popen(
        [python, "-I", "-c", code, str(folder / "agent.sock")],
        stdout=subprocess.PIPE,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
    )
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == b"1"
        pi.use(SandboxPlugin).configure(sandbox={"backend": backend})
        pi.script(call("bash", command='echo "ran in $PI_SANDBOX"'), ECHO)
        result = pi.prompt("run").tool_results[0]
        assert "ran in workspace-write" in result.text, result.text
    finally:
        listener.kill()
        listener.wait()
        shutil.rmtree(folder, ignore_errors=True)
