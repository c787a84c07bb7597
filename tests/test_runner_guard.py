"""How the runner contains handlers (pi_core/extensions/guard.py): synchronous handlers
in a worker thread that still reach the event loop through ``ctx``, context variables
kept, a deadline that pauses while the user answers a dialog, an abort that ends the
wait. The end-to-end faults are in tests/reliability/."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pi_hookspecs as h
from conftest import load_host
from pi_hookspecs import AbortController, hookimpl

CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar("call", default=None)


class SlowDialogUI:
    """A UI whose confirm dialog takes longer than the handler deadline."""

    def __init__(self) -> None:
        self.notified: list[tuple[str, bool]] = []

    async def confirm(self, title: str, message: str = "", **options: Any) -> bool:
        await asyncio.sleep(0.8)
        return True

    def notify(self, message: str, level: str = "info") -> None:
        self.notified.append((message, threading.current_thread() is threading.main_thread()))


async def test_a_sync_handler_runs_off_the_loop_and_reaches_it_through_ctx() -> None:
    seen: list[bool] = []

    class Sync:
        @hookimpl
        def turn_start(self, ctx: Any) -> None:
            seen.append(threading.current_thread() is threading.main_thread())
            CALL.set("set by the handler")
            ctx.ui.notify("from the worker")

    ui = SlowDialogUI()
    host = await load_host(Sync, ui=ui, mode="rpc")
    await host.runner.emit("turn_start", h.TurnStartEvent())
    assert seen == [False]  # the handler ran in the worker thread…
    assert ui.notified == [("from the worker", True)]  # …its ctx.ui call on the loop's thread
    assert CALL.get() == "set by the handler"  # context variables it set are kept


async def test_the_deadline_pauses_while_a_dialog_waits_for_the_user() -> None:
    class Asks:
        @hookimpl
        async def tool_call(self, event: Any, ctx: Any) -> Any:
            if not await ctx.ui.confirm("Allow?"):
                return {"block": True, "reason": "no"}
            return None

    host = await load_host(Asks, ui=SlowDialogUI(), mode="rpc")
    host.runner.timeout = 0.3
    errors: list[Any] = []
    host.runner.add_error_listener(errors.append)
    result = await host.runner.emit("tool_call", h.ToolCallEvent(tool_call_id="1", tool_name="bash", input={}))
    assert result is None and errors == []  # 0.8 s in the dialog, past the 0.3 s deadline: not counted


async def test_an_abort_ends_the_wait_for_a_blocked_handler() -> None:
    controller = AbortController()

    class Blocks:
        @hookimpl
        def tool_call(self, event: Any) -> None:
            time.sleep(3)

    host = await load_host(Blocks)
    ctx = host.make_context()
    errors: list[Any] = []
    host.runner.add_error_listener(errors.append)

    class WithSignal:
        signal = controller.signal

        def __getattr__(self, name: str) -> Any:
            return getattr(ctx, name)

    asyncio.get_running_loop().call_later(0.2, controller.abort)
    started = time.monotonic()
    result = await host.runner.emit(
        "tool_call", h.ToolCallEvent(tool_call_id="1", tool_name="bash", input={}), WithSignal()
    )
    assert time.monotonic() - started < 1.5
    assert result.block and "aborted" in result.reason
    assert [e.plugin for e in errors] == ["Blocks"]


async def test_sync_handlers_of_a_notification_share_one_thread_hop_and_keep_their_deadlines() -> None:
    """Consecutive synchronous handlers of a notification run as one worker job; each
    still has its own deadline, and one that hangs does not keep the others from running."""
    ran: list[str] = []

    def plugin(name: str, behaviour: str) -> Any:
        class Handler:
            @hookimpl
            def turn_start(self) -> None:
                if behaviour == "hang":
                    time.sleep(2)
                elif behaviour == "exit":
                    raise SystemExit(2)
                elif behaviour == "set":
                    CALL.set(name)
                ran.append(f"{name}:{CALL.get()}")

        Handler.__name__ = name
        return Handler

    # pluggy calls the most recently registered plugin first: A, B, C, D in this order
    host = await load_host(plugin("D", "ok"), plugin("C", "hang"), plugin("B", "exit"), plugin("A", "set"))
    host.runner.timeout = 0.4
    errors: list[Any] = []
    host.runner.add_error_listener(errors.append)
    started = time.monotonic()
    await host.runner.emit("turn_start", h.TurnStartEvent())
    assert time.monotonic() - started < 1.5
    assert ran == ["A:A", "D:A"]  # in order; what A set is seen by the handlers after it
    assert [(e.plugin, e.message.split(" (")[0]) for e in errors] == [
        ("B", "handler raised SystemExit: 2"),
        ("C", "handler did not finish within 0.4 s"),
    ]
    assert CALL.get() == "A"
