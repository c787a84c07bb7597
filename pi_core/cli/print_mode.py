"""``pi -p`` (print the final answer) and ``pi --mode json`` (every event as a line)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from pi_hookspecs import AssistantMessage, MessageUpdateEvent, PiModel, TurnEndEvent

from .._schema_cache import model_json
from ..runtime import SessionRuntime
from .bootstrap import InitialInput, start_runtime


def event_record(event: PiModel) -> dict[str, Any] | None:
    """The JSON record of a session event. ``message_update`` is delta-only: no
    cumulative message, no ``partial`` snapshot (so the stream stays linear)."""
    kind = getattr(event, "type", None)
    if kind == "turn_start":
        return {"type": "turn_start"}  # index and time are for plugins, as pi 1.6.0's stream
    if isinstance(event, TurnEndEvent):
        # the boundary's proposal and context preview are for plugins; clients get the turn
        return {
            "type": "turn_end",
            "message": model_json(event.message),
            "toolResults": [model_json(result) for result in event.tool_results],
        }
    if kind in ("tool_execution_end", "tool_execution_update"):
        # a result as pi 1.6.0 shows it: content and details; isError/terminate only when set
        shown: dict[str, Any] = model_json(event)
        result = shown.get("result" if kind == "tool_execution_end" else "partialResult")
        if isinstance(result, dict):
            for flag in ("isError", "terminate"):
                if result.get(flag) is False:
                    del result[flag]
        return shown
    if isinstance(event, MessageUpdateEvent):
        update = event.assistant_message_event
        if update is None:
            return None
        record: dict[str, Any] = {"type": "message_update", "usage": model_json(event.message.usage)}
        data = model_json(update)
        if update.type == "toolcall_start":
            data.setdefault("id", update.id)
            data.setdefault("toolName", update.tool_name)
        record["assistantMessageEvent"] = data
        return record
    return model_json(event)  # type: ignore[no-any-return]


class JsonWriter:
    """Writes JSONL records; when the reader goes away (``pi --mode json | head``) it
    stops writing and calls ``on_closed`` (the run is aborted, nothing is lost on disk)."""

    def __init__(self, out: TextIO, on_closed: Any = None) -> None:
        self.out = out
        self.closed = False
        self.on_closed = on_closed

    def write(self, record: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            try:
                devnull = open(os.devnull, "w")
                os.dup2(devnull.fileno(), self.out.fileno())
            except (OSError, ValueError):
                pass
            if self.on_closed is not None:
                self.on_closed()

    def __call__(self, event: Any) -> None:
        record = event_record(event)
        if record is not None:
            self.write(record)


def report_extension_errors(event: Any) -> None:
    """Plugin hook errors go to stderr (stdout carries only the answer / the JSONL)."""
    if event.type == "extension_error":
        print(f"pi: extension error ({event.extension_path}) in {event.event}: {event.error}", file=sys.stderr)


async def run_print(
    runtime: SessionRuntime,
    initial: InitialInput,
    args: Any = None,
    *,
    json_mode: bool = False,
    stopped: Callable[[], bool] | None = None,
) -> int:
    """Run the prompts. A runtime not started yet (``open_runtime(start=False)`` with its
    ``args``) is started once the outputs are subscribed, so what ``session_start``
    handlers report is shown too. Once ``stopped()`` is true (a stop signal arrived) no
    further prompt starts."""
    session = runtime.session
    writer = None
    runtime.subscribe(report_extension_errors)
    if json_mode:
        writer = JsonWriter(sys.stdout, on_closed=session.abort)
        header = session.sm.get_header()
        if header is not None:
            writer.write(header.to_json())
        runtime.subscribe(writer)
    if args is not None:
        await start_runtime(runtime, args)
    if not initial.prompts:
        print("pi: no prompt given (pass a message, pipe one on stdin, or run pi in a terminal)", file=sys.stderr)
        return 1
    status = 0
    for index, text in enumerate(initial.prompts):
        if stopped is not None and stopped():
            break
        await session.prompt(text, images=initial.images if index == 0 else (), source="sdk")
    if json_mode:
        # As pi 1.6.0: the stream is the result, a failed request included (its error
        # is in the last message_end), so the status is 0.
        return status
    last: AssistantMessage | None = session.last_assistant()
    if last is not None and last.stop_reason in ("error", "aborted"):
        print(f"pi: {last.error_message or 'Request ' + last.stop_reason}", file=sys.stderr)
        status = 1
    elif last is not None:
        text = last.text()
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        if last.stop_reason == "length":
            print("pi: the response was cut off: the model reached its output token limit", file=sys.stderr)
            status = 1
    return status
