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

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .catalogue import CatalogueRefreshResult, ProviderAuth
    from .entries import SessionEntry, SessionHeader
    from .llm import Model, StreamOptions
    from .messages import CustomMessage, UserContent
    from .model_types import ClassifierContext, ClassifierResult, ImagesContext, ImagesResult, ModelType
    from .registration import CommandDefinition, McpServerRegistration
    from .signals import AbortSignal
    from .tools import ToolDefinition, ToolResult

Mode = Literal["tui", "rpc", "json", "print", "sdk", "acp"]
"""``ctx.mode``: the interactive terminal, ``pi --mode rpc`` / ``json``, print mode, an
embedding program, or ``pi acp`` (pluggable-pi-acp: an editor speaking the Agent Client Protocol).
Dialogs reach a user in ``tui``, ``rpc`` and ``acp`` (``ctx.has_ui``)."""
DeliverAs = Literal["steer", "follow_up", "next_turn"]


class StaleContextError(RuntimeError):
    """A context (or plugin API object) was used after its runtime was replaced or
    reloaded. Use the ``ctx`` of the current call instead of a stored one."""


class UIContext(Protocol):
    """Dialogs and notifications. Without a UI (print and json modes) dialogs return
    their default at once: ``confirm`` -> ``False``, ``select``/``input`` -> ``None``."""

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        """Ask a yes/no question; ``True`` for yes. Without a UI, or when ``timeout``
        (seconds) passes unanswered: ``False``."""
        ...

    async def select(self, title: str, options: Sequence[str], *, timeout: float | None = None) -> str | None:
        """Let the user pick one of ``options``; the chosen string, or ``None`` when
        dismissed, timed out or without a UI."""
        ...

    async def input(self, title: str, placeholder: str = "", *, timeout: float | None = None) -> str | None:
        """Ask for one line of text (``placeholder`` shown while it is empty); ``None``
        when dismissed, timed out or without a UI."""
        ...

    async def editor(self, title: str, prefill: str = "") -> str | None:
        """Open a multi-line editor holding ``prefill``; the edited text, or ``None``
        when dismissed or without a UI."""
        ...

    def notify(self, message: str, level: Literal["info", "warning", "error"] = "info") -> None:
        """Show a message. Print and json modes write ``warning`` and ``error``
        messages to stderr (``[warning] …``), so they are never lost and never mixed into
        the answer on stdout; ``info`` messages are dropped there."""
        ...

    def set_status(self, key: str, text: str | None) -> None:
        """A short text in the status line under ``key``; ``None`` removes it.
        Interactive mode shows it; other modes ignore it."""
        ...

    def set_widget(
        self, key: str, lines: Sequence[str] | None, *, placement: Literal["aboveEditor", "belowEditor"] = "aboveEditor"
    ) -> None:
        """Lines shown above (default) or below the input line until cleared (``None``)."""
        ...

    def set_title(self, title: str) -> None:
        """The terminal window's title."""
        ...

    def set_header(self, lines: str | Sequence[str] | None) -> None:
        """Replace the startup header's lines (interactive mode; ``None`` restores it)."""
        ...

    def set_footer(self, lines: str | Sequence[str] | None) -> None:
        """Lines drawn under the input line in place of pi's status line (``None``
        restores it). Interactive mode only."""
        ...

    def set_working_message(self, message: str | None = None) -> None:
        """The text next to the spinner while pi works (``None`` restores pi's).
        Interactive mode only."""
        ...

    def get_editor_text(self) -> str:
        """The text of the input line (``""`` where there is none, e.g. RPC mode)."""
        ...

    def set_editor_text(self, text: str) -> None:
        """Replace the text of the input line."""
        ...

    async def custom(self, factory: Callable[..., Any], *, overlay: bool = False, **options: Any) -> Any:
        """Show a component of the plugin in place of the input line until it calls
        ``done(value)``; returns that value. ``factory(tui, theme, keybindings, done)``
        (may be async) returns the component: ``render(width) -> list[str]`` (lines, ANSI
        colours allowed), ``handle_input(key)`` for each key pressed (``"enter"``,
        ``"escape"``, ``"up"``, ``"ctrl+c"``, ``"a"`` …), and optionally ``invalidate()``
        and ``dispose()``. ``tui.request_render()`` redraws, ``tui.width``/``tui.height``
        give the terminal's size, ``theme.fg(color, text)`` / ``theme.bold(text)`` style
        text, and ``keybindings.matches(key, "tui.select.confirm")`` checks pi's picker
        actions (``tui.select.up``/``down``/``confirm``/``cancel``). A component that
        waits for an answer passes ``blocked={"kind": "question", "message": "..."}``:
        ``ui_prompt_start`` / ``ui_prompt_end`` (``kind="custom"``) then surround it, as
        around dialogs (without it pi does not count as waiting: components also show
        progress). ``overlay=True`` is accepted as in pi 1.6.0; this terminal UI draws
        every component inline, under the transcript, and erases it when done. Interactive
        mode only: elsewhere (``rpc``, ``json``, ``print``) it returns ``None`` at once
        without calling ``factory``; check ``ctx.mode == "tui"``. An exception in the
        component ends it with ``None`` and is shown in one line naming the plugin."""
        ...


class SessionView(Protocol):
    """Read-only access to the session (``ctx.session_manager``)."""

    def get_cwd(self) -> str:
        """The session's working directory."""
        ...

    def get_session_id(self) -> str:
        """The session's id (the header's ``id``)."""
        ...

    def get_session_file(self) -> str | None:
        """The session's JSONL file, ``None`` for an in-memory session (``--no-session``)."""
        ...

    def get_session_dir(self) -> str | None:
        """The folder holding the session file, ``None`` for an in-memory session."""
        ...

    def get_session_name(self) -> str | None:
        """The name given with ``/name`` or ``ctx.set_session_name``; ``None`` when unnamed."""
        ...

    def get_header(self) -> SessionHeader | None:
        """The session file's first line (id, cwd, timestamp, parent session)."""
        ...

    def get_entries(self) -> list[SessionEntry]:
        """Every entry of the session, all branches, in file order."""
        ...

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        """The entry with this id, or ``None``."""
        ...

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the current leaf): the
        conversation as the model sees it, before compaction."""
        ...

    def get_leaf_id(self) -> str | None:
        """The id of the current leaf entry (where the next entry attaches); ``None``
        in an empty session."""
        ...

    def get_label(self, entry_id: str) -> str | None:
        """The label set on an entry (``/tree``'s bookmarks, ``ctx.set_label``), or ``None``."""
        ...


@runtime_checkable
class ModelRegistryView(Protocol):
    """The session's models (``ctx.model_registry``): chat models, and the classifier
    and image models that never take part in a conversation (see
    :mod:`pi_hookspecs.model_types`). Calls use the session's credentials."""

    def find(self, provider: str, model_id: str) -> Model | None:
        """A chat model by provider and id, ``None`` when there is none."""
        ...

    def get_all(self) -> list[Model]:
        """Every chat model."""
        ...

    def get_available(self) -> list[Model]:
        """The chat models whose provider has a credential (what ``/model`` offers)."""
        ...

    def get_models_of_type(self, type: ModelType, provider: str | None = None) -> list[Model]:
        """Every known model of ``type`` (``chat``, ``classifier`` or ``image``),
        optionally of one provider."""
        ...

    def get_available_of_type(self, type: ModelType, provider: str | None = None) -> list[Model]:
        """The models of ``type`` whose provider has working credentials."""
        ...

    def get_model_of_type(self, type: ModelType, provider: str, model_id: str) -> Model | None:
        """One model of ``type``, e.g. ``get_model_of_type("classifier", "typesafe",
        "jev-latest")``; ``None`` when there is none. (``find_of_type`` is the same.)"""
        ...

    def find_of_type(self, type: ModelType, provider: str, model_id: str) -> Model | None:
        """The same as :meth:`get_model_of_type`."""
        ...

    async def classify(
        self,
        model: Model | dict[str, Any],
        context: ClassifierContext | dict[str, Any],
        options: StreamOptions | None = None,
    ) -> ClassifierResult:
        """Answer ``context.questions`` about ``context.state`` with a classifier model
        (only its ``provider`` and ``id`` are read; a dict of them works too). Never raises
        for provider errors: check ``stop_reason`` and ``error_message``. ``options`` may
        carry ``signal`` and ``temperature`` (APIs that read label probabilities divide
        their logits by it)."""
        ...

    async def generate_images(
        self,
        model: Model | dict[str, Any],
        context: ImagesContext | dict[str, Any],
        options: StreamOptions | None = None,
    ) -> ImagesResult:
        """Make images from ``context.input`` (text and image blocks) with an image
        model. Never raises for provider errors: check ``stop_reason``."""
        ...

    async def refresh(
        self,
        *,
        providers: Sequence[str] | None = None,
        allow_network: bool | None = None,
        signal: AbortSignal | None = None,
    ) -> CatalogueRefreshResult:
        """Refresh the dynamic catalogues (the providers' ``refresh_models``; only
        ``providers`` when given) now, and offer their models at once - ``/model``,
        ``--model`` and :meth:`find` see them without ``/reload``. ``allow_network``
        ``None`` means "unless pi is offline" (``--offline``, ``PI_OFFLINE``); ``True``
        asks online even then (the plugin just talked to its server itself). Without
        ``signal`` the call waits for every refresh; an aborted ``signal`` stops the
        waiting (``aborted`` in the result). Never raises for a provider's failure:
        check ``errors``."""
        ...

    async def get_provider_auth(self, provider: str) -> ProviderAuth | None:
        """``provider``'s credentials as a request would use them (its key, headers,
        base URL and stored ``env``), without a model. Read your own plugin's
        stored login this way rather than parsing ``auth.json``. ``None`` when the
        provider is unknown or has no credentials; a key's failing ``!command`` raises
        its error (one line naming the provider)."""
        ...


class ContextUsage(Protocol):
    """How full the context is (``ctx.get_context_usage()``)."""

    tokens: int | None
    """Estimated tokens of the context the next request would send; ``None`` when unknown."""
    context_window: int
    """The model's context window in tokens."""
    percent: float | None
    """``tokens`` as a percentage of ``context_window``; ``None`` when unknown."""


@runtime_checkable
class ExtensionContext(Protocol):
    """The context every hook implementation may receive as ``ctx``."""

    # ---- state (live) ------------------------------------------------------------
    @property
    def cwd(self) -> str:
        """The working directory of the session (absolute)."""
        ...

    @property
    def mode(self) -> Mode:
        """How pi runs: ``tui``, ``rpc``, ``json``, ``print``, ``sdk`` or ``acp``."""
        ...

    @property
    def has_ui(self) -> bool:
        """Whether dialogs reach a user (``tui``, ``rpc`` and ``acp`` with a client).
        Check it before asking; without a UI dialogs answer their default at once."""
        ...

    @property
    def ui(self) -> UIContext:
        """Dialogs and notifications (:class:`UIContext`)."""
        ...

    @property
    def session_manager(self) -> SessionView:
        """The session, read-only (:class:`SessionView`)."""
        ...

    @property
    def model(self) -> Model | None:
        """The current model, ``None`` before one is chosen."""
        ...

    @property
    def thinking_level(self) -> str:
        """The current thinking level (``off`` … ``max``)."""
        ...

    @property
    def model_registry(self) -> ModelRegistryView:
        """The session's models (:class:`ModelRegistryView`): look up chat, classifier and
        image models, ``classify()`` and ``generate_images()``."""
        ...

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
        publish with ``add_hookspecs`` are called pluggy's way (keyword arguments, a list
        of results, wrappers honoured) and the list can be awaited too, every coroutine
        a handler returned awaited: ``await ctx.hook.my_published_hook(value=...)``."""
        ...

    def is_project_trusted(self) -> bool:
        """Whether the project is trusted: its ``.pi/settings.json``, plugins and
        resources are in use."""
        ...

    def is_idle(self) -> bool:
        """Whether no run is active (no model request or tool is in progress)."""
        ...

    def has_pending_messages(self) -> bool:
        """Whether steering or follow-up messages are queued for the active run."""
        ...

    def abort(self) -> None:
        """Stop the active run (and a retry backoff), like Escape in the terminal."""
        ...

    def shutdown(self) -> None:
        """Ask pi to end: once the current run settles the session is disposed and
        the process exits (``session_shutdown`` handlers run)."""
        ...

    def get_settings(self, scope: Literal["effective", "user", "project"] = "effective") -> dict[str, Any]:
        """A copy of the settings: ``effective`` (user and trusted project merged),
        ``user`` (``~/.pi/agent/settings.json`` alone — what an organisation policy reads,
        since a trusted project can override the merged view) or ``project`` (the
        trusted project's ``.pi/settings.json``; ``{}`` when the project is not trusted)."""
        ...

    def get_flag(self, name: str) -> Any:
        """The value of a flag registered through ``register_flags``."""
        ...

    def get_context_usage(self) -> ContextUsage | None:
        """How full the context is (:class:`ContextUsage`), ``None`` without a model."""
        ...

    def get_system_prompt(self) -> str:
        """The system prompt of the next request, after ``before_agent_start`` handlers."""
        ...

    # ---- actions -----------------------------------------------------------------
    async def send_message(
        self,
        message: CustomMessage | dict[str, Any],
        *,
        deliver_as: DeliverAs = "follow_up",
        trigger_turn: bool | None = None,
    ) -> None:
        """Add a custom message to the context, as pi 1.6.0 does: ``next_turn`` waits for
        the next prompt; during a run it is delivered as steering or a follow-up, unless
        ``trigger_turn=False`` (then it is stored at the next turn end, without a turn of
        its own); when idle it is stored, and ``trigger_turn=True`` starts a run."""
        ...

    async def send_user_message(self, content: str | list[UserContent], *, deliver_as: DeliverAs | None = None) -> None:
        """Send a user message as if typed: when idle it starts a run; during a run
        ``deliver_as`` must say how to queue it (``steer`` or ``follow_up``), otherwise
        it raises ``SessionBusyError``."""
        ...

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Persist plugin state as a ``custom`` entry (never sent to the model)."""
        ...

    def set_session_name(self, name: str | None) -> None:
        """Name the session (``/name``); ``None`` clears it. Written to the session file."""
        ...

    def get_session_name(self) -> str | None:
        """The session's name, ``None`` when unnamed."""
        ...

    def set_label(self, entry_id: str, label: str | None) -> None:
        """Label an entry (a bookmark shown by ``/tree``); ``None`` removes it."""
        ...

    def get_active_tools(self) -> list[str]:
        """Names of the tools declared to the model in the next request."""
        ...

    def get_all_tools(self) -> list[ToolDefinition]:
        """Every registered tool (active, inactive and hidden) as definitions."""
        ...

    def set_active_tools(self, names: Sequence[str]) -> None:
        """Declare exactly these tools from the next model request on."""
        ...

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

    def get_commands(self) -> list[CommandDefinition]:
        """The slash commands plugins registered."""
        ...

    def register_mcp_server(self, name: str, config: Mapping[str, Any]) -> None:
        """Add an MCP server to the session now (pi's ``registerMcpServer``), owned by
        the plugin whose handler, command or tool is running: ``config`` is an
        ``mcpServers`` entry (see ``register_mcp_servers``). It connects right away;
        registering a name again replaces your earlier server. Raises ``ValueError`` for
        an invalid name or config, or a name another plugin registered."""
        ...

    def unregister_mcp_server(self, name: str) -> bool:
        """Remove your plugin's MCP server ``name``: its connection closes and its tools
        become unreachable. ``False`` when your plugin registered none of that name;
        ``ValueError`` when another plugin did."""
        ...

    def get_mcp_servers(self) -> list[McpServerRegistration]:
        """Every MCP server plugins registered (``register_mcp_servers``,
        ``ctx.register_mcp_server``), in registration order; servers of ``mcp.json`` are
        not listed. For plugins that connect MCP servers themselves."""
        ...

    async def set_model(self, model: Model) -> bool:
        """Switch to ``model`` for the next request; ``False`` (and no switch) when it
        has no credentials. The thinking level is clamped to what it supports."""
        ...

    def set_thinking_level(self, level: str) -> None:
        """Set the thinking level (clamped to what the model supports)."""
        ...

    def compact(
        self,
        custom_instructions: str | None = None,
        *,
        on_complete: Callable[[Any], Any] | None = None,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> None:
        """Start compacting the session in the background (like ``/compact``), with
        optional instructions for the summary; ``on_complete`` receives the compaction
        entry, ``on_error`` the exception."""
        ...


@runtime_checkable
class ToolContext(ExtensionContext, Protocol):
    """The context a tool's ``execute`` receives."""

    @property
    def tool_call_id(self) -> str:
        """The id of this tool call (as in the model's tool call and the result)."""
        ...

    @property
    def parent_tool_call_id(self) -> str | None:
        """The id of the calling tool's call when this tool runs through another
        tool's :meth:`execute_tool`; ``None`` for a call of the model."""
        ...

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

    @property
    def signal(self) -> AbortSignal | None:
        """The command's own abort signal: it fires when the user stops the command
        (Esc or Ctrl+C in the terminal, RPC ``abort``) or the session ends. Pass it
        to long operations (downloads, polling) and return when it fires; a handler
        that ignores it is cancelled (``asyncio.CancelledError``) a moment later. While
        an agent run is active, an abort also stops the run."""
        ...

    async def wait_for_idle(self) -> None:
        """Wait until the active run (if any) and its queued messages are done."""
        ...

    async def new_session(
        self,
        *,
        parent_session: str | None = None,
        setup: Callable[[Any], Any] | None = None,
        with_session: Callable[[CommandContext], Awaitable[Any]] | None = None,
    ) -> dict[str, Any]:
        """Start a new session (``/new``): ``session_before_switch`` handlers may
        cancel it. ``setup`` receives the new session manager before the first entry;
        ``with_session`` runs with the new session's command context. Returns
        ``{"cancelled": bool}``."""
        ...

    async def fork(
        self,
        entry_id: str,
        *,
        position: Literal["before", "at"] = "before",
        with_session: Callable[[CommandContext], Awaitable[Any]] | None = None,
    ) -> dict[str, Any]:
        """Continue in a new session file copied up to ``entry_id`` (``before``: without
        it, ``at``: including it); ``session_before_fork`` handlers may cancel.
        Returns ``{"cancelled": bool, "editor_text": ...}`` (a user message's text when
        forking before it)."""
        ...

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> dict[str, Any]:
        """Move the session's leaf to ``target_id`` (``/tree``), optionally summarising
        the abandoned branch (``summarize``, ``custom_instructions``,
        ``replace_instructions``) and labelling the target. Returns ``{"cancelled":
        bool, "editor_text": ...}``: a user message target gives its text to edit."""
        ...

    async def switch_session(
        self,
        session_path: str,
        *,
        with_session: Callable[[CommandContext], Awaitable[Any]] | None = None,
    ) -> dict[str, Any]:
        """Continue the session in ``session_path`` (``/resume``);
        ``session_before_switch`` handlers may cancel. Returns ``{"cancelled": bool}``."""
        ...

    async def reload(self) -> None:
        """Rebuild plugins, tools, resources and the system prompt (``/reload``),
        keeping the conversation. Every context of the old runtime goes stale."""
        ...

    def get_system_prompt_options(self) -> Any:
        """What the system prompt is built from (the options ``before_agent_start``
        sees): tools, skills, context files, appended prompts."""
        ...


@runtime_checkable
class ProjectTrustContext(Protocol):
    """The limited context of ``project_trust`` handlers: no session exists yet."""

    @property
    def cwd(self) -> str:
        """The working directory whose project is being decided."""
        ...

    @property
    def mode(self) -> Mode:
        """How pi runs (see :data:`Mode`)."""
        ...

    @property
    def has_ui(self) -> bool:
        """Whether a user can be asked (``ctx.ui.confirm``)."""
        ...

    @property
    def ui(self) -> UIContext:
        """Dialogs and notifications (:class:`UIContext`)."""
        ...


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
