"""Builders for compaction tests: a linear/tree session builder and a scripted model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomMessageEntry,
    LabelEntry,
    LlmContext,
    MessageEntry,
    Model,
    ModelChangeEntry,
    SessionEntry,
    StreamOptions,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

MODEL = Model(id="summarizer", provider="faux", api="faux", context_window=200_000, max_tokens=8192)


class Session:
    """Appends entries, each a child of the previous one (or of ``parent=``)."""

    def __init__(self) -> None:
        self.entries: list[SessionEntry] = []
        self.leaf: str | None = None
        self._next = 0
        self._calls = 0

    def _add(self, cls: type[Any], parent: str | None = "", **fields: Any) -> Any:
        self._next += 1
        entry_id = f"e{self._next:07d}"
        parent_id = self.leaf if parent == "" else parent
        entry = cls(id=entry_id, parent_id=parent_id, timestamp="2025-01-01T00:00:00.000Z", **fields)
        self.entries.append(entry)
        self.leaf = entry_id
        return entry

    def message(self, message: Any, **kw: Any) -> MessageEntry:
        entry: MessageEntry = self._add(MessageEntry, message=message, **kw)
        return entry

    def user(self, text: str, **kw: Any) -> MessageEntry:
        return self.message(UserMessage(content=text), **kw)

    def assistant(
        self,
        text: str = "",
        *calls: tuple[str, dict[str, Any]],
        usage: Usage | None = None,
        stop_reason: str = "stop",
        **kw: Any,
    ) -> MessageEntry:
        content: list[Any] = [TextContent(text=text)] if text else []
        for name, arguments in calls:
            self._calls += 1
            content.append(ToolCall(id=f"call{self._calls}", name=name, arguments=arguments))
        message = AssistantMessage(
            content=content,
            usage=usage or Usage(),
            stop_reason="toolUse" if calls and stop_reason == "stop" else stop_reason,
        )
        return self.message(message, **kw)

    def tool_result(self, text: str, name: str = "read", **kw: Any) -> MessageEntry:
        message = ToolResultMessage(tool_call_id=f"call{self._calls}", tool_name=name, content=[TextContent(text=text)])
        return self.message(message, **kw)

    def bash(self, command: str, output: str, **kw: Any) -> MessageEntry:
        return self.message(BashExecutionMessage(command=command, output=output, exit_code=0), **kw)

    def system(self, content: str, **kw: Any) -> MessageEntry:
        return self.message(SystemMessage(content=content), **kw)

    def custom_message(self, text: str, **kw: Any) -> CustomMessageEntry:
        entry: CustomMessageEntry = self._add(CustomMessageEntry, custom_type="note", content=text, **kw)
        return entry

    def branch_summary(self, summary: str, details: Any = None, from_hook: bool | None = None, **kw: Any) -> Any:
        return self._add(BranchSummaryEntry, summary=summary, from_id="x", details=details, from_hook=from_hook, **kw)

    def compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        *,
        details: Any = None,
        from_hook: bool | None = None,
        **kw: Any,
    ) -> CompactionEntry:
        entry: CompactionEntry = self._add(
            CompactionEntry,
            summary=summary,
            first_kept_entry_id=first_kept_entry_id or "pending",
            tokens_before=1000,
            details=details,
            from_hook=from_hook,
            **kw,
        )
        if first_kept_entry_id is None:  # retain-none: records its own id
            entry.first_kept_entry_id = entry.id
        return entry

    def edit(self, target_id: str, replacement: Any = None, **kw: Any) -> ContextEditEntry:
        entry: ContextEditEntry = self._add(ContextEditEntry, target_id=target_id, replacement=replacement, **kw)
        return entry

    def label(self, target_id: str, **kw: Any) -> LabelEntry:
        entry: LabelEntry = self._add(LabelEntry, target_id=target_id, label="mark", **kw)
        return entry

    def model_change(self, **kw: Any) -> ModelChangeEntry:
        entry: ModelChangeEntry = self._add(ModelChangeEntry, provider="p", model_id="m", **kw)
        return entry

    def index(self, entry_id: str) -> int:
        return next(i for i, e in enumerate(self.entries) if e.id == entry_id)


def reply(
    text: str = "## Goal\nsummary",
    *,
    stop_reason: str = "stop",
    error_message: str | None = None,
    usage: Usage | None = None,
    content: list[Any] | None = None,
) -> AssistantMessage:
    return AssistantMessage(
        content=content if content is not None else ([TextContent(text=text)] if text else []),
        stop_reason=stop_reason,
        error_message=error_message,
        usage=usage or Usage(input=100, output=20, total_tokens=120),
    )


@dataclass
class Call:
    model: Model
    context: LlmContext
    options: StreamOptions

    @property
    def prompt(self) -> str:
        message = self.context.messages[0]
        assert isinstance(message, UserMessage) and not isinstance(message.content, str)
        block = message.content[0]
        assert isinstance(block, TextContent)
        return block.text


@dataclass
class ScriptedComplete:
    """A ``complete`` function answering from a script and recording every request."""

    script: list[AssistantMessage | BaseException | Callable[[Call], AssistantMessage]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)

    async def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AssistantMessage:
        call = Call(model, context, options)
        self.calls.append(call)
        if not self.script:
            raise AssertionError("the scripted model was called more often than scripted")
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step(call)
        return step


def scripted(*steps: AssistantMessage | BaseException | Callable[[Call], AssistantMessage]) -> ScriptedComplete:
    return ScriptedComplete(list(steps))


def text_of_size(tokens: int, char: str = "x") -> str:
    """Text estimated at exactly ``tokens`` tokens."""
    return char * (tokens * 4)
