"""Gemini ``streamGenerateContent?alt=sse`` bodies for the local wire server (the
Gemini API and Vertex AI stream the same ``GenerateContentResponse`` chunks)."""

from __future__ import annotations

from typing import Any

from wire_server import Canned, sse


def chunk(
    parts: list[dict[str, Any]] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    response_id: str = "resp-1",
    model_version: str = "gemini-test",
) -> dict[str, Any]:
    """One ``GenerateContentResponse``: a candidate with ``parts`` (and ``finish``)."""
    body: dict[str, Any] = {"responseId": response_id, "modelVersion": model_version}
    if parts is not None or finish is not None:
        candidate: dict[str, Any] = {"index": 0, "content": {"role": "model", "parts": parts or []}}
        if finish is not None:
            candidate["finishReason"] = finish
        body["candidates"] = [candidate]
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def gemini_stream(chunks: list[dict[str, Any]], **options: Any) -> Canned:
    return Canned(body=sse([(None, c) for c in chunks]), **options)


def gemini_text(text: str, *, finish: str = "STOP", usage: dict[str, Any] | None = None) -> Canned:
    """A plain text answer in pieces of eight characters, then the finish."""
    pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
    chunks = [chunk([{"text": piece}]) for piece in pieces]
    chunks.append(
        chunk(
            [], finish=finish, usage=usage or {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        )
    )
    return gemini_stream(chunks)


def gemini_call(name: str, args: dict[str, Any], *, call_id: str | None = None) -> Canned:
    """One function call, then ``STOP``."""
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        call["id"] = call_id
    return gemini_stream(
        [
            chunk(
                [{"functionCall": call}],
                finish="STOP",
                usage={"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            ),
        ]
    )
