"""The conformance harness: recorded SSE streams, their byte pieces, and normalisers.

A recorded stream (``streams/<api>/<name>.sse``) is cut into byte pieces at arbitrary
offsets, inside lines, inside multi-byte UTF-8 characters, between the two line breaks
that end an event and between ``\\r`` and ``\\n``. The same pieces are served once to the
official SDK's own stream accumulator and once to pi (``pi_core.ai.complete``); both
results are reduced to one neutral shape::

    {"content": [block, ...], "stop_reason": "stop" | "length" | "toolUse", "usage": {...}}

with blocks ``{"type": "text", "text"}``, ``{"type": "thinking", "thinking", "signature"}``,
``{"type": "redacted_thinking", "data"}`` and ``{"type": "tool_call", "id", "name",
"arguments"}``. The SDK normalisers reproduce pi's documented mapping of each wire
format (stop reasons, usage, tool-call ids, where a thinking signature lives); they never
look at pi's result.

When the SDK raises mid-stream (an error event, a cut connection), its outcome is the
error, the provider's message (when there is one) and the content its accumulator held
at that moment.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_hookspecs import AssistantMessage, TextContent, ThinkingContent, ToolCall

STREAMS = Path(__file__).parent / "streams"

Neutral = dict[str, Any]


# --------------------------------------------------------------------------- streams and pieces


def load_stream(api: str, name: str, line_ending: str = "lf") -> bytes:
    """The recorded bytes, with ``\\r\\n`` line endings for ``line_ending="crlf"``."""
    data = (STREAMS / api / f"{name}.sse").read_bytes()
    if line_ending == "crlf":
        data = data.replace(b"\n", b"\r\n")
    return data


def split_pieces(data: bytes, seed: str) -> list[bytes]:
    """``data`` cut into pieces (deterministic per ``seed``): inside every multi-byte
    UTF-8 character, at about half of the event ends (between the two line breaks) and
    of the ``\\r\\n`` pairs, and every 1–64 bytes elsewhere (mostly inside lines)."""
    rng = random.Random(seed)
    cuts: set[int] = set()
    position = 0
    for char in data.decode("utf-8"):
        size = len(char.encode("utf-8"))
        if size > 1:
            cuts.add(position + rng.randint(1, size - 1))
        position += size
    for match in re.finditer(rb"\n\n|\r\n", data):
        if rng.random() < 0.5:
            cuts.add(match.start() + 1)
    position = 0
    while position < len(data):
        position += rng.randint(1, 64)
        cuts.add(position)
    ordered = sorted(cut for cut in cuts if 0 < cut < len(data))
    return [data[start:end] for start, end in zip([0, *ordered], [*ordered, len(data)], strict=True)]


# --------------------------------------------------------------------------- outcomes


@dataclass
class SdkOutcome:
    """What the SDK made of a stream: its final message, or the error it raised with
    the content accumulated until then."""

    final: Neutral | None = None
    error: BaseException | None = None
    error_message: str | None = None
    """The provider's own message, when the error carries one."""
    partial: list[dict[str, Any]] = field(default_factory=list)


def provider_message(error: BaseException) -> str | None:
    """``error.message`` of the JSON body an SDK error carries (``{"error": {...}}`` or
    the inner object itself); ``None`` for errors without a body (a cut connection)."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str):
            return message
    return None


def parse_arguments(text: str | None, *, partial: bool = False) -> dict[str, Any]:
    """Tool-call arguments as the SDK reads them: ``json.loads`` of the complete text;
    for the content held when a stream broke, the SDK's own partial parser (jiter,
    ``partial_mode=True``, as the anthropic accumulator and openai's strict-tool
    parsing use)."""
    if not text:
        return {}
    if partial:
        from jiter import from_json

        value = from_json(text.encode("utf-8"), partial_mode=True)
    else:
        value = json.loads(text)
    assert isinstance(value, dict), f"tool arguments are not an object: {text!r}"
    return value


def finish(content: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]) -> Neutral:
    # pi reports a message that ends normally with tool calls as "toolUse" (as the
    # TypeScript pi does), whatever the provider's stop reason says.
    if stop_reason == "stop" and any(block["type"] == "tool_call" for block in content):
        stop_reason = "toolUse"
    return {"content": content, "stop_reason": stop_reason, "usage": usage}


# --------------------------------------------------------------------------- pi


def pi_neutral(message: AssistantMessage, api: str) -> Neutral:
    """pi's final :class:`AssistantMessage` in the neutral shape."""
    return {
        "content": pi_content(message, api),
        "stop_reason": message.stop_reason,
        "usage": {
            "input": message.usage.input,
            "output": message.usage.output,
            "cache_read": message.usage.cache_read,
            "cache_write": message.usage.cache_write,
        },
    }


def pi_content(message: AssistantMessage, api: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                # The opaque payload is kept as the signature (the text is a placeholder).
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
                continue
            signature: Any = block.thinking_signature or None
            if api == "openai-responses" and signature:
                # The whole reasoning item, as JSON, to be replayed to the provider.
                signature = json.loads(signature)
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": signature})
        elif isinstance(block, ToolCall):
            blocks.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.arguments})
        else:
            blocks.append({"type": f"unexpected:{block.type}"})
    return blocks


# --------------------------------------------------------------------------- anthropic-messages

ANTHROPIC_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


def anthropic_content(message: Any) -> list[dict[str, Any]]:
    """The blocks of an ``anthropic`` ``Message`` (or of the stream's snapshot)."""
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            blocks.append({"type": "text", "text": block.text})
        elif block.type == "thinking":
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature or None})
        elif block.type == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": block.data})
        elif block.type == "tool_use":
            blocks.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": dict(block.input)})
        else:
            blocks.append({"type": f"unexpected:{block.type}"})
    return blocks


def anthropic_neutral(message: Any) -> Neutral:
    usage = message.usage
    return finish(
        anthropic_content(message),
        ANTHROPIC_STOP[message.stop_reason],
        {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cache_read": usage.cache_read_input_tokens or 0,
            "cache_write": usage.cache_creation_input_tokens or 0,
        },
    )


async def run_anthropic_sdk(url: str) -> SdkOutcome:
    """``client.messages.stream(...)`` → ``get_final_message()``."""
    import anthropic

    client = anthropic.AsyncAnthropic(
        base_url=url, api_key="k", max_retries=0, http_client=anthropic.DefaultAsyncHttpxClient(verify=False)
    )
    try:
        async with client.messages.stream(
            model="claude-conformance", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            try:
                message = await stream.get_final_message()
            except Exception as error:
                return SdkOutcome(
                    error=error,
                    error_message=provider_message(error),
                    partial=anthropic_content(stream.current_message_snapshot),
                )
        return SdkOutcome(final=anthropic_neutral(message))
    finally:
        await client.close()


# --------------------------------------------------------------------------- openai-completions

COMPLETIONS_STOP = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
"""Where OpenAI-compatible servers put reasoning text; pi keeps the field's name as the
thinking block's signature (to send the reasoning back in the same field)."""


def completions_content(message: Any, *, partial: bool = False) -> list[dict[str, Any]]:
    """The blocks of a ``ChatCompletion`` choice's message: reasoning, text, tool calls
    (the order in which the streams deliver them)."""
    blocks: list[dict[str, Any]] = []
    extra = message.model_extra or {}
    for name in REASONING_FIELDS:
        value = extra.get(name)
        if isinstance(value, str) and value:
            blocks.append({"type": "thinking", "thinking": value, "signature": name})
            break
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls or []:
        blocks.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.function.name,
                "arguments": parse_arguments(call.function.arguments, partial=partial),
            }
        )
    return blocks


def completions_neutral(completion: Any) -> Neutral:
    choice = completion.choices[0]
    usage = completion.usage
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens if details is not None else None) or 0
    written = ((details.model_extra or {}).get("cache_write_tokens") if details is not None else None) or 0
    return finish(
        completions_content(choice.message),
        COMPLETIONS_STOP[choice.finish_reason],
        {
            "input": usage.prompt_tokens - cached - written,
            "output": usage.completion_tokens,
            "cache_read": cached,
            "cache_write": written,
        },
    )


async def run_completions_sdk(url: str) -> SdkOutcome:
    """``client.chat.completions.create(stream=True)`` fed chunk by chunk to the SDK's
    ``ChatCompletionStreamState`` → ``get_final_completion()``."""
    import openai
    from openai.lib.streaming.chat import ChatCompletionStreamState

    client = openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key="k", max_retries=0, http_client=openai.DefaultAsyncHttpxClient(verify=False)
    )
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    try:
        chunks = await client.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        try:
            async for chunk in chunks:
                state.handle_chunk(chunk)
        except Exception as error:
            snapshot = state.current_completion_snapshot
            return SdkOutcome(
                error=error,
                error_message=provider_message(error),
                partial=completions_content(snapshot.choices[0].message, partial=True),
            )
        completion: Any
        try:
            completion = state.get_final_completion()
        except openai.LengthFinishReasonError as error:
            # The parsing step refuses truncated output; the accumulated completion is on the error.
            completion = error.completion
        return SdkOutcome(final=completions_neutral(completion))
    finally:
        await client.close()


# --------------------------------------------------------------------------- openai-responses


def responses_content(items: list[dict[str, Any]], *, partial: bool = False) -> list[dict[str, Any]]:
    """The blocks of a ``Response``'s output items (as dicts): a reasoning item is a
    thinking block (its summary parts joined by a blank line) whose signature is the
    item; a message is one text block; a function call's id is ``call_id|item id``."""
    blocks: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "reasoning":
            summary = "\n\n".join(part["text"] for part in item.get("summary") or [])
            text = "\n\n".join(part["text"] for part in item.get("content") or [])
            blocks.append({"type": "thinking", "thinking": summary or text, "signature": item})
        elif kind == "message":
            text = "".join(part.get("text") or part.get("refusal") or "" for part in item.get("content") or [])
            blocks.append({"type": "text", "text": text})
        elif kind == "function_call":
            blocks.append(
                {
                    "type": "tool_call",
                    "id": f"{item['call_id']}|{item['id']}",
                    "name": item["name"],
                    "arguments": parse_arguments(item.get("arguments"), partial=partial),
                }
            )
        else:
            blocks.append({"type": f"unexpected:{kind}"})
    return blocks


def responses_neutral(response: Any) -> Neutral:
    usage = response.usage
    details = usage.input_tokens_details
    cached = (details.cached_tokens if details is not None else None) or 0
    reason = response.incomplete_details.reason if response.incomplete_details is not None else None
    if response.status == "completed":
        stop = "stop"
    elif response.status == "incomplete" and reason == "max_output_tokens":
        stop = "length"
    else:
        raise AssertionError(f"no neutral stop reason for status {response.status!r} ({reason!r})")
    return finish(
        responses_content([item.to_dict() for item in response.output]),
        stop,
        {"input": usage.input_tokens - cached, "output": usage.output_tokens, "cache_read": cached, "cache_write": 0},
    )


async def run_responses_sdk(url: str) -> SdkOutcome:
    """``client.responses.stream(...)`` → ``get_final_response()``; the SDK raises no
    exception for ``response.failed`` / ``error`` events (``get_final_response`` then
    fails for want of ``response.completed``), so those come from the events, and the
    content so far from the events' snapshots and finished items."""
    import openai

    client = openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key="k", max_retries=0, http_client=openai.DefaultAsyncHttpxClient(verify=False)
    )
    items: dict[int, dict[str, Any]] = {}
    terminal: Any = None
    failure: str | None = None
    try:
        async with client.responses.stream(model="gpt-test", input="hi") as stream:
            try:
                async for raw in stream:
                    event: Any = raw  # the event union is too wide to narrow by ``type`` here
                    kind = event.type
                    if kind == "response.output_item.added":
                        items[event.output_index] = event.item.to_dict()
                    elif kind == "response.output_text.delta":
                        items[event.output_index]["content"] = [{"type": "output_text", "text": event.snapshot}]
                    elif kind == "response.function_call_arguments.delta":
                        items[event.output_index]["arguments"] = event.snapshot
                    elif kind == "response.output_item.done":
                        items[event.output_index] = event.item.to_dict()
                    elif kind in ("response.completed", "response.incomplete"):
                        terminal = event.response
                    elif kind == "response.failed":
                        failure = event.response.error.message
                    elif kind == "error":
                        failure = event.message
            except Exception as error:
                partial = responses_content([items[i] for i in sorted(items)], partial=True)
                return SdkOutcome(error=error, error_message=provider_message(error), partial=partial)
            if failure is not None:
                partial = responses_content([items[i] for i in sorted(items)], partial=True)
                return SdkOutcome(error=RuntimeError(failure), error_message=failure, partial=partial)
            if terminal is not None and terminal.status == "completed":
                terminal = await stream.get_final_response()
        assert terminal is not None, "the stream has no terminal response event"
        return SdkOutcome(final=responses_neutral(terminal))
    finally:
        await client.close()


# The SDK clients get their own default HTTP client, with ``verify=False`` only to skip
# building a TLS context (30-70 ms) for these plain-HTTP loopback requests.

SDK_RUNNERS = {
    "anthropic-messages": run_anthropic_sdk,
    "openai-completions": run_completions_sdk,
    "openai-responses": run_responses_sdk,
}
