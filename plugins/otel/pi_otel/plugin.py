"""The pi plugin: hooks that record what every agent run does.

Spans (OpenTelemetry GenAI conventions)::

    invoke_agent                      one prompt, until pi settles (retries are events)
    ├── chat {model}                  one model request: usage, finish reason, time to first chunk
    ├── execute_tool {name}           one tool call; hook outcomes are its events
    │   └── execute_tool {name}       a nested call (codemode, ctx.execute_tool)
    └── pi.compaction                 a compaction during the run (a root span otherwise)

Every hook that blocked, transformed, handled, cancelled or failed becomes an event
``pi.hook.<outcome>`` naming the plugin, on the span it concerns. The hooks only build
plain records (:mod:`pi_otel.records`); OpenTelemetry is imported and used on the
export thread (:mod:`pi_otel.exporter`).

Without an endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``otel.endpoint``) the plugin
is a :class:`OtelDisabled` object without hooks (but ``pi otel status``): pi dispatches
nothing to it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from pi_hookspecs import hookimpl

from . import content as ct
from . import semconv as sc
from .config import OtelConfig, load_config
from .entry import OtelCommand, OtelDisabled
from .records import Point, SpanRecord, now_ns

if TYPE_CHECKING:
    from typing import Protocol

    class Exporter(Protocol):
        state: str
        problem: str | None
        endpoint: str

        def submit(self, roots: list[SpanRecord], points: list[Point]) -> None: ...
        def flush(self, exit_timeout: float, grace: float = ...) -> bool: ...


MAX_MESSAGE = 500
"""Hook messages (block reasons, errors) and status descriptions are cut to this length."""


def _cut(text: str | None, limit: int = MAX_MESSAGE) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def recorder() -> OtelRecorder | OtelDisabled:
    """The plugin for this session runtime, decided before pi looks at the hooks: without
    an endpoint an object without hooks (no event is dispatched to it); with content
    capture a recorder that also sees each request's messages."""
    config = load_config()
    if not config.enabled:
        return OtelDisabled(config.reason)
    return (_CapturingOtelRecorder if config.capture_content else OtelRecorder)(config)


class OtelRecorder(OtelCommand):
    """Record every agent run as OpenTelemetry GenAI traces and metrics (see the module
    docstring); one instance per session runtime, made by :func:`recorder`."""

    def __init__(self, config: OtelConfig) -> None:
        self._config = config
        self.capture = config.capture_content
        self.agent_name = config.agent_name
        self.pipeline: Exporter | None = None
        self.mode = "print"
        self.conversation_id: str | None = None
        self.run: SpanRecord | None = None
        self.chat: SpanRecord | None = None
        self.turn_ns: int | None = None
        self.request_ns: int | None = None
        self.first_chunk_ns: int | None = None
        self.server: tuple[str | None, int | None] = (None, None)
        self.tools: dict[str, SpanRecord] = {}
        self.blocked: set[str] = set()
        self.descriptions: dict[str, str] = {}
        self.compaction: SpanRecord | None = None
        self.points: list[Point] = []
        self.pending: list[tuple[str, int, dict[str, Any]]] = []
        self.usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        self.retries = 0
        self.last_error: tuple[str, str | None] | None = None
        self.last_answer: Any = None
        self.input_messages: str | None = None
        self.system_instructions: str | None = None

    # ================================================================== session

    @hookimpl
    def session_start(self, ctx: Any) -> None:
        self.mode = str(getattr(ctx, "mode", "print"))
        try:
            self.conversation_id = ctx.session_manager.get_session_id()
        except Exception:
            self.conversation_id = None

    def _start(self) -> Exporter:
        """The export pipeline (:mod:`pi_otel.sidecar`), started when the first run
        begins (the export process imports OpenTelemetry while the model works) or when
        there is something to export."""
        if self.pipeline is None:
            from .sidecar import start

            self.pipeline = start(self._config)
        return self.pipeline

    @hookimpl
    def session_shutdown(self, event: Any) -> None:
        end = now_ns()
        if self.compaction is not None:
            self._end_compaction(end, error=("unfinished", "the session ended"))
        self._close_run(end, aborted=False, reason="the session ended")
        pipeline = self.pipeline
        if pipeline is None and not self.points:
            return  # nothing happened: nothing to export
        pipeline = self._start()
        if self.points:
            pipeline.submit([], self.points)
            self.points = []
        if event.reason != "quit":
            return  # pi goes on (reload, new session …): the export continues in the background
        started = time.perf_counter()
        complete = pipeline.flush(self._config.settings.exit_timeout_ms / 1000)
        if os.environ.get("PI_OTEL_DEBUG") == "1":
            waited = (time.perf_counter() - started) * 1000
            print(
                f"pluggable-pi-otel: exit flush {waited:.1f} ms, pipeline {pipeline.state}, complete {complete}",
                file=sys.stderr,
            )
        # With the export process, only a process that could not take the telemetry is
        # reported here; what the collector did is in its log (PI_OTEL_LOG).
        if not complete and self.mode in ("print", "json"):
            why = _cut(pipeline.problem, 200) or "the collector did not answer in time"
            print(f"pluggable-pi-otel: telemetry not (fully) exported to {pipeline.endpoint}: {why}", file=sys.stderr)

    # ================================================================== agent runs

    def _open_run(self, ctx: Any) -> SpanRecord:
        if self.run is not None:
            return self.run
        model = getattr(ctx, "model", None)
        name = f"{sc.INVOKE_AGENT} {self.agent_name}" if self.agent_name else sc.INVOKE_AGENT
        run = SpanRecord(
            name,
            "internal",
            now_ns(),
            {
                sc.OPERATION_NAME: sc.INVOKE_AGENT,
                sc.PROVIDER_NAME: sc.provider_name(model.provider) if model is not None else "_OTHER",
                sc.REQUEST_MODEL: model.id if model is not None else None,
                sc.AGENT_NAME: self.agent_name,
                sc.CONVERSATION_ID: self.conversation_id,
                sc.PI_PROVIDER: model.provider if model is not None else None,
            },
        )
        self._start()
        for name_, at, attributes in self.pending:
            run.event(name_, attributes, at)
        self.pending = []
        self.usage = dict.fromkeys(self.usage, 0)
        self.retries = 0
        self.last_error = None
        self.last_answer = None
        self.run = run
        return run

    @hookimpl(trylast=True)
    def before_agent_start(self, event: Any, ctx: Any) -> None:
        run = self._open_run(ctx)
        if self.capture:
            if event.prompt is not None:
                run.attributes[sc.INPUT_MESSAGES] = ct.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": event.prompt}]}]
                )
            elif event.message is not None:
                run.attributes[sc.INPUT_MESSAGES] = ct.input_messages([event.message])
            if event.system_prompt:
                run.attributes[sc.SYSTEM_INSTRUCTIONS] = ct.dumps([{"type": "text", "content": event.system_prompt}])

    @hookimpl
    def agent_start(self, ctx: Any) -> None:
        self._open_run(ctx)

    @hookimpl
    def agent_end(self, event: Any) -> None:
        if event.will_retry and self.run is not None:
            self.retries += 1
            kind, message = self.last_error or ("_OTHER", None)
            self.run.event(
                sc.RETRY_EVENT,
                {sc.PI_RETRY_ATTEMPT: self.retries, sc.ERROR_TYPE: kind, sc.PI_ERROR_MESSAGE: _cut(message)},
            )

    @hookimpl
    def agent_settled(self, event: Any) -> None:
        self._close_run(now_ns(), aborted=event.aborted, reason="the run was aborted")

    def _close_run(self, end: int, *, aborted: bool, reason: str) -> None:
        run = self.run
        if run is None:
            return
        self.run = None
        if self.chat is not None and not self.chat.ended:
            self.chat.fail("unfinished", reason)
            self.chat.end(end)
        self.chat = None
        run.close_open(end, reason)
        self.tools.clear()
        self.blocked.clear()
        usage = self.usage
        run.attributes.update(
            {
                sc.USAGE_INPUT_TOKENS: usage["input"] + usage["cache_read"] + usage["cache_write"],
                sc.USAGE_OUTPUT_TOKENS: usage["output"],
                sc.USAGE_CACHE_READ_INPUT_TOKENS: usage["cache_read"],
                sc.USAGE_CACHE_CREATION_INPUT_TOKENS: usage["cache_write"],
            }
        )
        answer = self.last_answer
        if answer is not None:
            run.attributes[sc.RESPONSE_MODEL] = answer.response_model or answer.model
            if self.capture:
                run.attributes[sc.OUTPUT_MESSAGES] = ct.output_messages(answer)
        if aborted:
            run.fail("cancelled", reason)
        elif answer is not None and answer.stop_reason == "error":
            run.fail(sc.error_type("error", answer.error_message), _cut(answer.error_message))
        run.end(end)
        attributes = {
            sc.OPERATION_NAME: sc.INVOKE_AGENT,
            sc.PROVIDER_NAME: run.attributes.get(sc.PROVIDER_NAME),
            sc.REQUEST_MODEL: run.attributes.get(sc.REQUEST_MODEL),
            sc.ERROR_TYPE: run.attributes.get(sc.ERROR_TYPE),
        }
        self._point(sc.METRIC_OPERATION_DURATION, (end - run.start_ns) / 1e9, attributes)
        self._submit(run)

    def _submit(self, root: SpanRecord) -> None:
        self._start().submit([root], self.points)
        self.points = []

    def _point(self, instrument: str, value: float, attributes: dict[str, Any]) -> None:
        self.points.append(Point(instrument, value, {k: v for k, v in attributes.items() if v is not None}))

    def _parent(self) -> SpanRecord | None:
        return self.run

    # ================================================================== model requests

    @hookimpl
    def turn_start(self) -> None:
        self.turn_ns = now_ns()

    @hookimpl
    def before_provider_headers(self, event: Any, ctx: Any) -> None:
        start = now_ns()
        if self.chat is not None and not self.chat.ended:  # a request that never answered
            self.chat.fail("unfinished", "a new request started")
            self.chat.end(start)
        model = getattr(ctx, "model", None)
        same = model is not None and model.id == event.model and model.provider == event.provider
        self.server = sc.server(model.base_url if model is not None and same else None)
        self.request_ns = start
        self.first_chunk_ns = None
        self.chat = self._open_chat(start, event.provider, event.api, event.model)

    def _open_chat(self, start: int, provider: str, api: str, model: str) -> SpanRecord:
        attributes = {
            sc.OPERATION_NAME: sc.CHAT,
            sc.PROVIDER_NAME: sc.provider_name(provider),
            sc.REQUEST_MODEL: model,
            sc.REQUEST_STREAM: True,
            sc.CONVERSATION_ID: self.conversation_id,
            sc.SERVER_ADDRESS: self.server[0],
            sc.SERVER_PORT: self.server[1],
            sc.PI_PROVIDER: provider,
            sc.PI_API: api,
        }
        name = f"{sc.CHAT} {model}" if model else sc.CHAT
        parent = self._parent()
        return (
            parent.child(name, "client", start, attributes) if parent else SpanRecord(name, "client", start, attributes)
        )

    @hookimpl
    def message_start(self, event: Any) -> None:
        message = event.message
        if message.role == "assistant" and (self.chat is None or self.chat.ended):
            # A provider that sent no headers event: the request began with the turn.
            self.server = (None, None)
            self.chat = self._open_chat(self.turn_ns or now_ns(), message.provider, message.api, message.model)

    @hookimpl
    def message_update(self) -> None:
        if self.first_chunk_ns is None:
            self.first_chunk_ns = now_ns()

    @hookimpl(trylast=True)
    def message_end(self, event: Any) -> None:
        message = event.message
        if message.role == "assistant":
            self._end_chat(message)

    def _end_chat(self, message: Any) -> None:
        end = now_ns()
        chat = self.chat
        if chat is None or chat.ended:  # a provider that sent no headers event
            self.server = (None, None)
            chat = self._open_chat(self.turn_ns or end, message.provider, message.api, message.model)
        self.chat = None
        usage = message.usage
        input_tokens = usage.input + usage.cache_read + usage.cache_write
        finish = sc.finish_reason(message.stop_reason, message.raw_stop_reason)
        chat.attributes.update(
            {
                sc.RESPONSE_MODEL: message.response_model or message.model,
                sc.RESPONSE_ID: message.response_id,
                sc.RESPONSE_FINISH_REASONS: [finish],
                sc.USAGE_INPUT_TOKENS: input_tokens,
                sc.USAGE_OUTPUT_TOKENS: usage.output,
                sc.USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read,
                sc.USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write,
                sc.USAGE_REASONING_OUTPUT_TOKENS: usage.reasoning,
                sc.PI_COST: usage.cost.total,
                sc.PI_STOP_REASON: message.stop_reason,
                sc.PI_THINKING_LEVEL: message.thinking_level,
            }
        )
        ttfc = None
        if self.first_chunk_ns is not None and self.request_ns is not None and self.first_chunk_ns >= self.request_ns:
            ttfc = (self.first_chunk_ns - self.request_ns) / 1e9
            chat.attributes[sc.RESPONSE_TIME_TO_FIRST_CHUNK] = ttfc
        self.request_ns = self.first_chunk_ns = None
        failed = message.stop_reason in ("error", "aborted")
        if failed:
            kind = sc.error_type(message.stop_reason, message.error_message)
            chat.fail(kind, _cut(message.error_message) or f"the request ended with {kind}")
            self.last_error = (kind, message.error_message)
        if self.capture:
            chat.attributes[sc.OUTPUT_MESSAGES] = ct.output_messages(message)
            if self.input_messages is not None:
                chat.attributes[sc.INPUT_MESSAGES] = self.input_messages
            if self.system_instructions is not None:
                chat.attributes[sc.SYSTEM_INSTRUCTIONS] = self.system_instructions
        self.input_messages = self.system_instructions = None
        chat.end(end)
        for key in self.usage:
            self.usage[key] += getattr(usage, key)
        self.last_answer = message
        common = {
            sc.OPERATION_NAME: sc.CHAT,
            sc.PROVIDER_NAME: chat.attributes.get(sc.PROVIDER_NAME),
            sc.REQUEST_MODEL: chat.attributes.get(sc.REQUEST_MODEL),
            sc.RESPONSE_MODEL: chat.attributes.get(sc.RESPONSE_MODEL),
            sc.SERVER_ADDRESS: chat.attributes.get(sc.SERVER_ADDRESS),
        }
        if not failed or input_tokens or usage.output:
            self._point(sc.METRIC_TOKEN_USAGE, input_tokens, {**common, sc.TOKEN_TYPE: "input"})
            self._point(sc.METRIC_TOKEN_USAGE, usage.output, {**common, sc.TOKEN_TYPE: "output"})
        self._point(
            sc.METRIC_OPERATION_DURATION,
            (end - chat.start_ns) / 1e9,
            {**common, sc.ERROR_TYPE: chat.attributes.get(sc.ERROR_TYPE)},
        )
        if ttfc is not None:
            self._point(sc.METRIC_TIME_TO_FIRST_CHUNK, ttfc, common)
        if usage.cost.total > 0:
            self._point(sc.METRIC_COST, usage.cost.total, common)
        if chat.parent is None:
            self._submit(chat)

    # ================================================================== tools

    def _description(self, ctx: Any, name: str) -> str | None:
        if name not in self.descriptions:
            try:
                self.descriptions = {tool.name: tool.description for tool in ctx.get_all_tools()}
            except Exception:
                return None
            self.descriptions.setdefault(name, "")
        return self.descriptions.get(name) or None

    @hookimpl
    def tool_execution_start(self, event: Any, ctx: Any) -> None:
        parent_id = event.parent_tool_call_id
        parent = self.tools.get(parent_id) if parent_id else None
        parent = parent or self._parent()
        attributes = {
            sc.OPERATION_NAME: sc.EXECUTE_TOOL,
            sc.TOOL_NAME: event.tool_name,
            sc.TOOL_CALL_ID: event.tool_call_id,
            sc.TOOL_TYPE: "function",
            sc.TOOL_DESCRIPTION: _cut(self._description(ctx, event.tool_name)),
            sc.CONVERSATION_ID: self.conversation_id,
            sc.PI_TOOL_PARENT_CALL_ID: parent_id,
            sc.TOOL_CALL_ARGUMENTS: ct.dumps(event.args) if self.capture else None,
        }
        name = f"{sc.EXECUTE_TOOL} {event.tool_name}"
        start = now_ns()
        record = (
            parent.child(name, "internal", start, attributes)
            if parent
            else SpanRecord(name, "internal", start, attributes)
        )
        self.tools[event.tool_call_id] = record

    @hookimpl
    def tool_execution_end(self, event: Any) -> None:
        record = self.tools.pop(event.tool_call_id, None)
        if record is None:
            return
        blocked = event.tool_call_id in self.blocked
        self.blocked.discard(event.tool_call_id)
        outcome = "blocked" if blocked else "error" if event.is_error else "ok"
        record.attributes[sc.PI_TOOL_OUTCOME] = outcome
        text = ct.text_of(event.result.content)
        if event.is_error:
            # The error text is the tool's output: content, recorded only when captured.
            if self.capture:
                record.fail("blocked" if blocked else "tool_error", _cut(text))
            else:
                record.fail(
                    "blocked" if blocked else "tool_error", "blocked" if blocked else "the tool reported an error"
                )
        elif self.capture:
            record.attributes[sc.TOOL_CALL_RESULT] = text
        record.end()
        nested = event.parent_tool_call_id is not None
        self._point(
            sc.METRIC_TOOL_CALLS,
            1,
            {sc.TOOL_NAME: event.tool_name, sc.PI_TOOL_OUTCOME: outcome, sc.PI_TOOL_NESTED: nested},
        )
        if record.parent is None:
            self._submit(record)

    # ================================================================== plugins' hooks

    @hookimpl
    def hook_outcome(self, event: Any) -> None:
        attributes = {
            sc.PI_HOOK_NAME: event.hook,
            sc.PI_PLUGIN_NAME: event.plugin,
            sc.PI_HOOK_OUTCOME: event.outcome,
            sc.PI_HOOK_MESSAGE: _cut(event.message),
            sc.TOOL_CALL_ID: event.tool_call_id,
        }
        call_id = event.tool_call_id
        if call_id is not None and event.hook == "tool_call" and event.outcome in ("blocked", "failed"):
            self.blocked.add(call_id)  # a failing tool_call handler fails closed: blocked too
        target = (self.tools.get(call_id) if call_id else None) or self.chat or self.compaction or self.run
        name = sc.HOOK_EVENT_PREFIX + event.outcome
        if target is not None and not target.ended:
            target.event(name, attributes)
        else:  # before any run (input handling): shown on the next invoke_agent span
            self.pending.append((name, now_ns(), attributes))
            del self.pending[:-100]
        self._point(
            sc.METRIC_HOOK_OUTCOMES,
            1,
            {sc.PI_HOOK_NAME: event.hook, sc.PI_PLUGIN_NAME: event.plugin, sc.PI_HOOK_OUTCOME: event.outcome},
        )

    # ================================================================== compaction

    @hookimpl
    def session_before_compact(self, event: Any) -> None:
        if self.compaction is not None and not self.compaction.ended:
            return
        attributes = {
            sc.PI_COMPACTION_REASON: event.reason,
            sc.PI_COMPACTION_TOKENS_BEFORE: event.preparation.tokens_before,
            sc.PI_COMPACTION_WILL_RETRY: event.will_retry,
            sc.CONVERSATION_ID: self.conversation_id,
        }
        start = now_ns()
        parent = self._parent()
        self.compaction = (
            parent.child(sc.COMPACTION_SPAN, "internal", start, attributes)
            if parent
            else SpanRecord(sc.COMPACTION_SPAN, "internal", start, attributes)
        )

    def _compaction_record(self, reason: str, will_retry: bool) -> SpanRecord:
        if self.compaction is None or self.compaction.ended:
            # No session_before_compact (it failed before asking the plugins): an instant span.
            attributes = {
                sc.PI_COMPACTION_REASON: reason,
                sc.PI_COMPACTION_WILL_RETRY: will_retry,
                sc.CONVERSATION_ID: self.conversation_id,
            }
            parent = self._parent()
            start = now_ns()
            self.compaction = (
                parent.child(sc.COMPACTION_SPAN, "internal", start, attributes)
                if parent
                else SpanRecord(sc.COMPACTION_SPAN, "internal", start, attributes)
            )
        return self.compaction

    def _end_compaction(self, end: int, *, error: tuple[str, str] | None = None) -> None:
        record = self.compaction
        self.compaction = None
        if record is None or record.ended:
            return
        if error is not None:
            record.fail(*error)
        record.end(end)
        if record.parent is None:
            self._submit(record)

    @hookimpl
    def session_compact(self, event: Any, ctx: Any) -> None:
        record = self._compaction_record(event.reason, event.will_retry)
        entry = event.compaction_entry
        record.attributes[sc.PI_COMPACTION_FROM_PLUGIN] = event.from_extension
        record.attributes[sc.PI_COMPACTION_TOKENS_BEFORE] = entry.tokens_before
        usage = entry.usage
        if usage is not None:
            model = getattr(ctx, "model", None)
            input_tokens = usage.input + usage.cache_read + usage.cache_write
            record.attributes.update(
                {
                    sc.OPERATION_NAME: sc.CHAT,
                    sc.PROVIDER_NAME: sc.provider_name(model.provider) if model is not None else None,
                    sc.REQUEST_MODEL: model.id if model is not None else None,
                    sc.USAGE_INPUT_TOKENS: input_tokens,
                    sc.USAGE_OUTPUT_TOKENS: usage.output,
                    sc.PI_COST: usage.cost.total,
                }
            )
            common = {
                sc.OPERATION_NAME: sc.CHAT,
                sc.PROVIDER_NAME: record.attributes.get(sc.PROVIDER_NAME),
                sc.REQUEST_MODEL: record.attributes.get(sc.REQUEST_MODEL),
            }
            self._point(sc.METRIC_TOKEN_USAGE, input_tokens, {**common, sc.TOKEN_TYPE: "input"})
            self._point(sc.METRIC_TOKEN_USAGE, usage.output, {**common, sc.TOKEN_TYPE: "output"})
            if usage.cost.total > 0:
                self._point(sc.METRIC_COST, usage.cost.total, common)
        self._end_compaction(now_ns())

    @hookimpl
    def session_compact_failed(self, event: Any) -> None:
        self._compaction_record(event.reason, event.will_retry)
        if event.aborted:
            error = ("cancelled", "the compaction was cancelled")
        else:
            error = ("compaction_failed", _cut(event.error_message) or "the compaction failed")
        self._end_compaction(now_ns(), error=error)


class _CapturingOtelRecorder(OtelRecorder):
    """With content capture: also sees the messages of each request."""

    @hookimpl(trylast=True)
    def context_with_system(self, event: Any) -> None:
        messages = event.messages
        self.system_instructions = ct.system_instructions(messages)
        self.input_messages = ct.input_messages(messages)
