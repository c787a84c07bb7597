"""Message builders for the session-store tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_hookspecs import (
    AssistantMessage,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)


@pytest.fixture(autouse=True)
def no_session_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions go to the per-test agent dir unless a test sets the override itself.
    (Imported by every test module: a conftest here would shadow the root ``conftest``.)"""
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)


def user(text: str, timestamp: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=timestamp)


def assistant(
    text: str = "ok", *, provider: str = "anthropic", model: str = "claude-sonnet-4-5", tool: str | None = None
) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text)]
    if tool:
        content.append(ToolCall(id=f"call_{tool}", name=tool, arguments={"command": "ls"}))
    return AssistantMessage(
        content=content,
        api="anthropic-messages",
        provider=provider,
        model=model,
        stop_reason="toolUse" if tool else "stop",
        timestamp=2,
    )


def tool_result(tool: str = "bash", text: str = "output") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=f"call_{tool}", tool_name=tool, content=[TextContent(text=text)], timestamp=3)


def system(
    prompt: str = "", *, sections: dict[str, str | None] | None = None, tools: list[str] | None = None
) -> SystemMessage:
    return SystemMessage(
        content=prompt,
        sections=sections,
        tools_added=[ToolDeclaration(name=name, description=f"{name} tool") for name in tools] if tools else None,
        timestamp=0,
    )


def texts(messages: list[Any]) -> list[str]:
    """A compact picture of a context: ``role:text`` per message."""
    out = []
    for message in messages:
        role = message.role
        if role in ("compactionSummary", "branchSummary"):
            out.append(f"{role}:{message.summary}")
        elif role == "system":
            out.append(f"system:{message.content}")
        elif isinstance(message.content, str):
            out.append(f"{role}:{message.content}")
        else:
            out.append(f"{role}:" + "".join(getattr(block, "text", "") for block in message.content))
    return out


def lines(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
