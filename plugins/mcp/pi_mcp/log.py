"""Server log notifications, appended to ``<agent dir>/mcp.log``.

Each line is ``<time> [<server>] <level> <logger>: <message>``. The file moves to
``mcp.log.1`` once it grows past 5 MB. It is created readable by its owner only (0600):
servers may log what they were given.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

MAX_LOG_BYTES = 5 * 1024 * 1024
LOG_FILE_NAME = "mcp.log"


class McpLog:
    def __init__(self, path: Path, max_bytes: int = MAX_LOG_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def write(self, server: str, level: str, logger: str | None, data: Any) -> None:
        message = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        line = f"{stamp} [{server}] {level} {logger or '-'}: {message}".replace("\r", " ")
        line = " | ".join(line.splitlines()) + "\n"
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    size = self.path.stat().st_size
                except FileNotFoundError:
                    size = 0
                if size and size + len(line) > self.max_bytes:
                    os.replace(self.path, self.path.with_name(self.path.name + ".1"))
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as handle:
                    handle.write(line)
            except OSError:
                pass  # a log that cannot be written must not break the server connection
