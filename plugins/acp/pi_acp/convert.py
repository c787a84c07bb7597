"""pi's messages, tool calls and events in ACP's terms, and ACP prompts in pi's."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    ResourceContentBlock,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from pi_hookspecs import (
    AssistantMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

TOOL_KINDS = {
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
    "ls": "search",
    "tool_search": "search",
    "codemode": "execute",
}
"""ACP's tool kind of pi's tools (others: ``other``; MCP tools: ``fetch`` when they
only read, by their annotations, else ``other``)."""

PATH_TOOLS = ("read", "edit", "write", "ls", "grep", "find")


def tool_kind(name: str, read_only: bool | None = None) -> str:
    kind = TOOL_KINDS.get(name)
    if kind is not None:
        return kind
    return "fetch" if name.startswith("mcp__") and read_only else "other"


def _short(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_title(name: str, args: dict[str, Any]) -> str:
    """What an editor shows for a call: ``Read src/app.py``, `` `pytest -q` `` …"""
    path = args.get("path") if isinstance(args.get("path"), str) else None
    if name == "bash" and isinstance(args.get("command"), str):
        return f"`{_short(args['command'])}`"
    if name in ("read", "edit", "write") and path:
        return f"{name.capitalize()} {path}"
    if name in ("grep", "find") and isinstance(args.get("pattern"), str):
        return f"{name} {_short(args['pattern'], 60)}" + (f" in {path}" if path else "")
    if name == "ls":
        return f"ls {path or '.'}"
    if name.startswith("mcp__"):
        parts = name.split("__", 2)
        return f"{parts[2]} ({parts[1]})" if len(parts) == 3 else name
    return name


def tool_locations(name: str, args: dict[str, Any], cwd: str) -> list[ToolCallLocation]:
    path = args.get("path")
    if name not in PATH_TOOLS or not isinstance(path, str) or not path:
        return []
    expanded = os.path.expanduser(path[1:] if path.startswith("@") else path)
    absolute = os.path.normpath(os.path.join(cwd, expanded))
    line = args.get("offset") if name == "read" and isinstance(args.get("offset"), int) else None
    return [ToolCallLocation(path=absolute, line=line)]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content or [] if isinstance(block, TextContent))


def result_content(content: Sequence[Any]) -> list[Any]:
    """A tool result's blocks as ACP tool call content."""
    out: list[Any] = []
    for block in content:
        if isinstance(block, TextContent) and block.text:
            out.append(ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=block.text)))
        elif isinstance(block, ImageContent):
            out.append(
                ContentToolCallContent(
                    type="content", content=ImageContentBlock(type="image", data=block.data, mime_type=block.mime_type)
                )
            )
    return out


def plan_entries(details: Any) -> list[PlanEntry] | None:
    """A plan a tool published in its result's ``details["plan"]``: a list of
    ``{"content", "status"?, "priority"?}`` (status ``pending`` / ``in_progress`` /
    ``completed``, priority ``high`` / ``medium`` / ``low``)."""
    plan = details.get("plan") if isinstance(details, dict) else None
    if not isinstance(plan, list):
        return None
    entries = []
    for item in plan:
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            continue
        status = item.get("status") if item.get("status") in ("pending", "in_progress", "completed") else "pending"
        priority = item.get("priority") if item.get("priority") in ("high", "medium", "low") else "medium"
        entries.append(PlanEntry(content=item["content"], status=status, priority=priority))
    return entries


def start_update(
    call_id: str, name: str, args: dict[str, Any], cwd: str, *, read_only: bool | None = None, status: str = "pending"
) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=tool_title(name, args),
        kind=tool_kind(name, read_only),
        status=status,
        locations=tool_locations(name, args, cwd) or None,
        raw_input=args,
    )


def end_update(
    call_id: str,
    content: Sequence[Any],
    *,
    is_error: bool,
    diff: tuple[str, str | None, str] | None = None,
    details: Any = None,
) -> ToolCallProgress:
    blocks = result_content(content)
    if diff is not None:
        path, old, new = diff
        blocks.insert(0, FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new))
    raw: dict[str, Any] = {"content": text_of(list(content)), "isError": is_error}
    if details is not None:
        raw["details"] = details
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if is_error else "completed",
        content=blocks,
        raw_output=raw,
    )


def history_updates(messages: Sequence[Any], cwd: str) -> Iterator[Any]:
    """The updates that replay a conversation (``session/load``)."""
    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                if message.content:
                    yield UserMessageChunk(session_update="user_message_chunk", content=_text(message.content))
                continue
            for block in message.content:
                if isinstance(block, TextContent) and block.text:
                    yield UserMessageChunk(session_update="user_message_chunk", content=_text(block.text))
                elif isinstance(block, ImageContent):
                    yield UserMessageChunk(
                        session_update="user_message_chunk",
                        content=ImageContentBlock(type="image", data=block.data, mime_type=block.mime_type),
                    )
        elif isinstance(message, AssistantMessage):
            for part in message.content:
                if isinstance(part, TextContent) and part.text:
                    yield AgentMessageChunk(session_update="agent_message_chunk", content=_text(part.text))
                elif isinstance(part, ThinkingContent) and part.thinking and not part.redacted:
                    yield AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(part.thinking))
                elif isinstance(part, ToolCall):
                    yield start_update(part.id, part.name, dict(part.arguments), cwd, status="in_progress")
        elif isinstance(message, ToolResultMessage):
            yield end_update(message.tool_call_id, message.content, is_error=message.is_error)
        elif isinstance(message, BashExecutionMessage):
            yield UserMessageChunk(session_update="user_message_chunk", content=_text(f"!{message.command}"))
            if message.output:
                yield AgentMessageChunk(
                    session_update="agent_message_chunk", content=_text(f"```\n{message.output}\n```")
                )
        elif isinstance(message, CompactionSummaryMessage):
            yield AgentThoughtChunk(
                session_update="agent_thought_chunk",
                content=_text(f"(earlier conversation, summarised)\n{message.summary}"),
            )


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _file_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return None


def prompt_input(blocks: Sequence[Any]) -> tuple[str, list[ImageContent]]:
    """An ACP prompt as pi's input: the text (resources as ``<file>`` blocks, as
    ``pi @file`` makes them; links as their path or URI) and the images."""
    parts: list[str] = []
    files: list[str] = []
    images: list[ImageContent] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, ResourceContentBlock):
            path = _file_path(block.uri)
            parts.append(f"@{path}" if path else block.uri)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            name = _file_path(resource.uri) or resource.uri
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                files.append(f'<file name="{name}">\n{text}\n</file>')
                continue
            blob = getattr(resource, "blob", None)
            mime = resource.mime_type or ""
            if isinstance(blob, str) and mime.startswith("image/"):
                images.append(ImageContent(data=blob, mime_type=mime))
                files.append(f'<file name="{name}"></file>')
            elif isinstance(blob, str):
                size = len(base64.b64decode(blob, validate=False)) if blob else 0
                files.append(f'<file name="{name}">[binary content, {size} bytes, {mime or "unknown type"}]</file>')
    text = "".join(parts)
    if files:
        text = "\n".join(files) + "\n" + text
    return text, images
