"""The occasional events pi makes while a tool runs, for the plugins that implement
their hooks (``bash_spawn``, ``file_access``, ``tool_result``, ``hook_outcome``): apart
from :mod:`pi_hookspecs._occasional` so that a run whose plugins confine commands or
rewrite tool results does not make that module's other classes. Import them from
:mod:`pi_hookspecs` or :mod:`pi_hookspecs.events`, not from here."""

from typing import Any, Literal

from pydantic import Field

from ._base import StrictModel
from ._event import Event, HookOutcome
from .messages import Usage, UserContent


class HookOutcomeEvent(Event):
    """A handler of another event blocked, transformed, handled or cancelled it, or failed."""

    type: Literal["hook_outcome"] = "hook_outcome"
    hook: str
    """The event whose handler acted (``"tool_call"`` …)."""
    plugin: str
    """The plugin whose handler acted."""
    outcome: HookOutcome
    message: str | None = None
    """The block reason, or the error, when there is one."""
    tool_call_id: str | None = None
    """The tool call the event concerns (``tool_call``, ``tool_result``, ``tool_execution_*``)."""


class BashSpawnEvent(Event):
    """A shell command pi is about to start. ``argv``, ``env`` and ``pass_fds`` are
    mutable: change them in place (e.g. wrap ``argv`` in a sandbox launcher, filter
    ``env``); the process starts with what the last handler left. ``on_exit`` collects
    zero-argument callables (sync or async) that pi calls once the process has exited,
    or when it never started."""

    type: Literal["bash_spawn"] = "bash_spawn"
    command: str
    """The command as given (by the model, the user or a nested call), without the
    ``shellCommandPrefix`` that ``argv`` may carry."""
    argv: list[str]
    """What pi will execute: ``[shell, "-c", command]`` unless a handler changed it."""
    cwd: str
    env: dict[str, str]
    """The complete environment of the process."""
    source: Literal["tool", "user"] = "tool"
    """``"tool"``: the ``bash`` tool (also nested calls through ``ctx.execute_tool``);
    ``"user"``: a ``!command`` / ``!!command`` the user typed (or an RPC ``bash``)."""
    tool_call_id: str | None = None
    pass_fds: list[int] = Field(default_factory=list)
    """File descriptors of pi's process to keep open in the child."""
    on_exit: list[Any] = Field(default_factory=list)
    launch: Any = None
    """``None``: pi starts ``argv`` as a local process. A handler may set an async
    callable ``launch(event, on_data) -> int`` that starts the command elsewhere (an
    editor's terminal, a remote host), streams its output as bytes to ``on_data`` and
    returns its exit status (negative: killed by that signal, as in ``subprocess``)."""


class BashSpawnResult(StrictModel):
    block: bool = False
    reason: str | None = None


class FileAccessEvent(Event):
    """A built-in file tool is about to read or write a file's text."""

    type: Literal["file_access"] = "file_access"
    operation: Literal["read", "write"]
    path: str
    """The absolute path."""
    content: str | None = None
    """``write``: the complete new text of the file."""
    tool_name: str
    """``read``, ``edit`` or ``write``."""
    tool_call_id: str | None = None


class FileAccessResult(StrictModel):
    """``read``: ``content``, the file's text as the handler sees it; ``write``:
    ``handled=True`` once the handler has written ``event.content``. ``block=True``
    (with a ``reason``) refuses the operation: the tool fails with the reason."""

    content: str | None = None
    handled: bool = False
    block: bool = False
    reason: str | None = None


class ToolResultEvent(Event):
    type: Literal["tool_result"] = "tool_result"
    tool_name: str
    tool_call_id: str
    input: dict[str, Any] = Field(default_factory=dict)
    parent_tool_call_id: str | None = None
    content: list[UserContent] = Field(default_factory=list)
    details: Any = None
    structured_content: Any = None
    is_error: bool = False
    usage: Usage | None = None


class ToolResultPatch(StrictModel):
    """A partial change of a tool result: only the fields a handler sets replace the
    current values (replacing ``content`` without ``structured_content`` drops the
    structured content, which may no longer match)."""

    content: list[UserContent] | None = None
    details: Any = None
    structured_content: Any = None
    is_error: bool | None = None
    usage: Usage | None = None
