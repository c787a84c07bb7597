"""AgentSession: the coding agent around the generic loop.

It owns the :class:`~pi_core.agent.Agent`, the session file, the tool registry and
the plugin runtime of one session, and turns a prompt into finished, persisted work:

    command -> input hook -> /skill: and template expansion -> (busy: steer/follow-up)
    -> flush pending bash -> model/auth check -> compaction check -> before_agent_start
    -> system patch + user message -> runs (retry, overflow recovery, queued work)
    -> agent_before_settle -> agent_settled

Every agent event goes first to the plugins, then to the host's listeners, then (at
``message_end``) into the session file — all awaited before the loop moves on, so a
tool call's assistant message is stored before the tool runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from pi_hookspecs import (
    AbortController,
    AfterProviderResponseEvent,
    AgentBeforeSettleEvent,
    AgentMessage,
    AgentSettledEvent,
    AssistantMessage,
    BeforeAgentStartEvent,
    BeforeProviderHeadersEvent,
    BeforeProviderRequestEvent,
    CompactionEntry,
    ContextEvent,
    ContextWithSystemEvent,
    CustomMessage,
    ImageContent,
    InputEvent,
    Model,
    ModelSelectEvent,
    ProviderStreamEvent,
    SessionBeforeCompactEvent,
    SessionCompactEvent,
    SessionCompactFailedEvent,
    SessionInfoChangedEvent,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingLevelSelectEvent,
    ToolCallEvent,
    ToolDefinition,
    ToolResult,
    ToolResultEvent,
    ToolResultMessage,
    TurnEndEvent,
    UserMessage,
)

from ..agent import AfterToolCall, Agent, AgentContext, BeforeToolCall, FinishTurn, NextTurn, ToolOutcome, TurnInfo
from ..ai import clamp_thinking_level, is_context_overflow, is_retryable_error
from ..extensions.runner import CURRENT_PLUGIN
from ..resources.prompt_templates import expand_prompt_template
from ..resources.settings import removed_tools, resolve_default_tools
from ..resources.skills import expand_skill_command
from ..resources.system_prompt import (
    build_system_prompt_sections,
    diff_system_prompt_sections,
    render_system_prompt,
)
from ..session import SessionManager, convert_to_llm, current_system_message
from .events import (
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ExtensionErrorEvent,
    NoticeEvent,
    QueueUpdateEvent,
    ThinkingLevelChangedEvent,
)
from .nested import NestedLedger
from .services import SessionServices
from .tool_registry import ToolRegistry, ToolSelection

PromptOutcome = Literal["handled", "queued", "started"]


class SessionBusyError(RuntimeError):
    """A prompt while the session runs, without saying whether to steer or follow up."""


class NoModelError(RuntimeError):
    pass


def _replace_in_place(target: Any, replacement: Any) -> None:
    """Make ``target`` hold ``replacement``'s fields (same object: state, host and file agree)."""
    for name in type(target).model_fields:
        setattr(target, name, getattr(replacement, name))
    extra = getattr(replacement, "__pydantic_extra__", None)
    if extra is not None:
        target.__pydantic_extra__ = dict(extra)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content or [])


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
        self.models = services.models
        self._listeners: list[Callable[[Any], Any]] = []
        self._busy = False
        self._settled = asyncio.Event()
        self._settled.set()
        self._abort_requested = False
        self._retry_controller: AbortController | None = None
        self._pending_bash: list[AgentMessage] = []
        self._pending_next_turn: list[AgentMessage] = []
        self._queued_steer: list[str] = []
        self._queued_follow_up: list[str] = []
        self._forced_prompt: str | None = None
        self._run_options: Any = None
        self._entry_ids: dict[int, str] = {}
        self.nested = NestedLedger()
        """Records and usage of nested tool calls, per top-level call (``nestedCalls``)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._head_cache: tuple[int, Any, SystemMessage | None] | None = None
        self._llm_cache: tuple[int, Any, bool, list[AgentMessage]] | None = None
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
        self.agent = Agent(
            messages=list(context.messages),
            stream_fn=stream_fn or self.models.stream,
            steering_mode=settings.steering_mode,
            follow_up_mode=settings.follow_up_mode,
        )
        self.agent.state.model = self._initial_model(model, context)
        level = thinking_level or context.thinking_level if (thinking_level or self.sm.get_entry_count()) else None
        self.agent.state.thinking_level = self._clamp(level or settings.default_thinking_level)
        options = services.options
        cli = list(options.tools) if options.tools is not None else None
        modifiers_only = cli is not None and all(e.startswith(("+", "-")) for e in cli)
        self.tools = ToolRegistry(
            ToolSelection(
                default_tools=resolve_default_tools(settings, cli if modifiers_only else None),
                allowlist=cli if cli is not None and not modifiers_only else None,
                exclude=list(options.exclude_tools),
                no_tools=options.no_tools,
                no_builtin_tools=options.no_builtin_tools,
                removed=removed_tools(settings, cli if modifiers_only else None),
            )
        )
        self._rebuild_tools(keep_active=None)
        head = current_system_message(context.messages)
        if head is not None and head.tools_added:
            # a resumed branch keeps the tools it had declared (e.g. ones tool_search loaded)
            self.tools.restore(t.name for t in head.tools_added)
            self.agent.state.tools = self.tools.active_definitions()
        self._install_hooks()
        from .context_host import SessionContextHost

        self.context_host = SessionContextHost(self)
        self.plugins.bind(self.context_host)

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
    def settings(self) -> Any:
        return self.services.resources.settings

    @property
    def is_busy(self) -> bool:
        """A prompt operation is running (including retries, compaction, queued work)."""
        return self._busy

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
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message.text()
        return ""

    def last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def _initial_model(self, model: Model | None, context: Any) -> Model | None:
        if model is not None:
            return model
        if context.model is not None:
            found = self.models.get(context.model.provider, context.model.model_id)
            if found is not None:
                return found
        settings = self.settings
        if settings.default_model:
            try:
                return self.models.resolve(settings.default_model, provider=settings.default_provider).model
            except Exception as exc:
                self._notice("warning", f"settings defaultModel {settings.default_model!r}: {exc}")
        return self.models.default_model()

    def _clamp(self, level: str) -> str:
        model = self.agent.state.model
        if model is None:
            return level
        return clamp_thinking_level(model, level)

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
                self._report_listener_error(exc)

    def _report_listener_error(self, exc: Exception) -> None:
        import sys

        print(f"pi: session listener failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    def _notice(self, level: Literal["info", "warning", "error"], message: str) -> None:
        self._emit(NoticeEvent(level=level, message=message))

    def _on_hook_error(self, error: Any) -> None:
        record = next((r for r in self.plugins.records if r.name == error.plugin), None)
        where = (record.source.path or record.source.origin) if record else error.plugin
        self._emit(ExtensionErrorEvent(extension_path=where, event=error.hook, error=error.message))

    # ================================================================== tools

    def _rebuild_tools(self, keep_active: Sequence[str] | None) -> None:
        builtin: list[tuple[ToolDefinition, str | None]] = []
        extension: list[tuple[ToolDefinition, str | None]] = []
        for reg in self.plugins.registry.tools.values():
            if reg.source == "builtin":
                builtin.append((reg.value, reg.plugin))
            else:
                if reg.shadows is not None:
                    builtin.append((reg.shadows.value, reg.shadows.plugin))
                extension.append((reg.value, reg.plugin))
        self.tools.rebuild(builtin, extension, list(self.services.options.sdk_tools), keep_active=keep_active)
        self.agent.state.tools = self.tools.active_definitions()

    def set_active_tools(self, names: Sequence[str]) -> list[str]:
        active = self.tools.set_active(names)
        self.agent.state.tools = self.tools.active_definitions()
        return active

    def register_tool(self, definition: ToolDefinition, plugin: str | None = None) -> bool:
        ok = self.tools.register(definition, "extension", plugin)
        self.agent.state.tools = self.tools.active_definitions()
        return ok

    # ================================================================== system prompt

    def _settle_tool_selection(self, options: Any, selected: list[str]) -> None:
        """After ``before_agent_start``: a handler that changed ``selected_tools`` chose the
        active tools; otherwise tools a handler (de)activated or registered through its
        ``ctx`` show in the options (with their prompt lines)."""
        active = [d.name for d in self.tools.active_definitions()]
        if options.selected_tools != selected:
            if options.selected_tools != active:
                self.set_active_tools(options.selected_tools)
            return
        if active == selected:
            return
        fresh = self.system_prompt_options()
        options.selected_tools = fresh.selected_tools
        options.hidden_tools = fresh.hidden_tools
        for name in fresh.selected_tools:
            if name not in selected:
                if name in fresh.tool_snippets:
                    options.tool_snippets[name] = fresh.tool_snippets[name]
                if name in fresh.tool_guidelines:
                    options.tool_guidelines[name] = fresh.tool_guidelines[name]

    def system_prompt_options(self) -> Any:
        declared = [d.name for d in self.tools.declared_definitions()]
        active = self.tools.active_definitions()
        return self.services.resources.system_prompt_options(
            selected_tools=[d.name for d in active],
            hidden_tools=[d.name for d in active if d.name not in declared],
            tool_snippets={d.name: d.prompt_snippet for d in active if d.prompt_snippet},
            tool_guidelines={d.name: list(d.prompt_guidelines) for d in active if d.prompt_guidelines},
        )

    def _sections(self, options: Any = None) -> dict[str, str]:
        return build_system_prompt_sections(options or self._run_options or self.system_prompt_options())

    @property
    def system_prompt(self) -> str:
        if self._forced_prompt is not None:
            return self._forced_prompt
        return render_system_prompt(self._sections())

    def _loadout_patch(self, messages: Sequence[AgentMessage], options: Any = None) -> SystemMessage | None:
        """The system message that brings the transcript's prompt and tool declarations
        up to date (``None`` when they already are)."""
        sections = self._sections(options)
        declared = {d.name: d.declaration() for d in self.tools.declared_definitions()}
        head = self._current_head(messages)
        if head is None:
            return SystemMessage(sections=sections, tools_added=list(declared.values()))
        section_patch = diff_system_prompt_sections(head.sections or {}, sections)
        current = {t.name: t for t in head.tools_added or []}
        added = [d for name, d in declared.items() if name not in current or current[name] != d]
        removed = [{"name": name} for name in current if name not in declared]
        if not section_patch and not added and not removed:
            return None
        return SystemMessage.model_validate(
            {
                "sections": section_patch or None,
                "toolsAdded": [a.model_dump() for a in added] or None,
                "toolsRemoved": removed or None,
            }
        )

    def _current_head(self, messages: Sequence[AgentMessage]) -> SystemMessage | None:
        """The transcript's prompt and tools replayed into one system message. Replays
        only the messages added since the last call when the transcript just grew."""
        cached = self._head_cache
        if cached is not None:
            count, last, head = cached
            if len(messages) >= count and count and messages[count - 1] is last:
                tail = [m for m in messages[count:] if isinstance(m, SystemMessage)]
                if tail:
                    head = current_system_message([head, *tail] if head is not None else tail)
                self._head_cache = (len(messages), messages[-1] if messages else None, head)
                return head
        head = current_system_message(messages)
        self._head_cache = (len(messages), messages[-1] if messages else None, head) if messages else None
        return head

    # ================================================================== agent hooks

    def _install_hooks(self) -> None:
        agent = self.agent
        agent.subscribe(self._on_agent_event)
        agent.transform_context = self._transform_context
        agent.convert_to_llm = self._convert_to_llm
        agent.before_tool_call = self._before_tool_call
        agent.after_tool_call = self._after_tool_call
        agent.prepare_request = self._prepare_request
        agent.prepare_next_turn = self._prepare_next_turn
        agent.finish_turn = self._finish_turn
        agent.stream_options = self._stream_options
        agent.make_tool_context = self._make_tool_context

    def _projection(self) -> list[AgentMessage]:
        return list(self.sm.build_session_context().messages)

    def _sync_state_from_session(self) -> None:
        self.agent.state.messages = self._projection()

    async def _prepare_request(self, context: AgentContext) -> AgentContext:
        context.messages = self._projection()
        context.tools = self.tools.active_definitions()
        context.model = self.agent.state.model
        context.thinking_level = self.agent.state.thinking_level
        return context

    async def _prepare_next_turn(self, info: TurnInfo) -> NextTurn | None:
        await self._maybe_threshold_compact(between_turns=True)
        patch = self._loadout_patch(self._projection())
        return NextTurn(messages=[patch] if patch is not None else [])

    async def _transform_context(self, messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        runner = self.runner
        if runner.has_handlers("context"):
            conversation = [_clone(m) for m in messages if not isinstance(m, SystemMessage)]
            event = ContextEvent.model_construct(type="context", messages=conversation)
            passed = event.messages
            result = await runner.emit("context", event)
            if result is not passed:
                head = self._current_head(messages)
                messages = [head, *result] if head is not None else list(result)
        if runner.has_handlers("context_with_system"):
            event2 = ContextWithSystemEvent.model_construct(type="context_with_system", messages=[_clone(m) for m in messages])
            messages = await runner.emit("context_with_system", event2)
            if not messages or not isinstance(messages[0], SystemMessage):
                runner.report("context_with_system", "context_with_system", "a handler dropped the leading system message")
        if self._forced_prompt is not None:
            head = current_system_message(messages)
            tools = head.tools_added if head is not None else None
            forced = SystemMessage(content=self._forced_prompt, tools_added=tools)
            messages = [forced, *(m for m in messages if not isinstance(m, SystemMessage))]
        return messages

    def _convert_to_llm(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """The session's messages in provider roles (images replaced when
        ``images.blockImages``). The transcript grows by appending, so only the messages
        added since the previous request are converted."""
        block = bool(self.settings.block_images)
        cached = self._llm_cache
        if cached is not None:
            count, last, was_blocked, converted = cached
            if was_blocked == block and count and len(messages) >= count and messages[count - 1] is last:
                tail = convert_to_llm(messages[count:])
                out = converted + ([_block_images(m) for m in tail] if block else tail)
                self._llm_cache = (len(messages), messages[-1], block, out)
                return list(out)
        out = convert_to_llm(messages)
        if block:
            out = [_block_images(m) for m in out]
        self._llm_cache = (len(messages), messages[-1], block, out) if messages else None
        return list(out)

    async def _before_tool_call(self, call: BeforeToolCall) -> Any:
        if not self.runner.has_handlers("tool_call"):
            return None
        event = ToolCallEvent(tool_name=call.tool_call.name, tool_call_id=call.tool_call.id, input=call.args)
        result = await self.runner.emit("tool_call", event)
        if event.input is not call.args:
            call.args.clear()
            call.args.update(event.input)
        return result

    async def _after_tool_call(self, after: AfterToolCall) -> ToolOutcome | None:
        outcome = after.outcome
        usage = self.nested.with_nested_usage(after.tool_call.id, outcome.result.usage)
        changed = usage is not outcome.result.usage  # the usage of nested calls counts for the caller
        if changed:
            outcome = ToolOutcome(outcome.result.model_copy(update={"usage": usage}), outcome.is_error)
        if not self.runner.has_handlers("tool_result"):
            return outcome if changed else None
        result = outcome.result
        event = ToolResultEvent(
            tool_name=after.tool_call.name,
            tool_call_id=after.tool_call.id,
            input=after.args,
            content=list(result.content),
            details=result.details,
            structured_content=result.structured_content,
            is_error=outcome.is_error,
            usage=result.usage,
        )
        out = await self.runner.emit("tool_result", event)
        patched = ToolResult(
            content=out.content,
            details=out.details,
            structured_content=out.structured_content,
            is_error=out.is_error,
            usage=out.usage,
            terminate=result.terminate,
        )
        return ToolOutcome(patched, out.is_error)

    def _make_tool_context(self, call: Any, tool: ToolDefinition, signal: Any, on_update: Any) -> Any:
        from ..extensions import ToolContextImpl

        return ToolContextImpl(
            self.context_host, self.plugins.liveness, tool_call_id=call.id, signal=signal, on_update=on_update,
            owner=self.tools.owner(tool.name),
        )

    def _transport_options(self) -> dict[str, Any]:
        """``retry.provider.*`` and ``httpIdleTimeoutMs`` as the wire APIs read them
        from ``StreamOptions.extra``: the idle timeout in seconds (``None``: none),
        the provider-level retries and the longest server-requested delay accepted."""
        settings = self.settings
        provider = settings.retry_settings().provider
        timeout_ms = provider.timeout_ms if provider.timeout_ms is not None else settings.http_idle_timeout_ms
        return {
            "timeout": timeout_ms / 1000 if timeout_ms else None,
            "max_retries": provider.max_retries,
            "max_retry_delay": provider.max_retry_delay_ms / 1000 if provider.max_retry_delay_ms else None,
        }

    async def _stream_options(self, model: Model) -> StreamOptions:
        runner = self.runner
        options = StreamOptions(
            session_id=self.sm.get_session_id(), api_key=self.api_key_override, extra=self._transport_options()
        )
        names = dict(provider=model.provider, api=model.api, model=model.id)
        if runner.has_handlers("before_provider_headers"):

            async def on_headers(headers: dict[str, Any]) -> None:
                event = BeforeProviderHeadersEvent(headers=headers, **names)
                await runner.emit("before_provider_headers", event)
                if event.headers is not headers:
                    headers.clear()
                    headers.update(event.headers)

            options.on_headers = on_headers
        if runner.has_handlers("before_provider_request"):

            async def on_payload(payload: Any) -> Any:
                return await runner.emit("before_provider_request", BeforeProviderRequestEvent(payload=payload, **names))

            options.on_payload = on_payload
        if runner.has_handlers("after_provider_response"):

            async def on_response(status: int, headers: dict[str, str]) -> None:
                await runner.emit("after_provider_response", AfterProviderResponseEvent(status=status, headers=headers, **names))

            options.on_response = on_response
        if runner.has_handlers("provider_stream_event"):

            async def on_raw(data: Any) -> None:
                await runner.emit("provider_stream_event", ProviderStreamEvent(data=data, **names))

            options.on_raw_event = on_raw
        return options

    # ================================================================== the event bridge

    async def _on_agent_event(self, event: Any) -> None:
        kind = event.type
        runner = self.runner
        if kind == "message_start" and isinstance(event.message, UserMessage):
            self._dequeue_display(event.message)
        if kind == "message_end":
            if isinstance(event.message, ToolResultMessage):
                nested = self.nested.take(event.message.tool_call_id)
                if nested is not None:
                    event.message.nested_calls = nested
            if runner.has_handlers("message_end"):
                final = await runner.emit("message_end", event)
                if final is not event.message:
                    _replace_in_place(event.message, final)
        elif kind == "agent_end":
            event.will_retry = self._will_retry()
            if runner.has_handlers(kind):
                await runner.emit(kind, event)
        elif kind != "turn_end" and runner.has_handlers(kind):
            await runner.emit(kind, event)
        self._emit(event)
        if kind == "message_end":
            self._persist(event.message)

    def _persist(self, message: AgentMessage) -> None:
        if isinstance(message, CustomMessage):
            entry_id = self.sm.append_custom_message_entry(
                message.custom_type, message.content, display=message.display, details=message.details
            )
        else:
            entry_id = self.sm.append_message(message)
        self._entry_ids[id(message)] = entry_id

    def entry_id_of(self, message: AgentMessage) -> str | None:
        return self._entry_ids.get(id(message))

    def _dequeue_display(self, message: UserMessage) -> None:
        text = _text_of(message.content)
        for queue in (self._queued_steer, self._queued_follow_up):
            if text in queue:
                queue.remove(text)
                self._emit_queue()
                return

    def _emit_queue(self) -> None:
        self._emit(QueueUpdateEvent(steering=list(self._queued_steer), follow_up=list(self._queued_follow_up)))

    # ================================================================== turn boundaries

    async def _finish_turn(self, info: TurnInfo) -> FinishTurn | None:
        if not self.runner.has_handlers("turn_end"):
            return None
        event = TurnEndEvent(
            turn_index=info.turn_index,
            message=info.message,
            tool_results=list(info.tool_results),
            message_entry_id=self.entry_id_of(info.message),
            tool_result_entry_ids=[i for i in (self.entry_id_of(m) for m in info.tool_results) if i],
            outcome=info.outcome,
        )
        event.context = self._projection()  # assigned, not re-validated: no O(history) work
        outcome = await self.runner.emit_boundary("turn_end", event, build_context=self._preview)
        self._commit_drafts("turn_end", outcome.entries or [])
        if info.outcome != "completed":
            return None
        return FinishTurn(continue_=bool(outcome.continue_))

    def _preview(self, entries: list[Any]) -> list[AgentMessage]:
        preview = SessionManager.in_memory(self.cwd, entries=list(self.sm.get_branch()))
        for draft in entries:
            preview.append_draft(draft)
        return list(preview.build_session_context().messages)

    def _commit_drafts(self, hook: str, drafts: list[Any]) -> None:
        if not drafts:
            return
        try:
            self._preview(drafts)  # validate the whole proposal before appending any of it
        except Exception as exc:
            self.runner.report(hook, hook, f"the proposed entries are invalid and were dropped: {exc}")
            return
        for draft in drafts:
            self.sm.append_draft(draft)
        self._sync_state_from_session()

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
        if self.runner.has_handlers("input"):
            result = await self.runner.emit(
                "input", InputEvent(text=text, images=images, source=source, streaming_behavior=streaming_behavior)
            )
            if result.action == "handled":
                return "handled"
            text, images = result.text or "", list(result.images or [])
        if expand:
            text = self.expand_text(text)
        content: Any = text if not images else [TextContent(text=text), *images]
        message = UserMessage(content=content)
        if self._busy:
            if streaming_behavior == "steer":
                self._queued_steer.append(text)
                self.agent.steer(message)
            elif streaming_behavior == "follow_up":
                self._queued_follow_up.append(text)
                self.agent.follow_up(message)
            else:
                raise SessionBusyError(
                    "pi is busy with a run: send the message as steering or as a follow-up"
                )
            self._emit_queue()
            return "queued"
        if on_started is not None:
            self._check_model()
            on_started()
        await self._run_prompt(message, prompt_text=text, images=images)
        return "started"

    def expand_text(self, text: str) -> str:
        """``/skill:name args`` and ``/template args`` expansion."""
        if text.startswith("/skill:"):
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

    def _check_model(self) -> Model:
        model = self.agent.state.model
        if model is None:
            raise NoModelError(
                "No model is available: set ANTHROPIC_API_KEY or OPENAI_API_KEY, configure one in "
                "models.json, or pick one with --model"
            )
        if model.api != "faux" and model.api not in self.models.api_names():
            from ..ai.builtin import missing_plugin_message

            hint = missing_plugin_message(model)
            if hint is not None:
                raise NoModelError(hint)
        if model.api != "faux" and not self.api_key_override and not self.models.has_auth(model.provider):
            raise NoModelError(
                f"No API key for provider {model.provider!r}: set its environment variable, run "
                f"`pi auth login {model.provider}`, or configure apiKey in models.json"
            )
        return model

    async def _run_prompt(
        self,
        message: AgentMessage,
        *,
        prompt_text: str | None = None,
        images: Sequence[ImageContent] = (),
        custom: CustomMessage | None = None,
    ) -> None:
        self._check_model()
        self._busy = True
        self._settled.clear()
        self._abort_requested = False
        aborted = False
        try:
            self._flush_pending()
            await self._maybe_threshold_compact()
            options = self.system_prompt_options()
            base_prompt = render_system_prompt(self._sections(options))
            extra: list[AgentMessage] = []
            if self.runner.has_handlers("before_agent_start"):
                event = BeforeAgentStartEvent(
                    message_type="user" if custom is None else "custom",
                    prompt=prompt_text,
                    images=list(images),
                    message=custom,
                    system_prompt=base_prompt,
                    system_prompt_options=options,
                )
                self._run_options = options
                self._forced_prompt = None
                selected = list(options.selected_tools)
                results = await self.runner.emit("before_agent_start", event)
                self._settle_tool_selection(options, selected)
                for result in results:
                    if result.message is not None:
                        draft = result.message
                        extra.append(
                            CustomMessage(
                                custom_type=draft.custom_type,
                                content=draft.content,
                                display=draft.display,
                                details=draft.details,
                            )
                        )
                if event.system_prompt != base_prompt:
                    self._forced_prompt = event.system_prompt
                elif options.force_system_prompt:
                    self._forced_prompt = options.force_system_prompt
            patch = self._loadout_patch(self._projection(), self._run_options)
            messages: list[AgentMessage] = [patch] if patch is not None else []
            messages.append(message)
            messages += self._pending_next_turn
            self._pending_next_turn = []
            messages += extra
            self._retry_attempt = 0
            self._overflow_recovered = False
            await self.agent.prompt(messages)
            aborted = await self._after_runs()
        finally:
            self._forced_prompt = None
            self._run_options = None
            self._flush_pending()
            await self._settle(aborted or self._abort_requested)

    async def _settle(self, aborted: bool) -> None:
        self._busy = False
        event = AgentSettledEvent(aborted=aborted)
        if self.runner.has_handlers("agent_settled"):
            await self.runner.emit("agent_settled", event)
        self._emit(event)
        self._settled.set()
        if self._shutdown_requested and self.on_shutdown is not None:
            await _maybe(self.on_shutdown())

    async def _after_runs(self) -> bool:
        """Retries, overflow recovery, threshold compaction, queued work and the
        ``agent_before_settle`` boundary. Returns whether the run ended aborted."""
        while True:
            last = self.last_assistant()
            if self._abort_requested or (last is not None and last.stop_reason == "aborted"):
                return True
            if last is not None and last.stop_reason == "error":
                if await self._prepare_retry(last):
                    await self.agent.continue_()
                    continue
                if not self._overflow_recovered and self._is_overflow(last):
                    self._overflow_recovered = True
                    self._omit(last)
                    if await self.compact(reason="overflow", will_retry=True, raise_errors=False):
                        await self.agent.continue_()
                        continue
                    return False
            elif last is not None:
                if self._retry_attempt:
                    self._emit(AutoRetryEndEvent(success=True, attempt=self._retry_attempt))
                    self._retry_attempt = 0
                await self._maybe_threshold_compact()
            if self.agent.has_queued_messages():
                await self.agent.continue_()
                continue
            if await self._before_settle():
                await self.agent.continue_()
                continue
            return False

    async def _before_settle(self) -> bool:
        if not self.runner.has_handlers("agent_before_settle"):
            return False
        event = AgentBeforeSettleEvent()
        event.context = self._projection()
        outcome = await self.runner.emit_boundary("agent_before_settle", event, build_context=self._preview)
        self._commit_drafts("agent_before_settle", outcome.entries or [])
        if self._abort_requested or not outcome.continue_:
            return False
        messages = self.agent.state.messages
        return bool(messages) and messages[-1].role != "assistant"

    # ================================================================== retry

    _retry_attempt = 0
    _overflow_recovered = False

    def _is_overflow(self, message: AssistantMessage) -> bool:
        model = self.agent.state.model
        return bool(is_context_overflow(message, model.context_window if model else None))

    def _will_retry(self) -> bool:
        last = self.last_assistant()
        if last is None or last.stop_reason != "error":
            return False
        retry = self.settings.retry_settings()
        if self.auto_retry_enabled and is_retryable_error(last) and not self._is_overflow(last):
            return self._retry_attempt < retry.max_retries
        return not self._overflow_recovered and self._is_overflow(last)

    def _omit(self, message: AssistantMessage) -> None:
        """Leave a failed attempt out of the model's context (it stays in the file)."""
        entry_id = self.entry_id_of(message)
        if entry_id is not None:
            self.sm.append_context_edit(entry_id, None)
        self._sync_state_from_session()

    async def _prepare_retry(self, message: AssistantMessage) -> bool:
        retry = self.settings.retry_settings()
        if not self.auto_retry_enabled or self._is_overflow(message) or not is_retryable_error(message):
            return False
        if self._retry_attempt >= retry.max_retries:
            self._emit(
                AutoRetryEndEvent(success=False, attempt=self._retry_attempt, final_error=message.error_message)
            )
            return False
        self._retry_attempt += 1
        delay = min(retry.base_delay_ms * 2 ** (self._retry_attempt - 1), retry.max_agent_delay_ms)
        self._emit(
            AutoRetryStartEvent(
                attempt=self._retry_attempt,
                max_attempts=retry.max_retries,
                delay_ms=delay,
                error_message=message.error_message or "",
            )
        )
        self._omit(message)
        self._retry_controller = AbortController()
        try:
            waiter = asyncio.ensure_future(self._retry_controller.signal.wait())
            done, _ = await asyncio.wait([waiter], timeout=delay / 1000)
            waiter.cancel()
            if done:
                self._emit(AutoRetryEndEvent(success=False, attempt=self._retry_attempt, final_error="cancelled"))
                return False
        finally:
            self._retry_controller = None
        return True

    # ================================================================== compaction

    async def _maybe_threshold_compact(self, *, between_turns: bool = False) -> None:
        from ..compaction import estimate_context_tokens, should_compact

        model = self.agent.state.model
        if model is None:
            return
        settings = self.settings.compaction_settings(model.ref)
        if not self.auto_compaction_enabled:
            return
        tokens = estimate_context_tokens(self._projection()).tokens
        if should_compact(tokens, model.context_window, settings):
            await self.compact(reason="threshold", raise_errors=False)

    async def compact(
        self,
        custom_instructions: str | None = None,
        *,
        reason: Literal["manual", "threshold", "overflow"] = "manual",
        will_retry: bool = False,
        raise_errors: bool = True,
    ) -> CompactionEntry | None:
        """Summarise the older part of the context. Returns the saved entry, or None when
        a plugin cancelled it (or it failed and ``raise_errors`` is false)."""
        from ..compaction import CompactionError, CompactionSettings, prepare_compaction
        from ..compaction import compact as run_compaction

        model = self.agent.state.model
        self._emit(CompactionStartEvent(reason=reason))
        from_extension = False
        try:
            if model is None:
                raise CompactionError("no model to summarise with")
            settings = CompactionSettings.coerce(self.settings.compaction_settings(model.ref))
            preparation = prepare_compaction(list(self.sm.get_branch()), settings)
            if preparation is None:
                raise CompactionError("nothing to compact yet")
            signal = AbortController()
            result = None
            if self.runner.has_handlers("session_before_compact"):
                event = SessionBeforeCompactEvent(
                    preparation=preparation,
                    branch_entries=list(self.sm.get_branch()),
                    custom_instructions=custom_instructions,
                    reason=reason,
                    will_retry=will_retry,
                    signal=signal.signal,
                )
                outcome = await self.runner.emit("session_before_compact", event)
                if outcome is not None and outcome.cancel:
                    await self._compact_failed(reason, will_retry, aborted=True, message=None, from_extension=False)
                    return None
                if outcome is not None and outcome.compaction is not None:
                    result = outcome.compaction
                    from_extension = True
            if result is None:
                result = await run_compaction(
                    preparation,
                    model,
                    self._complete,
                    custom_instructions=custom_instructions,
                    convert_to_llm=convert_to_llm,
                    thinking_level=self.thinking_level,
                    session_id=self.sm.get_session_id(),
                )
            entry_id = self.sm.append_compaction(
                result.summary,
                result.first_kept_entry_id or None,
                result.tokens_before,
                details=result.details,
                from_hook=from_extension or None,
                usage=result.usage,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._compact_failed(reason, will_retry, aborted=False, message=str(exc), from_extension=from_extension)
            if raise_errors:
                raise
            return None
        entry = self.sm.get_entry(entry_id)
        self._sync_state_from_session()
        if self.runner.has_handlers("session_compact"):
            await self.runner.emit(
                "session_compact",
                SessionCompactEvent(compaction_entry=entry, from_extension=from_extension, reason=reason, will_retry=will_retry),
            )
        self._emit(
            CompactionEndEvent(
                reason=reason,
                result={
                    "summary": entry.summary,
                    "firstKeptEntryId": entry.first_kept_entry_id,
                    "tokensBefore": entry.tokens_before,
                    "details": entry.details,
                },
                will_retry=will_retry,
            )
        )
        return entry  # type: ignore[return-value]

    async def _compact_failed(
        self, reason: Any, will_retry: bool, *, aborted: bool, message: str | None, from_extension: bool
    ) -> None:
        if self.runner.has_handlers("session_compact_failed"):
            await self.runner.emit(
                "session_compact_failed",
                SessionCompactFailedEvent(
                    reason=reason, error_message=message, aborted=aborted, will_retry=will_retry, from_extension=from_extension
                ),
            )
        self._emit(CompactionEndEvent(reason=reason, aborted=aborted, will_retry=will_retry, error_message=message))

    async def _complete(self, model: Model, context: Any, options: StreamOptions) -> AssistantMessage:
        stream = await _maybe(self.agent.stream_fn(model, context, options))
        result = getattr(stream, "result", None)
        if callable(result):
            async for _ in stream:
                pass
            return await _maybe(result())  # type: ignore[no-any-return]
        final: AssistantMessage | None = None
        async for event in stream:
            if event.type == "done":
                final = event.message
            elif event.type == "error":
                final = event.error
        if final is None:
            raise RuntimeError("the summary stream ended without a message")
        return final

    # ================================================================== pending messages

    def _flush_pending(self) -> None:
        for message in self._pending_bash:
            self._persist(message)
        self._pending_bash = []
        self._sync_state_from_session()

    def record_bash(self, message: AgentMessage) -> None:
        """Store a user ``!cmd`` result now, or after the run when one is active (a bash
        message between a tool call and its result would break the transcript)."""
        if self._busy:
            self._pending_bash.append(message)
        else:
            self._persist(message)
            self._sync_state_from_session()

    async def send_custom_message(
        self, message: CustomMessage, *, deliver_as: str = "follow_up", trigger_turn: bool = False
    ) -> None:
        """A plugin message for the context: delivered as steering or a follow-up while
        a run is active; otherwise stored, starting a run when ``trigger_turn``."""
        if self._busy:
            if deliver_as == "steer":
                self.agent.steer(message)
            elif deliver_as == "next_turn":
                self._pending_next_turn.append(message)
            else:
                self.agent.follow_up(message)
            return
        if deliver_as == "next_turn" and not trigger_turn:
            self._pending_next_turn.append(message)
            return
        if trigger_turn:
            await self._run_prompt(message, custom=message)
            return
        self._persist(message)
        self._sync_state_from_session()

    # ================================================================== commands

    async def run_command(self, name: str, args: str = "") -> None:
        registered = self.plugins.registry.commands.get(name)
        if registered is None:
            raise KeyError(f"unknown command /{name}")
        ctx = self.context_host.command_context()
        token = CURRENT_PLUGIN.set(registered.plugin)
        try:
            await _maybe(registered.value.handler(args, ctx))
        except Exception as exc:
            self.runner.report(registered.plugin, f"command /{name}", f"handler raised {type(exc).__name__}: {exc}", exc)
        finally:
            CURRENT_PLUGIN.reset(token)

    # ================================================================== model & thinking

    async def set_model(self, model: Model, *, source: Literal["set", "cycle"] = "set") -> bool:
        if model.api != "faux" and not self.models.has_auth(model.provider):
            return False
        previous = self.agent.state.model
        self.agent.state.model = model
        self.sm.append_model_change(model.provider, model.id)
        clamped = self._clamp(self.agent.state.thinking_level)
        if clamped != self.agent.state.thinking_level:
            await self.set_thinking_level(clamped)
        if self.runner.has_handlers("model_select"):
            await self.runner.emit("model_select", ModelSelectEvent(model=model, previous_model=previous, source=source))
        return True

    async def set_thinking_level(self, level: str) -> str:
        previous = self.agent.state.thinking_level
        level = self._clamp(level)
        if level == previous:
            return level
        self.agent.state.thinking_level = level
        self.sm.append_thinking_level_change(level)
        self._emit(ThinkingLevelChangedEvent(level=level))
        if self.runner.has_handlers("thinking_level_select"):
            await self.runner.emit("thinking_level_select", ThinkingLevelSelectEvent(level=level, previous_level=previous))
        return level

    async def set_session_name(self, name: str | None) -> None:
        name = (name or "").strip() or None
        self.sm.append_session_info(name)
        event = SessionInfoChangedEvent(name=name)
        if self.runner.has_handlers("session_info_changed"):
            await self.runner.emit("session_info_changed", event)
        self._emit(event)

    # ================================================================== control

    def abort(self) -> None:
        """Stop the active run (and a retry backoff)."""
        self._abort_requested = True
        self.agent.abort()
        if self._retry_controller is not None:
            self._retry_controller.abort()

    async def abort_and_wait(self) -> None:
        self.abort()
        await self.wait_for_idle()

    async def wait_for_idle(self) -> None:
        await self._settled.wait()

    def abort_retry(self) -> None:
        """Cancel a pending automatic retry (its backoff) without aborting anything else."""
        if self._retry_controller is not None:
            self._retry_controller.abort()

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Drop the queued steering and follow-up messages; returns their texts."""
        steering, follow_up = list(self._queued_steer), list(self._queued_follow_up)
        self.agent.clear_queues()
        self._queued_steer, self._queued_follow_up = [], []
        self._emit_queue()
        return steering, follow_up

    @property
    def shutdown_requested(self) -> bool:
        """A plugin called ``ctx.shutdown()``."""
        return self._shutdown_requested

    def request_shutdown(self) -> None:
        """``ctx.shutdown()``: ``on_shutdown`` runs now when the session is idle, else
        once the current run settles."""
        self._shutdown_requested = True
        if not self._busy and self.on_shutdown is not None:
            result = self.on_shutdown()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                self.spawn(result)

    async def start(self, reason: str = "startup", previous_session_file: str | None = None) -> None:
        """``session_start`` then ``resources_discover``; call once the host is bound."""
        from pi_hookspecs import ResourcesDiscoverEvent, SessionStartEvent

        if self.runner.has_handlers("session_start"):
            await self.runner.emit(
                "session_start", SessionStartEvent(reason=reason, previous_session_file=previous_session_file)
            )
        if self.runner.has_handlers("resources_discover"):
            results = await self.runner.emit(
                "resources_discover",
                ResourcesDiscoverEvent(cwd=self.cwd, reason="reload" if reason == "reload" else "startup"),
            )
            skills = [p for r in results for p in r.skill_paths]
            prompts = [p for r in results for p in r.prompt_paths]
            for diagnostic in self.services.resources.extend(skill_paths=skills, prompt_paths=prompts):
                self._notice("warning", str(diagnostic))

    async def shutdown(self, reason: str = "quit", target_session_file: str | None = None) -> None:
        from pi_hookspecs import SessionShutdownEvent

        if self.runner.has_handlers("session_shutdown"):
            await self.runner.emit(
                "session_shutdown", SessionShutdownEvent(reason=reason, target_session_file=target_session_file)
            )

    def dispose(self, reason: str = "the session was disposed") -> None:
        if self._disposed:
            return
        self._disposed = True
        self.abort()
        self.plugins.invalidate(reason)
        self._listeners.clear()
        self.sm.close()

    # ================================================================== tree navigation

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
        from pi_hookspecs import SessionBeforeTreeEvent, SessionTreeEvent, UserMessage

        from ..compaction import generate_branch_summary, prepare_tree

        if self._busy:
            raise SessionBusyError("cannot navigate the tree while a run is active")
        target = self.sm.get_entry(target_id)
        if target is None:
            raise KeyError(f"no entry {target_id!r} in this session")
        old_leaf = self.sm.get_leaf_id()
        entries = self.sm.get_entries()
        preparation = prepare_tree(
            entries,
            old_leaf,
            target_id,
            user_wants_summary=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
        summary = None
        from_extension = False
        if self.runner.has_handlers("session_before_tree"):
            outcome = await self.runner.emit(
                "session_before_tree", SessionBeforeTreeEvent(preparation=preparation, signal=AbortController().signal)
            )
            if outcome is not None and outcome.cancel:
                return {"cancelled": True}
            if outcome is not None:
                if outcome.custom_instructions is not None:
                    preparation.custom_instructions = outcome.custom_instructions
                if outcome.replace_instructions is not None:
                    preparation.replace_instructions = outcome.replace_instructions
                if outcome.label is not None:
                    preparation.label = outcome.label
                if outcome.summary is not None and summarize:
                    summary, from_extension = outcome.summary, True
        editor_text = None
        leaf: str | None = target_id
        message = getattr(target, "message", None)
        if isinstance(message, UserMessage):
            leaf = target.parent_id
            editor_text = _text_of(message.content)
        if summarize and summary is None and preparation.entries_to_summarize:
            model = self._check_model()
            summary = await generate_branch_summary(
                preparation.entries_to_summarize,
                model,
                self._complete,
                custom_instructions=preparation.custom_instructions,
                replace_instructions=preparation.replace_instructions,
                convert_to_llm=convert_to_llm,
                thinking_level=self.thinking_level,
                session_id=self.sm.get_session_id(),
            )
        summary_entry = None
        if summary is not None:
            entry_id = self.sm.branch_with_summary(
                leaf, summary.summary, details=summary.details, from_hook=from_extension or None, usage=summary.usage
            )
            summary_entry = self.sm.get_entry(entry_id)
            if preparation.label:
                self.sm.set_label(entry_id, preparation.label)
        else:
            if leaf is None:
                self.sm.reset_leaf()
            else:
                self.sm.branch(leaf)
            if preparation.label:
                self.sm.set_label(target_id, preparation.label)
        self._sync_state_from_session()
        if self.runner.has_handlers("session_tree"):
            await self.runner.emit(
                "session_tree",
                SessionTreeEvent(
                    new_leaf_id=self.sm.get_leaf_id(),
                    old_leaf_id=old_leaf,
                    summary_entry=summary_entry,
                    from_extension=from_extension,
                ),
            )
        return {"cancelled": False, "editor_text": editor_text}

    # ================================================================== user bash

    async def execute_bash(
        self, command: str, *, exclude_from_context: bool = False, on_data: Any = None, signal: Any = None
    ) -> Any:
        from .bash import run_user_bash

        return await run_user_bash(
            self, command, exclude_from_context=exclude_from_context, on_data=on_data, signal=signal
        )

    # ================================================================== nested tool calls

    async def execute_tool(
        self,
        name: str,
        args: dict[str, Any],
        *,
        parent_tool_call_id: str,
        signal: Any = None,
        on_update: Any = None,
    ) -> ToolResult:
        from .nested import execute_nested_tool

        return await execute_nested_tool(
            self, name, args, parent_tool_call_id=parent_tool_call_id, signal=signal, on_update=on_update
        )

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        """Run ``coroutine`` in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task



async def _maybe(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


def _clone(obj: Any) -> Any:
    """A deep copy of a message for plugins that may change it (``context`` hooks):
    models, lists and dicts are copied, immutable leaves shared. About twice as fast as
    ``copy.deepcopy`` on pydantic models."""
    if isinstance(obj, BaseModel):
        new = object.__new__(type(obj))
        object.__setattr__(new, "__dict__", {k: _clone(v) for k, v in obj.__dict__.items()})
        object.__setattr__(new, "__pydantic_fields_set__", set(obj.__pydantic_fields_set__))
        extra = obj.__pydantic_extra__
        object.__setattr__(new, "__pydantic_extra__", None if extra is None else {k: _clone(v) for k, v in extra.items()})
        object.__setattr__(new, "__pydantic_private__", obj.__pydantic_private__)
        return new
    kind = type(obj)
    if kind is list:
        return [_clone(item) for item in obj]
    if kind is dict:
        return {key: _clone(value) for key, value in obj.items()}
    return obj


def _block_images(message: Any) -> Any:
    content = getattr(message, "content", None)
    if not isinstance(content, list) or not any(isinstance(b, ImageContent) for b in content):
        return message
    copy_ = message.model_copy()
    copy_.content = [TextContent(text="Image reading is disabled.") if isinstance(b, ImageContent) else b for b in content]
    return copy_


__all__ = ["AgentSession", "NoModelError", "PromptOutcome", "SessionBusyError"]
