"""What one task does on a Ray worker: a working copy, a headless pi session in it,
its patch.

The session is built with pluggable-pi's SDK (:func:`pi_core.runtime.create_agent_session`)
as ``pi -p`` builds its own: the installed plugins, the user's settings and trust rules
(the copy is a project like any other folder), the session written to a file. The
worker returns what the driver records (session file text, patch, tokens, cost): the
driver may run on another machine.

Layout on the worker's machine, under the output directory::

    work/<id>/repo/           the working copy (a clone of the task's repository at its ref)
    work/<id>/session.jsonl   the session file, written as the session goes
    work/<id>/worker.json     which process runs the attempt ({"pid", "node", "attempt"})

A new attempt (after a worker died) starts by deleting ``work/<id>``: a partial copy
is never reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 600


class TaskError(Exception):
    """A task that cannot run (its message is the result's ``error``)."""


def _git(*args: str, cwd: Path | None = None) -> bytes:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, env=env)
    except FileNotFoundError:
        raise TaskError("git is not installed on this worker") from None
    except subprocess.TimeoutExpired:
        raise TaskError(f"git {args[0]} took longer than {GIT_TIMEOUT_S} s") from None
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip()).decode("utf-8", "replace").splitlines()
        raise TaskError(f"git {args[0]} failed: {message[-1] if message else f'status {done.returncode}'}")
    return done.stdout


def make_copy(repo: str, ref: str | None, dest: Path) -> None:
    """Clone ``repo`` (a local path or a git URL) into ``dest`` and check out ``ref``
    (default: the repository's HEAD). The original is only read."""
    from .taskfile import is_remote

    if not is_remote(repo) and not os.path.exists(repo):
        raise TaskError(f"the repository {repo} does not exist")
    _git("clone", "--quiet", "--no-hardlinks", repo, str(dest))
    if ref:
        try:
            _git("checkout", "--quiet", "--detach", ref, cwd=dest)
        except TaskError:
            try:
                _git("checkout", "--quiet", "--detach", f"origin/{ref}", cwd=dest)
            except TaskError:
                raise TaskError(f"the ref {ref!r} is not in {repo}") from None


def patch_of(copy: Path) -> bytes:
    """The working copy's changes against its checkout, new files included (``git diff``
    of everything, staged in the copy's own index)."""
    _git("add", "--all", "--", ".", cwd=copy)
    return _git("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", cwd=copy)


class ProjectSettings:
    """The task's ``settings``, written as the copy's ``.pi/settings.json`` (over the
    repository's own keys) for the session, and put back before the patch is taken."""

    def __init__(self, copy: Path, settings: dict[str, Any]) -> None:
        self.path = copy / ".pi" / "settings.json"
        self.settings = settings
        self.original: bytes | None = None
        self.written: bytes | None = None

    def apply(self) -> None:
        if not self.settings:
            return
        existing: dict[str, Any] = {}
        if self.path.exists():
            self.original = self.path.read_bytes()
            try:
                loaded = json.loads(self.original)
                existing = loaded if isinstance(loaded, dict) else {}
            except ValueError:
                existing = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.written = (json.dumps({**existing, **self.settings}, indent=2) + "\n").encode()
        self.path.write_bytes(self.written)

    def restore(self) -> None:
        if self.written is None or not self.path.exists() or self.path.read_bytes() != self.written:
            return  # untouched by us, or changed by the session: the patch shows it
        if self.original is None:
            self.path.unlink()
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()
        else:
            self.path.write_bytes(self.original)


def totals_of_file(path: Path) -> tuple[int, float]:
    """Tokens and cost of the assistant messages of a session file (a partial one too)."""
    tokens = 0
    cost = 0.0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return tokens, cost
    for line in lines:
        try:
            entry = json.loads(line)
            message = entry.get("message") if entry.get("type") == "message" else None
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            usage = message.get("usage") or {}
            tokens += int(usage.get("totalTokens") or 0)
            cost += float((usage.get("cost") or {}).get("total") or 0.0)
        except (ValueError, TypeError, AttributeError):
            continue
    return tokens, cost


def totals(messages: list[Any]) -> tuple[int, float]:
    """Tokens and cost (US dollars) of the assistant messages."""
    tokens = 0
    cost = 0.0
    for message in messages:
        if getattr(message, "role", None) != "assistant":
            continue
        usage = message.usage
        tokens += usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)
        cost += usage.cost.total
    return tokens, cost


async def run_session(
    task: dict[str, Any], copy: Path, session_file: Path, options: dict[str, Any], limits: Any
) -> dict[str, Any]:
    """The headless session of ``task`` in ``copy``: ``{"status", "error", "tokens", "cost"}``."""
    from pi_core.runtime import create_agent_session, no_model_message
    from pi_core.session import SessionManager

    from .ratelimit import SharedRateLimit

    plugins: list[Any] = [SharedRateLimit(limits)] if limits is not None else []
    manager = SessionManager.open(session_file, cwd=str(copy))
    model = task.get("model") or options.get("model")
    try:
        runtime = await create_agent_session(
            cwd=copy,
            model=model,
            session=manager,
            plugins=plugins,
            extensions=list(options.get("extensions") or ()),
            approve=options.get("approve"),
            mode="print",
        )
    except Exception as exc:
        raise TaskError(_one_line(exc)) from None
    try:
        session = runtime.session
        notes = [d.format() for d in session.plugins.diagnostics if d.level in ("error", "warning")]
        notes += [str(d) for d in session.services.resources.diagnostics if d.level == "error"]
        if task.get("settings") and not session.services.resources.settings.project_trusted:
            raise TaskError(
                "the task's settings apply as the working copy's project settings, and the copy is not trusted "
                "(pass --approve, or trust the output directory in trust.json)"
            )
        if session.model is None:
            raise TaskError(no_model_message(session.models.models_path))
        # the httpProxy setting, as pi -p applies it (proxy variables of the environment win)
        from pi_core.resources.settings import apply_http_proxy

        apply_http_proxy(session.services.resources.settings)
        await session.prompt(task["prompt"], source="sdk")
        last = session.last_assistant()
        tokens, cost = totals(session.messages)
        error: str | None = None
        if last is None:
            error = "the session ended without an answer"
        elif last.stop_reason in ("error", "aborted"):
            error = last.error_message or f"Request {last.stop_reason}"
        elif last.stop_reason == "length":
            error = "the response was cut off: the model reached its output token limit"
        return {"status": "error" if error else "ok", "error": error, "tokens": tokens, "cost": cost, "notes": notes}
    finally:
        await runtime.dispose("quit")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def execute(task: dict[str, Any], out: str, options: dict[str, Any], limits: Any) -> dict[str, Any]:
    """Run ``task`` (the body of the Ray task). Returns the result and the artifacts:
    ``{"status", "error", "tokens", "cost", "duration_s", "session_text", "patch_text", "node", "notes"}``
    (``notes``: the plugin and settings problems the session reported, as ``pi -p`` prints them)."""
    started = time.monotonic()
    work = Path(out) / "work" / task["id"]
    copy = work / "repo"
    session_file = work / "session.jsonl"
    result: dict[str, Any] = {"status": "error", "error": None, "tokens": 0, "cost": 0.0, "notes": []}
    node = socket.gethostname()
    previous = os.getcwd()
    try:
        attempt = 1
        with contextlib.suppress(OSError, ValueError):
            attempt = int(json.loads((work / "worker.json").read_text())["attempt"]) + 1
        if work.exists():
            shutil.rmtree(work)  # a partial copy of an attempt whose worker died
        try:
            work.mkdir(parents=True)
            (work / "worker.json").write_text(json.dumps({"pid": os.getpid(), "node": node, "attempt": attempt}))
        except OSError as exc:
            raise TaskError(f"cannot create the working directory {work}: {exc.strerror or exc}") from None
        make_copy(task["repo"], task.get("ref"), copy)
        settings = ProjectSettings(copy, task.get("settings") or {})
        settings.apply()
        os.chdir(copy)  # a worker runs one task at a time; plugins may read the process's cwd
        try:
            result.update(asyncio.run(run_session(task, copy, session_file, options, limits)))
        finally:
            os.chdir(previous)
            settings.restore()
    except TaskError as exc:
        result["error"] = str(exc)
    except KeyboardInterrupt:
        result.update(status="cancelled", error="cancelled")
    except Exception as exc:  # a bug or an unexpected failure: one line, the task's own
        result["error"] = f"{type(exc).__name__}: {_one_line(exc)}"
    result["duration_s"] = round(time.monotonic() - started, 3)
    result["node"] = node
    result["session_text"] = _read(session_file)
    result["patch_text"] = None
    if (copy / ".git").exists():
        try:
            result["patch_text"] = patch_of(copy)
        except TaskError as exc:
            result["error"] = result["error"] or str(exc)
    return result


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
