"""Data passed between the agent loop and its hook slots."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import field
from typing import Any, Literal

from pi_hookspecs import (
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    Model,
    StreamOptions,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
)
from pi_hookspecs.record import dataclass

QueueMode = Literal["all", "one-at-a-time"]
MaybeAwaitable = Any


@dataclass
class AgentContext:
    """What one model request is built from: the transcript (system messages included),
    the executable tools, the model and its thinking level."""

    messages: list[AgentMessage]
    tools: list[ToolDefinition] = field(default_factory=list)
    model: Model | None = None
    thinking_level: str = "off"
    system_prompt: str | None = None
    """Used only when the transcript has no system message of its own."""

    def tool(self, name: str) -> ToolDefinition | None:
        for definition in self.tools:
            if definition.name == name:
                return definition
        return None


@dataclass
class ToolOutcome:
    """A tool call's result and whether it counts as an error."""

    result: ToolResult
    is_error: bool
    duration_ms: int | None = None
    """How long the tool ran (milliseconds); ``None`` when it never ran (refused,
    blocked, not found)."""


@dataclass
class BeforeToolCall:
    """A tool call about to run, for the ``before_tool_call`` callback."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    context: AgentContext


@dataclass
class AfterToolCall:
    """A tool call that ran, with its outcome, for the ``after_tool_call`` callback."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    outcome: ToolOutcome
    context: AgentContext


@dataclass
class TurnInfo:
    """A finished turn: handed to ``finish_turn`` and ``prepare_next_turn``."""

    turn_index: int
    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]
    outcome: Literal["completed", "error", "aborted"] = "completed"


@dataclass
class FinishTurn:
    """What ``finish_turn`` decides: ``continue_`` asks for one more model request even
    when nothing else (tool results, steering, follow-ups) would cause one."""

    continue_: bool = False


@dataclass
class NextTurn:
    """What ``prepare_next_turn`` may change before the next turn of the same run."""

    context: AgentContext | None = None
    messages: list[AgentMessage] = field(default_factory=list)
    """Messages to add (and emit) before the next request, e.g. a system patch."""


class SimpleToolContext:
    """The tool context of a bare Agent (no session runtime): the call's id, the abort
    signal, progress updates and the working directory."""

    def __init__(
        self,
        tool_call_id: str,
        signal: AbortSignal | None,
        on_update: Callable[[ToolResult], Any],
        *,
        cwd: str | None = None,
        parent_tool_call_id: str | None = None,
    ) -> None:
        self.tool_call_id = tool_call_id
        self.parent_tool_call_id = parent_tool_call_id
        self.signal = signal
        self.cwd = cwd or os.getcwd()
        self._on_update = on_update
        self.tools: list[str] = []

    def update(self, partial: ToolResult | str) -> None:
        self._on_update(ToolResult.coerce(partial))

    def get_settings(self) -> dict[str, Any]:
        return {}


MakeToolContext = Callable[[ToolCall, ToolDefinition, AbortSignal, Callable[[ToolResult], Any]], Any]
StreamFunction = Callable[[Model, Any, StreamOptions], Any]
TransformContext = Callable[
    [list[AgentMessage], AbortSignal | None], Awaitable[list[AgentMessage]] | list[AgentMessage]
]
