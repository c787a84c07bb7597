"""Models pi constructs without validation (``model_construct``) are the models
validation would have made.

pi builds many contract objects from values it already holds as the right types
(events it emits, stream events, the messages its stream assembles, its own tools'
and registrations' definitions): those are constructed, so a run does not build the
validators of models it never validates. Each such object, collected here from the
real code paths, is compared with the object the class's validation makes from the
same field values (nested models rebuilt through their own validation too): equal,
field by field and type by type, and the same JSON.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from pi_core.testing import call
from pi_hookspecs import (
    AgentSettledEvent,
    AssistantMessage,
    BeforeAgentStartEvent,
    BoundaryResult,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Model,
    StartEvent,
    SystemMessage,
    SystemPromptOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallEvent,
    ToolCallStartEvent,
    ToolDeclaration,
    ToolDefinition,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultEvent,
    ToolResultMessage,
    UserMessage,
    hookimpl,
)
from pi_hookspecs.streaming import MessageBuilder


def _revalidated(value: Any) -> Any:
    """``value`` made again by validation: every model from the values of its fields
    (nested models first), lists and dicts item by item, other values as they are."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        values = {name: _revalidated(getattr(value, name)) for name in fields if name in value.__dict__}
        values.update({k: _revalidated(v) for k, v in (value.__pydantic_extra__ or {}).items()})
        return type(value).model_validate(values)
    if isinstance(value, list):
        return [_revalidated(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_revalidated(item) for item in value)
    if isinstance(value, dict):
        return {key: _revalidated(item) for key, item in value.items()}
    return value


def _structure(value: Any) -> Any:
    """Types and values all the way down (model ``==`` compares the values of nested
    models, but a dict where validation makes a model must show too)."""
    if isinstance(value, BaseModel):
        return (type(value), {name: _structure(getattr(value, name)) for name in type(value).model_fields})
    if isinstance(value, list | tuple):
        return (type(value), [_structure(item) for item in value])
    if isinstance(value, dict):
        return (dict, {key: _structure(item) for key, item in value.items()})
    return (type(value), value)


def assert_as_validated(obj: BaseModel) -> None:
    validated = _revalidated(obj)
    assert validated == obj
    assert _structure(validated) == _structure(obj)
    assert validated.model_dump() == obj.model_dump()
    try:
        expected_json = validated.model_dump_json(by_alias=True)
    except Exception:  # a field pydantic cannot write as JSON (a callable, a signal)
        return
    assert obj.model_dump_json(by_alias=True) == expected_json


# ----------------------------------------------------------------------------- the stream


def _model() -> Model:
    return Model(id="m", provider="p", api="openai-completions", name="M", cost={"input": 3, "output": 15})


def _stream_events(kind: str) -> list[Any]:
    events: list[Any] = []
    out = MessageBuilder(_model(), events.append, thinking_level="high")
    if kind == "done":
        thinking = out.thinking_start("let me see", signature="sig")
        out.thinking_end(thinking)
        text = out.text_start("Hello")
        out.text_delta(text, ", world")
        out.text_end(text)
        tool = out.tool_start("call_1", "bash")
        out.tool_delta(tool, '{"command": ')
        out.tool_delta(tool, "", report_empty=True)
        out.tool_end(tool, arguments_json='{"command": "ls"}')
        out.set_usage(input=10, output=5, cache_read=2)
        out.stop("stop")
        out.done()
    else:
        text = out.text_start("partial")
        out.tool_start("call_2", "read")
        out.fail("connection reset")
    return events


@pytest.mark.parametrize("kind", ["done", "error"])
def test_stream_events_and_message_are_as_validated(kind: str) -> None:
    events = _stream_events(kind)
    kinds = {type(e) for e in events}
    if kind == "done":
        assert {
            StartEvent,
            ThinkingStartEvent,
            TextStartEvent,
            TextDeltaEvent,
            TextEndEvent,
            ToolCallStartEvent,
            ToolCallDeltaEvent,
            ToolCallEndEvent,
            DoneEvent,
        } <= kinds
        final = events[-1].message
        assert final.stop_reason == "toolUse" and final.usage.cost.total > 0
    else:
        assert ErrorEvent in kinds
        final = events[-1].error
    for event in events:
        assert_as_validated(event)
    assert isinstance(final, AssistantMessage)
    assert_as_validated(final)
    assert final.to_json() == _revalidated(final).to_json()


def test_a_tool_call_id_that_is_not_a_string_is_still_refused() -> None:
    out = MessageBuilder(_model(), lambda event: None)
    with pytest.raises(ValueError):
        out.tool_start(7, "bash")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- definitions


def _definitions() -> list[tuple[str, BaseModel]]:
    from pi_codemode.tool import CodemodeTool
    from pi_mcp import McpPlugin
    from pi_tool_search.tool import build_definition

    from pi_core.ai import builtin
    from pi_core.ai.oauth import login_methods
    from pi_core.tools import builtin_tools
    from pi_core.tools._common import destructive_annotations, read_only_annotations

    found: list[tuple[str, BaseModel]] = []
    for tool in builtin_tools():
        found.append((f"tool {tool.name}", tool))
        found.append((f"declaration {tool.name}", tool.declaration()))
    found.append(("tool_search", build_definition(lambda args, ctx: None)))
    found.append(("codemode", CodemodeTool().definition()))
    found.append(("read-only annotations", read_only_annotations("Read")))
    found.append(("destructive annotations", destructive_annotations("Bash", idempotent=False, open_world=True)))
    registered: list[Any] = []
    builtin.register_providers(registered.append)
    found += [(f"builtin {type(r).__name__}", r) for r in registered if isinstance(r, BaseModel)]
    found += [(f"login {m.provider}", m) for m in login_methods()]
    plugin = McpPlugin()
    for hook in (plugin.register_flags, plugin.register_commands, plugin.register_cli_commands):
        hook(lambda value, *args, **kwargs: found.append((f"mcp {type(value).__name__}", value)))
    return found


@pytest.mark.parametrize("name, definition", _definitions(), ids=lambda value: value if isinstance(value, str) else "")
def test_definitions_are_as_validated(name: str, definition: BaseModel) -> None:
    assert_as_validated(definition)


def test_every_kind_of_definition_is_checked() -> None:
    names = {type(d).__name__ for _, d in _definitions()}
    assert {
        "ToolDefinition",
        "ToolDeclaration",
        "ToolAnnotations",
        "ApiDefinition",
        "LoginMethod",
        "FlagDefinition",
        "CommandDefinition",
        "CliCommandDefinition",
    } <= names


# ----------------------------------------------------------------------------- a session


class Recorder:
    """Keeps every event its hooks see."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl
    def session_start(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def session_shutdown(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def before_agent_start(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def tool_call(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def tool_result(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def turn_end(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def agent_settled(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def before_provider_headers(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def before_provider_request(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def after_provider_response(self, event: Any) -> None:
        self.seen.append(event)

    @hookimpl
    def provider_stream_event(self, event: Any) -> None:
        self.seen.append(event)


def test_a_run_emits_and_records_models_as_validated(pi: Any) -> None:
    recorder = Recorder()
    pi.use(recorder)
    pi.script(call("read", path="a.txt"), "There is one file.")
    pi.write("a.txt", "hello")
    run = pi.prompt("what is here?")
    assert run.text == "There is one file."

    # the provider hooks of a request (the scripted model calls none of them)
    session = pi.session
    options = pi.run(session.agent.stream_options(session.agent.state.model))
    pi.run(options.on_headers({"x-a": "1", "x-b": None}))
    pi.run(options.on_payload({"model": "m", "messages": []}))
    pi.run(options.on_response(200, {"content-type": "text/event-stream"}))
    pi.run(options.on_raw_event({"choices": []}))
    # a boundary nobody changes: the proposal comes back constructed
    turn_end = next(e for e in recorder.seen if e.type == "turn_end")
    boundary = pi.run(session.runner.emit_boundary("turn_end", turn_end))
    assert isinstance(boundary, BoundaryResult)
    pi.run(session.shutdown("reload", "/tmp/next.jsonl"))
    with pytest.raises(ValueError, match="reason"):
        pi.run(session.shutdown("bogus"))

    checked: list[BaseModel] = [*recorder.seen, *pi.events, *run.messages, boundary, options]
    checked += [e.system_prompt_options for e in recorder.seen if isinstance(e, BeforeAgentStartEvent)]
    checked += [m for m in session.messages if isinstance(m, SystemMessage)]
    kinds = {type(m) for m in checked if isinstance(m, BaseModel)}
    assert {
        BeforeAgentStartEvent,
        SystemPromptOptions,
        ToolCallEvent,
        ToolResultEvent,
        AgentSettledEvent,
        ToolExecutionStartEvent,
        ToolExecutionEndEvent,
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        SystemMessage,
        BoundaryResult,
    } <= kinds
    assert {
        "session_start",
        "session_shutdown",
        "before_provider_headers",
        "before_provider_request",
        "after_provider_response",
        "provider_stream_event",
    } <= {e.type for e in recorder.seen}
    for model in checked:
        if isinstance(model, BaseModel):
            assert_as_validated(model)


def test_a_prompt_with_other_values_is_still_validated(pi: Any) -> None:
    recorder = Recorder()
    pi.use(recorder)
    pi.script("ok", "ok again")
    pi.prompt("hi")
    with pytest.raises(ValueError):
        pi.run(pi.session.prompt("again", images=[{"type": "image", "data": 5}]))
    # image blocks given as dicts: validated into the message, and the event gets the models
    pi.prompt("look", images=[{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}])
    event = [e for e in recorder.seen if isinstance(e, BeforeAgentStartEvent)][-1]
    assert [type(image) for image in event.images] == [ImageContent]
    assert_as_validated(event)


def test_declarations_match_their_definitions() -> None:
    definition = ToolDefinition(name="t", description="d", parameters={"type": "object"}, execute=lambda a, c: None)
    declaration = definition.declaration()
    assert isinstance(declaration, ToolDeclaration)
    assert declaration == ToolDeclaration(name="t", description="d", parameters={"type": "object"})


@pytest.mark.parametrize("command", ["echo hello", "echo oops; exit 3"])
def test_the_bash_tools_results_and_progress_are_as_validated(pi: Any, command: str) -> None:
    """The bash tool builds its results and progress updates from its own values."""
    recorder = Recorder()
    pi.use(recorder)
    pi.script(call("bash", command=command), "done")
    run = pi.prompt("run it")
    results = [m for m in run.messages if isinstance(m, ToolResultMessage)]
    assert results and results[0].is_error == ("exit 3" in command)
    updates = [e for e in pi.events if getattr(e, "type", None) == "tool_execution_update"]
    assert updates, "the bash tool reports its output as it runs"
    ends = [e for e in recorder.seen if isinstance(e, ToolResultEvent)]
    for model in [*results, *updates, *ends]:
        assert_as_validated(model)
    for event in updates:
        assert_as_validated(event.partial_result)


def test_the_opening_entries_of_a_session_are_as_validated() -> None:
    """A new session opens with a model change and a thinking-level change, made from
    strings pi holds; other values still go through validation."""
    from pi_core.session import SessionManager

    sm = SessionManager.in_memory("/tmp")
    sm.append_model_change("anthropic", "claude-x")
    sm.append_thinking_level_change("high")
    entries = sm.get_entries()
    assert [e.type for e in entries] == ["model_change", "thinking_level_change"]
    for entry in entries:
        assert_as_validated(entry)
    with pytest.raises(ValueError):
        sm.append_model_change("anthropic", 5)  # type: ignore[arg-type]
