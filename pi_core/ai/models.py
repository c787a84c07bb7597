"""Model capabilities: thinking levels, thinking budgets and cost."""

from __future__ import annotations

from typing import Any

from pi_hookspecs import THINKING_LEVELS, Cost, Model, Usage
from pi_hookspecs.streaming import calculate_cost

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "budget_with_max_tokens",
    "calculate_cost",
    "clamp_thinking_level",
    "combine_usage",
    "provider_thinking_value",
    "supported_thinking_levels",
    "thinking_budget",
]

DEFAULT_THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""Tokens of thinking per level for APIs that take a token budget."""

MIN_ANSWER_TOKENS = 1024
"""Tokens always left for the answer when thinking shares the output limit."""


def supported_thinking_levels(model: Model) -> list[str]:
    """The levels ``model`` accepts, in order: ``off`` only for a model without
    reasoning; ``off`` … ``high`` otherwise, minus the levels its ``thinking_level_map``
    sets to ``None``, plus ``xhigh`` / ``max`` when the map names them."""
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    levels = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: str | None) -> str:
    """The supported level nearest to ``level``: the level itself when supported, else
    the next higher supported one, else the next lower one. ``None`` means ``off``."""
    available = supported_thinking_levels(model)
    wanted = level or "off"
    if wanted in available:
        return wanted
    if wanted not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(wanted)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def provider_thinking_value(model: Model, level: str) -> str | None:
    """The value sent to the provider for ``level``: the model's ``thinking_level_map``
    entry when it has one, else the level's own name (``None`` when mapped to null)."""
    mapping = model.thinking_level_map or {}
    if level in mapping:
        value = mapping[level]
        return value if isinstance(value, str) else None
    return level


def thinking_budget(level: str, budgets: dict[str, int] | None = None) -> int:
    """Token budget of ``level`` (``xhigh`` and ``max`` use the ``high`` budget)."""
    merged = {**DEFAULT_THINKING_BUDGETS, **(budgets or {})}
    key = "high" if level in ("xhigh", "max") else level
    return merged.get(key, merged["high"])


def budget_with_max_tokens(
    requested_max_tokens: int | None, model_max_tokens: int, level: str, budgets: dict[str, int] | None = None
) -> tuple[int, int]:
    """``(max_tokens, thinking_budget)`` for budget-based thinking: the budget is added
    on top of a requested output limit (capped by the model's), and shrunk so that at
    least :data:`MIN_ANSWER_TOKENS` remain for the answer."""
    budget = thinking_budget(level, budgets)
    if requested_max_tokens is None:
        max_tokens = model_max_tokens
    else:
        max_tokens = min(requested_max_tokens + budget, model_max_tokens)
    budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    return max_tokens, budget


def combine_usage(*usages: Usage | None) -> Usage | None:
    """The field-by-field sum of ``usages`` (``None`` entries skipped; ``None`` if all are)."""
    present = [u for u in usages if u is not None]
    if not present:
        return None

    def total(name: str) -> Any:
        return sum(getattr(u, name) for u in present)

    def optional(name: str) -> int | None:
        values = [getattr(u, name) for u in present if getattr(u, name) is not None]
        return sum(values) if values else None

    amounts = ("input", "output", "cache_read", "cache_write", "total")
    cost = Cost(**{name: sum(getattr(u.cost, name) for u in present) for name in amounts})
    if len(present) > 1:  # a sum is the provider's figure only when every part is
        cost.total_from_provider = all(u.cost.total_from_provider is True for u in present)
    else:
        cost.total_from_provider = present[0].cost.total_from_provider
    return Usage(
        input=total("input"),
        output=total("output"),
        cache_read=total("cache_read"),
        cache_write=total("cache_write"),
        cache_write_1h=optional("cache_write_1h"),
        reasoning=optional("reasoning"),
        total_tokens=total("total_tokens"),
        cost=cost,
    )
