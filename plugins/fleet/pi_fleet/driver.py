"""The driver of ``pi fleet run``: starts (or joins) Ray, submits one Ray task per
task file line, records each result once, and stops everything on Ctrl+C.

Output directory::

    results.jsonl             one line per task (see :mod:`pi_fleet.results`)
    report.html               one self-contained page, a row per task
    sessions/<id>.jsonl       each task's session file, and its HTML export (<id>.html)
    patches/<id>.diff         each task's patch
    work/<id>/                the working copy and the worker's own files (see :mod:`pi_fleet.worker`)
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cli import Options
from .progress import Progress, print_summary
from .report import write_report
from .results import Result, ResultsFile, read_results
from .taskfile import Task, TaskFileError, read_tasks

SENT_ENV = re.compile(r"^(PI_.*|.*_API_KEY)$")
"""Environment variables every worker gets from the driver (with ``--env`` ones)."""


def worker_env(extra: list[str]) -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if SENT_ENV.match(name) or name in extra}


def _fail(message: str) -> int:
    print(f"pi fleet: {message}", file=sys.stderr)
    return 1


def run(options: Options) -> int:
    try:
        tasks = read_tasks(options.tasks)
    except TaskFileError as exc:
        return _fail(str(exc))
    out = options.out.expanduser().resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
        for sub in ("sessions", "patches", "work"):
            (out / sub).mkdir(exist_ok=True)
    except OSError as exc:
        return _fail(f"cannot create the output directory {out}: {exc.strerror or exc}")
    previous = read_results(out)
    ids = {task.id for task in tasks}
    todo = [t for t in tasks if options.rerun or previous.get(t.id) is None or previous[t.id].status != "ok"]
    skipped = [previous[t.id] for t in tasks if t not in todo]
    keep = [r for i, r in previous.items() if i not in ids or any(s.id == i for s in skipped)]
    results_file = ResultsFile(out)
    results_file.begin(keep)
    if skipped:
        print(
            f"pi fleet: {len(skipped)} task(s) already ok in {out / 'results.jsonl'}: skipped "
            "(--rerun runs them again)",
            file=sys.stderr,
        )
    finished: dict[str, Result] = {r.id: r for r in skipped}
    try:
        status = _run_on_ray(options, out, todo, results_file, finished, total=len(tasks))
    finally:
        results_file.close()
    ordered = [finished[t.id] for t in tasks if t.id in finished]
    if ordered or status == 0:  # nothing to show when Ray could not even start
        write_report(out, ordered)
        print_summary(ordered, out)
    return status


def _start_ray(options: Options) -> Any:
    import ray

    env = worker_env(options.env)
    kwargs: dict[str, Any] = {
        "logging_level": logging.ERROR,
        "log_to_driver": False,
        "namespace": "pi_fleet",
        "runtime_env": {"env_vars": env},
    }
    if options.address:
        _reachable(options.address)
        kwargs["address"] = options.address
    else:
        kwargs["include_dashboard"] = False
        if options.num_cpus is not None:
            kwargs["num_cpus"] = options.num_cpus
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
            # Ray's processes listen on every interface; its token is what keeps others out
            print(
                "pi fleet: warning: RAY_AUTH_MODE=disabled: the local Ray runs jobs for anyone who can reach "
                "this machine's ports (its sessions hold your provider keys)",
                file=sys.stderr,
            )
    ray.init(**kwargs)
    return ray


def _reachable(address: str) -> None:
    """A ``HOST:PORT`` address that nothing answers on fails at once, in one line (Ray
    itself retries for a minute, printing its own warnings)."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit() or not host:
        return  # ray://…, auto, local: Ray's own rules
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc.strerror or exc})") from None


def _run_on_ray(
    options: Options, out: Path, todo: list[Task], results_file: ResultsFile, finished: dict[str, Result], *, total: int
) -> int:
    if not todo:
        return 0 if all(r.status == "ok" for r in finished.values()) else 1
    try:
        ray = _start_ray(options)
    except Exception as exc:
        where = options.address or "a local Ray"
        hint = ""
        if options.address and not os.environ.get("RAY_AUTH_MODE") and not isinstance(exc, ConnectionError):
            hint = " (a cluster started with token authentication, `ray start`'s default, needs RAY_AUTH_MODE=token)"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return _fail(f"cannot start or join {where}: {type(exc).__name__}: {first}{hint}")
    from .ratelimit import limits_actor
    from .worker import execute

    progress = Progress(total=total, done=len(finished))
    remote = ray.remote(num_cpus=1, max_retries=options.retries, retry_exceptions=False)(execute)
    limits = limits_actor()
    worker_options = {"model": options.model, "extensions": options.extensions, "approve": options.approve}
    pending = deque(todo)
    running: dict[Any, tuple[Task, float]] = {}
    interrupted = False
    previous_int = signal.getsignal(signal.SIGINT)
    previous_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        while pending or running:
            # Tasks beyond the cluster's CPUs would only wait in Ray's queue: they wait here
            # instead, so "running" counts what runs (the cluster may grow meanwhile).
            window = (options.max_parallel or max(1, int(ray.cluster_resources().get("CPU", 1)))) if pending else 0
            while pending and len(running) < window:
                task = pending.popleft()
                ref = remote.remote(task.spec(), str(out), worker_options, limits)
                running[ref] = (task, time.monotonic())
            progress.update(running=len(running))
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            for ref in ready:
                with _signals_deferred():  # a task is recorded once: as finished or, after Ctrl+C, cancelled
                    task, started = running.pop(ref)
                    result = _collect(ray, ref, task, out, started, options.retries)
                    finished[task.id] = result
                    results_file.append(result)
                progress.finished(result, running=len(running))
    except KeyboardInterrupt:
        interrupted = True
        for stop in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl+C does not cut the clean-up short
            signal.signal(stop, signal.SIG_IGN)
        for ref in running:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        for task, started in list(running.values()):
            result = _cancelled(task, out, time.monotonic() - started)
            finished[task.id] = result
            results_file.append(result)
        for task in pending:
            result = _cancelled(task, out, 0.0)
            finished[task.id] = result
            results_file.append(result)
    finally:
        progress.close()
        signal.signal(signal.SIGTERM, previous_term)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        try:
            ray.shutdown()
        except Exception:
            pass
    if interrupted:
        print("pi fleet: stopped (Ctrl+C): the unfinished tasks are recorded as cancelled", file=sys.stderr)
        return 130
    return 0 if all(r.status == "ok" for r in finished.values()) else 1


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl+C and SIGTERM wait until the block is done (their handlers run after it)."""
    stops = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


_NOTED: set[str] = set()


def _collect(ray: Any, ref: Any, task: Task, out: Path, started: float, retries: int) -> Result:
    from ray import exceptions

    try:
        payload = ray.get(ref)
    except exceptions.TaskCancelledError:
        return _cancelled(task, out, time.monotonic() - started)
    except (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.OwnerDiedError) as exc:
        result = _cancelled(task, out, time.monotonic() - started)
        result.status = "error"
        result.error = f"the worker running the task died {retries + 1} time(s): {type(exc).__name__}"
        return result
    except exceptions.RayError as exc:
        result = _cancelled(task, out, time.monotonic() - started)
        result.status = "error"
        result.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        return result
    for note in payload.get("notes") or ():
        if note not in _NOTED:  # once per run: every session reports the same plugin problem
            _NOTED.add(note)
            print(f"pi fleet: {task.id}: {note}", file=sys.stderr)
    result = Result(
        id=task.id,
        status=payload["status"],
        tokens=int(payload.get("tokens") or 0),
        cost=round(float(payload.get("cost") or 0.0), 10),
        duration_s=float(payload.get("duration_s") or 0.0),
        error=payload.get("error"),
    )
    result.session = _save_session(out, task.id, payload.get("session_text"))
    result.patch = _save_patch(out, task.id, payload.get("patch_text"))
    return result


def _cancelled(task: Task, out: Path, duration: float) -> Result:
    """The line of a task stopped before it finished, with what its working directory
    holds on this machine (the session so far, the patch so far)."""
    result = Result(id=task.id, status="cancelled", duration_s=round(duration, 3), error="cancelled")
    work = out / "work" / task.id
    session_text = None
    try:
        session_text = (work / "session.jsonl").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    result.session = _save_session(out, task.id, session_text)
    if (work / "repo" / ".git").exists():
        from .worker import TaskError, patch_of

        try:
            result.patch = _save_patch(out, task.id, patch_of(work / "repo"))
        except TaskError:
            pass
    if session_text:
        from .worker import totals_of_file

        result.tokens, result.cost = totals_of_file(out / "sessions" / f"{task.id}.jsonl")
    return result


def _save_session(out: Path, task_id: str, text: str | None) -> str | None:
    if not text:
        return None
    path = out / "sessions" / f"{task_id}.jsonl"
    path.write_text(text, encoding="utf-8")
    page = path.with_suffix(".html")
    try:
        from pi_core.export.html import export_session_html

        export_session_html(path, page)
    except Exception as exc:  # the session stays recorded; the report shows no page
        print(f"pi fleet: {task_id}: no HTML export of the session: {exc}", file=sys.stderr)
        page.unlink(missing_ok=True)
    return str(path.relative_to(out))


def _save_patch(out: Path, task_id: str, data: bytes | None) -> str | None:
    if data is None:
        return None
    path = out / "patches" / f"{task_id}.diff"
    path.write_bytes(data)
    return str(path.relative_to(out))
