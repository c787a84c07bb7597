"""One ACP session: a pi session runtime, its events as ``session/update``
notifications, and the editor as a partner through pi's hooks.

* :class:`EditorHooks` (a plugin object handed to the SDK for this session):
  ``file_access`` serves the built-in file tools' reads and writes from the editor
  (``fs/read_text_file`` sees unsaved buffers, ``fs/write_text_file`` shows the edit)
  and records the text before and after each change for the diff; ``bash_spawn`` runs
  the ``bash`` tool's commands in the editor's terminal (``terminal/create``);
  ``tool_call`` (``tryfirst``) remembers which call a policy's ``ctx.ui.confirm``
  concerns.
* :class:`EditorUI` (the session's ``ctx.ui``): ``confirm`` and ``select`` become
  ``session/request_permission``; "always" is remembered for the session.
* :class:`ClientMcpServers`: the MCP servers the client passed, registered with pluggable-pi-mcp
  through pi's ``register_mcp_servers`` hook.

A request the client answers with a JSON-RPC error becomes :class:`ClientError`, whose
message names the method and carries the client's reason (its error message and data):
that is what the model reads in the tool result (pi itself keeps where a failing
handler raised out of it; the full report is on stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import signal as signals
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    ContentToolCallContent,
    EnvVariable,
    PermissionOption,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallUpdate,
)

from pi_hookspecs import (
    BashSpawnEvent,
    FileAccessEvent,
    FileAccessResult,
    MessageUpdateEvent,
    ToolCallEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    hookimpl,
)

from .convert import end_update, plan_entries, result_content, start_update

TERMINAL_OUTPUT_LIMIT = 1024 * 1024
"""Bytes of a command's output the editor keeps (``outputByteLimit``); pi's bash tool
cuts what the model sees further (its usual 50 KB / 2,000 lines)."""

_current_call: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("pi_acp_call", default=None)
"""The tool call whose ``tool_call`` gate is running (id, tool name), for ``confirm``."""


REASON_LIMIT = 1000
"""Characters of a client's error reason passed on."""


class ClientError(Exception):
    """The client answered one of pi's requests (``terminal/create``,
    ``session/request_permission``, ``fs/read_text_file`` ...) with a JSON-RPC error."""

    def __init__(self, method: str, error: RequestError) -> None:
        self.method = method
        self.code = error.code
        self.data = error.data
        super().__init__(f"the editor answered {method} with an error: {client_reason(error)}")


def client_reason(error: RequestError) -> str:
    """The client's reason: its error message, and the details of its ``data``
    (``{"details": "..."}``, as the SDK sends them, or every field)."""
    message = str(error).strip() or f"error {error.code}"
    data = error.data
    detail: str | None = None
    if isinstance(data, str):
        detail = data
    elif isinstance(data, dict):
        named = next((data[k] for k in ("details", "message", "reason") if isinstance(data.get(k), str)), None)
        detail = named if named is not None else ", ".join(f"{k}: {_plain(v)}" for k, v in data.items())
    elif data is not None:
        detail = _plain(data)
    detail = detail.strip() if detail else None
    reason = f"{message} ({detail})" if detail and detail != message else message
    return reason if len(reason) <= REASON_LIMIT else reason[: REASON_LIMIT - 1] + "…"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


@dataclass
class Capabilities:
    """What the client offered in ``initialize``."""

    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False

    @classmethod
    def of(cls, client: ClientCapabilities | None) -> Capabilities:
        if client is None:
            return cls()
        fs = client.fs
        return cls(
            read_text_file=bool(fs and fs.read_text_file),
            write_text_file=bool(fs and fs.write_text_file),
            terminal=bool(client.terminal),
        )


@dataclass
class Link:
    """What the hooks and the UI of one ACP session share: the client, the session id
    (known once the runtime exists) and the ordered queue of updates."""

    client: Any
    capabilities: Capabilities
    cwd: str
    session_id: str = ""
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    old_text: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Tool call id -> (path, the text before the change) of file tools."""
    diffs: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)
    """Tool call id -> (path, old text, new text) of a finished write."""
    terminals: dict[str, str] = field(default_factory=dict)
    """Tool call id -> the editor terminal that runs it."""

    def push(self, update: Any) -> None:
        self.queue.put_nowait(update)

    async def flush(self) -> None:
        await self.queue.join()

    async def send_loop(self) -> None:
        """Send the queued updates one at a time, in order."""
        while True:
            update = await self.queue.get()
            try:
                await self.client.session_update(session_id=self.session_id, update=update)
            except Exception as exc:  # the client went away or refused one: keep going
                print(f"pi acp: session/update failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                self.queue.task_done()


class EditorHooks:
    """The editor's side of one session, as pi hooks (see the module docstring)."""

    def __init__(self, link: Link) -> None:
        self.link = link

    @hookimpl(tryfirst=True)
    def tool_call(self, event: ToolCallEvent) -> None:
        _current_call.set((event.tool_call_id, event.tool_name))

    @hookimpl(trylast=True)
    async def file_access(self, event: FileAccessEvent) -> FileAccessResult | None:
        link = self.link
        call = event.tool_call_id or ""
        if event.operation == "read":
            if not link.capabilities.read_text_file:
                return None
            try:
                response = await link.client.read_text_file(session_id=link.session_id, path=event.path)
            except RequestError as exc:
                return FileAccessResult(block=True, reason=str(ClientError("fs/read_text_file", exc)))
            if call and event.tool_name == "edit":
                link.old_text[call] = (event.path, response.content)
            return FileAccessResult(content=response.content)
        content = event.content or ""
        if call:
            _, old = link.old_text.pop(call, (event.path, None))
            if old is None:
                old = await asyncio.to_thread(_read_local, event.path)
            link.diffs[call] = (event.path, old, content)
        if not link.capabilities.write_text_file:
            return None
        await asyncio.to_thread(os.makedirs, os.path.dirname(event.path) or ".", exist_ok=True)
        try:
            await link.client.write_text_file(session_id=link.session_id, path=event.path, content=content)
        except RequestError as exc:
            link.diffs.pop(call, None)
            return FileAccessResult(block=True, reason=str(ClientError("fs/write_text_file", exc)))
        return FileAccessResult(handled=True)

    @hookimpl(trylast=True)
    def bash_spawn(self, event: BashSpawnEvent) -> None:
        if not self.link.capabilities.terminal or event.source != "tool" or event.pass_fds:
            return
        removed = [k for k in os.environ if k not in event.env and not k.startswith("PI_")]
        if removed:  # a plugin filtered the environment: the editor's terminal cannot unset variables
            return
        event.launch = self.run_in_terminal

    async def run_in_terminal(self, event: BashSpawnEvent, on_data: Any) -> int:
        """Run the command in the editor's terminal; its output is pi's once it exits."""
        link = self.link
        client = link.client
        env = [EnvVariable(name=k, value=v) for k, v in event.env.items() if os.environ.get(k) != v]
        await link.flush()  # the editor knows the tool call before its terminal
        try:
            created = await client.create_terminal(
                session_id=link.session_id,
                command=event.argv[0],
                args=list(event.argv[1:]),
                env=env,
                cwd=event.cwd,
                output_byte_limit=TERMINAL_OUTPUT_LIMIT,
            )
        except RequestError as exc:  # the bash tool fails with the client's reason
            raise ClientError("terminal/create", exc) from None
        terminal = created.terminal_id
        call = event.tool_call_id
        if call:
            link.terminals[call] = terminal
            link.push(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call,
                    status="in_progress",
                    content=[TerminalToolCallContent(type="terminal", terminal_id=terminal)],
                )
            )
        method = "terminal/wait_for_exit"
        try:
            status = await client.wait_for_terminal_exit(session_id=link.session_id, terminal_id=terminal)
            method = "terminal/output"
            output = await client.terminal_output(session_id=link.session_id, terminal_id=terminal)
        except RequestError as exc:
            raise ClientError(method, exc) from None
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(client.kill_terminal(session_id=link.session_id, terminal_id=terminal))
            raise
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(client.release_terminal(session_id=link.session_id, terminal_id=terminal))
        if output.truncated:
            on_data(b"[the editor kept only the end of the output]\n")
        if output.output:
            on_data(output.output.encode("utf-8", errors="replace"))
        if status.signal:
            number = getattr(signals.Signals, status.signal, None) if status.signal.startswith("SIG") else None
            return -int(number) if number is not None else -int(signals.SIGTERM)
        return int(status.exit_code) if status.exit_code is not None else 1


def _read_local(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


class ClientMcpServers:
    """The MCP servers of ``session/new`` / ``session/load``, handed to pluggable-pi-mcp."""

    def __init__(self, servers: Sequence[Any]) -> None:
        self.servers = list(servers)

    @hookimpl
    def register_mcp_servers(self, register: Any) -> None:
        for server in self.servers:
            config = mcp_config(server)
            if config is None:
                print(
                    f"pi acp: MCP server {server.name!r}: this transport is not supported (use stdio or http)",
                    file=sys.stderr,
                )
                continue
            try:
                register(server.name, config)
            except ValueError as exc:
                print(f"pi acp: MCP server {server.name!r}: {exc}", file=sys.stderr)


def mcp_config(server: Any) -> dict[str, Any] | None:
    """An ACP MCP server as an ``mcpServers`` entry of pluggable-pi-mcp (stdio or HTTP). Its tools
    are ``direct``: the editor's servers are the tools the user picked for this editor."""
    command = getattr(server, "command", None)
    if isinstance(command, str):
        config: dict[str, Any] = {"command": command, "args": list(server.args or []), "exposure": "direct"}
        if server.env:
            config["env"] = {variable.name: variable.value for variable in server.env}
        return config
    if getattr(server, "type", None) == "http":
        entry: dict[str, Any] = {"url": server.url, "exposure": "direct"}
        if server.headers:
            entry["headers"] = {header.name: header.value for header in server.headers}
        return entry
    return None


ALLOW, ALWAYS, REJECT = "allow", "always", "reject"


class EditorUI:
    """``ctx.ui`` of a session in an editor: dialogs become permission requests."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.always: set[tuple[str, str]] = set()
        self._asked = 0

    def _call(self, title: str) -> tuple[str, str, bool]:
        current = _current_call.get()
        if current is not None:
            return current[0], current[1], True
        self._asked += 1
        return f"pi-dialog-{self._asked}", title, False

    async def _ask(
        self, call_id: str, title: str | None, message: str, options: list[PermissionOption], timeout: float | None
    ) -> str | None:
        link = self.link
        await link.flush()
        content = (
            [ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=message))]
            if message
            else None
        )
        request = link.client.request_permission(
            session_id=link.session_id,
            tool_call=ToolCallUpdate(tool_call_id=call_id, title=title, content=content),
            options=options,
        )
        try:
            response = await asyncio.wait_for(request, timeout) if timeout else await request
        except (TimeoutError, ConnectionError):
            return None
        except RequestError as exc:  # the asking plugin fails with the client's reason
            raise ClientError("session/request_permission", exc) from None
        outcome = response.outcome
        return outcome.option_id if isinstance(outcome, AllowedOutcome) else None

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        call_id, key, is_tool = self._call(title)
        remembered = (key, title)
        if remembered in self.always:
            return True
        options = [
            PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
            PermissionOption(option_id=ALWAYS, name="Always allow", kind="allow_always"),
            PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
        ]
        text = f"{title}\n{message}" if is_tool and message else title if is_tool else message
        chosen = await self._ask(call_id, None if is_tool else title, text, options, timeout)
        if chosen == ALWAYS:
            self.always.add(remembered)
        return chosen in (ALLOW, ALWAYS)

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        if not options:
            return None
        call_id, _, is_tool = self._call(title)
        choices = [
            PermissionOption(option_id=f"option-{i}", name=str(o), kind="allow_once") for i, o in enumerate(options)
        ]
        chosen = await self._ask(call_id, None if is_tool else title, title, choices, timeout)
        if chosen is None or not chosen.startswith("option-"):
            return None
        return str(options[int(chosen.removeprefix("option-"))])

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        return None  # ACP has no free-text dialog (outside the unstable elicitation extension)

    async def editor(self, title: str, prefill: str = "") -> str | None:
        return None

    async def custom(self, factory: Any, *, overlay: bool = False, **options: Any) -> Any:
        return None  # a component needs pi's terminal; the editor draws its own UI

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None:
        print(f"pi acp: {level}: {message}", file=sys.stderr)

    def set_status(self, key: str, text: str | None) -> None:
        return None

    def set_widget(self, key: str, lines: Sequence[str] | None) -> None:
        return None

    def set_title(self, title: str) -> None:
        return None

    def set_editor_text(self, text: str) -> None:
        return None


class EventBridge:
    """pi's session events as ``session/update`` notifications."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.started: set[str] = set()

    def __call__(self, event: Any) -> None:
        link = self.link
        if getattr(event, "type", None) == "extension_error":  # a plugin failed: the editor's agent log
            print(f"pi acp: extension error ({event.extension_path}) in {event.event}: {event.error}", file=sys.stderr)
        elif isinstance(event, MessageUpdateEvent):
            delta = event.assistant_message_event
            kind = getattr(delta, "type", None)
            text = getattr(delta, "delta", None)
            if not isinstance(text, str) or not text:
                return
            if kind == "text_delta":
                link.push(
                    AgentMessageChunk(
                        session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
                    )
                )
            elif kind == "thinking_delta":
                link.push(
                    AgentThoughtChunk(
                        session_update="agent_thought_chunk", content=TextContentBlock(type="text", text=text)
                    )
                )
        elif isinstance(event, ToolExecutionStartEvent):
            self.started.add(event.tool_call_id)
            link.push(start_update(event.tool_call_id, event.tool_name, dict(event.args), link.cwd))
        elif isinstance(event, ToolExecutionUpdateEvent):
            if event.tool_call_id in link.terminals:
                return  # the editor shows the terminal itself
            link.push(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=event.tool_call_id,
                    status="in_progress",
                    content=result_content(event.partial_result.content) or None,
                )
            )
        elif isinstance(event, ToolExecutionEndEvent):
            call = event.tool_call_id
            diff = link.diffs.pop(call, None)
            link.old_text.pop(call, None)
            terminal = link.terminals.pop(call, None)
            content = event.result.content
            update = end_update(call, content, is_error=event.is_error, diff=diff, details=event.result.details)
            if terminal is not None:
                update.content = [
                    TerminalToolCallContent(type="terminal", terminal_id=terminal),
                    *(update.content or []),
                ]
            link.push(update)
            entries = plan_entries(event.result.details)
            if entries is not None:
                link.push(AgentPlanUpdate(session_update="plan", entries=entries))
