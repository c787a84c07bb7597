"""Content blocks, usage and the messages of a conversation.

These are the ``AgentMessage`` values of the TypeScript pi (see its message-types
reference): the same roles, the same fields, written in camelCase on disk.
Unknown roles and block types (from a newer pi, or a plugin's own role) are kept
as :class:`UnknownMessage` / :class:`UnknownContent` rather than rejected.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag

from ._base import PiModel, now_ms

# --------------------------------------------------------------------------- blocks


class TextContent(PiModel):
    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ImageContent(PiModel):
    """An image: base64 ``data`` with its ``mime_type`` (``image/png`` …)."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ThinkingContent(PiModel):
    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    thinking_signature: str | None = None
    redacted: bool | None = None


class ToolCall(PiModel):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None
    namespace: str | None = None


class UnknownContent(PiModel):
    """A content block of a type this version does not know; kept verbatim."""

    type: str


_BLOCKS = {"text", "image", "thinking", "toolCall"}


def _block_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _BLOCKS else "unknown"


UserContent = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[ThinkingContent, Tag("thinking")]
    | Annotated[ToolCall, Tag("toolCall")]
    | Annotated[UnknownContent, Tag("unknown")],
    Discriminator(_block_tag),
]
"""Any content block. User and tool-result messages hold text and image blocks;
assistant messages hold text, thinking and tool-call blocks."""

ContentBlock = UserContent
AssistantContent = UserContent
ToolResultContent = UserContent

# --------------------------------------------------------------------------- usage


class Cost(PiModel):
    """Cost in US dollars."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    total_from_provider: bool | None = None
    """``True`` when ``total`` is the amount the provider billed (OpenRouter reports it),
    ``False`` when pi computed it from the model's prices, absent before either."""

    _whole_numbers_as_int = True


class Usage(PiModel):
    """Token usage of one model response. ``reasoning`` is already part of ``output``."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int | None = None
    reasoning: int | None = None
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost.model_construct)


# --------------------------------------------------------------------------- tools as declared


class ToolDeclaration(PiModel):
    """A tool as the model sees it: name, description and JSON Schema of the arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    constrained_sampling: dict[str, Any] | Literal[False] | None = None
    """Ask the provider to constrain the arguments to the schema: ``{"type":
    "json_schema", "strict": "prefer"}`` (strict when the model and the schema allow it)
    or ``"require"`` (the request fails otherwise); ``None``/``False``: no request."""


class ToolReference(PiModel):
    name: str


# --------------------------------------------------------------------------- messages

StopReason = Literal["pending", "stop", "length", "toolUse", "error", "aborted", "deferred"]


class SystemMessage(PiModel):
    """The prompt and the tool loadout. The leading one declares everything; later ones
    patch ``sections`` by name (``None`` removes one) and add or remove tools."""

    role: Literal["system"] = "system"
    content: str | list[TextContent] = ""
    sections: dict[str, str | None] | None = None
    tools_added: list[ToolDeclaration] | None = None
    tools_removed: list[ToolReference] | None = None
    timestamp: int = Field(default_factory=now_ms)


class UserMessage(PiModel):
    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int = Field(default_factory=now_ms)


class AssistantMessage(PiModel):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    response_model: str | None = None
    response_id: str | None = None
    provider_thinking_level: str | None = None
    thinking_level: str | None = None
    diagnostics: list[Any] | None = None
    usage: Usage = Field(default_factory=Usage.model_construct)
    stop_reason: StopReason = "stop"
    deferred: dict[str, Any] | None = None
    error_message: str | None = None
    raw_stop_reason: str | None = None
    end_turn: bool | None = None
    duration_ms: int | None = None
    """How long the response took, from the request to its last event (milliseconds)."""
    timestamp: int = Field(default_factory=now_ms)

    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]


class NestedToolCallRecord(PiModel):
    id: str
    name: str
    arguments: dict[str, Any] | None = None
    arguments_bytes: int | None = None
    status: Literal["ok", "error", "unfinished"] = "ok"
    duration_ms: float | None = None
    error: str | None = None


class NestedToolCalls(PiModel):
    calls: list[NestedToolCallRecord] = Field(default_factory=list)
    complete: bool = True


class ToolResultMessage(PiModel):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent] = Field(default_factory=list)
    details: Any = None
    usage: Usage | None = None
    nested_calls: NestedToolCalls | None = None
    is_error: bool = False
    duration_ms: int | None = None
    """How long the tool ran (milliseconds); absent when it never ran."""
    timestamp: int = Field(default_factory=now_ms)


class BashExecutionMessage(PiModel):
    """A user's ``!cmd`` shell command and its output (not a tool result)."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int = Field(default_factory=now_ms)


class CustomMessage(PiModel):
    """A message a plugin adds to the context; sent to the model as user text."""

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int = Field(default_factory=now_ms)


class BranchSummaryMessage(PiModel):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"from_id"})
    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str | None = None
    timestamp: int = Field(default_factory=now_ms)


class CompactionSummaryMessage(PiModel):
    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int = 0
    timestamp: int = Field(default_factory=now_ms)


class UnknownMessage(PiModel):
    """A message of a role this version does not know; kept verbatim."""

    role: str
    timestamp: int | None = None


_ROLES = {
    "system",
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
}


def _role_tag(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return role if role in _ROLES else "unknown"


AgentMessage = Annotated[
    Annotated[SystemMessage, Tag("system")]
    | Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[BashExecutionMessage, Tag("bashExecution")]
    | Annotated[CustomMessage, Tag("custom")]
    | Annotated[BranchSummaryMessage, Tag("branchSummary")]
    | Annotated[CompactionSummaryMessage, Tag("compactionSummary")]
    | Annotated[UnknownMessage, Tag("unknown")],
    Discriminator(_role_tag),
]
"""Any message of a conversation, discriminated by ``role``."""

AnyMessage = (
    SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
    | UnknownMessage
)
"""The plain union of the message classes, for annotations."""
