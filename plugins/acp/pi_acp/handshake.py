"""The ``initialize`` answer, written before anything heavy is imported.

An editor waits for ``initialize`` before it shows the agent; importing the ``acp``
SDK (its schema: about 0.5 s), pi's plugin contract and the runtime takes far longer
than the handshake may. So ``pi acp`` reads the first message itself, with nothing but
``os`` and ``json``, and answers it from :data:`INITIALIZE_RESULT` (a test holds it to
the SDK's ``InitializeResponse`` model); everything after it goes to the SDK.
"""

from __future__ import annotations

import json
import os
from typing import Any

PROTOCOL_VERSION = 1
"""The ACP protocol version pi speaks (``acp.PROTOCOL_VERSION``, checked by a test)."""


def initialize_result(version: str) -> dict[str, Any]:
    """What ``pi acp`` answers to ``initialize``: the same whatever the client offers."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"list": {}},
        },
        "authMethods": [],
        "agentInfo": {"name": "pi", "title": "pi", "version": version},
    }


def answer_initialize(in_fd: int, out_fd: int, version: str) -> tuple[dict[str, Any] | None, bytes]:
    """Read up to the first complete line. When it is an ``initialize`` request, answer
    it and return its params and the bytes read past it; otherwise return ``None`` and
    everything read (the SDK then handles it, ``initialize`` included)."""
    buffer = b""
    while b"\n" not in buffer:
        chunk = os.read(in_fd, 65536)
        if not chunk:
            return None, buffer
        buffer += chunk
    line, _, rest = buffer.partition(b"\n")
    try:
        message = json.loads(line)
    except ValueError:
        return None, buffer
    if not (
        isinstance(message, dict)
        and message.get("method") == "initialize"
        and "id" in message
        and isinstance(message.get("params"), dict)
        and isinstance(message["params"].get("protocolVersion"), int)
    ):
        return None, buffer
    response = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(version)}
    data = json.dumps(response, separators=(",", ":")).encode() + b"\n"
    while data:
        written = os.write(out_fd, data)
        data = data[written:]
    params: dict[str, Any] = message["params"]
    return params, rest
