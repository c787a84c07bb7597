"""Refusals of the sandbox: recognised in a command's output, reported to the model
(in the tool result) and to ``sandbox_violation`` handlers."""

from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel

from .settings import Plan


class SandboxViolation(BaseModel):
    """What the sandbox refused (the ``event`` of the ``sandbox_violation`` hook)."""

    kind: Literal["read", "write", "network"]
    target: str
    """The path, or ``host:port`` (``network`` when the host is unknown)."""
    command: str
    source: Literal["tool", "user"] = "tool"
    tool_call_id: str | None = None
    preset: str = ""
    backend: str = ""
    detail: str = ""


_FS_ERRORS = "Read-only file system|Permission denied|Operation not permitted"
_PATH_FIRST = re.compile(rf"['\"‘`]?(?P<path>[^\s:'\"‘’`]+)['\"’`]?: (?P<error>{_FS_ERRORS})")
_ERROR_FIRST = re.compile(rf"(?P<error>{_FS_ERRORS}): ['\"](?P<path>/[^'\"]+)['\"]")
_NETWORK = [
    re.compile(r"Could not resolve host:? (?P<host>[\w.-]+)"),
    re.compile(r"Failed to connect to (?P<host>[\w.:\[\]-]+) port (?P<port>\d+)"),
    re.compile(r"Temporary failure in name resolution"),
    re.compile(r"Name or service not known"),
    re.compile(r"Network is unreachable"),
    re.compile(r"nodename nor servname provided"),
    re.compile(r"getaddrinfo failed"),
    re.compile(r"Connection refused"),
    re.compile(r"Couldn't connect to server"),
    re.compile(r"urlopen error"),
    re.compile(r"socket\b.*(Permission denied|Operation not permitted)", re.IGNORECASE),
]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real(path: str, cwd: str) -> str:
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))


def classify(path: str, error: str, plan: Plan) -> tuple[Literal["read", "write"], str] | None:
    """Why the sandbox (and not ordinary permissions) refused ``path``, if it did."""
    real = _real(path, plan.cwd)
    if any(_within(real, d) for d in plan.deny):
        return "read", "a denied path"
    if any(_within(real, p) for p in plan.protected):
        return "write", "a protected path (read-only inside the writable folders)"
    if any(_within(real, w) for w in plan.writable):
        return None
    # Outside the writable folders: the sandbox refused it if pi itself could write
    # there (else the ordinary permissions did; reading is never refused there).
    existing = real
    while existing != "/" and not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if os.access(existing, os.W_OK):
        return "write", "outside the writable folders"
    return None


def find(output: str, plan: Plan) -> list[tuple[Literal["read", "write", "network"], str, str, str]]:
    """``(kind, target, why, line)`` for each refusal recognised in ``output``."""
    found: list[tuple[Literal["read", "write", "network"], str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for line in output.splitlines():
        for pattern in (_PATH_FIRST, _ERROR_FIRST):
            for match in pattern.finditer(line):
                verdict = classify(match.group("path"), match.group("error"), plan)
                if verdict is None:
                    continue
                kind, why = verdict
                target = _real(match.group("path"), plan.cwd)
                if (kind, target) not in seen:
                    seen.add((kind, target))
                    found.append((kind, target, why, line.strip()[:300]))
        if plan.network != "on":
            for net in _NETWORK:
                hit = net.search(line)
                if hit is None:
                    continue
                host = hit.groupdict().get("host") or "network"
                port = hit.groupdict().get("port")
                target = f"{host}:{port}" if port else host
                if ("network", target) not in seen and ("network", "network") not in seen:
                    seen.add(("network", target))
                    why = "network is off" if plan.network == "off" else "not through the proxy, or a host not allowed"
                    found.append(("network", target, why, line.strip()[:300]))
                break
    return found


async def emit(ctx: Any, violation: SandboxViolation) -> None:
    """Call every ``sandbox_violation`` handler (each with the arguments it names)."""
    hook = getattr(getattr(ctx, "hook", None), "sandbox_violation", None) if ctx is not None else None
    if hook is None:
        return
    for impl in reversed(hook.get_hookimpls()):
        available = {"event": violation, "ctx": ctx}
        kwargs = {name: available[name] for name in impl.argnames if name in available}
        try:
            result = impl.function(**kwargs)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            message = f"pluggable-pi-sandbox: the sandbox_violation handler of plugin {impl.plugin_name!r} failed: {type(exc).__name__}: {exc}"
            try:
                ui = ctx.ui if getattr(ctx, "has_ui", False) else None
            except Exception:
                ui = None
            if ui is not None:
                ui.notify(message, "warning")
            else:
                print(message, file=sys.stderr)
