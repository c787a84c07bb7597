"""The ``ctx`` objects handed to plugins.

A context holds no state of its own: every property and action reads the *current*
state of the runtime that created it (its :class:`ContextHost`). When that runtime is
reloaded or replaced, :meth:`Liveness.invalidate` makes every context it handed out
raise :class:`~pi_hookspecs.StaleContextError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from pi_hookspecs import StaleContextError

from .guard import in_worker, on_loop, waiting_for_user
from .ui import NoUI


class Liveness:
    """Shared by all contexts of one runtime; invalidated once, for good."""

    __slots__ = ("alive", "reason")

    def __init__(self) -> None:
        self.alive = True
        self.reason = ""

    def invalidate(self, reason: str = "the session runtime was replaced") -> None:
        self.alive = False
        self.reason = reason


class ContextHost:
    """What a context reads and calls. The session runtime subclasses this; the base
    class is the *detached* host used before a session exists (plugin loading, trust
    decisions, ``pi extensions list``): state is available, session actions are not."""

    cwd: str = "."
    mode: str = "print"
    has_ui: bool = False

    def __init__(
        self,
        *,
        cwd: str = ".",
        mode: str = "print",
        ui: Any = None,
        settings: dict[str, Any] | None = None,
        hook: Any = None,
        flags: dict[str, Any] | None = None,
        project_trusted: bool = False,
    ) -> None:
        self.cwd = cwd
        self.mode = mode
        self.ui = ui if ui is not None else NoUI()
        self.has_ui = ui is not None and mode in ("tui", "rpc", "acp")
        self.settings = settings or {}
        self.scoped_settings: dict[str, dict[str, Any]] = {}
        self.hook = hook
        """``ctx.hook``: the plugin host's :class:`~pi_core.extensions.runner.PluginHooks`
        (set by :meth:`PluginHost.bind <pi_core.extensions.PluginHost.bind>`)."""
        self.flags = flags or {}
        self.project_trusted = project_trusted

    def use_settings(self, settings: Any) -> None:
        """Serve ``settings`` (a :class:`~pi_core.resources.Settings`): merged, and per scope."""
        self.settings = settings.merged
        self.scoped_settings = {"user": settings.user, "project": settings.project if settings.project_trusted else {}}

    # -- state
    @property
    def session_manager(self) -> Any:
        raise self.unavailable("session_manager")

    model: Any = None
    thinking_level: str = "off"
    signal: Any = None

    def model_registry(self) -> Any:
        """``ctx.model_registry`` (the session runtime gives its registry's view)."""
        raise self.unavailable("model_registry")

    def unavailable(self, what: str) -> RuntimeError:
        return RuntimeError(f"ctx.{what} is not available here: no session is running yet")

    # -- actions (the session runtime overrides these)
    def call(self, action: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self, f"action_{action}", None)
        if method is None:
            raise self.unavailable(action)
        return on_loop(method, *args, **kwargs)  # a synchronous handler's thread: on the loop


_DIALOGS = frozenset({"select", "confirm", "input", "editor", "custom"})


class _GuardedUI:
    """``ctx.ui`` as handlers see it: dialogs pause the handler deadline while they wait
    for the user; called from a synchronous handler's worker thread, the other methods
    run on the event loop's thread (:func:`~.guard.on_loop`)."""

    __slots__ = ("_ui",)

    def __init__(self, ui: Any) -> None:
        self._ui = ui

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._ui, name)
        if not callable(value):
            return value
        if name in _DIALOGS:

            def dialog(*args: Any, **kwargs: Any) -> Any:
                result = value(*args, **kwargs)
                return waiting_for_user(result) if inspect.isawaitable(result) else result

            return dialog
        if in_worker():
            return lambda *args, **kwargs: on_loop(value, *args, **kwargs)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_ui":
            object.__setattr__(self, name, value)
        else:
            setattr(self._ui, name, value)

    def __repr__(self) -> str:
        return repr(self._ui)


class ExtensionContextImpl:
    """The :class:`~pi_hookspecs.ExtensionContext` every hook receives."""

    __slots__ = ("_host", "_live")

    def __init__(self, host: ContextHost, live: Liveness) -> None:
        self._host = host
        self._live = live

    def _h(self) -> ContextHost:
        if not self._live.alive:
            raise StaleContextError(
                f"this ctx belongs to a session runtime that is gone ({self._live.reason}); "
                "use the ctx passed to the current call"
            )
        return self._host

    # ---- state ---------------------------------------------------------------------
    @property
    def cwd(self) -> str:
        return self._h().cwd

    @property
    def mode(self) -> str:
        return self._h().mode

    @property
    def has_ui(self) -> bool:
        return self._h().has_ui

    @property
    def ui(self) -> Any:
        return _GuardedUI(self._h().ui)

    @property
    def session_manager(self) -> Any:
        return self._h().session_manager

    @property
    def model(self) -> Any:
        return self._h().model

    @property
    def thinking_level(self) -> str:
        return self._h().thinking_level

    @property
    def model_registry(self) -> Any:
        return self._h().model_registry()

    @property
    def signal(self) -> Any:
        return self._h().signal

    @property
    def hook(self) -> Any:
        return self._h().hook

    def is_project_trusted(self) -> bool:
        return bool(self._h().project_trusted)

    def get_settings(self, scope: str = "effective") -> dict[str, Any]:
        import copy

        host = self._h()
        if scope == "effective":
            return copy.deepcopy(host.settings)
        if scope not in ("user", "project"):
            raise ValueError(f"get_settings: scope must be 'effective', 'user' or 'project', not {scope!r}")
        return copy.deepcopy(host.scoped_settings.get(scope, {}))

    def get_flag(self, name: str) -> Any:
        return self._h().flags.get(name.removeprefix("--"))

    def is_idle(self) -> bool:
        return bool(self._h().call("is_idle"))

    def has_pending_messages(self) -> bool:
        return bool(self._h().call("has_pending_messages"))

    def abort(self) -> None:
        self._h().call("abort")

    def shutdown(self) -> None:
        self._h().call("shutdown")

    def get_context_usage(self) -> Any:
        return self._h().call("get_context_usage")

    def get_system_prompt(self) -> str:
        return str(self._h().call("get_system_prompt"))

    # ---- actions -------------------------------------------------------------------
    async def send_message(
        self, message: Any, *, deliver_as: str = "follow_up", trigger_turn: bool | None = None
    ) -> None:
        await self._h().call("send_message", message, deliver_as=deliver_as, trigger_turn=trigger_turn)

    async def send_user_message(self, content: Any, *, deliver_as: str | None = None) -> None:
        await self._h().call("send_user_message", content, deliver_as=deliver_as)

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        return str(self._h().call("append_entry", custom_type, data))

    def set_session_name(self, name: str | None) -> None:
        self._h().call("set_session_name", name)

    def get_session_name(self) -> str | None:
        return self._h().call("get_session_name")  # type: ignore[no-any-return]

    def set_label(self, entry_id: str, label: str | None) -> None:
        self._h().call("set_label", entry_id, label)

    def get_active_tools(self) -> list[str]:
        return list(self._h().call("get_active_tools"))

    def get_all_tools(self) -> list[Any]:
        return list(self._h().call("get_all_tools"))

    def set_active_tools(self, names: Sequence[str]) -> None:
        self._h().call("set_active_tools", list(names))

    def is_tool_deselected(self, name: str) -> bool:
        return bool(self._h().call("is_tool_deselected", name))

    def register_tool(self, definition: Any) -> None:
        self._h().call("register_tool", definition)

    def get_commands(self) -> list[Any]:
        return list(self._h().call("get_commands"))

    def register_mcp_server(self, name: str, config: Any) -> None:
        self._h().call("register_mcp_server", name, config)

    def unregister_mcp_server(self, name: str) -> bool:
        return bool(self._h().call("unregister_mcp_server", name))

    def get_mcp_servers(self) -> list[Any]:
        return list(self._h().call("get_mcp_servers"))

    async def set_model(self, model: Any) -> bool:
        return bool(await self._h().call("set_model", model))

    def set_thinking_level(self, level: str) -> None:
        self._h().call("set_thinking_level", level)

    def compact(self, custom_instructions: str | None = None, *, on_complete: Any = None, on_error: Any = None) -> None:
        self._h().call("compact", custom_instructions, on_complete=on_complete, on_error=on_error)

    def __repr__(self) -> str:
        state = "live" if self._live.alive else "stale"
        return f"<ExtensionContext {state} cwd={self._host.cwd!r} mode={self._host.mode!r}>"


class CommandContextImpl(ExtensionContextImpl):
    """The :class:`~pi_hookspecs.CommandContext` of command handlers; ``signal`` is the
    command's own abort signal (``None``: the run's, as every context has)."""

    __slots__ = ("_command_signal",)

    def __init__(self, host: ContextHost, live: Liveness, signal: Any = None) -> None:
        super().__init__(host, live)
        self._command_signal = signal

    @property
    def signal(self) -> Any:
        host = self._h()
        return self._command_signal if self._command_signal is not None else host.signal

    async def wait_for_idle(self) -> None:
        await self._h().call("wait_for_idle")

    async def new_session(self, **options: Any) -> dict[str, Any]:
        return await self._h().call("new_session", **options)  # type: ignore[no-any-return]

    async def fork(self, entry_id: str, **options: Any) -> dict[str, Any]:
        return await self._h().call("fork", entry_id, **options)  # type: ignore[no-any-return]

    async def navigate_tree(self, target_id: str, **options: Any) -> dict[str, Any]:
        return await self._h().call("navigate_tree", target_id, **options)  # type: ignore[no-any-return]

    async def switch_session(self, session_path: str, **options: Any) -> dict[str, Any]:
        return await self._h().call("switch_session", session_path, **options)  # type: ignore[no-any-return]

    async def reload(self) -> None:
        await self._h().call("reload")

    def get_system_prompt_options(self) -> Any:
        return self._h().call("get_system_prompt_options")


class ProjectTrustContextImpl:
    """The limited context of ``project_trust`` handlers."""

    __slots__ = ("_host", "_live")

    def __init__(self, host: ContextHost, live: Liveness) -> None:
        self._host = host
        self._live = live

    def _h(self) -> ContextHost:
        if not self._live.alive:
            raise StaleContextError("this project_trust ctx is no longer valid")
        return self._host

    @property
    def cwd(self) -> str:
        return self._h().cwd

    @property
    def mode(self) -> str:
        return self._h().mode

    @property
    def has_ui(self) -> bool:
        return self._h().has_ui

    @property
    def ui(self) -> Any:
        return _GuardedUI(self._h().ui)


class ToolContextImpl(ExtensionContextImpl):
    """The :class:`~pi_hookspecs.ToolContext` a tool's ``execute`` receives: the
    extension context plus the call's id, its abort signal, progress updates and
    nested tool calls through the whole pipeline."""

    __slots__ = ("_on_update", "_owner", "_signal", "parent_tool_call_id", "tool_call_id")

    def __init__(
        self,
        host: ContextHost,
        live: Liveness,
        *,
        tool_call_id: str,
        signal: Any,
        on_update: Any,
        parent_tool_call_id: str | None = None,
        owner: str | None = None,
    ) -> None:
        super().__init__(host, live)
        self.tool_call_id = tool_call_id
        self.parent_tool_call_id = parent_tool_call_id
        self._signal = signal
        self._on_update = on_update
        self._owner = owner
        """The plugin that registered the running tool: owner of tools it registers."""

    def register_tool(self, definition: Any) -> None:
        self._h().call("register_tool", definition, owner=self._owner)

    @property
    def signal(self) -> Any:
        self._h()
        return self._signal

    @property
    def tools(self) -> list[str]:
        return list(self._h().call("callable_tools"))

    async def _bash_spawn(self, make_event: Any) -> Any:
        """For pi's ``bash`` tool (not part of the ToolContext protocol): the
        ``bash_spawn`` hook of this runtime, with this context."""
        return await self._h().call("bash_spawn", make_event, self)

    async def _file_access(self, make_event: Any) -> Any:
        """For pi's file tools (not part of the ToolContext protocol): the
        ``file_access`` hook of this runtime, with this context."""
        return await self._h().call("file_access", make_event, self)

    def update(self, partial: Any) -> None:
        from pi_hookspecs import ToolResult

        if self._on_update is not None:
            self._on_update(ToolResult.coerce(partial))

    async def execute_tool(
        self,
        name: str,
        args: dict[str, Any],
        *,
        signal: Any = None,
        on_update: Any = None,
    ) -> Any:
        return await self._h().call(
            "execute_tool",
            name,
            args,
            parent_tool_call_id=self.tool_call_id,
            signal=signal or self._signal,
            on_update=on_update,
        )
