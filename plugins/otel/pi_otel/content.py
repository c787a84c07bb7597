"""Message content in the GenAI conventions' JSON shapes (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.system_instructions``). Used only when the user
opted in to content capture."""

from __future__ import annotations

import json
from typing import Any

from pi_hookspecs import AssistantMessage

from .semconv import finish_reason


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _block(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", "")
    if kind == "text":
        return {"type": "text", "content": block.text}
    if kind == "thinking":
        return {"type": "reasoning", "content": block.thinking}
    if kind == "toolCall":
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.arguments}
    if kind == "image":
        # The image itself stays out of the telemetry (it would repeat in every later request).
        return {"type": "image", "mime_type": block.mime_type, "size": len(block.data)}
    return {"type": kind or "unknown"}


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    return [_block(block) for block in content or []]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content or [] if getattr(block, "type", "") == "text")


def message(msg: Any) -> dict[str, Any] | None:
    """One pi message as a GenAI chat message (``None`` for system messages)."""
    role = getattr(msg, "role", "")
    if role == "user":
        return {"role": "user", "parts": _parts(msg.content)}
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "parts": _parts(msg.content)}
        out["finish_reason"] = finish_reason(msg.stop_reason, msg.raw_stop_reason)
        return out
    if role == "toolResult":
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": msg.tool_call_id, "response": text_of(msg.content)}],
        }
    if role == "custom":
        return {"role": "user", "parts": _parts(msg.content), "name": msg.custom_type}
    if role == "bashExecution":
        return {"role": "user", "parts": [{"type": "text", "content": f"$ {msg.command}\n{msg.output}"}]}
    if role in ("compactionSummary", "branchSummary"):
        return {"role": "user", "parts": [{"type": "text", "content": msg.summary}]}
    return None


def input_messages(messages: list[Any]) -> str:
    return dumps([m for m in (message(msg) for msg in messages) if m is not None])


def system_prompt(messages: list[Any]) -> str:
    """The system prompt in effect after every system message of a request: the first
    declares ``sections``, later ones patch them by name (``None`` removes one); a
    message's own ``content`` is a part of its own, before its sections."""
    parts: list[str] = []
    index: dict[str, int] = {}
    for msg in messages:
        if getattr(msg, "role", "") != "system":
            continue
        own = text_of(msg.content)
        if own.strip():
            parts.append(own)
        for name, value in (msg.sections or {}).items():
            if value is None:
                if name in index:
                    parts[index.pop(name)] = ""
            elif name in index:
                parts[index[name]] = value
            else:
                index[name] = len(parts)
                parts.append(value)
    return "\n\n".join(part for part in parts if part.strip())


def system_instructions(messages: list[Any]) -> str | None:
    prompt = system_prompt(messages)
    return dumps([{"type": "text", "content": prompt}]) if prompt else None


def output_messages(msg: AssistantMessage) -> str:
    return dumps([message(msg)])
