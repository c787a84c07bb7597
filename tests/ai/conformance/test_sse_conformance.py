"""pi's decoders against the official SDKs' stream accumulators, on the same bytes.

Every recorded stream in ``streams/<api>/`` is cut into byte pieces (see
:func:`harness.split_pieces`), with ``\\n`` and with ``\\r\\n`` line endings, and served
twice by the loopback :class:`WireServer`: to the SDK (``anthropic`` / ``openai``, the
reference) and to pi's public entry point ``pi_core.ai.complete``. Both results are
reduced to the neutral shape of :mod:`harness` and compared: content blocks in order,
stop reason and usage; for a stream the SDK fails on, pi must end with ``error``, the
provider's message and the content the SDK had accumulated.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from wire_server import Canned, WireServer, use_server

from pi_core.ai import complete
from pi_hookspecs import LlmContext, Model, StreamOptions, UserMessage

from .harness import SDK_RUNNERS, STREAMS, load_stream, pi_neutral, split_pieces


@dataclass(frozen=True)
class Case:
    api: str
    name: str
    blocks: tuple[str, ...]
    """The kinds of content blocks the SDK must find (guards against two empty results)."""
    error: bool = False
    """The SDK raises (or reports a failure) mid-stream."""
    cut: bool = False
    """The server cuts the connection after the recorded bytes."""
    divergence: str | None = None
    """How pi's tool-call arguments differ from the SDK's (the test is a strict xfail;
    everything but the arguments must still agree)."""

    @property
    def id(self) -> str:
        return f"{self.api}/{self.name}"


A, C, R = "anthropic-messages", "openai-completions", "openai-responses"
T, K, X, U = "text", "thinking", "redacted_thinking", "tool_call"

CASES = [
    Case(A, "text", (T,)),
    Case(A, "thinking", (K, T)),
    Case(A, "redacted_thinking", (X, K, T)),
    Case(A, "parallel_tool_calls", (T, U, U, U)),
    Case(A, "awkward_json", (U, U)),
    Case(A, "cache_usage", (T,)),
    Case(A, "max_tokens", (T,)),
    Case(
        A,
        "max_tokens_mid_tool",
        (T, U),
        divergence='max_tokens inside a string of a tool_use input (partial_json ends \'"content": "- buy '
        "milk\\\\n- call the pl'): pi's tool call keeps the unfinished string, arguments == {'path': "
        "'notes/todo.md', 'content': '- buy milk\\n- call the pl'} (parse_streaming_json reads with jiter's "
        "partial_mode='trailing-strings', keeping unfinished strings as pi 1.6.0's partial-json parser does); the "
        "SDK's accumulator (jiter partial_mode=True) drops the unfinished member: input == {'path': "
        "'notes/todo.md'}. Everything else agrees; pi follows pi 1.6.0 here on purpose.",
    ),
    Case(A, "error_overloaded", (T,), error=True),
    Case(A, "cut_mid_tool", (T, U), error=True, cut=True),
    Case(C, "text", (T,)),
    Case(C, "reasoning_content", (K, T)),
    Case(C, "parallel_tool_calls", (U, U, U)),
    Case(C, "awkward_json", (T, U, U)),
    Case(C, "cache_usage", (T,)),
    Case(C, "length", (T,)),
    Case(C, "error_chunk", (T,), error=True),
    Case(C, "cut_mid_tool", (T, U), error=True, cut=True),
    Case(R, "text", (T,)),
    Case(R, "reasoning", (K, T)),
    Case(R, "parallel_tool_calls", (K, U, U, U)),
    Case(R, "awkward_json", (T, U, U)),
    Case(R, "cache_usage", (T,)),
    Case(R, "incomplete_max_output_tokens", (T,)),
    Case(R, "failed", (K, T), error=True),
    Case(R, "error_event", (T,), error=True),
]

CONTEXT = LlmContext(system_prompt="You are pi.", messages=[UserMessage(content="hi")])


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def pi_model(api: str, server: WireServer) -> Model:
    if api == A:
        return Model(id="claude-conformance", provider="anthropic", api=api, base_url=server.url, reasoning=True)
    return Model(id="gpt-test", provider="openai", api=api, base_url=f"{server.url}/v1", reasoning=True)


def params(cases: list[Case]) -> list[object]:
    return [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.xfail(strict=True, reason=case.divergence)] if case.divergence else [],
        )
        for case in cases
    ]


@pytest.mark.parametrize("line_ending", ["lf", "crlf"])
@pytest.mark.parametrize("case", params(CASES))
async def test_pi_matches_sdk(wire: WireServer, case: Case, line_ending: str) -> None:
    pieces = split_pieces(load_stream(case.api, case.name, line_ending), f"{case.id}/{line_ending}")
    wire.enqueue(Canned(body=pieces, cut=case.cut), Canned(body=pieces, cut=case.cut))

    sdk = await SDK_RUNNERS[case.api](wire.url)
    message = await complete(pi_model(case.api, wire), CONTEXT, StreamOptions(api_key="k"))
    got = pi_neutral(message, case.api)

    sdk_path, pi_path = (request.path for request in wire.requests)
    assert pi_path == sdk_path
    if not case.error:
        assert sdk.error is None, f"the SDK failed on {case.id}: {sdk.error!r}"
        assert sdk.final is not None
        assert tuple(block["type"] for block in sdk.final["content"]) == case.blocks
        if case.divergence:
            assert without_arguments(got) == without_arguments(sdk.final)
        assert got == sdk.final
        return
    assert sdk.error is not None, f"the SDK accepted {case.id}"
    assert tuple(block["type"] for block in sdk.partial) == case.blocks
    assert got["stop_reason"] == "error"
    assert message.error_message
    if sdk.error_message is not None:
        assert sdk.error_message in message.error_message
    elif not case.cut:
        pytest.fail(f"the SDK's error carries no provider message: {sdk.error!r}")
    assert got["content"] == sdk.partial


def without_arguments(result: dict[str, Any]) -> dict[str, Any]:
    blocks = [{k: v for k, v in block.items() if k != "arguments"} for block in result["content"]]
    return {**result, "content": blocks}


def test_every_recorded_stream_is_a_case() -> None:
    recorded = {f"{path.parent.name}/{path.stem}" for path in STREAMS.glob("*/*.sse")}
    assert recorded == {case.id for case in CASES}


def test_pieces_cut_inside_characters_lines_and_line_endings() -> None:
    data = load_stream(A, "text", "crlf")
    pieces = split_pieces(data, "self-check")
    assert b"".join(pieces) == data
    undecodable = 0
    for piece in pieces:
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError:
            undecodable += 1
    assert undecodable >= 5  # some pieces start or end inside a character
    assert any(piece.endswith(b"\r") for piece in pieces)
    assert any(b"data: " in piece and not piece.endswith(b"\n") for piece in pieces)
