"""``pi otel status``: whether pluggable-pi-otel exports, where, and how the last export of
each signal went (``<agent dir>/otel/status.json``, written by the export processes).
OpenTelemetry is not imported."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from . import state as st
from .config import ConfigError, agent_dir, load_config

HELP = """Show where pluggable-pi-otel exports and how its last exports went.

usage: pi otel status [--json]

For traces and metrics: the result of the last export (ok, or the cause of the
error: a timeout, a refused connection, an HTTP status, a name that does not
resolve), when, and to which URL. Written by pi's export processes into
<agent dir>/otel/status.json. Logs are not exported by pluggable-pi-otel.
"""


def status(as_json: bool = False) -> dict[str, Any]:
    """What ``pi otel status`` shows, as data."""
    base = agent_dir()
    directory = st.state_dir(base)
    info: dict[str, Any] = {"agent_dir": str(base), "status_file": str(directory / st.STATUS_FILE)}
    try:
        config = load_config(base)
    except ConfigError as exc:
        info.update(enabled=False, reason=str(exc))
    else:
        info.update(enabled=config.enabled, reason=config.reason)
    recorded = st.read_status(directory)
    signals: dict[str, Any] = {}
    for signal in st.SIGNALS:
        entry = recorded.get(signal)
        signals[signal] = entry if isinstance(entry, dict) else {"result": "none"}
    signals["logs"] = {"result": "not exported", "note": "pluggable-pi-otel sends traces and metrics"}
    info["signals"] = signals
    info["updated"] = recorded.get("updated")
    info["sending"] = st.lingering(directory)
    info["log"] = os.environ.get("PI_OTEL_LOG")
    return info


def render(info: dict[str, Any]) -> str:
    lines = [f"pluggable-pi-otel: {'on' if info['enabled'] else 'off'} ({info['reason']})"]
    width = max(len(name) for name in info["signals"])
    for name, entry in info["signals"].items():
        result = entry.get("result", "none")
        if result == "ok":
            text = f"ok       {entry.get('time', '?')}  {entry.get('endpoint') or ''}"
        elif result == "error":
            since = entry.get("since")
            text = f"error    {entry.get('time', '?')}  {entry.get('error')}"
            if since and since != entry.get("time"):
                text += f" (since {since})"
        elif result == "none":
            text = "no export recorded yet"
        else:
            text = f"{result} ({entry.get('note', '')})"
        lines.append(f"  {name.ljust(width)}  {text}")
    if info["sending"]:
        pids = ", ".join(str(pid) for pid in info["sending"])
        lines.append(f"export processes still sending after their pi exited: {pids}")
    lines.append(f"status file: {info['status_file']}")
    if not info["log"]:
        lines.append("PI_OTEL_LOG=FILE keeps a log of export failures (one line per cause)")
    return "\n".join(lines)


def main(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help", "help"):
        print(HELP, end="")
        return 0 if args else 2
    if args[0] != "status" or any(arg not in ("--json",) for arg in args[1:]):
        print(f"pi otel: unknown arguments {' '.join(args)!r}\n\n{HELP}", end="", file=sys.stderr)
        return 2
    info = status()
    if "--json" in args[1:]:
        print(json.dumps(info, indent=2))
    else:
        print(render(info))
    return 0
