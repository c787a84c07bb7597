"""MCP: one tool call over stdio through pluggable-pi-mcp, against a bare ``mcp`` ClientSession call.

Budget (docs/architecture.md, "Performance budgets"): a call through pluggable-pi-mcp <= 1.2x a bare
``ClientSession.call_tool`` on the same server. Both talk to their own process of the same small
``MCPServer`` script:

* bare: ``stdio_client`` + ``ClientSession.call_tool("echo", ...)``;
* pluggable-pi-mcp: the registered ``mcp__bench__echo`` tool's ``run(args, ctx)`` (argument
  dict in, converted :class:`ToolResult` out: connection lookup, abort wiring, result
  conversion, the 20 KB check).

Calls alternate between the two so that machine noise hits both alike; medians are
compared. The measurement runs in a fresh interpreter: this module is imported as
``mcp`` by ``bench/run.py`` and would shadow the SDK package of that name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROUNDS = 1000
WARMUP = 100

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


server.run()
'''

WORKER = r"""
import asyncio, json, statistics, sys, time

from mcp import ClientSession, StdioServerParameters, stdio_client

from pi_mcp.config import ServerEntry, parse_server
from pi_mcp.connection import McpConnection
from pi_mcp.names import tool_names
from pi_mcp.tools import build_tool, namespace_for

SERVER, ROUNDS, WARMUP = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class Ctx:
    parent_tool_call_id = None
    signal = None

    def update(self, partial):
        pass


async def main():
    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    entry = ServerEntry(
        "bench", parse_server("bench", {"command": sys.executable, "args": [SERVER], "exposure": "direct"}), "bench"
    )
    connection = McpConnection(entry, ".")
    await connection.session()
    tool = connection.tools[0]
    definition = build_tool(
        connection, tool, tool_names("bench", [tool.name])[tool.name], "direct", namespace_for(connection)
    )
    ctx = Ctx()
    bare, piped = [], []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        async def call_bare():
            result = await session.call_tool("echo", {"text": "hello"})
            assert result.content[0].text == "hello"

        async def call_pi():
            converted = await definition.run({"text": "hello"}, ctx)
            assert converted.text_content() == "hello"

        for i in range(WARMUP + ROUNDS):
            # A-B-B-A: neither side always goes first
            order = ((call_bare, bare), (call_pi, piped)) if i % 2 == 0 else ((call_pi, piped), (call_bare, bare))
            for call, times in order:
                start = time.perf_counter()
                await call()
                if i >= WARMUP:
                    times.append((time.perf_counter() - start) * 1e6)
    # pluggable-pi-mcp's own work per call, without the I/O: the server's answer is canned
    canned = await connection.call_tool("echo", {"text": "hello"})
    await connection.close()

    async def answer(name, arguments, progress=None):
        return canned

    connection.call_tool = answer
    own = []
    for _ in range(20):
        start = time.perf_counter()
        for _ in range(500):
            await definition.run({"text": "hello"}, ctx)
        own.append((time.perf_counter() - start) / 500 * 1e6)
    print(json.dumps({"bare": statistics.median(bare), "pi": statistics.median(piped), "own": min(own)}))


asyncio.run(main())
"""


def measure(rounds: int = ROUNDS, warmup: int = WARMUP) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="pi-bench-mcp-") as tmp:
        server = Path(tmp) / "bench_server.py"
        server.write_text(SERVER)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run(
            [sys.executable, "-c", WORKER, str(server), str(rounds), str(warmup)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the MCP benchmark failed:\n{done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def report() -> list[str]:
    numbers = measure()
    bare, pi = numbers["bare"], numbers["pi"]
    return [
        "MCP tool call over stdio (median of alternating calls)",
        f"  bare mcp ClientSession.call_tool                {bare:8.0f} us",
        f"  through pluggable-pi-mcp (tool run)             {pi:8.0f} us",
        f"  ratio pluggable-pi-mcp / bare                   {pi / bare:8.2f}x   (budget <= 1.2x)",
        f"  pluggable-pi-mcp's own work per call (no I/O)   {numbers['own']:7.1f} us",
    ]


if __name__ == "__main__":
    print("\n".join(report()))
