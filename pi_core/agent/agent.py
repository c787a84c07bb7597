"""The generic agent: state, the model/tool loop, steering and follow-up queues, abort.

It knows nothing of sessions or plugins. A run goes:

    agent_start, turn_start, the prompt's message_start/end
    repeat:  [prepare_next_turn, turn_start]  pending messages  prepare_request
             model request (message_start, message_update…, message_end)
             tool calls (tool_execution_start/update/end, tool result messages)
             finish_turn, turn_end
    until no tool calls, steering, follow-ups or requested continuation remain
    agent_end

Listeners are awaited one by one and the state reflects an event before they see it;
the loop does not move on until they return — so a listener that persists messages at
``message_end`` has stored the assistant message before any of its tools runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any, Literal

from pi_hookspecs import (
    AbortController,
    AbortSignal,
    AgentEndEvent,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    LlmContext,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    StartEvent,
    StreamOptions,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolCallResult,
    ToolDefinition,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResult,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
    UserMessage,
)
from pi_hookspecs.record import dataclass

from .._async import maybe_await
from ..ai.dispatch import stream as default_stream
from ..ai.transform import LLM_MESSAGE_TYPES
from .tool_calls import ToolArgumentsError, validate_tool_arguments
from .types import (
    AfterToolCall,
    AgentContext,
    BeforeToolCall,
    FinishTurn,
    NextTurn,
    QueueMode,
    SimpleToolContext,
    ToolOutcome,
    TurnInfo,
)

SKIPPED_FOR_STEERING = "Skipped due to queued user message."
LLM_ROLES = frozenset({"system", "user", "assistant", "toolResult"})


class AgentBusyError(RuntimeError):
    """``prompt()`` or ``continue_()`` while a run is active."""


@dataclass
class AgentState:
    """What the agent holds between runs: transcript, tools, model and run flags."""

    messages: list[AgentMessage] = field(default_factory=list)
    """The transcript, system messages included."""
    tools: list[ToolDefinition] = field(default_factory=list)
    model: Model | None = None
    thinking_level: str = "off"
    system_prompt: str | None = None
    is_streaming: bool = False
    stream_message: AssistantMessage | None = None
    pending_tool_calls: set[str] = field(default_factory=set)
    error: str | None = None


def _error_message(model: Model | None, text: str, *, aborted: bool = False) -> AssistantMessage:
    return AssistantMessage(
        content=[],
        api=model.api if model else "",
        provider=model.provider if model else "",
        model=model.id if model else "",
        stop_reason="aborted" if aborted else "error",
        error_message=text,
    )


def default_convert_to_llm(messages: list[AgentMessage]) -> list[AgentMessage]:
    """Keep the roles every provider understands; drop the rest."""
    return [m for m in messages if m.role in LLM_ROLES]


class Agent:
    """Holds the state and runs the loop. Hook slots (assign callables; sync or async):

    * ``transform_context(messages, signal) -> messages`` before each request;
    * ``convert_to_llm(messages) -> messages`` turns app roles into provider roles;
    * ``before_tool_call(BeforeToolCall) -> ToolCallResult | dict | None`` (block);
    * ``after_tool_call(AfterToolCall) -> ToolOutcome | None`` (replace the outcome);
    * ``prepare_next_turn(TurnInfo) -> NextTurn | None`` before a further turn;
    * ``prepare_request(AgentContext) -> AgentContext | None`` before every request;
    * ``finish_turn(TurnInfo) -> FinishTurn | None`` before ``turn_end``;
    * ``stream_options(model) -> StreamOptions`` (api key, hook callbacks …);
    * ``make_tool_context(tool_call, tool, signal, on_update) -> ctx`` for ``execute``.
    """

    def __init__(
        self,
        *,
        model: Model | None = None,
        messages: Sequence[AgentMessage] = (),
        tools: Sequence[ToolDefinition] = (),
        thinking_level: str = "off",
        system_prompt: str | None = None,
        stream_fn: Callable[..., Any] | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        tool_execution: Literal["parallel", "sequential"] = "parallel",
    ) -> None:
        self.state = AgentState(
            messages=list(messages),
            tools=list(tools),
            model=model,
            thinking_level=thinking_level,
            system_prompt=system_prompt,
        )
        self.stream_fn = stream_fn
        self.steering_mode: QueueMode = steering_mode
        self.follow_up_mode: QueueMode = follow_up_mode
        self.tool_execution = tool_execution
        self.transform_context: Callable[..., Any] | None = None
        self.convert_to_llm: Callable[..., Any] | None = None
        self.before_tool_call: Callable[[BeforeToolCall], Any] | None = None
        self.after_tool_call: Callable[[AfterToolCall], Any] | None = None
        self.prepare_next_turn: Callable[[TurnInfo], Any] | None = None
        self.prepare_request: Callable[[AgentContext], Any] | None = None
        self.finish_turn: Callable[[TurnInfo], Any] | None = None
        self.stream_options: Callable[[Model], Any] | None = None
        self.make_tool_context: Callable[..., Any] | None = None
        self._listeners: list[Callable[[Any], Any]] = []
        self._steering: list[AgentMessage] = []
        self._follow_up: list[AgentMessage] = []
        self._controller: AbortController | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    # ------------------------------------------------------------------ listeners

    def subscribe(self, listener: Callable[[Any], Any]) -> Callable[[], None]:
        """Add an (awaited) event listener; returns a function that removes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def _emit(self, event: Any) -> None:
        self._apply(event)
        for listener in list(self._listeners):
            await maybe_await(listener(event))

    def _apply(self, event: Any) -> None:
        """The state reflects an event before listeners see it."""
        state = self.state
        kind = event.type
        if kind == "message_start":
            if event.message.role == "assistant":
                state.stream_message = event.message
        elif kind == "message_update":
            state.stream_message = event.message
        elif kind == "message_end":
            if event.message.role == "assistant":
                state.stream_message = None
                if event.message.stop_reason == "error":
                    state.error = event.message.error_message
            state.messages.append(event.message)
        elif kind == "tool_execution_start":
            state.pending_tool_calls.add(event.tool_call_id)
        elif kind == "tool_execution_end":
            state.pending_tool_calls.discard(event.tool_call_id)

    # ------------------------------------------------------------------ queues

    def steer(self, message: AgentMessage | str) -> None:
        """Queue a message delivered after the current tool batch (remaining tool calls
        of that batch are skipped)."""
        self._steering.append(_as_message(message))

    def follow_up(self, message: AgentMessage | str) -> None:
        """Queue a message delivered when the agent would otherwise stop."""
        self._follow_up.append(_as_message(message))

    def clear_queues(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        steering, follow_up = self._steering, self._follow_up
        self._steering, self._follow_up = [], []
        return steering, follow_up

    @property
    def queued_steering(self) -> list[AgentMessage]:
        return list(self._steering)

    @property
    def queued_follow_up(self) -> list[AgentMessage]:
        return list(self._follow_up)

    def has_queued_messages(self) -> bool:
        return bool(self._steering or self._follow_up)

    def _take(self, queue: list[AgentMessage], mode: QueueMode) -> list[AgentMessage]:
        if not queue:
            return []
        if mode == "all":
            taken = queue[:]
            queue.clear()
            return taken
        return [queue.pop(0)]

    # ------------------------------------------------------------------ control

    @property
    def is_running(self) -> bool:
        return not self._idle.is_set()

    @property
    def signal(self) -> AbortSignal | None:
        return self._controller.signal if self._controller else None

    def abort(self, reason: Any = None) -> None:
        if self._controller is not None:
            self._controller.abort(reason or "aborted")

    async def wait_for_idle(self) -> None:
        await self._idle.wait()

    async def prompt(
        self, message: AgentMessage | str | Sequence[AgentMessage], images: Sequence[ImageContent] = ()
    ) -> list[AgentMessage]:
        """Start a run with ``message``; returns the messages the run produced."""
        if isinstance(message, str):
            prompts: list[AgentMessage] = [UserMessage(content=[TextContent(text=message), *images])]
        elif isinstance(message, list | tuple):
            prompts = list(message)
        else:
            prompts = [message]  # type: ignore[list-item]
        return await self._run(prompts)

    async def continue_(self) -> list[AgentMessage]:
        """Run again from the current transcript (e.g. after a retry removed a failed
        answer). The last message must not be an assistant message — unless messages
        are queued, which then start the run."""
        if self.state.messages and self.state.messages[-1].role == "assistant":
            queued = self._take(self._steering, self.steering_mode) or self._take(self._follow_up, self.follow_up_mode)
            if queued:
                return await self._run(queued)
            raise ValueError("Cannot continue from message role: assistant")
        if not self.state.messages:
            raise ValueError("Cannot continue: no messages in context")
        return await self._run(None)

    async def _run(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        if self.is_running:
            raise AgentBusyError(
                "The agent is already running; queue the message with steer() or follow_up(), "
                "or wait for the run to finish"
            )
        self._idle.clear()
        self._controller = AbortController()
        self.state.is_streaming = True
        self.state.error = None
        try:
            return await _Run(self, self._controller.signal).run(prompts)
        finally:
            self.state.is_streaming = False
            self.state.stream_message = None
            self.state.pending_tool_calls.clear()
            self._controller = None
            self._idle.set()


def _as_message(message: AgentMessage | str) -> AgentMessage:
    return UserMessage(content=[TextContent(text=message)]) if isinstance(message, str) else message


class _Run:
    """One low-level run of the loop."""

    def __init__(self, agent: Agent, signal: AbortSignal) -> None:
        self.agent = agent
        self.signal = signal
        self.emit = agent._emit
        self.new_messages: list[AgentMessage] = []
        self.turn_index = 0

    def _context(self) -> AgentContext:
        state = self.agent.state
        return AgentContext(
            messages=list(state.messages),
            tools=list(state.tools),
            model=state.model,
            thinking_level=state.thinking_level,
            system_prompt=state.system_prompt,
        )

    async def run(self, prompts: list[AgentMessage] | None) -> list[AgentMessage]:
        agent = self.agent
        await self.emit(AgentStartEvent.model_construct())
        await self.emit(TurnStartEvent.model_construct(turn_index=0, timestamp=int(time.time() * 1000)))
        context = self._context()
        for prompt in prompts or []:
            await self.emit(MessageStartEvent.model_construct(message=prompt))
            await self.emit(MessageEndEvent.model_construct(message=prompt))
            context.messages.append(prompt)
            self.new_messages.append(prompt)
        pending = agent._take(agent._steering, agent.steering_mode)
        first = True
        while True:
            more = True
            continue_requested = False
            while more or pending or continue_requested:
                if not first:
                    self.turn_index += 1
                    await self.emit(
                        TurnStartEvent.model_construct(turn_index=self.turn_index, timestamp=int(time.time() * 1000))
                    )
                first = False
                for message in pending:
                    await self.emit(MessageStartEvent.model_construct(message=message))
                    await self.emit(MessageEndEvent.model_construct(message=message))
                    context.messages.append(message)
                    self.new_messages.append(message)
                pending = []
                if agent.prepare_request is not None:
                    prepared = await maybe_await(agent.prepare_request(context))
                    if prepared is not None:
                        context = prepared
                message = await self._assistant_response(context)
                self.new_messages.append(message)
                if message.stop_reason in ("error", "aborted"):
                    info = self._turn(message, [], context, message.stop_reason)
                    if agent.finish_turn is not None:
                        await maybe_await(agent.finish_turn(info))
                    await self._turn_end(info)
                    await self.emit(AgentEndEvent.model_construct(messages=list(self.new_messages)))
                    return self.new_messages
                tool_calls = message.tool_calls()
                results: list[ToolResultMessage] = []
                terminate = False
                if tool_calls:
                    if message.stop_reason == "length":
                        results = await self._fail_truncated(tool_calls)
                    else:
                        results, terminate = await self._execute(context, message, tool_calls)
                    context.messages.extend(results)
                    self.new_messages.extend(results)
                info = self._turn(message, results, context, "completed")
                decision = None
                if agent.finish_turn is not None:
                    decision = await maybe_await(agent.finish_turn(info))
                continue_requested = isinstance(decision, FinishTurn) and decision.continue_
                await self._turn_end(info)
                # Aborted during the tools: the next turn's request ends at once with the
                # empty ``aborted`` assistant message (as pi 1.6.0 records it), which ends
                # the run below.
                more = bool(tool_calls) and not terminate
                pending = agent._take(agent._steering, agent.steering_mode)
                if terminate and not pending:
                    continue_requested = False
                    break
                if more or pending or continue_requested:
                    context = await self._next_turn(info, context)
            follow_ups = agent._take(agent._follow_up, agent.follow_up_mode)
            if follow_ups:
                pending = follow_ups
                context = await self._next_turn(info, context)
                continue
            break
        await self.emit(AgentEndEvent.model_construct(messages=list(self.new_messages)))
        return self.new_messages

    def _turn(
        self,
        message: AssistantMessage,
        results: list[ToolResultMessage],
        context: AgentContext,
        outcome: Any,
    ) -> TurnInfo:
        return TurnInfo(
            turn_index=self.turn_index,
            message=message,
            tool_results=results,
            context=context,
            new_messages=self.new_messages,
            outcome=outcome,
        )

    async def _turn_end(self, info: TurnInfo) -> None:
        await self.emit(
            TurnEndEvent.model_construct(
                turn_index=info.turn_index,
                message=info.message,
                tool_results=list(info.tool_results),
                outcome=info.outcome,
            )
        )

    async def _next_turn(self, info: TurnInfo, context: AgentContext) -> AgentContext:
        agent = self.agent
        if agent.prepare_next_turn is None:
            return context
        prepared: NextTurn | None = await maybe_await(agent.prepare_next_turn(info))
        if prepared is None:
            return context
        if prepared.context is not None:
            context = prepared.context
        for message in prepared.messages:
            await self.emit(MessageStartEvent.model_construct(message=message))
            await self.emit(MessageEndEvent.model_construct(message=message))
            context.messages.append(message)
            self.new_messages.append(message)
        return context

    # ------------------------------------------------------------------ model request

    async def _assistant_response(self, context: AgentContext) -> AssistantMessage:
        agent = self.agent
        model = context.model
        messages = context.messages
        final: AssistantMessage | None = None
        started = False
        try:
            if model is None:
                raise RuntimeError("No model selected")
            if agent.transform_context is not None:
                messages = await maybe_await(agent.transform_context(messages, self.signal))
            convert = agent.convert_to_llm or default_convert_to_llm
            llm_messages = await maybe_await(convert(messages))
            has_system = _holds_system(llm_messages)
            # The messages are validated models already: construct, don't re-validate
            # the whole history on every request.
            llm_context = LlmContext.model_construct(
                system_prompt=None if has_system else context.system_prompt,
                messages=list(llm_messages),
                tools=[] if has_system else [t.declaration() for t in _declared(context.tools)],
            )
            options = None
            if agent.stream_options is not None:
                options = await maybe_await(agent.stream_options(model))
            if options is None:
                options = StreamOptions.model_construct()
            options.signal = self.signal
            options.thinking_level = context.thinking_level
            stream_fn = agent.stream_fn if agent.stream_fn is not None else default_stream
            stream = await maybe_await(stream_fn(model, llm_context, options))
            async for event in stream:
                if isinstance(event, StartEvent):
                    started = True
                    if event.partial is None:
                        raise ValueError("the stream started without its message")
                    await self.emit(MessageStartEvent.model_construct(message=event.partial))
                elif isinstance(event, DoneEvent):
                    final = event.message
                    break
                elif isinstance(event, ErrorEvent):
                    final = event.error
                    break
                elif started and event.partial is not None:
                    await self.emit(
                        MessageUpdateEvent.model_construct(message=event.partial, assistant_message_event=event)
                    )
            if final is None:
                result = getattr(stream, "result", None)
                final = await maybe_await(result()) if callable(result) else None
            if final is None:
                raise RuntimeError("the provider stream ended without a final message")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a provider or hook bug must not kill the session
            final = _error_message(model, f"{type(exc).__name__}: {exc}", aborted=self.signal.aborted)
        if self.signal.aborted and final.stop_reason not in ("aborted", "error"):
            final.stop_reason = "aborted"
        if not started:
            await self.emit(MessageStartEvent.model_construct(message=final))
        await self.emit(MessageEndEvent.model_construct(message=final))
        context.messages.append(final)
        return final

    # ------------------------------------------------------------------ tools

    async def _fail_truncated(self, tool_calls: list[ToolCall]) -> list[ToolResultMessage]:
        results = []
        for call in tool_calls:
            await self.emit(
                ToolExecutionStartEvent.model_construct(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
            )
            outcome = ToolOutcome(
                _failed(
                    f'Tool call "{call.name}" was not executed: the response hit the output token limit, so its '
                    "arguments may be truncated. Re-issue the tool call with complete arguments."
                ),
                True,
            )
            await self._execution_end(call, outcome, None)
            message = _result_message(call, outcome)
            await self.emit(MessageStartEvent.model_construct(message=message))
            await self.emit(MessageEndEvent.model_construct(message=message))
            results.append(message)
        return results

    async def _execute(
        self, context: AgentContext, assistant: AssistantMessage, tool_calls: list[ToolCall]
    ) -> tuple[list[ToolResultMessage], bool]:
        """Preflight every call in order (a steering message arriving meanwhile skips the
        rest), then run them: one after the other when the agent or any tool of the
        batch is sequential, concurrently otherwise. Result messages follow the source
        order either way."""
        sequential = self.agent.tool_execution == "sequential" or any(
            (tool := context.tool(call.name)) is not None and tool.execution_mode == "sequential" for call in tool_calls
        )
        results: list[ToolResultMessage] = []
        finished: list[ToolOutcome] = []
        running: list[tuple[ToolCall, Any]] = []
        skip_rest = False
        for call in tool_calls:
            await self.emit(
                ToolExecutionStartEvent.model_construct(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
            )
            outcome: Any
            if skip_rest:
                outcome = ToolOutcome(_failed(SKIPPED_FOR_STEERING), True)
                await self._execution_end(call, outcome, None)
            else:
                prepared = await self._prepare(context, assistant, call)
                if isinstance(prepared, ToolOutcome):
                    outcome = prepared
                    await self._execution_end(call, outcome, None)
                elif sequential:
                    outcome = await self._run_tool(context, assistant, call, *prepared)
                else:
                    outcome = asyncio.ensure_future(self._run_tool(context, assistant, call, *prepared))
            if sequential:
                finished.append(outcome)
                results.append(await self._result(call, outcome))
            else:
                running.append((call, outcome))
            if self.signal.aborted:
                break
            if self.agent._steering:
                skip_rest = True
        if running:
            done = await asyncio.gather(*(o if isinstance(o, asyncio.Future) else _ready(o) for _, o in running))
            for (call, _), outcome in zip(running, done, strict=True):
                finished.append(outcome)
                results.append(await self._result(call, outcome))
        terminate = bool(finished) and all(o.result.terminate for o in finished)
        return results, terminate

    async def _result(self, call: ToolCall, outcome: ToolOutcome) -> ToolResultMessage:
        message = _result_message(call, outcome)
        await self.emit(MessageStartEvent.model_construct(message=message))
        await self.emit(MessageEndEvent.model_construct(message=message))
        return message

    async def _prepare(
        self, context: AgentContext, assistant: AssistantMessage, call: ToolCall
    ) -> ToolOutcome | tuple[ToolDefinition, dict[str, Any]]:
        tool = context.tool(call.name)
        if tool is None:
            return ToolOutcome(_failed(f"Tool {call.name} not found"), True)
        try:
            args = validate_tool_arguments(tool, call)
        except ToolArgumentsError as exc:
            return ToolOutcome(_failed(str(exc)), True)
        hook = self.agent.before_tool_call
        if hook is not None:
            try:
                decision = await maybe_await(hook(BeforeToolCall(assistant, call, args, context)))
                if isinstance(decision, dict):
                    decision = ToolCallResult.model_validate(decision)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # fail closed
                return ToolOutcome(_failed(f"Tool call blocked: {type(exc).__name__}: {exc}"), True)
            if self.signal.aborted:
                return ToolOutcome(_failed("Operation aborted"), True)
            if decision is not None and decision.block:
                return ToolOutcome(
                    _failed(decision.reason or "Tool execution was blocked", terminate=decision.terminate),
                    True,
                )
        if self.signal.aborted:
            return ToolOutcome(_failed("Operation aborted"), True)
        return tool, args

    async def _run_tool(
        self,
        context: AgentContext,
        assistant: AssistantMessage,
        call: ToolCall,
        tool: ToolDefinition,
        args: dict[str, Any],
    ) -> ToolOutcome:
        updates: list[Any] = []
        accepting = True

        def on_update(partial: ToolResult) -> None:
            if accepting:
                event = ToolExecutionUpdateEvent.model_construct(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    args=call.arguments,
                    partial_result=ToolResult.coerce(partial),
                )
                updates.append(asyncio.ensure_future(self.emit(event)))

        make_ctx = self.agent.make_tool_context
        ctx = (
            make_ctx(call, tool, self.signal, on_update)
            if make_ctx is not None
            else SimpleToolContext(call.id, self.signal, on_update)
        )
        start = time.perf_counter()
        try:
            result = await tool.run(args, ctx)
            outcome = ToolOutcome(result, bool(result.is_error))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            text = "Operation aborted" if self.signal.aborted else (str(exc) or type(exc).__name__)
            outcome = ToolOutcome(_failed(text), True)
        finally:
            duration = round((time.perf_counter() - start) * 1000)
            accepting = False
            if updates:
                await asyncio.gather(*updates)
        outcome.duration_ms = duration
        hook = self.agent.after_tool_call
        if hook is not None:
            try:
                replaced = await maybe_await(hook(AfterToolCall(assistant, call, args, outcome, context)))
                if replaced is not None:
                    outcome = replaced
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                outcome = ToolOutcome(_failed(f"{type(exc).__name__}: {exc}"), True)
            if outcome.duration_ms is None:
                outcome.duration_ms = duration
        await self._execution_end(call, outcome, outcome.duration_ms)
        return outcome

    async def _execution_end(self, call: ToolCall, outcome: ToolOutcome, duration: float | None) -> None:
        await self.emit(
            ToolExecutionEndEvent.model_construct(
                tool_call_id=call.id,
                tool_name=call.name,
                result=outcome.result,
                is_error=outcome.is_error,
                duration_ms=float(duration) if duration is not None else None,  # a float field
            )
        )


def _failed(text: str, **fields: Any) -> ToolResult:
    """An error result the loop makes for a call (unknown tool, invalid arguments,
    blocked, aborted, thrown): ``details`` is an empty object, as pi 1.6.0 records it."""
    return ToolResult.error(text, details={}, **fields)


async def _ready(value: Any) -> Any:
    return value


def _declared(tools: list[ToolDefinition]) -> list[ToolDefinition]:
    return [t for t in tools if t.exposure in ("direct", "model-only")]


def _result_message(call: ToolCall, outcome: ToolOutcome) -> ToolResultMessage:
    result = outcome.result
    # The call's validated id and name, the tool's ToolResult: constructed, not validated.
    return ToolResultMessage.model_construct(
        tool_call_id=call.id,
        tool_name=call.name,
        content=list(result.content),
        details=result.details,
        usage=result.usage,
        is_error=outcome.is_error,
        duration_ms=outcome.duration_ms,
    )


def _holds_system(messages: Sequence[Any]) -> bool:
    """Whether ``messages`` hold a system message. Every request asks this of the whole
    history: the classes are gathered in a C loop, and ``issubclass`` is asked only of
    the few that are not one of the four provider classes."""
    return any(
        kind is SystemMessage or (kind not in LLM_MESSAGE_TYPES and issubclass(kind, SystemMessage))
        for kind in set(map(type, messages))
    )
