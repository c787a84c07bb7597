"""A minimal tool context for the built-in tools' tests.

The built-in tools rely on four attributes of their context only: ``cwd``, ``signal``
(an :class:`~pi_hookspecs.AbortSignal` or ``None``), ``update(partial)`` and
``get_settings()``. :class:`FakeToolContext` provides exactly those and records the
progress updates.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_hookspecs import AbortController, ToolDefinition, ToolResult


class FakeToolContext:
    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        settings: dict[str, Any] | None = None,
        on_update: Callable[[ToolResult], Any] | None = None,
    ) -> None:
        self.cwd = str(cwd)
        self.controller = AbortController()
        self.signal = self.controller.signal
        self.settings = settings or {}
        self.updates: list[ToolResult] = []
        self._on_update = on_update

    def update(self, partial: ToolResult | str) -> None:
        result = ToolResult.coerce(partial)
        self.updates.append(result)
        if self._on_update is not None:
            self._on_update(result)

    def get_settings(self) -> dict[str, Any]:
        return dict(self.settings)

    def abort(self) -> None:
        self.controller.abort()


async def call(tool: ToolDefinition, ctx: FakeToolContext, **args: Any) -> ToolResult:
    """Validate ``args`` as the agent does, then run the tool."""
    return await tool.run(tool.validate_arguments(args), ctx)


def text(result: ToolResult) -> str:
    return result.text_content()


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path
