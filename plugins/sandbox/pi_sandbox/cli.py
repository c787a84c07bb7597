"""``pi sandbox``: show the policy, or try a command in the sandbox, from a shell.

pi sandbox status [--json]     the policy of the user's settings, and the backend
pi sandbox run -- COMMAND...   run a shell command confined as pi would run it
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys

from pi_hookspecs import BashSpawnEvent

from .plugin import SandboxPlugin
from .settings import SandboxError
from .status import to_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi sandbox", description="pluggable-pi-sandbox: the policy every command runs under."
    )
    sub = parser.add_subparsers(dest="action", metavar="{status,run}")
    sub.required = True
    status = sub.add_parser("status", help="show the active policy and the backend")
    status.add_argument("--json", action="store_true", help="print JSON")
    run = sub.add_parser("run", help="run a shell command in the sandbox (as the bash tool would)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    return parser


async def _status(as_json: bool) -> int:
    plugin = SandboxPlugin()
    cwd = os.getcwd()
    if not as_json:
        text = await plugin.status(cwd)
        print(text)
        return 1 if "NOT ACTIVE" in text else 0
    try:
        policy = plugin.policy()
    except SandboxError as exc:
        print(json.dumps({"error": str(exc)}, indent=2))
        return 1
    backend, error, weaker = None, None, {}
    if policy.enabled:
        try:
            sandbox = await plugin.sandbox()
        except SandboxError as exc:
            error = str(exc)
        else:
            from .sandbox import weaker_guarantees

            backend, weaker = sandbox.backend.detail, weaker_guarantees(sandbox.backend)
    print(json.dumps(to_json(policy, cwd, backend, error, weaker), indent=2))
    return 1 if error else 0


async def _run(words: list[str]) -> int:
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        print("pi sandbox run: give a command: pi sandbox run -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    command = words[0] if len(words) == 1 else shlex.join(words)
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    event = BashSpawnEvent(
        command=command, argv=[shell, "-c", command], cwd=os.getcwd(), env=dict(os.environ), source="user"
    )
    plugin = SandboxPlugin()
    outcome = await plugin.bash_spawn(event, None)
    if outcome is not None and outcome.block:
        print(outcome.reason, file=sys.stderr)
        return 126
    try:
        process = await asyncio.create_subprocess_exec(
            *event.argv, cwd=event.cwd, env=event.env, pass_fds=tuple(event.pass_fds), start_new_session=False
        )
        return await process.wait()
    finally:
        for callback in event.on_exit:
            result = callback()
            if asyncio.iscoroutine(result):
                await result


async def main(args: list[str]) -> int:
    parser = _parser()
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    if ns.action == "status":
        return await _status(ns.json)
    return await _run(ns.command)
