"""The catalogue entry of ``faux/offline-demo`` (the scripted model of ``python3 tasks.py
demo``), apart from :mod:`pi_core.ai.faux`: the registry lists the model at every start,
and the faux API is imported only when a faux model answers."""

from __future__ import annotations

from typing import Any

OFFLINE_DEMO_KEY = ("faux", "offline-demo")

OFFLINE_DEMO: dict[str, Any] = {
    "id": "offline-demo",
    "name": "Offline demo (scripted)",
    "api": "faux",
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0},
    "context_window": 128_000,
    "max_tokens": 16_384,
}
"""``offline_demo_model().model_dump(exclude_none=True, exclude={"provider"})`` written
out (tests/ai/test_ai_faux.py holds them equal), so that a start builds no validator or
serializer of :class:`~pi_hookspecs.Model` for it."""
