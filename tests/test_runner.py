"""The event runner: call order, sync/async handlers, result validation, errors, tracing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import pi_hookspecs as h
from conftest import load_host
from pi_core.extensions.runner import PublishedHook
from pi_hookspecs import hookimpl


def recorder(label: str, log: list[str], **opts: Any) -> type:
    def handler(self: Any, event: Any) -> None:
        log.append(label)

    return type(label, (), {"agent_start": hookimpl(**opts)(handler)})


async def test_call_order_is_pluggys_tryfirst_then_latest_then_trylast() -> None:
    log: list[str] = []
    host = await load_host(
        recorder("first_loaded", log),
        recorder("last_resort", log, trylast=True),
        recorder("eager", log, tryfirst=True),
        recorder("second_loaded", log),
    )
    await host.runner.emit("agent_start", h.AgentStartEvent())
    assert log == ["eager", "second_loaded", "first_loaded", "last_resort"]


async def test_sync_and_async_handlers_mix_and_run_one_at_a_time() -> None:
    log: list[str] = []

    class Slow:
        @hookimpl
        async def input(self, event: Any) -> Any:
            log.append("slow-start")
            await asyncio.sleep(0)
            log.append("slow-end")
            return {"action": "transform", "text": event.text + "a"}

    class Quick:
        @hookimpl(tryfirst=True)
        def input(self, event: Any) -> Any:
            log.append("quick")
            return h.InputResult(action="transform", text=event.text + "s")

    host = await load_host(Slow, Quick)
    out = await host.runner.emit("input", h.InputEvent(text=">"))
    assert out.text == ">sa"
    assert log == ["quick", "slow-start", "slow-end"]


async def test_handler_may_take_a_subset_of_arguments() -> None:
    got: list[Any] = []

    class NoArgs:
        @hookimpl
        def agent_start(self) -> None:
            got.append("none")

    class OnlyCtx:
        @hookimpl
        def agent_start(self, ctx: Any) -> None:
            got.append(ctx.cwd)

    class Reversed:
        @hookimpl
        def agent_start(self, ctx: Any, event: Any) -> None:
            got.append(event.type)

    host = await load_host(NoArgs, OnlyCtx, Reversed, cwd="/")
    await host.runner.emit("agent_start", h.AgentStartEvent())
    assert got == ["agent_start", "/", "none"]


async def test_module_level_plugin_functions_work(tmp_path: Any) -> None:
    import types

    module = types.ModuleType("policy_module")

    @hookimpl
    def tool_call(event: Any) -> Any:
        return {"block": event.tool_name == "write"}

    module.tool_call = tool_call  # type: ignore[attr-defined]
    host = await load_host(module)
    blocked = await host.runner.emit("tool_call", h.ToolCallEvent(tool_name="write", tool_call_id="1"))
    assert blocked.block and blocked.reason == "Blocked by plugin 'policy_module'"


@pytest.mark.parametrize(
    ("returned", "fragment"),
    [
        ("transform me", "handler returned str; input handlers return InputResult"),
        ({"action": "explode"}, "invalid InputResult: action"),
        ({"action": "transform", "txt": "typo"}, "invalid InputResult: txt: Extra inputs are not permitted"),
    ],
)
async def test_a_wrong_return_type_names_plugin_hook_and_expected_type(returned: Any, fragment: str) -> None:
    class Sloppy:
        @hookimpl
        def input(self, event: Any) -> Any:
            return returned

    host = await load_host(Sloppy)
    out = await host.runner.emit("input", h.InputEvent(text="X"))
    assert out.action == "continue" and out.text == "X"
    (error,) = host.runner.errors
    assert error.plugin == "Sloppy" and error.hook == "input" and fragment in error.message
    assert "plugin 'Sloppy', hook input" in error.format()


async def test_wrong_return_from_tool_call_fails_closed() -> None:
    class Typo:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            return {"blok": True}

    host = await load_host(Typo)
    out = await host.runner.emit("tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="1"))
    assert out.block and "'Typo'" in out.reason and "blok" in out.reason


async def test_what_the_model_reads_of_a_failed_gate_names_no_path_of_this_machine() -> None:
    class Raises:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            raise ValueError("policy server unreachable")

    host = await load_host(Raises)
    out = await host.runner.emit("tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="1"))
    assert out.block and out.reason == (
        "Blocked: the tool_call handler of plugin 'Raises' failed "
        "(handler raised ValueError: policy server unreachable)"
    )
    (error,) = host.runner.errors
    assert error.message == "handler raised ValueError: policy server unreachable"
    assert error.location == f" ({__file__}:{Raises.tool_call.__code__.co_firstlineno + 2})"  # for people: stderr
    assert error.format().endswith(error.message + error.location)


async def test_a_later_non_blocking_result_cannot_hide_an_earlier_block() -> None:
    class Block:
        @hookimpl(tryfirst=True)
        def tool_call(self, event: Any) -> Any:
            return {"block": True, "reason": "no"}

    class Allow:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            self.called = True
            return {"block": False}

    host = await load_host(Allow, Block)
    out = await host.runner.emit("tool_call", h.ToolCallEvent(tool_name="bash", tool_call_id="1"))
    assert out.block and out.reason == "no"
    allow = next(r.plugin for r in host.records if r.name == "Allow")
    assert not hasattr(allow, "called")


async def test_tool_result_patches_merge_field_by_field() -> None:
    class A:
        @hookimpl(tryfirst=True)
        def tool_result(self, event: Any) -> Any:
            return {"content": [{"type": "text", "text": "from A"}], "details": {"by": "A"}}

    class B:
        @hookimpl
        def tool_result(self, event: Any) -> Any:
            return {"isError": True}

    host = await load_host(A, B)
    out = await host.runner.emit(
        "tool_result", h.ToolResultEvent(tool_name="t", tool_call_id="1", content=[h.TextContent(text="orig")])
    )
    assert out.content[0].text == "from A" and out.details == {"by": "A"} and out.is_error is True


async def test_tool_result_raising_handler_keeps_the_result_so_far() -> None:
    class Good:
        @hookimpl(tryfirst=True)
        def tool_result(self, event: Any) -> Any:
            return {"details": {"ok": 1}}

    class Bad:
        @hookimpl
        def tool_result(self, event: Any) -> Any:
            raise RuntimeError("decorator crashed")

    host = await load_host(Good, Bad)
    out = await host.runner.emit(
        "tool_result", h.ToolResultEvent(tool_name="t", tool_call_id="1", content=[h.TextContent(text="orig")])
    )
    assert out.details == {"ok": 1} and out.content[0].text == "orig" and not out.is_error
    assert host.runner.errors[0].plugin == "Bad"


async def test_tool_result_explicit_none_details_clears() -> None:
    class Clear:
        @hookimpl
        def tool_result(self, event: Any) -> Any:
            return {"details": None}

    host = await load_host(Clear)
    out = await host.runner.emit("tool_result", h.ToolResultEvent(tool_name="t", tool_call_id="1", details={"a": 1}))
    assert out.details is None


async def test_errors_go_to_listeners_and_the_error_list() -> None:
    class Boom:
        @hookimpl
        def turn_start(self) -> None:
            raise ZeroDivisionError("x")

    host = await load_host(Boom)
    heard: list[Any] = []
    host.runner.add_error_listener(heard.append)
    await host.runner.emit("turn_start", h.TurnStartEvent())
    assert heard and heard[0].hook == "turn_start" and "ZeroDivisionError" in heard[0].message
    assert "test_runner.py" in heard[0].location  # where it happened (for people; the message is what a model may read)


async def test_cancellation_is_not_swallowed() -> None:
    """Cancelling the caller cancels the handler and reaches the caller; a handler that
    cancels itself is a plugin error (it cannot cancel pi's run)."""
    started = asyncio.Event()
    cancelled: list[bool] = []

    class Waits:
        @hookimpl
        async def agent_start(self) -> None:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    class Cancels:
        @hookimpl
        async def turn_start(self) -> None:
            raise asyncio.CancelledError

    host = await load_host(Waits, Cancels)
    caller = asyncio.ensure_future(host.runner.emit("agent_start", h.AgentStartEvent()))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.sleep(0)
    assert cancelled == [True]
    heard: list[Any] = []
    host.runner.add_error_listener(heard.append)
    await host.runner.emit("turn_start", h.TurnStartEvent())
    assert [e.plugin for e in heard] == ["Cancels"] and "cancelled" in heard[0].message


async def test_trace_prints_every_call(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_TRACE_HOOKS", "1")

    class Traced:
        @hookimpl
        def input(self, event: Any) -> Any:
            return {"action": "transform", "text": "y"}

    host = await load_host(Traced)
    await host.runner.emit("input", h.InputEvent(text="x"))
    err = capsys.readouterr().err
    assert "pi trace: input -> ['Traced']" in err
    assert "pi trace: input <- Traced: {'action': 'transform', 'text': 'y'}" in err


# --------------------------------------------------------------------------- pluggy wrappers


@pytest.mark.parametrize("style", ["wrapper", "hookwrapper"])
async def test_a_wrapper_of_a_pi_hook_refuses_its_plugin_at_load(style: str) -> None:
    class Timing:
        @hookimpl(**{style: True})
        def agent_start(self, event: Any) -> Any:
            raise AssertionError("never called")
            yield  # pragma: no cover

        @hookimpl
        def tool_call(self, event: Any) -> Any:
            return {"block": True}

    host = await load_host(Timing, recorder("Fine", []))
    record = next(r for r in host.records if r.name == "Timing")
    assert record.status == "error"
    assert record.error is not None and record.error.startswith("refused: implements agent_start as a wrapper")
    (diagnostic,) = host.diagnostics
    assert diagnostic.plugin == "Timing" and "tryfirst / trylast" in diagnostic.message
    # nothing of the refused plugin runs, the others load
    assert not host.runner.has_handlers("tool_call")
    assert [i.plugin for i in host.runner.handlers("agent_start")] == ["Fine"]


async def test_a_refused_wrapper_raises_in_strict_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_core.extensions import ExtensionLoadError

    class Wraps:
        @hookimpl(wrapper=True)
        def register_tools(self, register: Any) -> Any:
            return (yield)

    monkeypatch.setenv("PI_EXTENSIONS_STRICT", "1")
    with pytest.raises(ExtensionLoadError, match=r"plugin 'Wraps'.*refused: implements register_tools as a wrapper"):
        await load_host(Wraps)


async def test_wrappers_of_published_hooks_run_through_pluggy() -> None:
    class Specs:
        @h.hookspec
        def audit_line(self, text: str) -> Any:
            """A hook a plugin publishes."""

    class Publisher:
        @hookimpl
        def add_hookspecs(self, add: Any) -> None:
            add(Specs)

    class Writer:
        @hookimpl
        def audit_line(self, text: str) -> str:
            return text

    class Upper:
        @hookimpl(wrapper=True)
        def audit_line(self, text: str) -> Any:
            results = yield
            return [r.upper() for r in results]

    host = await load_host(Publisher, Writer, Upper)
    assert all(r.status == "loaded" for r in host.records)
    assert host.make_context().hook.audit_line(text="ok") == ["OK"]


async def test_a_wrapper_registered_around_the_host_is_reported_not_skipped_in_silence() -> None:
    class Sneaky:
        @hookimpl(wrapper=True)
        def agent_start(self, event: Any) -> Any:
            return (yield)

    host = await load_host()
    host.pm.register(Sneaky(), name="Sneaky")
    host.runner.invalidate()
    await host.runner.emit("agent_start", h.AgentStartEvent())
    await host.runner.emit("agent_start", h.AgentStartEvent())
    (error,) = host.runner.errors  # once, not per event
    assert error.plugin == "Sneaky" and error.hook == "agent_start" and error.message.startswith("not called:")


# --------------------------------------------------------------------------- ctx.hook


async def test_ctx_hook_calls_pis_events_through_the_runner() -> None:
    class Block:
        @hookimpl
        async def tool_call(self, event: Any) -> Any:
            return {"block": True, "reason": "no"} if event.tool_name == "bash" else None

    class Broken:
        @hookimpl(tryfirst=True)
        def tool_call(self, event: Any) -> Any:
            if event.tool_name == "write":
                raise RuntimeError("policy crashed")

    class Suffix:
        @hookimpl
        def input(self, event: Any) -> Any:
            return {"action": "transform", "text": event.text + "!"}

    class Proposes:
        @hookimpl
        def agent_before_settle(self, event: Any) -> Any:
            return {"continue": True}

    host = await load_host(Block, Broken, Suffix, Proposes)
    hook = host.make_context().hook
    # the gate's rule: awaited, first block wins, a failing handler fails closed
    blocked = await hook.tool_call(h.ToolCallEvent(tool_name="bash", tool_call_id="1"))
    assert isinstance(blocked, h.ToolCallResult) and blocked.reason == "no"
    assert await hook.tool_call(event=h.ToolCallEvent(tool_name="read", tool_call_id="2")) is None
    failed = await hook.tool_call({"toolName": "write", "toolCallId": "3"})  # a dict of the event's fields
    assert failed.block and "policy crashed" in failed.reason
    assert host.runner.errors[-1].plugin == "Broken"
    # a chained transform and a boundary
    assert (await hook.input(h.InputEvent(text="hi"))).text == "hi!"
    assert await hook.agent_before_settle(h.AgentBeforeSettleEvent()) == h.BoundaryResult(entries=[], continue_=True)
    # the caller names the event's model
    with pytest.raises(TypeError, match="tool_call takes a ToolCallEvent"):
        await hook.tool_call(h.InputEvent(text="x"))
    assert [i.plugin_name for i in hook.tool_call.get_hookimpls()] == ["Block", "Broken"]


async def test_ctx_hook_calls_published_hooks_pluggys_way_and_can_be_awaited() -> None:
    class Specs:
        @h.hookspec
        def register_things(self, register: Any) -> None:
            """Published."""

    class Publisher:
        @hookimpl
        def add_hookspecs(self, add: Any) -> None:
            add(Specs)

    class Sync:
        @hookimpl
        def register_things(self, register: Any) -> str:
            register("sync")
            return "sync"

    class Async:
        @hookimpl
        async def register_things(self, register: Any) -> str:
            register("async")
            return "async"

    host = await load_host(Publisher, Sync, Async)
    hook = host.make_context().hook
    seen: list[str] = []
    results = hook.register_things(register=seen.append)  # pluggy's way: keyword arguments, a list
    assert seen == ["sync"] and len(results) == 2  # the coroutine handler runs when awaited
    assert await results == ["async", "sync"]  # one shape with pi's events: awaitable, coroutines awaited
    assert seen == ["sync", "async"]
    assert [i.plugin_name for i in hook.register_things.get_hookimpls()] == ["Sync", "Async"]
    assert isinstance(hook.register_tools, PublishedHook)  # registration hooks too: pluggy's way
    with pytest.raises(AttributeError):
        _ = hook.no_such_hook


async def test_trace_covers_registrations_and_published_hooks(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_TRACE_HOOKS", "1")

    class Specs:
        @h.hookspec
        def audit_line(self, text: str) -> Any:
            """Published."""

    class Publisher:
        @hookimpl
        def add_hookspecs(self, add: Any) -> None:
            add(Specs)

        @hookimpl
        def audit_line(self, text: str) -> str:
            return text * 2

    host = await load_host(Publisher)
    assert host.make_context().hook.audit_line(text="ab") == ["abab"]
    err = capsys.readouterr().err
    assert "pi trace: add_hookspecs <- Publisher: done (" in err
    assert "pi trace: audit_line -> ['Publisher'] (pluggy)" in err
    assert "pi trace: audit_line <- ['abab'] (pluggy)" in err


async def test_handler_lists_are_cached_until_invalidated() -> None:
    host = await load_host(recorder("A", []))
    first = host.runner.handlers("agent_start")
    assert host.runner.handlers("agent_start") is first
    host.runner.invalidate()
    assert host.runner.handlers("agent_start") is not first
