"""A local WebSocket server speaking the Codex backend's responses socket: it records
each upgrade request (path, headers) and each text frame it receives, and answers every
frame with the next scripted reply (a list of events, each sent as one text frame).

It runs its own event loop in a thread, so the client under test may be this process
(pi's wire client) or another one (``pi -p``, pi 1.6.0). ``wsproto`` frames the messages
on the server side too; ``permessage-deflate`` is accepted when the client offers it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate


@dataclass
class Reply:
    events: list[dict[str, Any]] = field(default_factory=list)
    close: int | None = None
    """Close the connection with this code after the events (without a terminal event)."""
    split: bool = False
    """Send each event as two fragments (a continuation frame)."""


@dataclass
class Upgrade:
    path: str
    headers: dict[str, str]


class SocketServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.upgrades: list[Upgrade] = []
        self.frames: list[Any] = []
        """Each received text frame, parsed (with the index of its connection)."""
        self.connections = 0
        self.closes: list[tuple[int, int | None, str]] = []
        """Each close frame a client sent: (connection, code, reason)."""
        self.reject: int | None = None
        """Refuse upgrades with this HTTP status."""
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self._server: asyncio.base_events.Server | None = None

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self._server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait(10)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = WSConnection(ConnectionType.SERVER)
        self.connections += 1
        number = self.connections
        parts: list[str] = []
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                connection.receive_data(data)
                for event in connection.events():
                    if isinstance(event, Request):
                        headers = {k.decode().lower(): v.decode() for k, v in event.extra_headers}
                        self.upgrades.append(Upgrade(event.target, headers))
                        if self.reject is not None:
                            writer.write(connection.send(RejectConnection(status_code=self.reject)))
                            await writer.drain()
                            writer.close()
                            return
                        offered = event.extensions
                        accept = [PerMessageDeflate()] if offered else []
                        writer.write(connection.send(AcceptConnection(extensions=accept)))
                    elif isinstance(event, TextMessage):
                        parts.append(event.data)
                        if not event.message_finished:
                            continue
                        frame = json.loads("".join(parts))
                        parts.clear()
                        self.frames.append({"connection": number, **frame})
                        reply = self.replies.popleft() if self.replies else Reply(close=1011)
                        for item in reply.events:
                            text = json.dumps(item)
                            if reply.split:
                                half = len(text) // 2
                                writer.write(connection.send(TextMessage(text[:half], message_finished=False)))
                                writer.write(connection.send(TextMessage(text[half:], message_finished=True)))
                            else:
                                writer.write(connection.send(TextMessage(text)))
                        if reply.close is not None:
                            writer.write(connection.send(CloseConnection(code=reply.close, reason="scripted")))
                            await writer.drain()
                            writer.close()
                            return
                    elif isinstance(event, Ping):
                        writer.write(connection.send(event.response()))
                    elif isinstance(event, CloseConnection):
                        self.closes.append((number, event.code, event.reason or ""))
                        writer.write(connection.send(event.response()))
                        await writer.drain()
                        writer.close()
                        return
                await writer.drain()
        except (ConnectionError, OSError):
            return
        finally:
            writer.close()
