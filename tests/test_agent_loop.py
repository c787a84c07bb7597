"""The generic agent loop with a scripted model: event order, tools, queues, abort."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import pi_hookspecs as h
from pi_core.agent import (
    SKIPPED_FOR_STEERING,
    Agent,
    AgentBusyError,
    FinishTurn,
    ToolOutcome,
)

MODEL = h.Model(id="scripted", provider="test", api="test")
Reply = str | list[tuple[str, dict[str, Any]]] | Callable[[h.LlmContext], Any]


class Script:
    """A scripted stream function: each request takes the next reply — a text, a list
    of ``(tool_name, args)`` calls, or a callable of the context returning either."""

    def __init__(self, *replies: Reply, stop_reason: str | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[h.LlmContext] = []
        self.stop_reason = stop_reason
        self.gate: asyncio.Event | None = None

    async def __call__(self, model: h.Model, context: h.LlmContext, options: h.StreamOptions) -> AsyncIterator[Any]:
        self.requests.append(context)
        reply: Any = self.replies.pop(0) if self.replies else "(script exhausted)"
        if callable(reply):
            reply = reply(context)
        return self._stream(model, reply, options)

    async def _stream(self, model: h.Model, reply: Any, options: h.StreamOptions) -> AsyncIterator[Any]:
        message = h.AssistantMessage(api=model.api, provider=model.provider, model=model.id, stop_reason="stop")
        yield h.StartEvent(partial=message)
        if isinstance(reply, str):
            message.content.append(h.TextContent(text=""))
            yield h.TextStartEvent(content_index=0, partial=message)
            for word in reply.split(" "):
                if self.gate is not None:
                    waiter = asyncio.ensure_future(self.gate.wait())
                    aborted = asyncio.ensure_future(options.signal.wait())
                    await asyncio.wait([waiter, aborted], return_when=asyncio.FIRST_COMPLETED)
                    waiter.cancel()
                    aborted.cancel()
                if options.signal is not None and options.signal.aborted:
                    message.stop_reason = "aborted"
                    message.error_message = "aborted"
                    yield h.ErrorEvent(reason="aborted", error=message, partial=message)
                    return
                delta = word if not message.content[0].text else " " + word
                message.content[0].text += delta
                yield h.TextDeltaEvent(content_index=0, delta=delta, partial=message)
            yield h.TextEndEvent(content_index=0, content=message.content[0].text, partial=message)
        else:
            for i, (name, args) in enumerate(reply):
                call = h.ToolCall(id=f"call_{len(self.requests)}_{i}", name=name, arguments=args)
                message.content.append(call)
                yield h.ToolCallStartEvent(content_index=i, id=call.id, tool_name=name, partial=message)
                yield h.ToolCallDeltaEvent(content_index=i, delta=json.dumps(args), partial=message)
                yield h.ToolCallEndEvent(content_index=i, tool_call=call, partial=message)
            message.stop_reason = "toolUse"
        if self.stop_reason:
            message.stop_reason = self.stop_reason
        yield h.DoneEvent(reason=message.stop_reason, message=message)


def make_agent(script: Script, *tools: h.ToolDefinition, **kwargs: Any) -> tuple[Agent, list[Any]]:
    agent = Agent(model=MODEL, tools=list(tools), stream_fn=script, **kwargs)
    events: list[Any] = []
    agent.subscribe(events.append)
    return agent, events


def kinds(events: list[Any]) -> list[str]:
    out = []
    for e in events:
        if e.type in ("message_start", "message_end"):
            out.append(f"{e.type}:{e.message.role}")
        elif e.type != "message_update":
            out.append(e.type)
    return out


@h.tool
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo: {text}"


async def test_a_plain_answer_emits_the_documented_event_sequence() -> None:
    agent, events = make_agent(Script("Hello there"))
    new = await agent.prompt("hi")
    assert kinds(events) == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
    ]
    assert [e.assistant_message_event.type for e in events if e.type == "message_update"] == [
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
    ]
    assert new[-1].text() == "Hello there" and agent.state.messages == new
    assert not agent.state.is_streaming and agent.state.stream_message is None


async def test_tool_round_trip() -> None:
    script = Script([("echo", {"text": "x"})], lambda ctx: f"saw {ctx.messages[-1].content[0].text}")
    agent, events = make_agent(script, echo)
    await agent.prompt("go")
    assert kinds(events) == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "tool_execution_start",
        "tool_execution_end",
        "message_start:toolResult",
        "message_end:toolResult",
        "turn_end",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
    ]
    assert agent.state.messages[-1].text() == "saw echo: x"
    assert [t.name for t in script.requests[0].tools] == ["echo"]
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.duration_ms is not None and not end.is_error
    assert [e.turn_index for e in events if e.type == "turn_start"] == [0, 1]


async def test_parallel_tools_finish_in_completion_order_results_in_source_order() -> None:
    release_slow = asyncio.Event()

    @h.tool
    async def slow() -> str:
        """Slow tool."""
        await release_slow.wait()
        return "slow done"

    @h.tool
    async def fast() -> str:
        """Fast tool."""
        release_slow.set()
        return "fast done"

    agent, events = make_agent(Script([("slow", {}), ("fast", {})], "ok"), slow, fast)
    await agent.prompt("go")
    ends = [e.tool_name for e in events if e.type == "tool_execution_end"]
    results = [e.message.tool_name for e in events if e.type == "message_end" and e.message.role == "toolResult"]
    assert ends == ["fast", "slow"] and results == ["slow", "fast"]


async def test_a_sequential_tool_makes_the_whole_batch_sequential() -> None:
    running = 0
    overlap = False

    async def body() -> str:
        """Count concurrent runs."""
        nonlocal running, overlap
        running += 1
        overlap = overlap or running > 1
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return "ok"

    a = h.tool(body, name="a")
    b = h.tool(body, name="b", execution_mode="sequential")
    agent, events = make_agent(Script([("a", {}), ("b", {}), ("a", {})], "done"), a, b)
    await agent.prompt("go")
    assert not overlap
    order = [
        e.type
        for e in events
        if e.type.startswith("tool_execution") or (e.type == "message_end" and e.message.role == "toolResult")
    ]
    assert order == ["tool_execution_start", "tool_execution_end", "message_end"] * 3


async def test_steering_mid_batch_skips_the_remaining_calls() -> None:
    agent, _events = make_agent(Script([("echo", {"text": "1"}), ("echo", {"text": "2"})], "after steer"), echo)

    def before(call: Any) -> None:
        if call.tool_call.arguments["text"] == "1":
            agent.steer("stop, do something else")

    agent.before_tool_call = before
    await agent.prompt("go")
    results = [m for m in agent.state.messages if m.role == "toolResult"]
    assert results[0].content[0].text == "echo: 1" and not results[0].is_error
    assert results[1].content[0].text == SKIPPED_FOR_STEERING and results[1].is_error
    user_texts = [m.content[0].text for m in agent.state.messages if m.role == "user"]
    assert user_texts == ["go", "stop, do something else"]
    assert agent.state.messages[-1].text() == "after steer"


async def test_abort_mid_stream() -> None:
    script = Script("one two three")
    script.gate = asyncio.Event()
    agent, events = make_agent(script)
    task = asyncio.create_task(agent.prompt("go"))
    while not any(e.type == "message_start" and e.message.role == "assistant" for e in events):
        await asyncio.sleep(0)
    agent.abort()
    await asyncio.wait_for(task, 5)
    last = agent.state.messages[-1]
    assert last.role == "assistant" and last.stop_reason == "aborted"
    assert kinds(events)[-2:] == ["turn_end", "agent_end"]
    assert not agent.is_running and agent.signal is None


async def test_follow_up_runs_after_the_agent_would_stop() -> None:
    agent, events = make_agent(Script("first", "second"))
    agent.follow_up("and then?")
    # a follow-up queued before the run starts waits until the first answer
    await agent.prompt("start")
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.state.messages[2].content[0].text == "and then?" and agent.state.messages[-1].text() == "second"
    assert kinds(events).count("agent_end") == 1


async def test_listeners_are_awaited_assistant_persisted_before_its_tool_runs() -> None:
    log: list[str] = []
    agent, _ = make_agent(Script([("probe", {})], "done"))

    async def persist(event: Any) -> None:
        if event.type == "message_end":
            for _ in range(3):
                await asyncio.sleep(0)
            log.append(f"persisted {event.message.role}")

    @h.tool
    def probe() -> str:
        """Record the order."""
        log.append("tool ran")
        return "ok"

    agent.state.tools = [probe]
    agent.subscribe(persist)
    seen: list[int] = []
    agent.before_tool_call = lambda call: seen.append(len(agent.state.messages))
    await agent.prompt("go")
    assert log[:3] == ["persisted user", "persisted assistant", "tool ran"]
    assert seen == [2]  # the state already held the user and the assistant message


async def test_invalid_arguments_unknown_tools_blocked_and_raising_hooks() -> None:
    calls: list[str] = []

    def before(call: Any) -> Any:
        calls.append(call.tool_call.name)
        if call.args.get("text") == "block":
            return {"block": True, "reason": "policy says no", "terminate": False}
        if call.args.get("text") == "crash":
            raise RuntimeError("policy crashed")
        return None

    script = Script([("echo", {}), ("nope", {}), ("echo", {"text": "block"}), ("echo", {"text": "crash"})], "end")
    agent, _ = make_agent(script, echo)
    agent.before_tool_call = before
    await agent.prompt("go")
    texts = [m.content[0].text for m in agent.state.messages if m.role == "toolResult"]
    assert texts[0].startswith('Validation failed for tool "echo":\n  - text: missing')
    assert texts[1] == "Tool nope not found"
    assert texts[2] == "policy says no"
    assert texts[3] == "Tool call blocked: RuntimeError: policy crashed"
    assert calls == ["echo", "echo"]  # never for invalid or unknown calls


async def test_json_schema_tools_are_validated_with_loose_coercion() -> None:
    seen: list[Any] = []
    raw = h.ToolDefinition(
        name="count",
        description="Count things.",
        parameters={
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string"},
            },
            "required": ["n"],
        },
        execute=lambda args, ctx: seen.append(args) or "ok",
    )
    agent, _ = make_agent(Script([("count", {"n": "3", "tags": "one", "note": None}), ("count", {"n": "x"})], "."), raw)
    await agent.prompt("go")
    assert seen == [{"n": 3, "tags": ["one"]}]
    error = [m for m in agent.state.messages if m.role == "toolResult"][1]
    assert error.is_error and "- n: 'x' is not of type 'integer'" in error.content[0].text


async def test_after_tool_call_replaces_the_outcome() -> None:
    agent, _ = make_agent(Script([("echo", {"text": "secret"})], "done"), echo)
    agent.after_tool_call = lambda after: ToolOutcome(h.ToolResult.text("[redacted]"), after.outcome.is_error)
    await agent.prompt("go")
    assert [m.content[0].text for m in agent.state.messages if m.role == "toolResult"] == ["[redacted]"]


async def test_a_tool_that_raises_becomes_an_error_result() -> None:
    @h.tool
    def boom() -> str:
        """Always fails."""
        raise FileNotFoundError("no such file: x.txt")

    agent, _ = make_agent(Script([("boom", {})], "handled"), boom)
    await agent.prompt("go")
    result = next(m for m in agent.state.messages if m.role == "toolResult")
    assert result.is_error and result.content[0].text == "no such file: x.txt"


async def test_second_prompt_while_running_is_an_error() -> None:
    script = Script("a b")
    script.gate = asyncio.Event()
    agent, _ = make_agent(script)
    task = asyncio.create_task(agent.prompt("one"))
    await asyncio.sleep(0)
    with pytest.raises(AgentBusyError, match="steer"):
        await agent.prompt("two")
    script.gate.set()
    await task


async def test_length_truncated_tool_calls_are_not_executed() -> None:
    ran: list[str] = []
    tool = h.tool(lambda: ran.append("x") or "ok", name="t", description="Tool.")
    truncated, then = Script([("t", {})], stop_reason="length"), Script("after")
    streams = iter([truncated, then])
    agent = Agent(model=MODEL, tools=[tool], stream_fn=lambda *args: next(streams)(*args))
    await agent.prompt("go")
    assert ran == []
    result = next(m for m in agent.state.messages if m.role == "toolResult")
    assert result.is_error and "hit the output token limit" in result.content[0].text
    assert agent.state.messages[-1].text() == "after"


async def test_terminating_results_end_the_run_without_another_request() -> None:
    final = h.tool(
        lambda answer: h.ToolResult(content=[h.TextContent(text=answer)], terminate=True),
        name="final_answer",
        description="Submit the final answer.",
    )
    script = Script([("final_answer", {"answer": "42"})], "never requested")
    agent, _ = make_agent(script, final)
    await agent.prompt("go")
    assert len(script.requests) == 1 and agent.state.messages[-1].role == "toolResult"


async def test_finish_turn_can_request_one_more_request() -> None:
    script = Script("first", "second")
    agent, _ = make_agent(script)
    asked = []

    def finish(info: Any) -> Any:
        asked.append(info.message.text())
        return FinishTurn(continue_=len(asked) == 1)

    agent.finish_turn = finish
    await agent.prompt("go")
    assert asked == ["first", "second"] and len(script.requests) == 2


async def test_prepare_request_and_prepare_next_turn() -> None:
    script = Script([("echo", {"text": "a"})], "done")
    agent, _events = make_agent(script, echo)

    def prepare(ctx: Any) -> Any:
        ctx.messages = [m for m in ctx.messages if not (m.role == "user" and m.content == "hidden")]
        return ctx

    from pi_core.agent import NextTurn

    agent.prepare_request = prepare
    agent.prepare_next_turn = lambda info: NextTurn(messages=[h.SystemMessage(sections={"note": "turn 2"})])
    await agent.prompt([h.UserMessage(content="hidden"), h.UserMessage(content="visible")])
    first = script.requests[0].messages
    assert [m.content for m in first if m.role == "user"] == ["visible"]
    second = script.requests[1].messages
    assert second[-1].role == "system" and second[-1].sections == {"note": "turn 2"}


async def test_tool_progress_updates_arrive_before_the_end() -> None:
    @h.tool
    async def progress(ctx: Any) -> str:
        """Report progress."""
        ctx.update("half way")
        return "done"

    agent, events = make_agent(Script([("progress", {})], "ok"), progress)
    await agent.prompt("go")
    seq = [e.type for e in events if e.type.startswith("tool_execution")]
    assert seq == ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
    update = next(e for e in events if e.type == "tool_execution_update")
    assert update.partial_result.text_content() == "half way"


async def test_continue_requires_a_non_assistant_last_message() -> None:
    agent, _ = make_agent(Script("again"))
    with pytest.raises(ValueError, match="no messages"):
        await agent.continue_()
    agent.state.messages.append(h.UserMessage(content="retry me"))
    await agent.continue_()
    assert agent.state.messages[-1].text() == "again"
    with pytest.raises(ValueError, match="role: assistant"):
        await agent.continue_()


async def test_a_provider_exception_becomes_an_error_message() -> None:
    async def broken(model: Any, ctx: Any, options: Any) -> Any:
        raise ConnectionError("connection refused")

    agent = Agent(model=MODEL, stream_fn=broken)
    await agent.prompt("go")
    last = agent.state.messages[-1]
    assert last.stop_reason == "error" and "connection refused" in last.error_message
    assert agent.state.error == last.error_message


async def test_steering_mode_all_delivers_every_queued_message() -> None:
    agent, _ = make_agent(Script([("echo", {"text": "x"})], "done"), echo, steering_mode="all")
    agent.before_tool_call = lambda call: [agent.steer("s1"), agent.steer("s2")] and None
    await agent.prompt("go")
    assert [m.content[0].text for m in agent.state.messages if m.role == "user"] == ["go", "s1", "s2"]
