"""The resource tools: ``list_mcp_resources``, ``list_mcp_resource_templates`` and
``read_mcp_resource``.

They reach every enabled, non-hidden server that offers resources. MCP App resources
(``ui://`` URIs, ``text/html;profile=mcp-app``) and icons are left out. Text reaches the
model as text and images as images; other binary contents are saved to temporary files
whose paths the model receives. Scripts get ``{server, uri, contents}`` as structured
content.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pi_hookspecs import ImageContent, TextContent, ToolAnnotations, ToolDefinition, ToolResult

from .errors import McpUnavailableError

if TYPE_CHECKING:
    from .connection import McpConnection

LIST_RESOURCES = "list_mcp_resources"
LIST_TEMPLATES = "list_mcp_resource_templates"
READ_RESOURCE = "read_mcp_resource"
RESOURCE_TOOLS = (LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE)

Servers = Callable[[], Awaitable[Sequence["McpConnection"]]]
"""Waits for the servers still connecting, then returns the connected ones with resources."""


def is_app_resource(item: Any) -> bool:
    uri = str(getattr(item, "uri", None) or getattr(item, "uri_template", None) or "")
    mime = (getattr(item, "mime_type", None) or "").replace(" ", "").lower()
    return uri.startswith("ui://") or mime == "text/html;profile=mcp-app"


def _item_json(server: str, item: Any) -> dict[str, Any]:
    data = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("icons", None)
    data.pop("_meta", None)
    return {"server": server, **data}


def _json_result(data: dict[str, Any]) -> ToolResult:
    return ToolResult(
        content=[TextContent(text=json.dumps(data, indent=2, ensure_ascii=False))], structured_content=data
    )


def _pick(servers: Sequence[McpConnection], name: str) -> McpConnection:
    from .config import normalized_server_name

    for connection in servers:
        if normalized_server_name(connection.name) == normalized_server_name(name):
            return connection
    known = ", ".join(sorted(c.name for c in servers)) or "none"
    raise McpUnavailableError(f'no connected MCP server "{name}" offers resources (servers with resources: {known})')


_OBJECT = {"type": "object"}
_SERVER = {"type": "string", "description": "The MCP server name"}
_CURSOR = {"type": "string", "description": "nextCursor of the previous page (needs server)"}


def resource_tools(servers: Servers, exposure: str) -> list[ToolDefinition]:
    """The three resource tools with ``exposure`` (a pi tool exposure)."""

    async def list_all(kind: str, args: dict[str, Any]) -> ToolResult:
        connected = await servers()
        key = "resources" if kind == "resources" else "resourceTemplates"
        attr = "resources" if kind == "resources" else "resource_templates"
        try:
            if args.get("server"):
                connection = _pick(connected, str(args["server"]))
                fetch = connection.list_resources_page if kind == "resources" else connection.list_templates_page
                page = await fetch(args.get("cursor") or None)
                data: dict[str, Any] = {
                    "server": connection.name,
                    key: [_item_json(connection.name, i) for i in getattr(page, attr) if not is_app_resource(i)],
                }
                if page.next_cursor:
                    data["nextCursor"] = page.next_cursor
                return _json_result(data)
            if args.get("cursor"):
                return ToolResult.error('"cursor" needs "server": a cursor continues the listing of one server')
            items: list[dict[str, Any]] = []
            errors: list[str] = []
            for connection in connected:
                fetch = connection.list_resources_page if kind == "resources" else connection.list_templates_page
                cursor: str | None = None
                seen: set[str] = set()
                try:
                    while True:
                        page = await fetch(cursor)
                        items += [_item_json(connection.name, i) for i in getattr(page, attr) if not is_app_resource(i)]
                        cursor = page.next_cursor
                        if not cursor or cursor in seen:
                            break
                        seen.add(cursor)
                except Exception as exc:
                    errors.append(f"{connection.name}: {exc}")
            data = {key: items}
            if errors:
                data["errors"] = errors
            return _json_result(data)
        except Exception as exc:
            return ToolResult.error(str(exc))

    async def list_resources(args: dict[str, Any], ctx: Any) -> ToolResult:
        return await list_all("resources", args)

    async def list_templates(args: dict[str, Any], ctx: Any) -> ToolResult:
        return await list_all("templates", args)

    async def read(args: dict[str, Any], ctx: Any) -> ToolResult:
        connected = await servers()
        uri = str(args.get("uri") or "")
        try:
            connection = _pick(connected, str(args.get("server") or ""))
            result = await connection.read_resource(uri)
        except Exception as exc:
            return ToolResult.error(str(exc))
        return read_result(connection.name, uri, result)

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    return [
        ToolDefinition(
            name=LIST_RESOURCES,
            label="MCP resources",
            description=(
                "List the resources of the connected MCP servers as JSON: "
                "{server?, resources: [{server, uri, name, ...}], "
                "nextCursor?}. With server, one page (continue with cursor); without, every resource of every server."
            ),
            parameters={**_OBJECT, "properties": {"server": _SERVER, "cursor": _CURSOR}},
            execute=list_resources,
            exposure=exposure,
            annotations=read_only,
        ),
        ToolDefinition(
            name=LIST_TEMPLATES,
            label="MCP resource templates",
            description=(
                "List the resource URI templates of the connected MCP servers (resources they do not list directly) "
                "as JSON: {server?, resourceTemplates: [{server, uriTemplate, name, ...}], nextCursor?}."
            ),
            parameters={**_OBJECT, "properties": {"server": _SERVER, "cursor": _CURSOR}},
            execute=list_templates,
            exposure=exposure,
            annotations=read_only,
        ),
        ToolDefinition(
            name=READ_RESOURCE,
            label="Read MCP resource",
            description="Read a resource of an MCP server by server name and URI.",
            parameters={
                **_OBJECT,
                "properties": {"server": _SERVER, "uri": {"type": "string", "description": "The resource URI"}},
                "required": ["server", "uri"],
            },
            execute=read,
            exposure=exposure,
            annotations=read_only,
        ),
    ]


def read_result(server: str, uri: str, result: Any) -> ToolResult:
    content: list[Any] = []
    contents: list[dict[str, Any]] = []
    for item in result.contents:
        data = item.model_dump(mode="json", by_alias=True, exclude_none=True)
        text = getattr(item, "text", None)
        mime = getattr(item, "mime_type", None) or ""
        if text is not None:
            content.append(TextContent(text=text))
        else:
            blob = getattr(item, "blob", "") or ""
            if mime.startswith("image/"):
                content.append(ImageContent(data=blob, mime_type=mime))
            else:
                suffix = mimetypes.guess_extension(mime) or ".bin"
                with tempfile.NamedTemporaryFile(prefix="pi-mcp-resource-", suffix=suffix, delete=False) as handle:
                    handle.write(base64.b64decode(blob))
                data["path"] = handle.name
                content.append(
                    TextContent(text=f"[binary resource {item.uri} ({mime or 'unknown type'}) saved to {handle.name}]")
                )
        contents.append(data)
    if not content:
        content.append(TextContent(text=f"(resource {uri} is empty)"))
    return ToolResult(content=content, structured_content={"server": server, "uri": uri, "contents": contents})
