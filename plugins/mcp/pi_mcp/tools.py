"""MCP tools as pi tools: definitions, calls and result conversion.

A result's text, images and structured content reach pi as they are; ``isError``
becomes ``is_error``. Text over 20 KB reaches the model (a call made by the model, not
by another tool) with its middle removed around a ``…N chars truncated…`` marker; the
full text is saved to a temporary file named in the result. Nested calls (codemode
scripts) get the complete result.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pi_hookspecs import (
    ImageContent,
    TextContent,
    ToolAnnotations,
    ToolDefinition,
    ToolNamespace,
    ToolResult,
)
from pi_hookspecs.signals import abortable

from .names import INTERNAL_EXPOSURE

if TYPE_CHECKING:
    from .connection import McpConnection

MAX_TEXT_CHARS = 20 * 1024
"""Text results longer than this reach the model shortened."""


# --------------------------------------------------------------------------- content


def convert_block(block: Any, server: str) -> TextContent | ImageContent:
    """One MCP content block as pi content (audio and other binaries as a note)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextContent(text=block.text)
    if kind == "image":
        return ImageContent(data=block.data, mime_type=block.mime_type)
    if kind == "audio":
        return TextContent(text=f"[audio {block.mime_type} omitted]")
    if kind == "resource_link":
        label = block.name or str(block.uri)
        return TextContent(text=f"{label}: {block.uri} (read it with read_mcp_resource, server {server!r})")
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return TextContent(text=text)
        mime = getattr(resource, "mime_type", None) or ""
        blob = getattr(resource, "blob", None)
        if blob is not None and mime.startswith("image/"):
            return ImageContent(data=blob, mime_type=mime)
        return TextContent(text=f"[binary resource {resource.uri} ({mime or 'unknown type'}) omitted]")
    return TextContent(text=f"[unsupported MCP content {kind}]")


def shorten_text(text: str, limit: int = MAX_TEXT_CHARS) -> tuple[str, int]:
    """``text`` with its middle removed when longer than ``limit``; and how many
    characters were removed."""
    if len(text) <= limit:
        return text, 0
    head = limit // 2
    tail = limit - head
    removed = len(text) - head - tail
    return f"{text[:head]}\n…{removed} chars truncated…\n{text[-tail:]}", removed


OVERFLOW_STALE_SECONDS = 24 * 3600
"""Age after which an overflow file of another pi (one that was killed) is removed."""
_overflow_files: set[str] = set()
_swept = False


def _remove_overflow_files() -> None:
    for path in list(_overflow_files):
        with contextlib.suppress(OSError):
            os.unlink(path)
    _overflow_files.clear()


def _remove_stale_overflow_files() -> None:
    """Once per process: this user's ``pi-mcp-*.txt`` files older than a day."""
    global _swept
    if _swept:
        return
    _swept = True
    folder, now = tempfile.gettempdir(), time.time()
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name.startswith("pi-mcp-") and name.endswith(".txt"):
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    info = os.stat(path, follow_symlinks=False)
                    if info.st_uid == os.getuid() and now - info.st_mtime > OVERFLOW_STALE_SECONDS:
                        os.unlink(path)


def save_full_text(text: str, prefix: str) -> str:
    """Write ``text`` to a private temporary file (0600), removed when pi exits."""
    _remove_stale_overflow_files()
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", prefix=f"pi-mcp-{prefix}-", suffix=".txt", delete=False
    ) as handle:
        if not _overflow_files:
            atexit.register(_remove_overflow_files)
        _overflow_files.add(handle.name)
        handle.write(text)
        return handle.name


def truncate_for_model(result: ToolResult, prefix: str) -> ToolResult:
    """Shorten the text of ``result`` for the model, keeping images; the full text goes
    to a temporary file named at the end of the text."""
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    full = "\n".join(texts)
    if len(full) <= MAX_TEXT_CHARS:
        return result
    path = save_full_text(full, prefix)
    short, _ = shorten_text(full)
    note = f"\n[The full output ({len(full)} chars) is in {path}]"
    images = [b for b in result.content if isinstance(b, ImageContent)]
    details = dict(result.details) if isinstance(result.details, dict) else {}
    details["fullOutputPath"] = path
    return result.model_copy(update={"content": [TextContent(text=short + note), *images], "details": details})


def convert_result(server: str, tool: str, result: Any) -> ToolResult:
    """An MCP ``CallToolResult`` as a :class:`ToolResult`."""
    content: list[Any] = [convert_block(block, server) for block in result.content]
    structured = result.structured_content
    if not content and structured is not None:
        content.append(TextContent(text=json.dumps(structured, indent=2, ensure_ascii=False)))
    if result.is_error and not any(isinstance(b, TextContent) and b.text for b in content):
        content.append(TextContent(text=f"MCP tool {server}/{tool} returned an error"))
    return ToolResult(
        content=content,
        structured_content=structured,
        is_error=bool(result.is_error),
        details={"server": server, "tool": tool},
    )


# --------------------------------------------------------------------------- calls


def _progress(ctx: Any, server: str, tool: str) -> Callable[[float, float | None, str | None], Awaitable[None]] | None:
    update = getattr(ctx, "update", None)
    if update is None:
        return None

    async def progress(done: float, total: float | None, message: str | None) -> None:
        text = message or f"Progress {done:g}" + (f"/{total:g}" if total is not None else "")
        try:
            update(ToolResult.text(text, details={"server": server, "tool": tool, "progress": done, "total": total}))
        except Exception:
            pass  # progress display must not fail the call

    return progress


def error_result(server: str, tool: str, message: str) -> ToolResult:
    return ToolResult.error(message, details={"server": server, "tool": tool})


async def call_mcp_tool(
    connection: McpConnection, tool: str, args: dict[str, Any], ctx: Any, pi_name: str
) -> ToolResult:
    """Run one call and convert what comes back (failures become error results)."""
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    from .errors import McpUnavailableError

    server = connection.name
    try:
        result = await abortable(
            connection.call_tool(tool, args, _progress(ctx, server, tool)), getattr(ctx, "signal", None)
        )
    except McpUnavailableError as exc:
        return error_result(server, tool, str(exc))
    except MCPError as exc:
        return error_result(server, tool, f'MCP tool "{server}/{tool}" failed: {exc.error.message}')
    except (RuntimeError, ValidationError) as exc:
        return error_result(server, tool, f'MCP tool "{server}/{tool}" returned an invalid result: {exc}')
    converted = convert_result(server, tool, result)
    if getattr(ctx, "parent_tool_call_id", None) is None:
        converted = truncate_for_model(converted, pi_name)
    return converted


# --------------------------------------------------------------------------- definitions


def namespace_for(connection: McpConnection) -> ToolNamespace:
    from .names import namespace_name

    name = connection.name
    aliases = [name] if namespace_name(name) != name else []
    return ToolNamespace(
        name=namespace_name(name),
        aliases=aliases,
        description=server_summary(connection),
        instructions=connection.instructions,
    )


def server_summary(connection: McpConnection) -> str | None:
    """The configured ``description``, else the first line of the server instructions."""
    description = (connection.entry.config.description or "").strip()
    if description:
        return description
    if connection.instructions:
        return connection.instructions.strip().splitlines()[0].strip() or None
    return None


def _parameters(schema: Any) -> dict[str, Any]:
    parameters = dict(schema) if isinstance(schema, dict) else {}
    parameters.setdefault("type", "object")
    if parameters.get("type") == "object":
        parameters.setdefault("properties", {})
    return parameters


def _annotations(tool: Any) -> ToolAnnotations | None:
    hints = tool.annotations
    title = getattr(tool, "title", None) or (hints.title if hints is not None else None)
    if hints is None and title is None:
        return None
    return ToolAnnotations(
        title=title,
        read_only_hint=getattr(hints, "read_only_hint", None),
        destructive_hint=getattr(hints, "destructive_hint", None),
        idempotent_hint=getattr(hints, "idempotent_hint", None),
        open_world_hint=getattr(hints, "open_world_hint", None),
    )


def build_tool(
    connection: McpConnection,
    tool: Any,
    pi_name: str,
    exposure: str,
    namespace: ToolNamespace,
) -> ToolDefinition:
    """The pi tool of one server tool (``exposure`` as configured)."""
    server = connection.name
    title = getattr(tool, "title", None) or (tool.annotations.title if tool.annotations is not None else None)
    description = (tool.description or "").strip() or title or f"MCP tool {tool.name} of server {server}"
    remote_name = tool.name

    async def execute(args: dict[str, Any], ctx: Any) -> ToolResult:
        return await call_mcp_tool(connection, remote_name, args, ctx, pi_name)

    return ToolDefinition(
        name=pi_name,
        label=f"{server}/{remote_name}",
        description=description,
        parameters=_parameters(tool.input_schema),
        execute=execute,
        exposure=INTERNAL_EXPOSURE[exposure],
        namespace=namespace,
        annotations=_annotations(tool),
        output_schema=tool.output_schema,
    )


def withdrawn(definition: ToolDefinition) -> ToolDefinition:
    """The same tool made unreachable (tools cannot be unregistered)."""
    return definition.model_copy(update={"exposure": "hidden"})
