"""A policy plugin for the tests: bash commands mentioning "ask" need the user's
confirmation (``ctx.ui.confirm``); commands mentioning "forbidden" are blocked even
when the user allowed them (the editor's answer never overrides a gate's block)."""

from __future__ import annotations

from typing import Any

from pi_hookspecs import hookimpl


@hookimpl(trylast=True)
async def tool_call(event: Any, ctx: Any) -> Any:
    command = event.input.get("command", "") if event.tool_name == "bash" else ""
    if "ask" in command and not await ctx.ui.confirm("Run a command that asks?", command):
        return {"block": True, "reason": "the user said no"}
    if "forbidden" in command:
        return {"block": True, "reason": "policy: forbidden commands never run"}
    return None
