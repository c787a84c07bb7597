"""An example pi plugin: audit every tool call and keep `rm -rf` away.

Load it for one run with ``pi -e examples/audit_plugin.py``, or install it as a package
with an entry point in the ``pi.extensions`` group (see docs/plugins.md).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pi_hookspecs import hookimpl


class Audit:
    """A class plugin: pi creates a fresh instance for every session runtime."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl(trylast=True)  # judge the final arguments, after other plugins changed them
    def tool_call(self, event, ctx):
        self.calls += 1
        args = json.dumps(event.input)
        blocked = event.tool_name == "bash" and "rm -rf" in event.input.get("command", "")
        verdict = "BLOCKED" if blocked else "allowed"
        print(f"[audit plugin] tool call #{self.calls}: {event.tool_name} {args} -> {verdict}", file=sys.stderr)
        log = Path(ctx.cwd) / ".pi-audit.jsonl"
        with log.open("a", encoding="utf-8") as fh:
            fh.write(
                json.dumps({"time": time.time(), "tool": event.tool_name, "input": event.input, "verdict": verdict})
                + "\n"
            )
        if blocked:
            return {"block": True, "reason": "the audit plugin does not allow rm -rf"}
        return None

    @hookimpl
    def tool_result(self, event):
        status = "error" if event.is_error else "ok"
        print(f"[audit plugin] {event.tool_name} finished: {status}", file=sys.stderr)
