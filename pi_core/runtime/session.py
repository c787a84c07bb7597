"""AgentSession: the coding agent around the generic loop.

It owns the :class:`~pi_core.agent.Agent`, the session file, the tool registry and
the plugin runtime of one session, and turns a prompt into finished, persisted work:

    command -> input hook -> /skill: and template expansion -> (busy: steer/follow-up)
    -> flush pending bash -> model/auth check -> compaction check -> before_agent_start
    -> system patch + user message -> runs (retry, overflow recovery, queued work)
    -> agent_before_settle -> agent_settled

The input side of the pipeline (commands, ``input``, expansion, queueing) lives
here; each other concern is a collaborator given only what it needs (see
``docs/architecture.md``, "One prompt through the pipeline"):

* :class:`~.runs.RunLoop` - one run, from the model check to ``agent_settled``,
  and the run state (busy, abort);
* :class:`~.queues.MessageQueues` - steering, follow-ups, held bash results and
  plugin messages waiting for a run;
* :class:`~.tool_binding.ToolBinding` - tools and system prompt as the model sees them;
* :mod:`.agent_hooks` - ``context``, provider and tool-call hooks on the agent loop;
* :class:`~.bridge.EventBridge` - agent events to plugins, listeners and the file;
* :class:`~.model_control.ModelControl` - the model and thinking level;
* :class:`~.warming.SessionWarming` - prompt-cache warming of the session's requests;
* :mod:`.lifecycle` - ``session_start``, ``resources_discover``, ``session_shutdown``;
* :class:`~.retry.AutoRetry`, :class:`~.compactor.Compactor`,
  :class:`~.navigation.TreeNavigator`, :class:`~.nested.NestedCalls`,
  :class:`~.bash.UserBash`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

import pi_hookspecs
from pi_hookspecs import (
    AbortController,
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CompactionEntry,
    CustomMessage,
    ImageContent,
    InputEvent,
    LlmContext,
    Model,
    StreamOptions,
    SystemPromptOptions,
    TextContent,
    ToolDefinition,
    ToolResult,
    UserMessage,
    is_virtual_model,
)

from ..agent import Agent, AgentContext, NextTurn, TurnInfo
from ..ai import ModelRegistry
from ..extensions import HookError, ToolContextImpl
from ..extensions.runner import CURRENT_PLUGIN
from ..resources.prompt_templates import expand_prompt_template
from ..resources.settings import Settings
from ..resources.skills import expand_skill_command
from ..session import SessionManager, current_system_message
from .agent_hooks import ContextHooks, ProviderHooks, ToolHooks
from .bash import UserBash
from .bridge import EventBridge
from .compactor import CompactionReason, Compactor, complete_summary
from .context_host import SessionContextHost
from .errors import NoModelError, SessionBusyError
from .events import ExtensionErrorEvent, NoticeEvent
from .lifecycle import announce_shutdown, announce_start, watch_mcp_servers
from .loadout import Loadout
from .model_control import ModelControl
from .navigation import TreeNavigator
from .nested import NestedCalls, NestedLedger
from .queues import MessageQueues
from .retry import AutoRetry, retry_summary
from .runs import RunLoop
from .services import SessionServices
from .tool_binding import ToolBinding, tool_selection
from .tool_registry import ToolRegistry
from .virtual_routing import VirtualRouting
from .warming import SessionWarming

PromptOutcome = Literal["handled", "queued", "started"]

COMMAND_ABORT_GRACE = 2.0
"""Seconds a plugin command's handler has to return after its ``ctx.signal`` fired
before it is cancelled."""


class AgentSession:
    def __init__(
        self,
        services: SessionServices,
        session_manager: SessionManager,
        *,
        model: Model | None = None,
        thinking_level: str | None = None,
        stream_fn: Callable[..., Any] | None = None,
    ) -> None:
        self.services = services
        self.sm = session_manager
        self.cwd = services.cwd
        self.plugins = services.plugins
        self.runner = services.plugins.runner
        self.models: ModelRegistry = services.models
        self._listeners: list[Callable[[Any], Any]] = []
        self.nested = NestedLedger()
        """Records and usage of nested tool calls, per top-level call (``nestedCalls``)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._background: dict[asyncio.Task[Any], Callable[[], None]] = {}
        """Work that ends with the session (a catalogue refresh): task -> its abort."""
        self._commands: dict[AbortController, asyncio.Task[Any] | None] = {}
        """The plugin commands running: their abort controllers and tasks."""
        self._disposed = False
        self._shutdown_requested = False
        self.on_shutdown: Callable[[], Any] | None = None
        self.api_key_override: str | None = None
        """``--api-key``: used for this process only, never saved."""
        self.auto_compaction: bool | None = None
        """Per-session override of the ``compaction.enabled`` setting (``None``: the setting)."""
        self.auto_retry: bool | None = None
        """Per-session override of the ``retry.enabled`` setting (``None``: the setting)."""
        self.runtime: Any = None
        """The :class:`~pi_core.runtime.host.SessionRuntime` that owns this session, if any."""
        self.runner.add_error_listener(self._on_hook_error)

        settings = services.resources.settings
        context = self.sm.build_session_context()
        self._routing = VirtualRouting(self.models, self.sm, ctx=lambda: self.runner.ctx)
        """Requests of a virtual model: routed to a physical one each (see :mod:`.virtual_routing`)."""
        base_stream = self._routing.wrap(stream_fn or self.models.stream)
        self._warming = SessionWarming(
            base_stream,
            self.sm,
            self.runner,
            state=lambda: self.agent.state,
            settings=lambda: self.settings,
            emit=self._emit,
        )
        self.cache_warmer = self._warming.warmer
        """Prompt-cache warming of the session's requests (the ``cacheWarming`` setting)."""
        self.agent = Agent(
            messages=list(context.messages),
            stream_fn=self._warming.wrap(base_stream),
            steering_mode=settings.steering_mode,
            follow_up_mode=settings.follow_up_mode,
        )
        self._model_control = ModelControl(
            self.agent.state,
            self.sm,
            self.runner,
            models=self.models,
            emit=self._emit,
            api_key=lambda: self.api_key_override,
            settings=lambda: self.settings,
        )
        self.agent.state.model = self._model_control.initial(model, context, settings)
        self.agent.state.thinking_level = self._model_control.initial_thinking_level(thinking_level, context, settings)
        self.tools = ToolRegistry(tool_selection(services.options, settings))
        self._tool_binding = ToolBinding(
            self.tools, registry=self.plugins.registry, sdk_tools=services.options.sdk_tools, state=self.agent.state
        )
        self._tool_binding.rebuild()
        head = current_system_message(context.messages)
        if head is not None and head.tools_added:
            # a resumed branch keeps the tools it had declared (e.g. ones tool_search loaded)
            self._tool_binding.restore(t.name for t in head.tools_added)
        self._loadout = Loadout(self._tool_binding, resources=services.resources, runner=self.runner)
        self._build_parts()
        self.context_host = SessionContextHost(self)
        self._nested_calls = NestedCalls(
            self.runner, self.tools, self.nested, emit=self._emit, tool_context=self.context_host.tool_context
        )
        self.plugins.bind(self.context_host)

    def _build_parts(self) -> None:
        """The collaborators, each given what it needs, and the agent's hooks."""
        runner, sm, agent = self.runner, self.sm, self.agent
        self._retry = AutoRetry(
            settings=lambda: self.settings.retry_settings(),
            enabled=lambda: self.auto_retry_enabled,
            context_window=lambda: limits.context_window if (limits := self.limits_model()) else None,
            emit=self._emit,
            omit=lambda message: self._bridge.omit(message),
        )
        self._compactor = Compactor(
            sm,
            runner,
            emit=self._emit,
            model=self.limits_model,
            thinking_level=lambda: self.thinking_level,
            settings=lambda ref: self.settings.compaction_settings(ref),
            enabled=lambda: self.auto_compaction_enabled,
            complete=self._summarise,
            on_compacted=self._sync_state_from_session,
            summary_target=self._summary_target,
        )
        self._navigator = TreeNavigator(
            sm,
            runner,
            is_busy=lambda: self._runs.busy,
            check_model=self._model_control.check,
            thinking_level=lambda: self.thinking_level,
            reserve_tokens=lambda: self.settings.branch_summary_settings().reserve_tokens,
            complete=self._summarise,
            on_moved=self._sync_state_from_session,
            summary_target=self._summary_target,
        )
        self._bridge = EventBridge(
            runner,
            sm,
            cwd=self.cwd,
            emit=self._emit,
            take_nested=self.nested.take,
            will_retry=lambda: self._retry.will_retry(self.last_assistant()),
            on_user_message=lambda message: self._queues.dequeue_display(message),
            sync=self._sync_state_from_session,
            pending=lambda: (
                [*self.agent.queued_steering, *self.agent.queued_follow_up],
                list(self._queues.next_turn),
            ),
        )
        self._queues = MessageQueues(
            agent,
            emit=self._emit,
            sync=self._sync_state_from_session,
            persist=self._bridge.persist,
            hold=self._bridge.hold_custom,
            is_busy=lambda: self._runs.busy,
            start_run=lambda message: self._runs.run(message, custom=message),
        )
        self._runs = RunLoop(
            agent,
            runner,
            bridge=self._bridge,
            compactor=self._compactor,
            loadout=self._loadout,
            retry=self._retry,
            queues=self._queues,
            emit=self._emit,
            check_model=self._model_control.check,
            projection=self._projection,
            last_assistant=self.last_assistant,
            on_settled=self._on_settled,
            on_agent_settled=self.cache_warmer.on_agent_settled,
        )
        self._user_bash = UserBash(
            runner, cwd=self.cwd, shell_settings=lambda: self.settings.merged, record=self.record_bash
        )
        context = ContextHooks(
            runner,
            current_head=self._loadout.current_head,
            forced_prompt=lambda: self._loadout.forced_prompt,
            block_images=lambda: self.settings.block_images,
            fit_images=lambda: self.settings.auto_resize_images,
        )
        provider = self._provider_hooks = ProviderHooks(
            runner, settings=lambda: self.settings, session_id=sm.get_session_id, api_key=lambda: self.api_key_override
        )
        tool_hooks = ToolHooks(runner, nested_usage=self.nested.with_nested_usage)
        agent.subscribe(self._bridge.on_agent_event)
        agent.subscribe(self._routing.on_agent_event)
        agent.transform_context = context.transform_context
        agent.convert_to_llm = context.convert_to_llm
        agent.before_tool_call = tool_hooks.before_tool_call
        agent.after_tool_call = tool_hooks.after_tool_call
        agent.prepare_request = self._prepare_request
        agent.prepare_next_turn = self._prepare_next_turn
        agent.finish_turn = self._bridge.finish_turn
        agent.stream_options = provider.stream_options
        agent.make_tool_context = self._make_tool_context

    # ================================================================== state

    @property
    def model(self) -> Model | None:
        return self.agent.state.model

    @property
    def thinking_level(self) -> str:
        return self.agent.state.thinking_level

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    @property
    def settings(self) -> Settings:
        return self.services.resources.settings

    @property
    def is_busy(self) -> bool:
        """A prompt operation is running (including retries, compaction, queued work)."""
        return self._runs.busy

    @property
    def session_file(self) -> str | None:
        return self.sm.get_session_file()

    @property
    def auto_compaction_enabled(self) -> bool:
        """Whether threshold compaction runs (the per-session override, else the setting)."""
        if self.auto_compaction is not None:
            return self.auto_compaction
        model = self.agent.state.model
        return bool(self.settings.compaction_settings(model.ref if model else None).enabled)

    @property
    def auto_retry_enabled(self) -> bool:
        """Whether transient provider errors are retried (the override, else the setting)."""
        if self.auto_retry is not None:
            return self.auto_retry
        return bool(self.settings.retry_settings().enabled)

    def get_last_assistant_text(self) -> str:
        last = self.last_assistant()
        return last.text() if last is not None else ""

    def last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def entry_id_of(self, message: AgentMessage) -> str | None:
        """The session entry a message of this process was stored as."""
        return self._bridge.entry_id_of(message)

    def clamp_thinking_level(self, level: str) -> str:
        """``level`` as the current model supports it (unchanged without a model)."""
        return self._model_control.clamp(level)

    # ================================================================== listeners

    def subscribe(self, listener: Callable[[Any], Any]) -> Callable[[], None]:
        """Receive every session event (sync listeners; not awaited)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:  # a host listener must not break the run
                print(f"pi: session listener failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    def _notice(self, level: Literal["info", "warning", "error"], message: str) -> None:
        self._emit(NoticeEvent(level=level, message=message))

    def _on_hook_error(self, error: HookError) -> None:
        record = next((r for r in self.plugins.records if r.name == error.plugin), None)
        where = (record.source.path or record.source.origin) if record else error.plugin
        self._emit(ExtensionErrorEvent(extension_path=where, event=error.hook, error=error.detail))

    # ================================================================== tools & system prompt

    def rebuild_tools(self, keep_active: Sequence[str] | None = None) -> None:
        """Merge built-in, plugin and SDK tools anew; with ``keep_active`` (a reload)
        those stay active where they still exist."""
        self._tool_binding.rebuild(keep_active)

    def set_active_tools(self, names: Sequence[str]) -> list[str]:
        return self._tool_binding.set_active(names)

    def register_tool(self, definition: ToolDefinition, plugin: str | None = None) -> bool:
        return self._tool_binding.register(definition, plugin)

    def system_prompt_options(self) -> SystemPromptOptions:
        return self._loadout.system_prompt_options()

    @property
    def system_prompt(self) -> str:
        return self._loadout.system_prompt

    # ================================================================== agent hooks

    def _projection(self) -> list[AgentMessage]:
        return list(self.sm.build_session_context().messages)

    def _sync_state_from_session(self) -> None:
        self.agent.state.messages = self._projection()

    async def _prepare_request(self, context: AgentContext) -> AgentContext:
        context.messages = self._projection()
        context.tools = self.tools.active_definitions()
        context.model = self.agent.state.model
        context.thinking_level = self.agent.state.thinking_level
        selected = context.model
        await self._routing.prepare(context, self.run_signal)  # a virtual model: this request's physical one
        if selected is not None and is_virtual_model(selected) and not is_virtual_model(context.model):
            # As pi 1.6.0: the model the request is routed to must hold the conversation;
            # when its window is too small, compact first. The route stands.
            if await self._compactor.maybe_compact(context.model):
                context.messages = self._projection()
        return context

    def limits_model(self) -> Model | None:
        """The model whose context window applies (compaction, overflow): under a virtual
        selection the physical model that answered last."""
        return self._routing.limits_model(self.agent.state.model, self.agent.state.messages)

    async def _prepare_next_turn(self, info: TurnInfo) -> NextTurn | None:
        model = self.agent.state.model
        if model is None or not is_virtual_model(model):  # a virtual selection: checked per request
            await self._compactor.maybe_compact()
        patch = self._loadout.patch(self._projection())
        return NextTurn(messages=[patch] if patch is not None else [])

    def _make_tool_context(self, call: Any, tool: ToolDefinition, signal: Any, on_update: Any) -> ToolContextImpl:
        return self.context_host.tool_context(call.id, signal, on_update, owner=self.tools.owner(tool.name))

    # ================================================================== summaries

    async def _summary_target(self, model: Model, level: str, signal: Any) -> tuple[Model, str]:
        """Who writes a summary: under a virtual selection, the model the router picks
        for it (``model``, the one that answered last, is only the fallback of other
        selections)."""
        selected = self.agent.state.model
        if selected is None or not is_virtual_model(selected):
            return model, level
        return await self._routing.summary_target(selected, self.agent.state.messages, level, signal)

    async def _summarise(
        self, model: Model, context: LlmContext, options: StreamOptions, *, source: dict[str, Any] | None = None
    ) -> AssistantMessage:
        """One summary request; transient errors are retried (``summarization_retry_*``)."""
        stream_fn = self.agent.stream_fn
        if stream_fn is None:
            raise TypeError("the agent has no stream function")
        signal = options.signal if options.signal is not None else self.run_signal
        if signal is not None and signal.aborted:  # aborted while a plugin handler ran: no request
            raise pi_hookspecs.AbortError("the run was aborted before the summary request")
        options = self._provider_hooks.summary_options(model, options)
        options = options.model_copy(update={"extra": {**options.extra, "summary": True}})
        return await retry_summary(
            lambda: complete_summary(stream_fn, model, context, options),
            settings=self.settings.retry_settings(),
            enabled=self.auto_retry_enabled,
            signal=options.signal,
            emit=self._emit,
            source=source or {"source": "compaction"},
        )

    # ================================================================== prompting

    async def prompt(
        self,
        text: str,
        *,
        images: Sequence[ImageContent] = (),
        source: Literal["interactive", "rpc", "extension", "sdk"] = "sdk",
        streaming_behavior: Literal["steer", "follow_up"] | None = None,
        expand: bool = True,
        on_started: Callable[[], Any] | None = None,
    ) -> PromptOutcome:
        """Handle one user input; for a started run, return once the session settles.
        ``on_started`` is called when the input was accepted to start a run, before the
        run (hosts that answer "accepted" at once, such as RPC mode, use it)."""
        if expand and text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            command = self.plugins.registry.commands.get(name)
            if command is not None:
                await self.run_command(name, args.strip())
                return "handled"
        images = list(images)
        # An abort from here on (Esc, Ctrl+C, SIGINT/SIGTERM, RPC ``abort``) ends this
        # prompt: a handler still running is cut off (ctx.signal fires) and no run starts.
        pre_run = None if self._runs.busy else self._runs.begin_pre_run()
        try:
            return await self._prompt(text, images, source, streaming_behavior, expand, on_started, pre_run)
        finally:
            if pre_run is not None:
                self._runs.end_pre_run(pre_run)

    async def _prompt(
        self,
        text: str,
        images: list[ImageContent],
        source: Literal["interactive", "rpc", "extension", "sdk"],
        streaming_behavior: Literal["steer", "follow_up"] | None,
        expand: bool,
        on_started: Callable[[], Any] | None,
        pre_run: AbortController | None,
    ) -> PromptOutcome:
        if self.runner.has_handlers("input"):
            result = await self.runner.emit(
                "input", InputEvent(text=text, images=images, source=source, streaming_behavior=streaming_behavior)
            )
            if pre_run is not None and pre_run.signal.aborted:
                return "handled"  # aborted before its run started: nothing runs, nothing is stored
            if result.action == "handled":
                return "handled"
            text, images = result.text or "", list(result.images or [])
        if expand:
            text = self.expand_text(text)
        # As pi 1.6.0 writes it: an array of blocks, also for text alone. A string and
        # image blocks need no validation (the usual case); other values are validated.
        if type(text) is str and all(type(image) is ImageContent for image in images):
            message = UserMessage.model_construct(content=[TextContent.model_construct(text=text), *images])
        else:
            message = UserMessage(content=[TextContent(text=text), *images])
            images = [block for block in message.content[1:] if isinstance(block, ImageContent)]
        if self._runs.busy:
            if streaming_behavior == "steer":
                self._queues.steer(text, message)
            elif streaming_behavior == "follow_up":
                self._queues.follow_up(text, message)
            else:
                raise SessionBusyError("pi is busy with a run: send the message as steering or as a follow-up")
            return "queued"
        if on_started is not None:
            self._model_control.check()
            on_started()
        await self._runs.run(message, prompt_text=text, images=images, pre_run=pre_run)
        return "started"

    @property
    def run_signal(self) -> Any:
        """The abort signal handlers see as ``ctx.signal``: the agent run's while one is
        active; before a prompt's run starts (``input``, compaction,
        ``before_agent_start``) and between its agent runs, the prompt's own, which
        :meth:`abort` fires too; ``None`` when nothing runs."""
        return self._runs.signal

    def expand_text(self, text: str) -> str:
        """``/skill:name args`` and ``/template args`` expansion."""
        if text.startswith("/skill:") and self.settings.enable_skill_commands:
            try:
                expanded = expand_skill_command(text, self.services.resources.skills)
            except OSError as exc:
                self._notice("error", f"cannot read the skill: {exc}")
                expanded = None
            if expanded is not None:
                return expanded
        if text.startswith("/"):
            return expand_prompt_template(text, self.services.resources.prompt_templates)
        return text

    async def steer(self, text: str) -> PromptOutcome:
        return await self.prompt(text, streaming_behavior="steer")

    async def follow_up(self, text: str) -> PromptOutcome:
        return await self.prompt(text, streaming_behavior="follow_up")

    # ================================================================== compaction & tree

    async def compact(
        self,
        custom_instructions: str | None = None,
        *,
        reason: CompactionReason = "manual",
        will_retry: bool = False,
        raise_errors: bool = True,
    ) -> CompactionEntry | None:
        """Summarise the older part of the context. Returns the saved entry, or None when
        a plugin cancelled it (or it failed and ``raise_errors`` is false)."""
        return await self._compactor.compact(
            custom_instructions, reason=reason, will_retry=will_retry, raise_errors=raise_errors
        )

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> dict[str, Any]:
        """Move the leaf to ``target_id`` (``/tree``). Selecting a user message moves to
        its parent and returns its text as ``editor_text`` (to edit and resend); with
        ``summarize`` the abandoned branch is summarised into a ``branch_summary``."""
        return await self._navigator.navigate(
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )

    # ================================================================== waiting messages

    def record_bash(self, message: AgentMessage) -> None:
        """Store a user ``!cmd`` result now, or after the run when one is active (a bash
        message between a tool call and its result would break the transcript)."""
        self._queues.record_bash(message)

    async def send_custom_message(
        self, message: CustomMessage, *, deliver_as: str = "follow_up", trigger_turn: bool | None = None
    ) -> None:
        """A plugin message for the context (see :meth:`MessageQueues.send_custom_message`)."""
        await self._queues.send_custom_message(message, deliver_as=deliver_as, trigger_turn=trigger_turn)

    # ================================================================== commands

    async def run_command(self, name: str, args: str = "") -> None:
        registered = self.plugins.registry.commands.get(name)
        if registered is None:
            raise KeyError(f"unknown command /{name}")
        controller = AbortController()
        self._commands[controller] = asyncio.current_task()
        ctx = self.context_host.command_context(controller.signal)
        token = CURRENT_PLUGIN.set(registered.plugin)
        try:
            result = registered.value.handler(args, ctx)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                await result
        except Exception as exc:
            self.runner.report(
                registered.plugin, f"command /{name}", f"handler raised {type(exc).__name__}: {exc}", exc
            )
        finally:
            CURRENT_PLUGIN.reset(token)
            self._commands.pop(controller, None)

    @property
    def command_running(self) -> bool:
        """A plugin command's handler is running (:meth:`abort` stops it)."""
        return bool(self._commands)

    def abort_commands(self) -> None:
        """Fire the abort signal of every running plugin command; a handler that has not
        returned :data:`COMMAND_ABORT_GRACE` seconds later is cancelled."""
        if not self._commands:
            return
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for controller, task in list(self._commands.items()):
            if controller.signal.aborted:
                continue
            controller.abort()
            if task is not None and not task.done():
                if loop is None:
                    task.cancel()
                else:
                    loop.call_later(COMMAND_ABORT_GRACE, self._cancel_command, controller, task)

    def _cancel_command(self, controller: AbortController, task: asyncio.Task[Any]) -> None:
        if self._commands.get(controller) is task and not task.done():
            task.cancel()

    # ================================================================== model & thinking

    async def set_model(
        self, model: Model, *, source: Literal["set", "cycle"] = "set", thinking_level: str | None = None
    ) -> bool:
        """Switch to ``model`` (``False`` when it has no credentials). The thinking level
        becomes ``thinking_level`` (a scoped model's own), else the model's
        ``modelThinkingLevels`` entry, else ``defaultThinkingLevel``, else stays; clamped
        to what the model supports (as pi 1.6.0)."""
        return await self._model_control.set_model(model, source=source, thinking_level=thinking_level)

    async def set_thinking_level(self, level: str) -> str:
        return await self._model_control.set_thinking_level(level)

    async def set_session_name(self, name: str | None) -> None:
        name = (name or "").strip() or None
        self.sm.append_session_info(name)
        event = pi_hookspecs.SessionInfoChangedEvent(name=name)
        if self.runner.has_handlers("session_info_changed"):
            await self.runner.emit("session_info_changed", event)
        self._emit(event)

    # ================================================================== control

    def abort(self) -> None:
        """Stop the active run (and a retry backoff) and the running plugin commands
        (their ``ctx.signal`` fires)."""
        self._runs.abort()
        self.abort_commands()

    async def abort_and_wait(self) -> None:
        self.abort()
        await self.wait_for_idle()

    async def wait_for_idle(self) -> None:
        await self._runs.settled.wait()

    def abort_retry(self) -> None:
        """Cancel a pending automatic retry (its backoff) without aborting anything else."""
        self._retry.cancel()

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Drop the queued steering and follow-up messages; returns their texts."""
        return self._queues.clear()

    @property
    def shutdown_requested(self) -> bool:
        """A plugin called ``ctx.shutdown()``."""
        return self._shutdown_requested

    def request_shutdown(self) -> None:
        """``ctx.shutdown()``: ``on_shutdown`` runs now when the session is idle, else
        once the current run settles."""
        self._shutdown_requested = True
        if not self._runs.busy and self.on_shutdown is not None:
            result = self.on_shutdown()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                self.spawn(result)

    async def start(self, reason: str = "startup", previous_session_file: str | None = None) -> None:
        """``session_start`` then ``resources_discover``; call once the host is bound."""
        self._model_control.record_selection()
        watch_mcp_servers(self.runner, self.plugins.registry, self.spawn)
        for problem in await announce_start(
            self.runner, self.services.resources, self.cwd, reason, previous_session_file
        ):
            self._notice("warning", problem)

    async def _on_settled(self) -> None:
        """A run settled: a shutdown a plugin requested during it runs now."""
        if self._shutdown_requested and self.on_shutdown is not None:
            result = self.on_shutdown()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                await result

    async def shutdown(self, reason: str = "quit", target_session_file: str | None = None) -> None:
        await announce_shutdown(self.runner, reason, target_session_file)

    def dispose(self, reason: str = "the session was disposed") -> None:
        if self._disposed:
            return
        self._disposed = True
        self.abort()
        for task, abort in list(self._background.items()):
            abort()
            task.cancel()
        self.cache_warmer.cancel()
        self.plugins.invalidate(reason)
        self._listeners.clear()
        from ..ai.session_resources import release_session  # what wire APIs keep (Codex's socket)

        release_session(self.sm.get_session_id())
        self.sm.close()

    # ================================================================== user bash & nested calls

    async def execute_bash(
        self, command: str, *, exclude_from_context: bool = False, on_data: Any = None, signal: Any = None
    ) -> BashExecutionMessage:
        return await self._user_bash.run(
            command, exclude_from_context=exclude_from_context, on_data=on_data, signal=signal
        )

    async def execute_tool(
        self,
        name: str,
        args: dict[str, Any],
        *,
        parent_tool_call_id: str,
        signal: Any = None,
        on_update: Any = None,
    ) -> ToolResult:
        return await self._nested_calls.execute(
            name, args, parent_tool_call_id=parent_tool_call_id, signal=signal, on_update=on_update
        )

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        """Run ``coroutine`` in the background, keeping a reference until it is done."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def spawn_owned(self, coroutine: Any, abort: Callable[[], None]) -> asyncio.Task[Any]:
        """Run ``coroutine`` in the background until it is done or the session is
        disposed: then ``abort()`` is called and the task cancelled (a catalogue refresh)."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        if self._disposed:
            abort()
            task.cancel()
            return task
        self._background[task] = abort
        task.add_done_callback(lambda done: self._background.pop(done, None))
        return task


__all__ = ["COMMAND_ABORT_GRACE", "AgentSession", "NoModelError", "PromptOutcome", "SessionBusyError"]
