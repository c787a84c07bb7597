"""Error classification."""

from __future__ import annotations

import pytest

from pi_core.ai import classify_error, is_auth_error, is_context_overflow, is_retryable_error
from pi_hookspecs import AssistantMessage, Usage


def failed(text: str) -> AssistantMessage:
    return AssistantMessage(stop_reason="error", error_message=text)


@pytest.mark.parametrize(
    "text",
    [
        "Anthropic API error (529): Overloaded",
        "OpenAI API error (429): Rate limit reached for gpt-5",
        "rate_limit_error: too many requests",
        "Provider API error (502): Bad Gateway",
        "ollama API error (503): Service Unavailable",
        "Connection error: [Errno 111] Connection refused",
        "RemoteProtocolError: peer closed connection without sending complete message body (incomplete chunked read)",
        "Request timed out",
        "terminated",
        "Anthropic stream ended before message_stop",
        "OpenAI Responses stream ended before a terminal response event",
        "Stream ended without finish_reason",
        "Internal server error",
    ],
)
def test_retryable(text: str) -> None:
    assert is_retryable_error(text)
    assert is_retryable_error(failed(text))
    assert classify_error(failed(text)) == "retryable"


@pytest.mark.parametrize(
    "text",
    [
        "OpenAI API error (429): You exceeded your current quota [insufficient_quota]",
        "Anthropic API error (400): messages.0: invalid content",
        "Monthly usage limit reached",
        "prompt is too long: 213500 tokens > 200000 maximum",
    ],
)
def test_not_retryable(text: str) -> None:
    assert not is_retryable_error(text)


def test_successful_and_aborted_messages_are_not_retryable() -> None:
    assert not is_retryable_error(AssistantMessage(stop_reason="stop", error_message="overloaded"))
    aborted = AssistantMessage(stop_reason="aborted", error_message="Request was aborted")
    assert not is_retryable_error(aborted)
    assert classify_error(aborted) == "aborted"


@pytest.mark.parametrize(
    "text",
    [
        "prompt is too long: 213462 tokens > 200000 maximum",
        '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
        "Your input exceeds the context window of this model",
        "Requested token count exceeds the model's maximum context length of 131072 tokens",
        "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens",
        "the request exceeds the available context size, try increasing it",
        "prompt too long; exceeded max context length by 100 tokens",
        "context_length_exceeded",
        "Provider API error (400): (no body)",
    ],
)
def test_context_overflow(text: str) -> None:
    assert is_context_overflow(text)
    assert classify_error(failed(text)) == "context_overflow"


def test_throttling_is_not_overflow() -> None:
    assert not is_context_overflow("ThrottlingException: Too many tokens, please wait (rate limit)")
    assert not is_context_overflow("Too many requests: too many tokens per minute")


def test_silent_overflow_with_context_window() -> None:
    ok = AssistantMessage(stop_reason="stop", usage=Usage(input=150_000, cache_read=60_000))
    assert is_context_overflow(ok, context_window=200_000)
    assert not is_context_overflow(ok)
    truncated = AssistantMessage(stop_reason="length", usage=Usage(input=199_500, output=0))
    assert is_context_overflow(truncated, context_window=200_000)
    normal = AssistantMessage(stop_reason="length", usage=Usage(input=1000, output=500))
    assert not is_context_overflow(normal, context_window=200_000)


@pytest.mark.parametrize(
    "text",
    [
        "Anthropic API error (401): invalid x-api-key",
        "OpenAI API error (401): Incorrect API key provided [invalid_api_key]",
        "Provider API error (403): Forbidden",
        "No API key for provider: anthropic. Set its environment variable",
        "authentication_error",
    ],
)
def test_auth(text: str) -> None:
    assert is_auth_error(text)
    assert classify_error(failed(text)) == "auth"


def test_other() -> None:
    assert classify_error(failed("Anthropic API error (400): tools.0.name: bad")) == "other"
    assert classify_error(None) == "other"
