"""Tools calling tools (``ctx.execute_tool``): the whole pipeline, one level down.

A nested call is validated, passes the ``tool_call`` gate and the ``tool_result``
transform, and emits ``tool_execution_start/update/end`` with ``parent_tool_call_id``;
its id is ``<parent id>/<n>``. It never raises for tool failures: unknown or
unreachable tools, invalid arguments, blocked calls and errors come back as results
with ``is_error``. Nested calls add nothing to the transcript.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from pi_hookspecs import (
    ToolCall,
    ToolCallEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResult,
    ToolResultEvent,
)

from ..agent import ToolArgumentsError, validate_tool_arguments
from ..extensions import ToolContextImpl

if TYPE_CHECKING:
    from .session import AgentSession


async def execute_nested_tool(
    session: AgentSession,
    name: str,
    args: dict[str, Any],
    *,
    parent_tool_call_id: str,
    signal: Any = None,
    on_update: Any = None,
) -> ToolResult:
    runner = session.runner
    call_id = session.next_nested_id(parent_tool_call_id)
    args = dict(args or {})

    async def emit(event: Any) -> None:
        if runner.has_handlers(event.type):
            await runner.emit(event.type, event)
        session._emit(event)

    await emit(ToolExecutionStartEvent(tool_call_id=call_id, tool_name=name, args=args, parent_tool_call_id=parent_tool_call_id))
    duration: float | None = None
    tool = session.tools.get(name)
    if tool is None or name not in session.tools.callable_names():
        result = ToolResult.error(f"Tool {name} is not available to other tools" if tool else f"Tool {name} not found")
    else:
        try:
            args = validate_tool_arguments(tool, ToolCall(id=call_id, name=name, arguments=args))
            blocked = None
            if runner.has_handlers("tool_call"):
                event = ToolCallEvent(tool_name=name, tool_call_id=call_id, input=args, parent_tool_call_id=parent_tool_call_id)
                blocked = await runner.emit("tool_call", event)
                args = event.input
            if blocked is not None and blocked.block:
                result = ToolResult.error(blocked.reason or "Tool execution was blocked")
            else:
                updates: list[asyncio.Future[Any]] = []

                def update(partial: ToolResult) -> None:
                    if on_update is not None:
                        on_update(partial)
                    updates.append(asyncio.ensure_future(
                        emit(
                            ToolExecutionUpdateEvent(
                                tool_call_id=call_id, tool_name=name, args=args, partial_result=partial,
                                parent_tool_call_id=parent_tool_call_id,
                            )
                        )
                    ))

                ctx = ToolContextImpl(
                    session.context_host, session.plugins.liveness, tool_call_id=call_id, signal=signal,
                    on_update=update, parent_tool_call_id=parent_tool_call_id, owner=session.tools.owner(name),
                )
                start = time.perf_counter()
                try:
                    result = await tool.run(args, ctx)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    result = ToolResult.error(str(exc) or type(exc).__name__)
                duration = (time.perf_counter() - start) * 1000
                if updates:
                    await asyncio.gather(*updates)
                if runner.has_handlers("tool_result"):
                    patched = await runner.emit(
                        "tool_result",
                        ToolResultEvent(
                            tool_name=name, tool_call_id=call_id, input=args, parent_tool_call_id=parent_tool_call_id,
                            content=list(result.content), details=result.details,
                            structured_content=result.structured_content, is_error=result.is_error, usage=result.usage,
                        ),
                    )
                    result = ToolResult(
                        content=patched.content, details=patched.details, structured_content=patched.structured_content,
                        is_error=patched.is_error, usage=patched.usage, terminate=result.terminate,
                    )
        except ToolArgumentsError as exc:
            result = ToolResult.error(str(exc))
    await emit(
        ToolExecutionEndEvent(
            tool_call_id=call_id, tool_name=name, result=result, is_error=result.is_error, duration_ms=duration,
            parent_tool_call_id=parent_tool_call_id,
        )
    )
    return result
