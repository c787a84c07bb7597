"""macOS: a Seatbelt profile for ``/usr/bin/sandbox-exec -p PROFILE -- COMMAND``.

Everything is denied by default; the profile then allows what a command line tool
needs (processes, signals within the sandbox, sysctl reads, the usual Mach
services), reading every file except the denied paths, writing in the writable
folders except the protected paths, and — by network mode — no network, only the
proxy's port on localhost, or all of it.
"""

from __future__ import annotations

import os
import sys

from .settings import Plan

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def available() -> bool:
    return sys.platform == "darwin" and os.access(SANDBOX_EXEC, os.X_OK)


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _paths(paths: list[str]) -> str:
    return " ".join(f"(subpath {_quote(p)})" if os.path.isdir(p) else f"(literal {_quote(p)})" for p in paths)


def profile(plan: Plan, *, proxy_port: int | None = None) -> str:
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow process-info* (target same-sandbox))",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow iokit-open)",
        "(allow file-ioctl)",
        "(allow pseudo-tty)",
        "(allow file-read*)",
        (
            '(allow file-write* (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")'
            ' (regex #"^/dev/ttys[0-9]+$"))'
        ),
    ]
    if plan.deny:
        lines.append(f"(deny file-read* file-write* {_paths(plan.deny)})")
    if plan.writable:
        lines.append(f"(allow file-write* {_paths(plan.writable)})")
    if plan.protected:
        lines.append(f"(deny file-write* {_paths(plan.protected)})")
    if plan.deny:  # a later allow must not reopen a denied path
        lines.append(f"(deny file-write* {_paths(plan.deny)})")
    if plan.network == "on":
        lines.append("(allow network*)")
    elif plan.network == "proxy" and proxy_port:
        lines.append(f'(allow network-outbound (remote ip "localhost:{proxy_port}"))')
    return "\n".join(lines) + "\n"


def build_argv(plan: Plan, command: list[str], *, proxy_port: int | None = None) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile(plan, proxy_port=proxy_port), "--", *command]
