"""A stdio MCP server that breaks the protocol on request (JSON-RPC written by hand).

Tools: ``ok`` answers; ``garbage`` answers with a line that is not JSON; ``wrong_id``
answers with an id pi never sent; ``hang`` never answers. Each start appends the
server's pid to the file named by ``--pidfile``."""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object", "properties": {}}}
    for name in ("ok", "garbage", "wrong_id", "hang")
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    if "--pidfile" in sys.argv:
        import os

        with open(sys.argv[sys.argv.index("--pidfile") + 1], "a") as handle:
            handle.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        method, rid = request["method"], request["id"]
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": request["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "faulty", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            tool = request["params"]["name"]
            if tool == "garbage":
                sys.stdout.write("this is not json {\n")
                sys.stdout.flush()
            elif tool == "wrong_id":
                send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
            elif tool == "ok":
                send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "fine"}]}})
            # "hang": no answer
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
