"""The event runner: call order, sync/async handlers, result validation, errors, tracing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import pi_hookspecs as h
from conftest import load_host
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
    out = await host.runner.emit("tool_result", h.ToolResultEvent(tool_name="t", tool_call_id="1",
                                                                   content=[h.TextContent(text="orig")]))
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
    out = await host.runner.emit("tool_result", h.ToolResultEvent(tool_name="t", tool_call_id="1",
                                                                   content=[h.TextContent(text="orig")]))
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
    assert "test_runner.py" in heard[0].message  # where it happened


async def test_cancellation_is_not_swallowed() -> None:
    class Cancels:
        @hookimpl
        async def agent_start(self) -> None:
            raise asyncio.CancelledError

    host = await load_host(Cancels)
    with pytest.raises(asyncio.CancelledError):
        await host.runner.emit("agent_start", h.AgentStartEvent())


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


async def test_wrappers_are_skipped() -> None:
    class Wrapper:
        @hookimpl(wrapper=True)
        def agent_start(self, event: Any) -> Any:
            raise AssertionError("wrappers are not event handlers")
            yield  # pragma: no cover

    host = await load_host(Wrapper)
    assert not host.runner.has_handlers("agent_start")
    await host.runner.emit("agent_start", h.AgentStartEvent())


async def test_handler_lists_are_cached_until_invalidated() -> None:
    host = await load_host(recorder("A", []))
    first = host.runner.handlers("agent_start")
    assert host.runner.handlers("agent_start") is first
    host.runner.invalidate()
    assert host.runner.handlers("agent_start") is not first
