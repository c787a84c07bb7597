"""Drive the real ``pi acp`` in a subprocess with the ``acp`` SDK's client side,
against a loopback model server (tests/ai/wire_server.py) configured in models.json."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "ai"))
sys.path.insert(0, str(ROOT / "tests" / "cli"))

from cli_helpers import configure_local_endpoint, text_reply, tool_reply  # noqa: E402
from wire_server import WireServer, use_server  # noqa: E402

POLICY = Path(__file__).with_name("confirm_policy.py")
PI_ACP = [sys.executable, "-m", "pi_core", "acp"]

__all__ = [
    "POLICY",
    "Editor",
    "WireServer",
    "configure_local_endpoint",
    "open_pi",
    "text_reply",
    "tool_reply",
    "use_server",
]


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None


class Editor:
    """An ACP client that records every notification and request. It offers the file
    system (in-memory ``buffers`` over the disk; writes go to the disk too) and a
    terminal (a local process) when asked to; it answers permission requests from
    ``answers`` (``"allow"``, ``"always"``, ``"reject"``, or ``None``: cancelled)."""

    def __init__(self, *, fs: bool = True, terminal: bool = True) -> None:
        self.fs = fs
        self.terminal = terminal
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.answers: list[str | None] = []
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, Terminal] = {}
        self.commands: list[list[str]] = []
        self.tool_call_seen = asyncio.Event()

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs), terminal=self.terminal
        )

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == kind and hasattr(u.content, "text"))

    def tool_updates(self, call_id: str) -> list[Any]:
        return [u for u in self.updates if getattr(u, "tool_call_id", None) == call_id]

    # ---- acp.Client

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if update.session_update == "tool_call":
            self.tool_call_seen.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        self.permissions.append((tool_call, options))
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers.pop(path, None)
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        argv = [command, *(args or [])]
        self.commands.append(argv)
        environment = {**os.environ, **{v.name: v.value for v in env or []}}
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=environment,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        terminal = Terminal(process)

        async def read() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(4096):
                terminal.output += chunk

        terminal.reader = asyncio.ensure_future(read())
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        return WaitForTerminalExitResponse(
            exit_code=code if code >= 0 else None, signal=None if code >= 0 else "SIGKILL"
        )

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None else None
        return TerminalOutputResponse(output=terminal.output.decode(), truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        await self.kill_terminal(session_id, terminal_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


@contextlib.asynccontextmanager
async def open_pi(
    editor: Editor, *args: str, cwd: Path, env: dict[str, str] | None = None, initialize: bool = True
) -> AsyncIterator[Any]:
    """``pi acp`` in a subprocess, connected to ``editor``; initialized unless told."""
    environment = {**os.environ, "PI_EXTENSIONS": "", "PYTHONUNBUFFERED": "1", **(env or {})}
    log = open(cwd.parent / "pluggable-pi-acp.stderr", "ab")
    try:
        async with acp.spawn_agent_process(
            editor, *PI_ACP, *args, cwd=str(cwd), env=environment, transport_kwargs={"stderr": log.fileno()}
        ) as (conn, _process):
            if initialize:
                response = await conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION, client_capabilities=editor.capabilities()
                )
                assert response.protocol_version == acp.PROTOCOL_VERSION
            yield conn
    finally:
        log.close()


def stderr_of(cwd: Path) -> str:
    path = cwd.parent / "pluggable-pi-acp.stderr"
    return path.read_text() if path.exists() else ""
