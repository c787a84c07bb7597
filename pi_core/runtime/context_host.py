"""The plugins' view of a running session: what every ``ctx`` reads and does.

:class:`SessionContextHost` serves the contexts of one session; it reads the session
through :class:`HostedSession`, the part of
:class:`~pi_core.runtime.session.AgentSession` that plugins can reach.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal, Protocol, cast

from pi_hookspecs import (
    AssistantMessage,
    CompactionEntry,
    CustomMessage,
    Model,
    SystemPromptOptions,
    ToolDefinition,
    ToolResult,
)

from ..agent import Agent
from ..compaction import estimate_context_tokens
from ..extensions import CommandContextImpl, ContextHost, EventRunner, PluginHost, Registry, ToolContextImpl
from ..extensions.runner import current_plugin
from ..resources.settings import Settings
from ..session import SessionManager
from .bash import prepare_bash_spawn
from .services import SessionServices
from .tool_registry import ToolRegistry


class HostedSession(Protocol):
    """What the contexts of a session read and call (``AgentSession`` implements it)."""

    @property
    def services(self) -> SessionServices: ...
    @property
    def cwd(self) -> str: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def plugins(self) -> PluginHost: ...
    @property
    def runner(self) -> EventRunner: ...
    @property
    def sm(self) -> SessionManager: ...
    @property
    def agent(self) -> Agent: ...
    @property
    def run_signal(self) -> Any: ...
    @property
    def tools(self) -> ToolRegistry: ...
    @property
    def model(self) -> Model | None: ...
    def limits_model(self) -> Model | None: ...
    @property
    def thinking_level(self) -> str: ...
    @property
    def is_busy(self) -> bool: ...
    @property
    def system_prompt(self) -> str: ...
    @property
    def runtime(self) -> Any: ...

    def abort(self) -> None: ...
    def request_shutdown(self) -> None: ...
    def spawn(self, coroutine: Any) -> asyncio.Task[Any]: ...
    def system_prompt_options(self) -> SystemPromptOptions: ...
    def set_active_tools(self, names: Sequence[str]) -> list[str]: ...
    def register_tool(self, definition: ToolDefinition, plugin: str | None = None) -> bool: ...
    async def wait_for_idle(self) -> None: ...
    async def send_custom_message(
        self, message: CustomMessage, *, deliver_as: str = ..., trigger_turn: bool | None = ...
    ) -> None: ...
    async def prompt(
        self,
        text: str,
        *,
        source: Literal["interactive", "rpc", "extension", "sdk"] = ...,
        streaming_behavior: Literal["steer", "follow_up"] | None = ...,
        expand: bool = ...,
    ) -> str: ...
    async def set_session_name(self, name: str | None) -> None: ...
    async def set_model(self, model: Model, *, source: Literal["set", "cycle"] = ...) -> bool: ...
    async def set_thinking_level(self, level: str) -> str: ...
    async def compact(self, custom_instructions: str | None = None) -> CompactionEntry | None: ...
    async def execute_tool(
        self, name: str, args: dict[str, Any], *, parent_tool_call_id: str, signal: Any = ..., on_update: Any = ...
    ) -> ToolResult: ...
    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = ...,
        custom_instructions: str | None = ...,
        replace_instructions: bool = ...,
        label: str | None = ...,
    ) -> dict[str, Any]: ...


class ContextUsageInfo:
    def __init__(self, tokens: int | None, context_window: int) -> None:
        self.tokens = tokens
        self.context_window = context_window
        self.percent = (tokens / context_window * 100) if tokens is not None and context_window else None

    def __repr__(self) -> str:
        return f"<ContextUsage tokens={self.tokens} window={self.context_window}>"


class SessionContextHost(ContextHost):
    def __init__(self, session: HostedSession) -> None:
        options = session.services.options
        super().__init__(
            cwd=session.cwd,
            mode=options.mode,
            ui=options.ui,
            settings=session.settings.merged,
            hook=session.plugins.pm.hook,
            flags=dict(session.plugins.context_host.flags),
            project_trusted=session.services.project_trusted,
        )
        self.use_settings(session.settings)
        self.session = session

    # ---- live state
    @property
    def session_manager(self) -> Any:
        return self.session.sm

    @property
    def model(self) -> Any:
        return self.session.model

    @property
    def thinking_level(self) -> str:  # type: ignore[override]
        return self.session.thinking_level

    def model_registry(self) -> Any:
        from pi_core.ai.registry_view import RegistryView

        return RegistryView(self.session.services.models)

    @property
    def signal(self) -> Any:
        return self.session.run_signal

    def command_context(self, signal: Any = None) -> CommandContextImpl:
        """The ``ctx`` of a command handler (``signal``: the command's own abort signal)."""
        return CommandContextImpl(self, self.session.plugins.liveness, signal)

    def tool_context(
        self,
        tool_call_id: str,
        signal: Any,
        on_update: Any,
        *,
        owner: str | None,
        parent_tool_call_id: str | None = None,
    ) -> ToolContextImpl:
        """The ``ctx`` of one tool call (``parent_tool_call_id``: a nested call)."""
        return ToolContextImpl(
            self,
            self.session.plugins.liveness,
            tool_call_id=tool_call_id,
            signal=signal,
            on_update=on_update,
            parent_tool_call_id=parent_tool_call_id,
            owner=owner,
        )

    # ---- ExtensionContext actions
    def action_is_idle(self) -> bool:
        return not self.session.is_busy

    def action_has_pending_messages(self) -> bool:
        return self.session.agent.has_queued_messages()

    def action_abort(self) -> None:
        self.session.abort()

    def action_shutdown(self) -> None:
        self.session.request_shutdown()

    def action_get_context_usage(self) -> ContextUsageInfo | None:
        """The context's size, as pi 1.6.0 reports it: unknown (``tokens`` ``None``) after
        a compaction until a model response in the new context reports its usage. Under
        a virtual selection the window is the physical model's that answered last."""
        model = self.session.limits_model()
        if model is None or model.context_window <= 0:
            return None
        sm = self.session.sm
        projection = sm.build_session_projection()
        branch = list(sm.get_branch())
        compacted = max((i for i, e in enumerate(branch) if e.type == "compaction"), default=None)
        if compacted is not None:
            answered = {
                p.source_entry.id
                for p in projection.entries
                if any(
                    isinstance(m, AssistantMessage)
                    and m.stop_reason not in ("aborted", "error")
                    and m.usage.input + m.usage.output + m.usage.cache_read + m.usage.cache_write > 0
                    for m in p.messages
                )
            }
            if not any(e.id in answered for e in branch[compacted + 1 :]):
                return ContextUsageInfo(None, model.context_window)
        tokens = estimate_context_tokens(list(projection.messages)).tokens
        return ContextUsageInfo(tokens, model.context_window)

    def action_get_system_prompt(self) -> str:
        return self.session.system_prompt

    async def action_send_message(
        self, message: Any, *, deliver_as: str = "follow_up", trigger_turn: bool | None = None
    ) -> None:
        if isinstance(message, dict):
            message = CustomMessage.model_validate({"customType": "extension", **message})
        await self.session.send_custom_message(message, deliver_as=deliver_as, trigger_turn=trigger_turn)

    async def action_send_user_message(self, content: Any, *, deliver_as: str | None = None) -> None:
        text = content if isinstance(content, str) else "".join(getattr(b, "text", "") for b in content)
        behavior = cast(Literal["steer", "follow_up"] | None, deliver_as)
        await self.session.prompt(text, source="extension", streaming_behavior=behavior, expand=False)

    def action_append_entry(self, custom_type: str, data: Any = None) -> str:
        return str(self.session.sm.append_custom_entry(custom_type, data))

    def action_set_session_name(self, name: str | None) -> None:
        self.session.spawn(self.session.set_session_name(name))

    def action_get_session_name(self) -> str | None:
        return self.session.sm.get_session_name()

    def action_set_label(self, entry_id: str, label: str | None) -> None:
        self.session.sm.set_label(entry_id, label)

    def action_get_active_tools(self) -> list[str]:
        return self.session.tools.active_names

    def action_get_all_tools(self) -> list[ToolDefinition]:
        return self.session.tools.all_definitions()

    def action_set_active_tools(self, names: Sequence[str]) -> None:
        self.session.set_active_tools(names)

    def action_register_tool(self, definition: Any, owner: str | None = None) -> None:
        owner = owner or current_plugin()
        checked = Registry().register_tool(definition, owner or "runtime", "extension")
        if not self.session.register_tool(checked, plugin=owner):
            existing = self.session.tools.entries.get(checked.name)
            holder = f"plugin {existing.plugin!r}" if existing is not None and existing.plugin else "another owner"
            raise ValueError(
                f"tool {checked.name!r} is already registered by {holder}; a plugin may replace only its own tools"
            )

    def action_is_tool_deselected(self, name: str) -> bool:
        return self.session.tools.selection.deselected(name)

    def action_get_commands(self) -> list[Any]:
        return [reg.value for reg in self.session.plugins.registry.commands.values()]

    def action_register_mcp_server(self, name: str, config: Any) -> None:
        owner = current_plugin() or "runtime"
        self.session.plugins.registry.register_mcp_server(name, config, owner, "extension")

    def action_unregister_mcp_server(self, name: str) -> bool:
        return self.session.plugins.registry.unregister_mcp_server(name, current_plugin() or "runtime")

    def action_get_mcp_servers(self) -> list[Any]:
        return self.session.plugins.registry.mcp_server_list()

    async def action_set_model(self, model: Any) -> bool:
        return await self.session.set_model(model)

    def action_set_thinking_level(self, level: str) -> None:
        self.session.spawn(self.session.set_thinking_level(level))

    def action_compact(
        self, custom_instructions: str | None = None, *, on_complete: Any = None, on_error: Any = None
    ) -> None:
        async def run() -> None:
            try:
                entry = await self.session.compact(custom_instructions)
            except Exception as exc:
                if on_error is not None:
                    on_error(exc)
                return
            if on_complete is not None:
                on_complete(entry)

        self.session.spawn(run())

    # ---- ToolContext
    def action_callable_tools(self) -> list[str]:
        return self.session.tools.callable_names()

    async def action_execute_tool(self, name: str, args: dict[str, Any], **options: Any) -> Any:
        return await self.session.execute_tool(name, args, **options)

    async def action_bash_spawn(self, make_event: Any, ctx: Any = None) -> Any:
        return await prepare_bash_spawn(self.session.runner, make_event, ctx)

    async def action_file_access(self, make_event: Any, ctx: Any = None) -> Any:
        """The ``file_access`` handlers' outcome (a result, a ``Blocked``), or ``None``
        when none took the operation (or none exist: the event is never built)."""
        runner = self.session.runner
        if not runner.has_handlers("file_access"):
            return None
        return await runner.emit("file_access", make_event(), ctx)

    # ---- CommandContext
    async def action_wait_for_idle(self) -> None:
        await self.session.wait_for_idle()

    def action_get_system_prompt_options(self) -> Any:
        return self.session.system_prompt_options()

    def _runtime(self) -> Any:
        runtime = self.session.runtime
        if runtime is None:
            raise RuntimeError("this session is not managed by a session runtime (new/fork/switch/reload unavailable)")
        return runtime

    async def action_new_session(self, **options: Any) -> dict[str, Any]:
        return await self._runtime().new_session(**options)  # type: ignore[no-any-return]

    async def action_fork(self, entry_id: str, **options: Any) -> dict[str, Any]:
        return await self._runtime().fork(entry_id, **options)  # type: ignore[no-any-return]

    async def action_switch_session(self, session_path: str, **options: Any) -> dict[str, Any]:
        return await self._runtime().switch_session(session_path, **options)  # type: ignore[no-any-return]

    async def action_navigate_tree(self, target_id: str, **options: Any) -> dict[str, Any]:
        return await self.session.navigate_tree(target_id, **options)

    async def action_reload(self) -> None:
        await self._runtime().reload()
