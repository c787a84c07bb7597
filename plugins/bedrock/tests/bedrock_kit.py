"""Helpers for pluggable-pi-bedrock's tests (a plain module: the root tests own ``conftest``):
ConverseStream event frames for the loopback server, and a SigV4 check with botocore."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "ai"))

from wire_server import Recorded, aws_event

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLETOKEN"

AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[A-Za-z0-9-]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/bedrock/aws4_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})"
)


def _pieces(text: str, size: int = 6) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def converse_frames(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
) -> list[bytes]:
    """The event frames Bedrock streams for ``blocks``: ``{"type": "text", "text"}``,
    ``{"type": "reasoning", "text", "signature"}``, ``{"type": "redacted", "chunks": [base64]}``,
    ``{"type": "tool", "id", "name", "json": [pieces]}``. Every payload carries the
    ``p`` padding field real streams have."""
    frames = [aws_event("messageStart", {"p": "abcdefgh", "role": "assistant"})]
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            for piece in _pieces(block["text"]):
                frames.append(
                    aws_event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}, "p": "abc"})
                )
        elif kind == "reasoning":
            for piece in _pieces(block["text"]):
                frames.append(
                    aws_event(
                        "contentBlockDelta",
                        {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}, "p": "ab"},
                    )
                )
            frames.append(
                aws_event(
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": block["signature"]}}},
                )
            )
        elif kind == "redacted":
            for chunk in block["chunks"]:
                frames.append(
                    aws_event(
                        "contentBlockDelta",
                        {"contentBlockIndex": index, "delta": {"reasoningContent": {"redactedContent": chunk}}},
                    )
                )
        elif kind == "tool":
            frames.append(
                aws_event(
                    "contentBlockStart",
                    {
                        "contentBlockIndex": index,
                        "start": {"toolUse": {"toolUseId": block["id"], "name": block["name"]}},
                        "p": "abcd",
                    },
                )
            )
            for piece in block["json"]:
                frames.append(
                    aws_event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}})
                )
        frames.append(aws_event("contentBlockStop", {"contentBlockIndex": index, "p": "a"}))
    frames.append(aws_event("messageStop", {"stopReason": stop_reason, "p": "abc"}))
    frames.append(
        aws_event(
            "metadata",
            {
                "usage": usage or {"inputTokens": 30, "outputTokens": 8, "totalTokens": 38},
                "metrics": {"latencyMs": 120},
                "p": "abcdef",
            },
        )
    )
    return frames


def verify_sigv4(
    request: Recorded, *, key: str = ACCESS_KEY, secret: str = SECRET_KEY, token: str | None = None
) -> re.Match[str]:
    """Check the request's SigV4 ``Authorization`` against a signature botocore computes
    for the same method, path, signed headers, body and time; returns its parts."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    match = AUTHORIZATION.fullmatch(request.headers["authorization"])
    assert match is not None, request.headers["authorization"]
    assert match["key"] == key
    names = match["signed"].split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(names)
    assert ("x-amz-security-token" in names) is (token is not None)
    if token is not None:
        assert request.headers["x-amz-security-token"] == token
    assert match["date"] == request.headers["x-amz-date"][:8]
    headers = {name: request.headers[name] for name in names}
    aws = AWSRequest(
        method="POST", url=f"http://{request.headers['host']}{request.path}", data=request.raw, headers=headers
    )
    aws.context["timestamp"] = request.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(key, secret, token), "bedrock", match["region"])
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    assert expected == match["signature"], "the signature does not verify"
    return match
