"""Tools calling tools (``ctx.execute_tool``): the whole pipeline, one level down.

A nested call is validated, passes the ``tool_call`` gate and the ``tool_result``
transform, and emits ``tool_execution_start/update/end`` with ``parent_tool_call_id``;
its id is ``<parent id>/<n>``. It never raises for tool failures: unknown or
unreachable tools, invalid arguments, blocked calls and errors come back as results
with ``is_error``.

Nested calls add no transcript entries. The :class:`NestedLedger` keeps, per top-level
tool call, a bounded record of them (``nestedCalls`` on that call's result message: name,
arguments, status, duration, error; never results) and adds the ``usage`` of nested
results, at every depth, to the calling tool's result.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pi_hookspecs import (
    NestedToolCallRecord,
    NestedToolCalls,
    ToolCall,
    ToolCallEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResult,
    Usage,
)

from ..agent import ToolArgumentsError, validate_tool_arguments
from ..ai import combine_usage
from ..extensions import EventRunner
from .agent_hooks import tool_result_hook
from .ports import Emit, ToolContextFactory
from .tool_registry import ToolRegistry

MAX_RECORDED_CALLS = 256
"""Nested calls recorded per top-level tool result at most."""
MAX_CALL_ARGUMENT_BYTES = 8 * 1024
"""Arguments of one call larger than this (as JSON) are left out of its record."""
MAX_RESULT_ARGUMENT_BYTES = 32 * 1024
"""Recorded arguments of one tool result add up to this at most."""


class _Calls:
    __slots__ = ("argument_bytes", "calls", "complete")

    def __init__(self) -> None:
        self.calls: list[NestedToolCallRecord] = []
        self.complete = True
        self.argument_bytes = 0


class NestedLedger:
    """What nested calls leave on their top-level tool call: the bounded ``nestedCalls``
    record and the usage of their results (pending until the calling tool finishes)."""

    def __init__(self) -> None:
        self._top: dict[str, str] = {}
        self._calls: dict[str, _Calls] = {}
        self._usage: dict[str, Usage] = {}
        self._counters: dict[str, int] = {}

    def next_id(self, parent_id: str) -> str:
        """The id of the next call ``parent_id`` makes: ``<parent id>/<n>``."""
        n = self._counters.get(parent_id, 0) + 1
        self._counters[parent_id] = n
        return f"{parent_id}/{n}"

    def start(self, call_id: str, parent_id: str, name: str, args: dict[str, Any]) -> NestedToolCallRecord | None:
        """Record a nested call as ``unfinished``; ``None`` when the record is full."""
        top = self._top.get(parent_id, parent_id)
        self._top[call_id] = top
        calls = self._calls.get(top)
        if calls is None:
            calls = self._calls[top] = _Calls()
        if len(calls.calls) >= MAX_RECORDED_CALLS:
            calls.complete = False
            return None
        record = NestedToolCallRecord(id=call_id, name=name, status="unfinished")
        try:
            size = len(json.dumps(args, ensure_ascii=False, default=str).encode())
        except (TypeError, ValueError):
            size = MAX_CALL_ARGUMENT_BYTES + 1
        record.arguments_bytes = size
        if size <= MAX_CALL_ARGUMENT_BYTES and calls.argument_bytes + size <= MAX_RESULT_ARGUMENT_BYTES:
            record.arguments = dict(args)
            calls.argument_bytes += size
        else:
            calls.complete = False
        calls.calls.append(record)
        return record

    @staticmethod
    def finish(record: NestedToolCallRecord | None, result: ToolResult, duration_ms: float | None) -> None:
        if record is None:
            return
        record.status = "error" if result.is_error else "ok"
        record.duration_ms = round(duration_ms) if duration_ms is not None else None  # whole ms, as pi 1.6.0
        if result.is_error:
            text = "".join(getattr(block, "text", "") for block in result.content).strip()
            record.error = text[:500] or "error"

    def add_usage(self, parent_id: str, usage: Usage | None) -> None:
        """Count a nested result's usage for the call that made it."""
        if usage is not None:
            self._usage[parent_id] = combine_usage(self._usage.get(parent_id), usage)  # type: ignore[assignment]

    def with_nested_usage(self, call_id: str, usage: Usage | None) -> Usage | None:
        """``usage`` of ``call_id``'s result plus that of the nested calls it made (the
        same object when they made none)."""
        nested = self._usage.pop(call_id, None)
        return usage if nested is None else combine_usage(usage, nested)

    def take(self, call_id: str) -> NestedToolCalls | None:
        """The record for a finished top-level call (and forget its bookkeeping)."""
        calls = self._calls.pop(call_id, None)
        if calls is None:
            return None
        for key in [k for k, top in self._top.items() if top == call_id]:
            del self._top[key]
            self._counters.pop(key, None)
        self._counters.pop(call_id, None)
        return NestedToolCalls(calls=calls.calls, complete=calls.complete)


class NestedCalls:
    """Runs the nested calls of the session's tools.

    * ``tools`` - which tools exist and which other tools may call;
    * ``ledger`` - the records and usage of nested calls;
    * ``emit`` - the session's listeners (``tool_execution_*`` with ``parent_tool_call_id``);
    * ``tool_context`` - the ``ctx`` a nested call's tool receives.
    """

    def __init__(
        self,
        runner: EventRunner,
        tools: ToolRegistry,
        ledger: NestedLedger,
        *,
        emit: Emit,
        tool_context: ToolContextFactory,
    ) -> None:
        self.runner = runner
        self.tools = tools
        self.ledger = ledger
        self._emit = emit
        self._tool_context = tool_context

    async def _event(self, event: Any) -> None:
        if self.runner.has_handlers(event.type):
            await self.runner.emit(event.type, event)
        self._emit(event)

    async def execute(
        self,
        name: str,
        args: dict[str, Any],
        *,
        parent_tool_call_id: str,
        signal: Any = None,
        on_update: Any = None,
    ) -> ToolResult:
        """Call tool ``name`` for the tool call ``parent_tool_call_id``. Never raises for
        a failing tool: the failure comes back as a result with ``is_error``."""
        runner = self.runner
        ledger = self.ledger
        emit = self._event
        call_id = ledger.next_id(parent_tool_call_id)
        args = dict(args or {})
        record = ledger.start(call_id, parent_tool_call_id, name, args)
        await emit(
            ToolExecutionStartEvent(
                tool_call_id=call_id, tool_name=name, args=args, parent_tool_call_id=parent_tool_call_id
            )
        )
        duration: float | None = None
        tool = self.tools.get(name)
        if tool is None or name not in self.tools.callable_names():
            result = ToolResult.error(
                f"Tool {name} is not available to other tools" if tool else f"Tool {name} not found"
            )
        else:
            try:
                args = validate_tool_arguments(tool, ToolCall(id=call_id, name=name, arguments=args))
                blocked = None
                if runner.has_handlers("tool_call"):
                    event = ToolCallEvent(
                        tool_name=name, tool_call_id=call_id, input=args, parent_tool_call_id=parent_tool_call_id
                    )
                    blocked = await runner.emit("tool_call", event)
                    args = event.input
                if blocked is not None and blocked.block:
                    result = ToolResult.error(blocked.reason or "Tool execution was blocked")
                else:
                    updates: list[asyncio.Future[Any]] = []

                    def update(partial: ToolResult) -> None:
                        if on_update is not None:
                            on_update(partial)
                        updates.append(
                            asyncio.ensure_future(
                                emit(
                                    ToolExecutionUpdateEvent(
                                        tool_call_id=call_id,
                                        tool_name=name,
                                        args=args,
                                        partial_result=partial,
                                        parent_tool_call_id=parent_tool_call_id,
                                    )
                                )
                            )
                        )

                    ctx = self._tool_context(
                        call_id, signal, update, owner=self.tools.owner(name), parent_tool_call_id=parent_tool_call_id
                    )
                    start = time.perf_counter()
                    try:
                        result = await tool.run(args, ctx)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        result = ToolResult.error(str(exc) or type(exc).__name__)
                    duration = round((time.perf_counter() - start) * 1000)
                    if updates:
                        await asyncio.gather(*updates)
                    usage = ledger.with_nested_usage(call_id, result.usage)
                    if usage is not result.usage:
                        result = result.model_copy(update={"usage": usage})
                    if runner.has_handlers("tool_result"):
                        result = await tool_result_hook(
                            runner,
                            tool_name=name,
                            tool_call_id=call_id,
                            args=args,
                            result=result,
                            is_error=result.is_error,
                            parent_tool_call_id=parent_tool_call_id,
                        )
            except ToolArgumentsError as exc:
                result = ToolResult.error(str(exc))
        ledger.finish(record, result, duration)
        ledger.add_usage(parent_tool_call_id, result.usage)
        await emit(
            ToolExecutionEndEvent(
                tool_call_id=call_id,
                tool_name=name,
                result=result,
                is_error=result.is_error,
                duration_ms=duration,
                parent_tool_call_id=parent_tool_call_id,
            )
        )
        return result


__all__ = ["MAX_CALL_ARGUMENT_BYTES", "MAX_RECORDED_CALLS", "MAX_RESULT_ARGUMENT_BYTES", "NestedCalls", "NestedLedger"]
