"""A plugin command's abort signal (``ctx.signal`` of a command handler) through the real
``pi``: RPC ``abort`` and Esc in the terminal fire it while the command runs, the
handler returns on its own; a handler that ignores it is cancelled a moment later,
and pi goes on working."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from rpc_client import RpcProcess, of_type

PLUGIN = """
import asyncio
from pi_hookspecs import CommandDefinition, hookimpl


async def wait(args, ctx):
    ctx.ui.notify(f"waiting, signal aborted={ctx.signal.aborted}", "info")
    if args == "stubborn":
        await asyncio.sleep(3600)  # ignores the signal
        return
    await ctx.signal.wait()
    ctx.ui.notify(f"stopped by the signal: aborted={ctx.signal.aborted}", "info")


@hookimpl
def register_commands(register):
    register(CommandDefinition(name="wait", handler=wait, description="Wait until stopped"))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "waiter.py").write_text(PLUGIN)
    return root


def _notify(text: str) -> Any:
    return of_type("extension_ui_request", method="notify", message=text)


def test_rpc_abort_fires_the_command_signal(project: Path) -> None:
    with RpcProcess("-e", "waiter.py", "--model", "faux/offline-demo", cwd=project) as rpc:
        prompt = rpc.command("prompt", message="/wait")
        rpc.wait_for(_notify("waiting, signal aborted=False"))
        started = time.monotonic()
        rpc.ok("abort")
        rpc.wait_for(_notify("stopped by the signal: aborted=True"))
        assert rpc.response(prompt)["success"] is True
        assert time.monotonic() - started < 1.5  # on its own, before the grace ran out
        # the next command gets a fresh signal
        again = rpc.command("prompt", message="/wait")
        rpc.wait_for(_notify("waiting, signal aborted=False"))
        rpc.ok("abort")
        assert rpc.response(again)["success"] is True


def test_a_command_ignoring_the_signal_is_cancelled(project: Path) -> None:
    with RpcProcess("-e", "waiter.py", "--model", "faux/offline-demo", cwd=project) as rpc:
        prompt = rpc.command("prompt", message="/wait stubborn")
        rpc.wait_for(_notify("waiting, signal aborted=False"))
        started = time.monotonic()
        rpc.ok("abort")
        rpc.response(prompt, timeout=10)
        assert time.monotonic() - started < 5
        assert rpc.ok("get_state")["isStreaming"] is False  # pi still answers
        assert "Traceback" not in rpc.stderr


def test_esc_fires_the_command_signal_in_the_terminal(project: Path) -> None:
    from tui_screen import PI, Screen, screen_env

    screen = Screen([*PI, "-e", "waiter.py", "--model", "faux/offline-demo"], cwd=project, env=screen_env())
    try:
        screen.wait_for("›")
        screen.line("/wait")
        screen.wait_for("waiting, signal aborted=False")
        screen.send("\x1b")
        screen.wait_for("stopped by the signal: aborted=True", timeout=1.5)
        assert "Cancelled" not in screen.text()  # it returned; nothing was cancelled
        screen.line("/wait")  # pi takes the next command
        screen.wait_for("waiting, signal aborted=False")
    finally:
        screen.close()
