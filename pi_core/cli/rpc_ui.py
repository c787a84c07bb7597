"""RPC mode's wire: the JSONL writer and reader, and the plugins' UI over the protocol.

Extension UI sub-protocol (what :class:`RpcUI` sends and expects):

* dialogs — ``confirm``, ``select``, ``input``, ``editor`` — write
  ``{"type": "extension_ui_request", "id", "method", ...}`` and wait for the client's
  ``{"type": "extension_ui_response", "id", "value" | "confirmed" | "cancelled"}``.
  A ``timeout`` (seconds in Python, milliseconds on the wire), a cancelled response or
  closed stdin resolves the dialog to its default (``False`` / ``None``);
* ``notify``, ``set_status``, ``set_widget`` (with ``widgetPlacement``), ``set_title``,
  ``set_editor_text`` are fire-and-forget requests: no response is expected;
* as in pi 1.6.0, ``set_working_message``, ``set_header`` and ``set_footer`` send
  nothing (they need a terminal), ``get_editor_text`` is ``""`` (the client keeps
  its own editor's text) and ``custom`` returns ``None`` without calling the factory;
* each dialog is wrapped in ``ui_prompt_start`` / ``ui_prompt_end`` events for the
  plugins (:class:`~pi_core.extensions.ui.PromptSpan`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..extensions.ui import PromptSpan

Record = dict[str, Any]


class _NoData:
    def __repr__(self) -> str:
        return "NO_DATA"


NO_DATA: Any = _NoData()
"""A response without a ``data`` field."""


class RawJson(str):
    """Already-serialised JSON, embedded as is by :meth:`RpcOutput.response` (for values
    nested too deeply for ``json.dumps``, such as a long session's tree)."""


def _default(value: Any) -> Any:
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept as is (U+2028/U+2029 stay inside strings: records
    are split on LF only)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_default)


class RpcOutput:
    """Writes protocol records to a file descriptor, one JSON object per LF-terminated
    line. Writes block when the reader is slow (stdout backpressure). When the reader
    goes away the output closes and ``on_closed`` is called once."""

    def __init__(self, fd: int, on_closed: Callable[[], Any] | None = None) -> None:
        self.fd = fd
        self.closed = False
        self.on_closed = on_closed
        self._lock = threading.Lock()

    def write(self, record: Record) -> None:
        self.write_line(dumps(record))

    def response(self, command: str, *, id: Any = None, data: Any = NO_DATA) -> None:
        """A successful command's response; ``data`` is left out unless given (``None``
        is sent as ``null``)."""
        head: Record = {} if id is None else {"id": id}
        head.update(type="response", command=command, success=True)
        if isinstance(data, RawJson):
            self.write_line(dumps(head)[:-1] + ',"data":' + data + "}")
            return
        if data is not NO_DATA:
            head["data"] = data
        self.write(head)

    def error(self, command: str, message: str, *, id: Any = None) -> None:
        head: Record = {} if id is None else {"id": id}
        head.update(type="response", command=command, success=False, error=message)
        self.write(head)

    def write_line(self, line: str) -> None:
        if self.closed:
            return
        payload = (line + "\n").encode("utf-8", errors="surrogateescape")
        with self._lock:
            try:
                view = memoryview(payload)
                while view:
                    written = os.write(self.fd, view)
                    view = view[written:]
            except (BrokenPipeError, ConnectionResetError, OSError) as exc:
                self._close(exc)

    def _close(self, exc: BaseException) -> None:
        if self.closed:
            return
        self.closed = True
        print(f"pi: stdout closed ({type(exc).__name__}); shutting down", file=sys.stderr)
        if self.on_closed is not None:
            self.on_closed()


class LineReader:
    """Reads LF-terminated records from a file descriptor in a daemon thread (works for
    pipes, terminals and regular files alike) and hands each line, without its LF and
    an optional CR, to ``on_line`` in the event loop; ``None`` at end of input."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, on_line: Callable[[bytes | None], Any]) -> None:
        self.fd = fd
        self.loop = loop
        self.on_line = on_line
        self.thread = threading.Thread(target=self._run, name="pi-rpc-stdin", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _post(self, line: bytes | None) -> None:
        try:
            self.loop.call_soon_threadsafe(self.on_line, line)
        except RuntimeError:  # the loop is closed: the process is exiting
            pass

    def _run(self) -> None:
        pending = bytearray()
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except InterruptedError:
                continue
            except OSError as exc:
                print(f"pi: cannot read stdin: {exc}", file=sys.stderr)
                chunk = b""
            if not chunk:
                break
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                pending += chunk[start:end]
                self._post(_strip_cr(bytes(pending)))
                pending.clear()
                start = end + 1
            pending += chunk[start:]
        if pending.strip():
            self._post(_strip_cr(bytes(pending)))
        self._post(None)


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


class RpcUI:
    """The :class:`pi_hookspecs.UIContext` of RPC mode: plugins' dialogs and
    notifications become ``extension_ui_request`` records for the client."""

    def __init__(self, output: RpcOutput) -> None:
        self.output = output
        self.closed = False
        self._pending: dict[str, asyncio.Future[Record | None]] = {}
        self.prompts = PromptSpan()

    # ------------------------------------------------------------------ plumbing

    @property
    def pending(self) -> int:
        return len(self._pending)

    def resolve(self, response: Record) -> bool:
        """Deliver a client's ``extension_ui_response``; False when no dialog waits for it."""
        future = self._pending.pop(str(response.get("id")), None)
        if future is None or future.done():
            return False
        future.set_result(response)
        return True

    def cancel_pending(self) -> None:
        """Resolve every waiting dialog to its default (as if the client cancelled it)."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_result(None)

    def close(self) -> None:
        """No more responses can come (stdin closed, shutting down): every waiting
        dialog, and every later one, resolves to its default."""
        self.closed = True
        self.cancel_pending()

    def _request(self, method: str, **fields: Any) -> str:
        request_id = str(uuid.uuid4())
        record: Record = {"type": "extension_ui_request", "id": request_id, "method": method}
        record.update({key: value for key, value in fields.items() if value is not None})
        self.output.write(record)
        return request_id

    async def _dialog(self, method: str, timeout: float | None, **fields: Any) -> Record | None:
        if self.closed or self.output.closed:
            return None
        self.prompts.start(method, fields.get("title"))
        try:
            return await self._ask(method, timeout, **fields)
        finally:
            self.prompts.end()

    async def _ask(self, method: str, timeout: float | None, **fields: Any) -> Record | None:
        wire_timeout = max(1, round(timeout * 1000)) if timeout is not None and timeout > 0 else None
        future: asyncio.Future[Record | None] = asyncio.get_running_loop().create_future()
        request_id = self._request(method, **fields, timeout=wire_timeout)
        self._pending[request_id] = future
        try:
            if wire_timeout is None:
                return await future
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
        finally:
            self._pending.pop(request_id, None)

    # ------------------------------------------------------------------ dialogs

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        response = await self._dialog("confirm", timeout, title=title, message=message)
        if response is None or response.get("cancelled"):
            return False
        return response.get("confirmed") is True

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        response = await self._dialog("select", timeout, title=title, options=list(options))
        return _value(response)

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        response = await self._dialog("input", timeout, title=title, placeholder=placeholder or None)
        return _value(response)

    async def editor(self, title: str, prefill: str = "") -> str | None:
        response = await self._dialog("editor", None, title=title, prefill=prefill or None)
        return _value(response)

    # ------------------------------------------------------------------ fire and forget

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None:
        self._request("notify", message=message, notifyType=level)

    def set_status(self, key: str, text: str | None) -> None:
        self._request("setStatus", statusKey=key, statusText=text)

    def set_widget(
        self, key: str, lines: Sequence[str] | None, *, placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor"
    ) -> None:
        self._request(
            "setWidget",
            widgetKey=key,
            widgetLines=None if lines is None else [str(x) for x in lines],
            widgetPlacement=placement,
        )

    def set_working_message(self, message: str | None = None) -> None:
        pass  # pi 1.6.0 sends nothing: the spinner is the client's

    def set_header(self, lines: str | Sequence[str] | None) -> None:
        pass  # a terminal's startup header; the client draws its own

    def set_footer(self, lines: str | Sequence[str] | None) -> None:
        pass

    def get_editor_text(self) -> str:
        return ""

    async def custom(self, factory: Callable[..., Any], *, overlay: bool = False, **options: Any) -> Any:
        """As in pi 1.6.0: ``None`` at once, nothing sent (a component needs pi's terminal;
        the client has its own UI)."""
        return None

    def set_title(self, title: str) -> None:
        self._request("setTitle", title=title)

    def set_editor_text(self, text: str) -> None:
        self._request("set_editor_text", text=text)


def _value(response: Record | None) -> str | None:
    if response is None or response.get("cancelled"):
        return None
    value = response.get("value")
    return value if isinstance(value, str) else None
