"""Which files a summarised stretch of conversation read and modified.

File operations come from the assistant's tool calls (``read`` reads a file;
``write`` and ``edit`` modify one; the path is the ``path`` argument, or ``file_path``),
from the nested calls recorded on tool results (``nestedCalls``, e.g. a codemode script's)
and, cumulatively, from the ``details`` of earlier pi-generated summaries
(``{"readFiles": [...], "modifiedFiles": [...]}``; summaries a plugin supplied -
``from_hook`` - are skipped, their ``details`` are the plugin's own). ``bash`` commands
are not parsed: a shell command line does not say reliably which files it touched.

The lists are appended to a summary as ``<read-files>`` (read but not modified) and
``<modified-files>`` sections, sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_hookspecs import AgentMessage, AssistantMessage, FileOperations, ToolCall, ToolResultMessage

READ_TOOLS: frozenset[str] = frozenset({"read"})
"""Tools whose ``path`` argument is a file that was read."""
MODIFY_TOOLS: frozenset[str] = frozenset({"write", "edit"})
"""Tools whose ``path`` argument is a file that was modified."""


@dataclass(slots=True)
class FileOpsTracker:
    """Accumulates read and modified paths (insertion-ordered, without duplicates)."""

    read: dict[str, None] = field(default_factory=dict)
    modified: dict[str, None] = field(default_factory=dict)

    def add_tool_call(self, call: ToolCall) -> None:
        self.add_call(call.name, call.arguments)

    def add_call(self, name: str, arguments: Mapping[str, Any] | None) -> None:
        path = _call_path(arguments or {})
        if path is None:
            return
        if name in READ_TOOLS:
            self.read[path] = None
        elif name in MODIFY_TOOLS:
            self.modified[path] = None

    def add_message(self, message: AgentMessage) -> None:
        """Record the file operations of an assistant message's tool calls, and of the
        nested calls recorded on a tool result (``nestedCalls``: tools run by tools)."""
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolCall):
                    self.add_tool_call(block)
        elif isinstance(message, ToolResultMessage) and message.nested_calls is not None:
            for record in message.nested_calls.calls:
                if record.status != "unfinished":
                    self.add_call(record.name, record.arguments)

    def add_messages(self, messages: Iterable[AgentMessage]) -> None:
        for message in messages:
            self.add_message(message)

    def add_details(self, details: Any) -> None:
        """Carry over the file lists of an earlier pi-generated summary's ``details``."""
        if isinstance(details, Mapping):
            self.read.update(dict.fromkeys(_strings(details.get("readFiles"))))
            self.modified.update(dict.fromkeys(_strings(details.get("modifiedFiles"))))

    def add_file_ops(self, ops: FileOperations) -> None:
        self.read.update(dict.fromkeys(ops.read))
        self.modified.update(dict.fromkeys(ops.modified))

    def to_model(self) -> FileOperations:
        """All read paths and all modified paths, sorted."""
        return FileOperations(read=sorted(self.read), modified=sorted(self.modified))


def _call_path(arguments: Mapping[str, Any]) -> str | None:
    for key in ("path", "file_path"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """``(read_only, modified)``: files read but never modified, and modified files,
    both sorted."""
    modified = sorted(set(ops.modified))
    changed = set(modified)
    read_only = sorted({path for path in ops.read if path not in changed})
    return read_only, modified


def file_details(ops: FileOperations) -> dict[str, list[str]]:
    """The ``details`` pi stores on its summaries: ``{"readFiles", "modifiedFiles"}``."""
    read_only, modified = file_lists(ops)
    return {"readFiles": read_only, "modifiedFiles": modified}


def format_file_operations(ops: FileOperations) -> str:
    """The ``<read-files>`` / ``<modified-files>`` sections to append to a summary
    (each only when non-empty), preceded by a blank line; ``""`` when both are empty."""
    read_only, modified = file_lists(ops)
    sections = []
    if read_only:
        sections.append("<read-files>\n" + "\n".join(read_only) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
