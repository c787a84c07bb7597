"""What plugin code can see and do: the context protocols.

Every hook implementation may take a ``ctx`` argument. It is an
:class:`ExtensionContext`: a live view of the session runtime (its properties read the
current state each time) plus the actions a plugin may take. Command handlers get a
:class:`CommandContext` (which adds session control), tools a :class:`ToolContext`
(which adds the call's id, signal, progress updates and nested tool calls), and
``project_trust`` handlers a limited :class:`ProjectTrustContext`.

After ``/reload`` or a session replacement the old runtime is torn down and every
context it handed out raises :class:`StaleContextError`. Never keep a ``ctx`` beyond
the call that received it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .entries import SessionEntry, SessionHeader
    from .llm import Model
    from .messages import CustomMessage, UserContent
    from .registration import CommandDefinition
    from .signals import AbortSignal
    from .tools import ToolDefinition, ToolResult

Mode = Literal["tui", "rpc", "json", "print", "sdk", "acp"]
"""``ctx.mode``: the interactive terminal, ``pi --mode rpc`` / ``json``, print mode, an
embedding program, or ``pi acp`` (pi-acp: an editor speaking the Agent Client Protocol).
Dialogs reach a user in ``tui``, ``rpc`` and ``acp`` (``ctx.has_ui``)."""
DeliverAs = Literal["steer", "follow_up", "next_turn"]


class StaleContextError(RuntimeError):
    """A context (or plugin API object) was used after its runtime was replaced or
    reloaded. Use the ``ctx`` of the current call instead of a stored one."""


class UIContext(Protocol):
    """Dialogs and notifications. Without a UI (print and json modes) dialogs return
    their default at once: ``confirm`` -> ``False``, ``select``/``input`` -> ``None``."""

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool: ...

    async def select(
        self, title: str, options: Sequence[str], *, timeout: float | None = None
    ) -> str | None: ...

    async def input(
        self, title: str, placeholder: str = "", *, timeout: float | None = None
    ) -> str | None: ...

    async def editor(self, title: str, prefill: str = "") -> str | None: ...

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None: ...

    def set_status(self, key: str, text: str | None) -> None: ...

    def set_widget(self, key: str, lines: Sequence[str] | None) -> None: ...


class SessionView(Protocol):
    """Read-only access to the session (``ctx.session_manager``)."""

    def get_cwd(self) -> str: ...
    def get_session_id(self) -> str: ...
    def get_session_file(self) -> str | None: ...
    def get_session_dir(self) -> str | None: ...
    def get_session_name(self) -> str | None: ...
    def get_header(self) -> SessionHeader | None: ...
    def get_entries(self) -> list[SessionEntry]: ...
    def get_entry(self, entry_id: str) -> SessionEntry | None: ...
    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]: ...
    def get_leaf_id(self) -> str | None: ...
    def get_label(self, entry_id: str) -> str | None: ...


class ContextUsage(Protocol):
    tokens: int | None
    context_window: int
    percent: float | None


@runtime_checkable
class ExtensionContext(Protocol):
    """The context every hook implementation may receive as ``ctx``."""

    # ---- state (live) ------------------------------------------------------------
    @property
    def cwd(self) -> str: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def has_ui(self) -> bool: ...
    @property
    def ui(self) -> UIContext: ...
    @property
    def session_manager(self) -> SessionView: ...
    @property
    def model(self) -> Model | None: ...
    @property
    def thinking_level(self) -> str: ...
    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the current run, ``None`` while idle."""
        ...
    @property
    def hook(self) -> Any:
        """The hooks of this runtime. pi's events go through pi's runner, with their
        composition rule, and return an awaitable: ``await ctx.hook.tool_call(event)``
        (the event model or a dict of its fields; the result is the combined outcome,
        e.g. the blocking :class:`ToolCallResult` or ``None``). Hooks that plugins
        publish with ``add_hookspecs`` are pluggy's own hook callers, called pluggy's way
        (keyword arguments, a list of results, wrappers honoured):
        ``ctx.hook.register_mcp_servers(register=...)``."""
        ...

    def is_project_trusted(self) -> bool: ...
    def is_idle(self) -> bool: ...
    def has_pending_messages(self) -> bool: ...
    def abort(self) -> None: ...
    def shutdown(self) -> None: ...
    def get_settings(self, scope: Literal["effective", "user", "project"] = "effective") -> dict[str, Any]:
        """A copy of the settings: ``effective`` (user and trusted project merged),
        ``user`` (``~/.pi/agent/settings.json`` alone — what an organisation policy reads,
        since a trusted project can override the merged view) or ``project`` (the
        trusted project's ``.pi/settings.json``; ``{}`` when the project is not trusted)."""
        ...
    def get_flag(self, name: str) -> Any:
        """The value of a flag registered through ``register_flags``."""
        ...
    def get_context_usage(self) -> ContextUsage | None: ...
    def get_system_prompt(self) -> str: ...

    # ---- actions -----------------------------------------------------------------
    async def send_message(
        self,
        message: CustomMessage | dict[str, Any],
        *,
        deliver_as: DeliverAs = "follow_up",
        trigger_turn: bool = False,
    ) -> None:
        """Add a custom message to the context (delivered as steering, follow-up or
        with the next turn while a run is active)."""
        ...

    async def send_user_message(
        self, content: str | list[UserContent], *, deliver_as: DeliverAs | None = None
    ) -> None: ...

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Persist plugin state as a ``custom`` entry (never sent to the model)."""
        ...

    def set_session_name(self, name: str | None) -> None: ...
    def get_session_name(self) -> str | None: ...
    def set_label(self, entry_id: str, label: str | None) -> None: ...
    def get_active_tools(self) -> list[str]: ...
    def get_all_tools(self) -> list[ToolDefinition]: ...
    def set_active_tools(self, names: Sequence[str]) -> None: ...
    def is_tool_deselected(self, name: str) -> bool:
        """Whether the user's tool selection turned ``name`` off (``--no-tools``,
        ``--exclude-tools``, a ``--tools`` allowlist without it, or a ``-name`` entry in
        ``--tools`` / ``defaultTools``). A plugin that switches tools on by itself should
        leave such tools off; explicit user actions may still activate them (except
        excluded tools, which never activate)."""
        ...
    def register_tool(self, definition: ToolDefinition) -> None:
        """Register (or re-register) a tool at run time; it is declared from the next
        model request of the current run. A plugin may replace (or withdraw, with
        ``exposure="hidden"``) its own tools and built-in ones; a tool of another plugin
        raises ``ValueError``. The owner is the plugin whose hook handler, command or
        tool is running (tasks a handler starts inherit it)."""
        ...
    def get_commands(self) -> list[CommandDefinition]: ...
    async def set_model(self, model: Model) -> bool: ...
    def set_thinking_level(self, level: str) -> None: ...
    def compact(
        self,
        custom_instructions: str | None = None,
        *,
        on_complete: Callable[[Any], Any] | None = None,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> None: ...


@runtime_checkable
class ToolContext(ExtensionContext, Protocol):
    """The context a tool's ``execute`` receives."""

    @property
    def tool_call_id(self) -> str: ...
    @property
    def parent_tool_call_id(self) -> str | None: ...
    @property
    def tools(self) -> list[str]:
        """Names of the tools this tool may call with :meth:`execute_tool`."""
        ...

    def update(self, partial: ToolResult | str) -> None:
        """Report progress (a partial result); shown live, not sent to the model."""
        ...

    async def execute_tool(
        self,
        name: str,
        args: dict[str, Any],
        *,
        signal: AbortSignal | None = None,
        on_update: Callable[[ToolResult], Any] | None = None,
    ) -> ToolResult:
        """Call another tool through the whole pipeline (validation, ``tool_call``,
        execution, ``tool_result``). Never raises for tool failures: unknown tools,
        invalid arguments, blocked calls and errors come back with ``is_error``."""
        ...


@runtime_checkable
class CommandContext(ExtensionContext, Protocol):
    """The context of a command handler: adds session control. These methods can
    deadlock when called from event handlers, hence only here."""

    async def wait_for_idle(self) -> None: ...
    async def new_session(
        self,
        *,
        parent_session: str | None = None,
        setup: Callable[[Any], Any] | None = None,
        with_session: Callable[[CommandContext], Awaitable[Any]] | None = None,
    ) -> dict[str, Any]: ...
    async def fork(
        self,
        entry_id: str,
        *,
        position: Literal["before", "at"] = "before",
        with_session: Callable[[CommandContext], Awaitable[Any]] | None = None,
    ) -> dict[str, Any]: ...
    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> dict[str, Any]: ...
    async def switch_session(
        self,
        session_path: str,
        *,
        with_session: Callable[[CommandContext], Awaitable[Any]] | None = None,
    ) -> dict[str, Any]: ...
    async def reload(self) -> None: ...
    def get_system_prompt_options(self) -> Any: ...


@runtime_checkable
class ProjectTrustContext(Protocol):
    """The limited context of ``project_trust`` handlers: no session exists yet."""

    @property
    def cwd(self) -> str: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def has_ui(self) -> bool: ...
    @property
    def ui(self) -> UIContext: ...


__all__ = [
    "CommandContext",
    "ContextUsage",
    "DeliverAs",
    "ExtensionContext",
    "Mode",
    "ProjectTrustContext",
    "SessionView",
    "StaleContextError",
    "ToolContext",
    "UIContext",
]
