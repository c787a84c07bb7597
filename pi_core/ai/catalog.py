"""The built-in model catalogue (data only), in the shape of ``models.json``.

Costs are US dollars per million tokens. Context windows and output limits are the
providers' published values; ``models.json`` (``modelOverrides``) corrects any of
them without a new release of pi.
"""

from __future__ import annotations

from typing import Any

_ADAPTIVE = {"forceAdaptiveThinking": True}
_ADAPTIVE_NO_TEMPERATURE = {"forceAdaptiveThinking": True, "supportsTemperature": False}
_IMAGE = ["text", "image"]


def _cost(input: float, output: float, cache_read: float, cache_write: float = 0.0) -> dict[str, float]:
    return {"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write}


BUILTIN_PROVIDERS: dict[str, dict[str, Any]] = {
    "anthropic": {
        "name": "Anthropic",
        "baseUrl": "https://api.anthropic.com",
        "api": "anthropic-messages",
        "models": [
            {"id": "claude-fable-5", "name": "Claude Fable 5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(10, 50, 1, 12.5), "contextWindow": 1_000_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"off": None, "xhigh": "xhigh", "max": "max"}, "compat": _ADAPTIVE_NO_TEMPERATURE},
            {"id": "claude-opus-5", "name": "Claude Opus 5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(5, 25, 0.5, 6.25), "contextWindow": 1_000_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"}, "compat": _ADAPTIVE_NO_TEMPERATURE},
            {"id": "claude-sonnet-5", "name": "Claude Sonnet 5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(3, 15, 0.3, 3.75), "contextWindow": 1_000_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"}, "compat": _ADAPTIVE_NO_TEMPERATURE},
            {"id": "claude-opus-4-8", "name": "Claude Opus 4.8", "reasoning": True, "input": _IMAGE,
             "cost": _cost(5, 25, 0.5, 6.25), "contextWindow": 1_000_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"}, "compat": _ADAPTIVE_NO_TEMPERATURE},
            {"id": "claude-opus-4-7", "name": "Claude Opus 4.7", "reasoning": True, "input": _IMAGE,
             "cost": _cost(5, 25, 0.5, 6.25), "contextWindow": 1_000_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"}, "compat": _ADAPTIVE_NO_TEMPERATURE},
            {"id": "claude-opus-4-6", "name": "Claude Opus 4.6", "reasoning": True, "input": _IMAGE,
             "cost": _cost(5, 25, 0.5, 6.25), "contextWindow": 1_000_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"xhigh": "max", "max": "max"}, "compat": _ADAPTIVE},
            {"id": "claude-sonnet-4-6", "name": "Claude Sonnet 4.6", "reasoning": True, "input": _IMAGE,
             "cost": _cost(3, 15, 0.3, 3.75), "contextWindow": 1_000_000, "maxTokens": 64_000,
             "thinkingLevelMap": {"max": "max"}, "compat": _ADAPTIVE},
            {"id": "claude-opus-4-5", "name": "Claude Opus 4.5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(5, 25, 0.5, 6.25), "contextWindow": 200_000, "maxTokens": 64_000},
            {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(3, 15, 0.3, 3.75), "contextWindow": 200_000, "maxTokens": 64_000},
            {"id": "claude-haiku-4-5", "name": "Claude Haiku 4.5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(1, 5, 0.1, 1.25), "contextWindow": 200_000, "maxTokens": 64_000},
            {"id": "claude-opus-4-1", "name": "Claude Opus 4.1", "reasoning": True, "input": _IMAGE,
             "cost": _cost(15, 75, 1.5, 18.75), "contextWindow": 200_000, "maxTokens": 32_000},
            {"id": "claude-sonnet-4-0", "name": "Claude Sonnet 4", "reasoning": True, "input": _IMAGE,
             "cost": _cost(3, 15, 0.3, 3.75), "contextWindow": 200_000, "maxTokens": 64_000},
        ],
    },
    "openai": {
        "name": "OpenAI",
        "baseUrl": "https://api.openai.com/v1",
        "api": "openai-responses",
        "models": [
            {"id": "gpt-5.5", "name": "GPT-5.5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(5, 30, 0.5), "contextWindow": 1_050_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"minimal": "low", "xhigh": "xhigh"}},
            {"id": "gpt-5.4", "name": "GPT-5.4", "reasoning": True, "input": _IMAGE,
             "cost": _cost(2.5, 15, 0.25), "contextWindow": 1_050_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"minimal": "low", "xhigh": "xhigh"}},
            {"id": "gpt-5.4-mini", "name": "GPT-5.4 mini", "reasoning": True, "input": _IMAGE,
             "cost": _cost(0.75, 4.5, 0.075), "contextWindow": 400_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"minimal": "low", "xhigh": "xhigh"}},
            {"id": "gpt-5.2", "name": "GPT-5.2", "reasoning": True, "input": _IMAGE,
             "cost": _cost(1.75, 14, 0.175), "contextWindow": 400_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"minimal": "low", "xhigh": "xhigh"}},
            {"id": "gpt-5.1", "name": "GPT-5.1", "reasoning": True, "input": _IMAGE,
             "cost": _cost(1.25, 10, 0.125), "contextWindow": 400_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"minimal": "low"}},
            {"id": "gpt-5", "name": "GPT-5", "reasoning": True, "input": _IMAGE,
             "cost": _cost(1.25, 10, 0.125), "contextWindow": 400_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"off": None}},
            {"id": "gpt-5-mini", "name": "GPT-5 mini", "reasoning": True, "input": _IMAGE,
             "cost": _cost(0.25, 2, 0.025), "contextWindow": 400_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"off": None}},
            {"id": "gpt-5-nano", "name": "GPT-5 nano", "reasoning": True, "input": _IMAGE,
             "cost": _cost(0.05, 0.4, 0.005), "contextWindow": 400_000, "maxTokens": 128_000,
             "thinkingLevelMap": {"off": None}},
            {"id": "o3", "name": "o3", "reasoning": True, "input": _IMAGE,
             "cost": _cost(2, 8, 0.5), "contextWindow": 200_000, "maxTokens": 100_000,
             "thinkingLevelMap": {"off": None, "minimal": None}},
            {"id": "o4-mini", "name": "o4-mini", "reasoning": True, "input": _IMAGE,
             "cost": _cost(1.1, 4.4, 0.275), "contextWindow": 200_000, "maxTokens": 100_000,
             "thinkingLevelMap": {"off": None, "minimal": None}},
            {"id": "gpt-4.1", "name": "GPT-4.1", "input": _IMAGE,
             "cost": _cost(2, 8, 0.5), "contextWindow": 1_047_576, "maxTokens": 32_768},
            {"id": "gpt-4.1-mini", "name": "GPT-4.1 mini", "input": _IMAGE,
             "cost": _cost(0.4, 1.6, 0.1), "contextWindow": 1_047_576, "maxTokens": 32_768},
            {"id": "gpt-4o", "name": "GPT-4o", "input": _IMAGE,
             "cost": _cost(2.5, 10, 1.25), "contextWindow": 128_000, "maxTokens": 16_384},
        ],
    },
}
"""Provider id -> provider entry (``name``, ``baseUrl``, ``api``, ``models``)."""

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-opus-4-8", "openai": "gpt-5.5", "faux": "offline-demo"}
"""The model picked for a provider when nothing else chooses one."""
