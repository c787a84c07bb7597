"""Classifying provider errors: retryable, context overflow, authentication.

Every function takes either the final :class:`AssistantMessage` of a failed request
(its ``error_message`` is what is classified) or the error text itself.
"""

from __future__ import annotations

import re
from typing import Literal

from pi_hookspecs import AssistantMessage

ErrorKind = Literal["context_overflow", "auth", "retryable", "aborted", "other"]


class ProviderError(Exception):
    """A provider request that failed before or while streaming."""


class NoApiKeyError(ProviderError):
    """No credential could be found for a provider."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        super().__init__(
            f"No API key for provider: {provider}. Set its environment variable, run `pi auth login {provider}`, "
            "or give the provider an apiKey in models.json."
        )


class _Pattern:
    """An alternation compiled on first use: these are only needed once a request failed,
    and compiling them all costs a few milliseconds of every start."""

    __slots__ = ("_compiled", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(self._source, re.IGNORECASE)
        return self._compiled.search(text)


def _pattern(*parts: str) -> _Pattern:
    return _Pattern("|".join(parts))


# Quota, billing and subscription limits: deterministic, retrying will not help.
_NON_RETRYABLE = _pattern(
    r"insufficient_quota",
    r"quota exceeded",
    r"out of budget",
    r"billing",
    r"monthly usage limit",
    r"available balance",
    r"(?:go|free)usagelimiterror",
    r"certificate verify failed",  # TLS: the same certificate fails again
)

# Transient overload, HTTP 429/5xx and transport failures.
_RETRYABLE = _pattern(
    r"overloaded",
    r"rate.?limit",
    r"too many requests",
    r"\b(?:429|500|502|503|504|520|522|524|529)\b",
    r"service.?unavailable",
    r"server.?error",
    r"internal.?error",
    r"bad gateway",
    r"gateway time.?out",
    r"provider.?returned.?error",
    r"network.?error",
    r"connection.?(?:error|refused|reset|lost|aborted|closed)",
    r"\bconnect(?:error\b| call failed)",  # no connection: nothing was sent
    r"broken pipe",
    r"other side closed",
    r"peer closed connection",
    r"server disconnected",
    r"remote ?protocol ?error",
    r"incomplete chunked read",
    r"fetch failed",
    r"getaddrinfo|enotfound|eai_again|name or service not known|temporary failure in name resolution",
    r"upstream.?connect",
    r"reset before headers",
    r"socket hang up",
    r"timed? ?out",
    r"timeout",
    r"terminated",
    r"websocket.?(?:closed|error)",
    r"ended without",
    r"stream ended before",
    r"retry delay",
    r"(?:you can|please) retry your request",
    r"try your request again",
    r"resource.?exhausted",
)

# What providers answer when the input does not fit the context window.
_OVERFLOW = _pattern(
    r"prompt is too long",  # Anthropic
    r"request_too_large",  # Anthropic, HTTP 413
    r"input is too long for requested model",  # Amazon Bedrock
    r"exceeds the context window",  # OpenAI (Responses and Chat Completions)
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",  # LiteLLM et al.
    r"input token count.*exceeds the maximum",  # Google Gemini
    r"maximum prompt length is \d+",  # xAI
    r"reduce the length of the messages",  # Groq
    r"maximum context length is \d+ tokens",  # OpenRouter, vLLM
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",  # OpenRouter / Poolside
    r"input \(\d+ tokens\) is longer than the model'?s context length",  # Together AI
    r"exceeds the limit of \d+",  # GitHub Copilot
    r"exceeds the available context size",  # llama.cpp server
    r"greater than the context length",  # LM Studio
    r"context window exceeds limit",  # MiniMax
    r"exceeded model token limit",  # Kimi
    r"too large for model with \d+ maximum context length",  # Mistral
    r"model_context_window_exceeded",  # z.ai
    r"prompt too long; exceeded (?:max )?context length",  # Ollama
    r"requested \d+ output tokens",  # vLLM
    r"prompt contains.*\d+ input tokens",  # vLLM
    r"context[_ ]length[_ ]exceeded",  # OpenAI error code, generic
    r"too many tokens",
    r"token limit exceeded",
    r"^(?:[\w .-]+ API error \()?4(?:00|13)\)?\s*(?:status code)?:?\s*\(no body\)",  # Cerebras: 400/413 without body
)

# Overflow-looking text that is really throttling.
_NOT_OVERFLOW = _pattern(r"^(?:throttling error|service unavailable):", r"rate limit", r"too many requests")

_AUTH = _pattern(
    r"\b40[13]\b",
    r"invalid.?(?:x-)?api.?key",
    r"incorrect api key",
    r"api key (?:not valid|is invalid|expired)",
    r"unauthori[sz]ed",
    r"authentication(?:_error| failed| error)?",
    r"permission.?denied",
    r"forbidden",
    r"no api key for provider",
    r"invalid.?(?:bearer|auth|access).?token",
)


_REQUESTED_DELAYS: dict[tuple[str, str, int], float] = {}
_REQUESTED_DELAYS_KEPT = 256


def note_requested_delay(message: AssistantMessage, seconds: float) -> None:
    """Remember that the response which failed ``message`` asked to be retried after
    ``seconds`` (its ``retry-after`` or rate-limit reset headers): the API that read the
    headers notes it, the retry policy (:func:`requested_retry_delay`) reads it. Kept by
    the message's provider, model and timestamp, which copies of the message share."""
    _REQUESTED_DELAYS[(message.provider, message.model, message.timestamp)] = max(0.0, float(seconds))
    while len(_REQUESTED_DELAYS) > _REQUESTED_DELAYS_KEPT:
        del _REQUESTED_DELAYS[next(iter(_REQUESTED_DELAYS))]


def requested_retry_delay(message: AssistantMessage | None) -> float | None:
    """The seconds the server asked to wait before retrying the request that failed
    ``message`` (see :func:`note_requested_delay`), or ``None`` when it asked for none."""
    if message is None or message.stop_reason != "error":
        return None
    return _REQUESTED_DELAYS.get((message.provider, message.model, message.timestamp))


def _text(message_or_text: AssistantMessage | str | None) -> str | None:
    if message_or_text is None:
        return None
    if isinstance(message_or_text, str):
        return message_or_text
    if message_or_text.stop_reason != "error":
        return None
    return message_or_text.error_message or None


def is_retryable_error(message_or_text: AssistantMessage | str | None) -> bool:
    """Whether a failure looks transient (overload, rate limit, 429/5xx, connection
    or stream interruption) so that the turn may be retried. Quota and billing
    exhaustion are not retryable; neither are aborts or successful messages."""
    text = _text(message_or_text)
    if not text:
        return False
    if _NON_RETRYABLE.search(text):
        return False
    return bool(_RETRYABLE.search(text))


def is_context_overflow(message_or_text: AssistantMessage | str | None, context_window: int | None = None) -> bool:
    """Whether a failure (or a successful answer) shows that the input did not fit the
    model's context window.

    Besides the providers' overflow errors, with ``context_window`` given this also
    detects providers that overflow silently: a successful answer whose input tokens
    exceed the window, or a ``length`` stop with no output and a full window.
    """
    text = _text(message_or_text)
    if text and not _NOT_OVERFLOW.search(text) and _OVERFLOW.search(text):
        return True
    if context_window and isinstance(message_or_text, AssistantMessage):
        usage = message_or_text.usage
        used = usage.input + usage.cache_read
        if message_or_text.stop_reason == "stop" and used > context_window:
            return True
        if message_or_text.stop_reason == "length" and usage.output == 0 and used >= context_window * 0.99:
            return True
    return False


def is_auth_error(message_or_text: AssistantMessage | str | None) -> bool:
    """Whether a failure is about credentials: HTTP 401/403, an invalid or missing key."""
    text = _text(message_or_text)
    return bool(text and _AUTH.search(text))


def classify_error(message_or_text: AssistantMessage | str | None, context_window: int | None = None) -> ErrorKind:
    """One kind per failure, checked in this order: ``aborted`` (an aborted message),
    ``context_overflow``, ``auth``, ``retryable``, else ``other``."""
    if isinstance(message_or_text, AssistantMessage) and message_or_text.stop_reason == "aborted":
        return "aborted"
    if is_context_overflow(message_or_text, context_window):
        return "context_overflow"
    if is_auth_error(message_or_text):
        return "auth"
    if is_retryable_error(message_or_text):
        return "retryable"
    return "other"
