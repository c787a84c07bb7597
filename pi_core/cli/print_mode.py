"""``pi -p`` (print the final answer) and ``pi --mode json`` (every event as a line).

Also :func:`protocol_stdout`, which json and rpc mode use to keep their stdout for
protocol records alone."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from pi_hookspecs import AssistantMessage, MessageUpdateEvent, PiModel, TurnEndEvent
from pi_hookspecs.record import dataclass

from .._schema_cache import model_json
from ..runtime import NoticeEvent, SessionRuntime
from ..session.persistence import SessionFileEvent, SessionWriteError
from .bootstrap import InitialInput, start_runtime


@dataclass(frozen=True)
class ProtocolStdio:
    """The descriptors a protocol mode owns while :func:`protocol_stdout` holds them."""

    out_fd: int
    """Where protocol records go: the process's stdout as it was."""
    in_fd: int | None = None
    """The process's stdin as it was (``take_stdin=True``), else ``None``."""

    def text_out(self) -> TextIO:
        """A text stream on :attr:`out_fd` (encoded as ``sys.stdout`` was); closing it
        leaves the descriptor open."""
        encoding = getattr(sys.__stdout__, "encoding", None) or "utf-8"
        errors = getattr(sys.__stdout__, "errors", None) or "strict"
        return open(self.out_fd, "w", encoding=encoding, errors=errors, newline="\n", closefd=False)


@contextlib.contextmanager
def protocol_stdout(*, take_stdin: bool = False) -> Iterator[ProtocolStdio]:
    """Reserve stdout for protocol records (json and rpc mode). File descriptor 1 is
    duplicated for the records, then pointed at stderr for the rest of the block, so
    whatever else writes to it — a plugin's ``print``, ``os.write(1, ...)``, a child
    process inheriting stdout, a library's logging — lands on stderr instead of inside
    the stream (on ``/dev/null`` when there is no stderr). With ``take_stdin`` stdin is
    kept for the protocol the same way and descriptor 0 reads ``/dev/null`` (children
    and stray reads never consume protocol input). On exit descriptors 0 and 1 are
    given back (this matters when pi is embedded, e.g. in a test); the duplicate of
    stdin stays open, as a reader thread may still block on it."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    out_fd = os.dup(1)
    in_fd: int | None = None
    if take_stdin:
        in_fd = os.dup(0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: drop them
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    try:
        yield ProtocolStdio(out_fd, in_fd)
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()  # what was printed meanwhile still goes to stderr
        os.dup2(out_fd, 1)
        os.close(out_fd)
        if in_fd is not None:
            os.dup2(in_fd, 0)


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


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""A record's line, compact as pi 1.6.0 writes it (one encoder for every record: ``json.dumps``
with options makes a new one per call)."""


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
            self.out.write(_encode(record) + "\n")
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


def file_event_record(event: SessionFileEvent) -> dict[str, Any]:
    """The ``notice`` record json and rpc clients get for a session file event: level
    ``error`` when the session can no longer be written (pi stops), ``warning`` when it
    was written anew elsewhere; ``sessionFile`` names the file, ``recoveredFile`` where
    the session continues."""
    record: dict[str, Any] = model_json(NoticeEvent(level="error" if event.fatal else "warning", message=event.message))
    record["sessionFile"] = event.path
    if event.recovered_path is not None:
        record["recoveredFile"] = event.recovered_path
    return record


class SessionFileWatch:
    """Reports what happens to the session file (see :class:`SessionFileEvent`) in
    print, json and rpc mode: one line on stderr, a ``notice`` record for a protocol
    client (``write``), and on a failed write ``on_fatal()`` (the mode stops the run and
    exits with status 1). Follows the runtime to each session it switches to."""

    def __init__(
        self,
        runtime: SessionRuntime,
        *,
        write: Callable[[dict[str, Any]], None] | None = None,
        on_fatal: Callable[[], None] | None = None,
    ) -> None:
        self.write = write
        self.on_fatal = on_fatal
        self.failure: str | None = None
        """The message of the failed write, once one failed."""
        self._remove: Callable[[], None] | None = None
        self.bind(runtime.session)
        runtime.on_rebind.append(self.bind)

    def bind(self, session: Any) -> None:
        if self._remove is not None:
            self._remove()
        self._remove = session.sm.add_file_listener(self)

    def __call__(self, event: SessionFileEvent) -> None:
        if event.fatal:
            if self.failure is not None:
                return
            self.failure = event.message
        print(f"pi: {event.message}", file=sys.stderr)
        if self.write is not None:
            self.write(file_event_record(event))
        if event.fatal and self.on_fatal is not None:
            self.on_fatal()


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
    out: TextIO | None = None,
) -> int:
    """Run the prompts. A runtime not started yet (``open_runtime(start=False)`` with its
    ``args``) is started once the outputs are subscribed, so what ``session_start``
    handlers report is shown too. Once ``stopped()`` is true (a stop signal arrived) no
    further prompt starts. ``out`` is where the answer or the event stream goes
    (default ``sys.stdout``). When the session file cannot be written the run is
    aborted, the failure is reported once (stderr, and a ``notice`` record in json
    mode) and the status is 1."""
    session = runtime.session
    stream = out if out is not None else sys.stdout
    writer = None
    runtime.subscribe(report_extension_errors)
    if json_mode:
        writer = JsonWriter(stream, on_closed=session.abort)
        header = session.sm.get_header()
        if header is not None:
            writer.write(header.to_json())
        runtime.subscribe(writer)
    watch = SessionFileWatch(
        runtime,
        write=writer.write if writer is not None else None,
        on_fatal=lambda: runtime.session.abort(),
    )
    try:
        if args is not None:
            await start_runtime(runtime, args)
        if not initial.prompts:
            print("pi: no prompt given (pass a message, pipe one on stdin, or run pi in a terminal)", file=sys.stderr)
            return 1
        for index, text in enumerate(initial.prompts):
            if (stopped is not None and stopped()) or watch.failure is not None:
                break
            await session.prompt(text, images=initial.images if index == 0 else (), source="sdk")
    except SessionWriteError as exc:
        if watch.failure is None:  # not heard through the listener (another session's file)
            print(f"pi: {exc}", file=sys.stderr)
        return 1
    if watch.failure is not None:
        return 1
    if json_mode:
        # As pi 1.6.0: the stream is the result, a failed request included (its error
        # is in the last message_end), so the status is 0.
        return 0
    status = 0
    last: AssistantMessage | None = session.last_assistant()
    if last is not None and last.stop_reason in ("error", "aborted"):
        print(f"pi: {last.error_message or 'Request ' + last.stop_reason}", file=sys.stderr)
        status = 1
    elif last is not None:
        text = last.text()
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()
        if last.stop_reason == "length":
            print("pi: the response was cut off: the model reached its output token limit", file=sys.stderr)
            status = 1
    return status
