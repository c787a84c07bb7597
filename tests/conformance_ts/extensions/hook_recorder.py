"""This pi's half of the hook recorder (hook_recorder.js is pi 1.6.0's): appends one JSON
line per observed hook to ``$HOOK_LOG``, and adds ``/reload-now`` (``ctx.reload()``)."""

from __future__ import annotations

import json
import os
from typing import Any

from pi_hookspecs import hookimpl


def _log(hook: str, **data: Any) -> None:
    with open(os.environ["HOOK_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"hook": hook, **data}) + "\n")


class HookRecorder:
    @hookimpl
    def project_trust(self, event: Any, ctx: Any) -> None:
        _log("project_trust")

    @hookimpl
    def session_start(self, event: Any) -> None:
        _log("session_start", reason=event.reason)

    @hookimpl
    def before_provider_headers(self, event: Any) -> None:
        _log("before_provider_headers")

    @hookimpl
    def register_commands(self, register: Any) -> None:
        async def reload_now(args: str, ctx: Any) -> None:
            await ctx.reload()

        register("reload-now", reload_now, description="Reload")
