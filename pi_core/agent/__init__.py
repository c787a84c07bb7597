"""The generic agent loop: turns, parallel/sequential tools, steering and follow-up,
abort, awaited event listeners. It knows nothing of sessions or plugins."""

from .agent import SKIPPED_FOR_STEERING, Agent, AgentBusyError, AgentState, default_convert_to_llm
from .tool_calls import ToolArgumentsError, validate_tool_arguments
from .types import (
    AfterToolCall,
    AgentContext,
    BeforeToolCall,
    FinishTurn,
    NextTurn,
    SimpleToolContext,
    ToolOutcome,
    TurnInfo,
)

__all__ = [
    "SKIPPED_FOR_STEERING",
    "AfterToolCall",
    "Agent",
    "AgentBusyError",
    "AgentContext",
    "AgentState",
    "BeforeToolCall",
    "FinishTurn",
    "NextTurn",
    "SimpleToolContext",
    "ToolArgumentsError",
    "ToolOutcome",
    "TurnInfo",
    "default_convert_to_llm",
    "validate_tool_arguments",
]
