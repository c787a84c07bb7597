"""A tiny MCP server (stdio) for pluggable-pi-codemode's tests: ``add`` with a structured result."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel


class Sum(BaseModel):
    total: int


server = MCPServer("calc", instructions="A calculator.")


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two numbers."""
    return Sum(total=a + b)


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


if __name__ == "__main__":
    server.run()
