"""The contract's models: spelling, round trips, @tool, ToolResult, AbortSignal."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import typing
from typing import Annotated, Any

import pluggy
import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

import pi_hookspecs as h
from pi_hookspecs.compose import BlockingGate
from pi_hookspecs.rules import hookspec_hints


def test_pi_hookspecs_imports_on_its_own_without_pi_core() -> None:
    code = "import sys, pi_hookspecs; bad = [m for m in sys.modules if m.startswith('pi_core')]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_models_accept_snake_and_camel_case_and_write_camel_case() -> None:
    a = h.ToolResultMessage(tool_call_id="c1", tool_name="bash", is_error=True)
    b = h.ToolResultMessage.model_validate(
        {"toolCallId": "c1", "toolName": "bash", "isError": True, "timestamp": a.timestamp}
    )
    assert a == b
    assert a.to_json() == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "bash",
        "content": [],
        "isError": True,
        "timestamp": a.timestamp,
    }
    assert h.Usage(cache_write_1h=5).to_json()["cacheWrite1h"] == 5


def test_session_lines_round_trip_unchanged_including_unknown_fields_and_types() -> None:
    lines = [
        {
            "type": "message",
            "id": "a1b2c3d4",
            "parentId": None,
            "timestamp": "2024-12-03T14:00:00.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Hi!"},
                    {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}},
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": 1,
                    "output": 2,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 3,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": "toolUse",
                "timestamp": 1733234402000,
                "futureField": {"x": 1},
            },
        },
        {
            "type": "context_edit",
            "id": "g6h7i8j9",
            "parentId": "f6g7h8i9",
            "timestamp": "t",
            "targetId": "c3",
            "replacement": None,
        },
        {"type": "brand_new_entry", "id": "z", "parentId": "y", "timestamp": "t", "payload": [1, 2]},
        {
            "type": "message",
            "id": "q",
            "parentId": "z",
            "timestamp": "t",
            "message": {"role": "customRole", "anything": True, "timestamp": 5},
        },
        {"type": "branch_summary", "id": "b", "parentId": "a", "timestamp": "t", "fromId": "f", "summary": "s"},
    ]
    adapter = TypeAdapter(h.SessionEntry)
    for line in lines:
        entry = adapter.validate_python(line)
        assert entry.to_json() == line
    assert isinstance(adapter.validate_python(lines[2]), h.UnknownEntry)


def test_message_union_discriminates_by_role() -> None:
    adapter = TypeAdapter(h.AgentMessage)
    kinds = {
        "system": h.SystemMessage,
        "user": h.UserMessage,
        "assistant": h.AssistantMessage,
        "toolResult": h.ToolResultMessage,
        "bashExecution": h.BashExecutionMessage,
        "custom": h.CustomMessage,
        "branchSummary": h.BranchSummaryMessage,
        "compactionSummary": h.CompactionSummaryMessage,
    }
    required = {
        "toolResult": {"toolCallId": "1", "toolName": "t"},
        "bashExecution": {"command": "ls"},
        "custom": {"customType": "x", "content": "c"},
        "branchSummary": {"summary": "s"},
        "compactionSummary": {"summary": "s"},
        "user": {"content": "u"},
    }
    for role, cls in kinds.items():
        assert type(adapter.validate_python({"role": role, **required.get(role, {})})) is cls


def test_content_blocks_may_be_dicts() -> None:
    result = h.ToolResult.model_validate(
        {"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]}
    )
    assert isinstance(result.content[1], h.ImageContent) and result.content[1].mime_type == "image/png"


def test_result_models_reject_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="blok"):
        h.ToolCallResult.model_validate({"blok": True})
    with pytest.raises(ValidationError):
        h.InputResult.model_validate({"action": "transform", "txt": "x"})


def test_boundary_result_continue_spelling() -> None:
    assert h.BoundaryResult.model_validate({"continue": True}).continue_ is True
    assert h.BoundaryResult(continue_=False).to_json() == {"continue": False}


# --------------------------------------------------------------------------- @tool


class Forecast(BaseModel):
    city: str
    celsius: float


def test_tool_decorator_builds_schema_validation_and_description() -> None:
    @h.tool(exposure="deferred", prompt_snippet="Weather lookups", annotations=h.ToolAnnotations(read_only_hint=True))
    async def weather(
        city: Annotated[str, Field(description="City name")],
        days: int = 1,
        ctx: Any = None,
    ) -> Forecast:
        """Look up the weather.

        Uses a cached forecast.

        Args:
            city: ignored because Field(description=...) wins
            days: How many days ahead.
        """
        assert ctx == "the-context"
        return Forecast(city=city, celsius=20.0 + days)

    assert weather.name == "weather" and weather.exposure == "deferred"
    assert weather.description == "Look up the weather.\n\nUses a cached forecast."
    assert weather.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "default": 1, "description": "How many days ahead."},
        },
        "required": ["city"],
    }
    assert weather.output_schema["properties"]["celsius"] == {"type": "number"}
    assert weather.validate_arguments({"city": "Oslo", "days": "3"}) == {"city": "Oslo", "days": 3}
    with pytest.raises(ValidationError) as info:
        weather.validate_arguments({"days": "soon"})
    assert h.format_validation_error(info.value).splitlines() == [
        "- city: missing",
        "- days: Input should be a valid integer, unable to parse string as an integer",
    ]
    result = asyncio.run(weather.run({"city": "Oslo", "days": 2}, "the-context"))
    assert result.structured_content == {"city": "Oslo", "celsius": 22.0}
    assert json.loads(result.text_content()) == {"city": "Oslo", "celsius": 22.0}


def test_tool_decorator_on_bound_methods_and_sync_functions() -> None:
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def add(self, n: int) -> str:
            """Add n to the total."""
            self.total += n
            return f"total={self.total}"

    counter = Counter()
    definition = h.tool(counter.add)
    assert asyncio.run(definition.run({"n": 2}, None)).text_content() == "total=2"
    assert counter.total == 2


def test_tool_decorator_errors_are_clear() -> None:
    def no_doc(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="give the function a docstring"):
        h.tool(no_doc)

    def variadic(*args: Any) -> None:
        """Doc."""

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs are not supported"):
        h.tool(variadic)
    with pytest.raises(ValidationError, match="tool name"):
        h.ToolDefinition(name="has space", description="d", execute=lambda a, c: None)


@pytest.mark.parametrize(
    ("value", "text", "structured"),
    [
        ("plain", "plain", None),
        (None, "", None),
        ({"content": [{"type": "text", "text": "dict"}], "isError": True}, "dict", None),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "a\nb", None),
        ({"a": 1}, '{\n  "a": 1\n}', None),
        (Forecast(city="x", celsius=1), '{\n  "city": "x",\n  "celsius": 1.0\n}', {"city": "x", "celsius": 1.0}),
    ],
)
def test_tool_result_coerce(value: Any, text: str, structured: Any) -> None:
    result = h.ToolResult.coerce(value)
    assert result.text_content() == text and result.structured_content == structured


# --------------------------------------------------------------------------- signals


async def test_abort_signal_wakes_waiters_callbacks_and_other_threads() -> None:
    controller = h.AbortController()
    heard: list[Any] = []
    controller.signal.add_callback(heard.append)
    combined = h.AbortSignal.any(None, controller.signal)
    waiter = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    threading.Thread(target=controller.abort, args=("user pressed Esc",)).start()
    assert await asyncio.wait_for(waiter, 5) == "user pressed Esc"
    assert heard == ["user pressed Esc"] and combined.aborted
    with pytest.raises(h.AbortError, match="user pressed Esc"):
        controller.signal.throw_if_aborted()
    late: list[Any] = []
    controller.signal.add_callback(late.append)  # already aborted: called at once
    assert late == ["user pressed Esc"]


# --------------------------------------------------------------------------- hookspecs


def test_a_hookspec_is_typed_with_the_contracts_own_models() -> None:
    from pi_hookspecs import specs

    hints = typing.get_type_hints(specs.tool_call)
    assert hints == {"event": h.ToolCallEvent, "ctx": h.ExtensionContext, "return": h.ToolCallResult | None}
    spec = h.EVENTS["tool_call"]
    assert (spec.name, spec.event, spec.result, spec.rule, spec.fail_closed, spec.group, spec.in_place) == (
        "tool_call",
        h.ToolCallEvent,
        h.ToolCallResult,
        h.Rule.GATE,
        True,
        "Tools",
        True,
    )
    assert isinstance(spec.compose, BlockingGate) and spec.compose.fails_closed
    assert typing.get_type_hints(specs.register_tools) == {"register": h.RegisterTool, "return": type(None)}
    assert h.REGISTRATIONS["add_hookspecs"] == h.RegistrationSpec("add_hookspecs", "add", h.AddHookspecs)
    # still pluggy's marker: pluggy reads the spec from it
    pm = pluggy.PluginManager(h.PROJECT_NAME)
    pm.add_hookspecs(specs)
    assert pm.hook.tool_call.spec is not None and pm.hook.tool_call.spec.argnames == ("event", "ctx")
    for name, spec in h.EVENTS.items():
        assert Any not in hookspec_hints(getattr(specs, name)).values(), name
        assert spec.event.model_fields["type"].default == name
    # an occasional event's hookspec names it in quotes: its models are made on first use
    assert hookspec_hints(specs.session_tree) == {
        "event": h.SessionTreeEvent,
        "ctx": h.ExtensionContext,
        "return": type(None),
    }


def test_occasional_events_are_made_on_first_use() -> None:
    """Importing the contract does not create the occasional events' models; reading one
    (from pi_hookspecs, pi_hookspecs.events or a hook's EventSpec) does, checked as an
    eagerly declared hookspec is."""
    code = (
        "import sys\nimport pi_hookspecs as h\n"
        "assert 'pi_hookspecs._occasional' not in sys.modules\n"
        "spec = h.EVENTS['session_before_tree']\n"
        "assert 'pi_hookspecs._occasional' not in sys.modules\n"
        "assert spec.event is h.SessionBeforeTreeEvent and spec.result is h.SessionBeforeTreeResult\n"
        "from pi_hookspecs.events import SessionTreeEvent\n"
        "assert SessionTreeEvent is h.events.SessionTreeEvent\n"
        "assert set(h.events.OCCASIONAL) <= set(h.__all__) and set(h.events.OCCASIONAL) <= set(dir(h))\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ok"


def test_the_hookspec_decorators_refuse_a_signature_that_contradicts_the_contract() -> None:
    from pi_hookspecs.rules import event_spec, registration_spec

    def check(problem: str, rule: h.Rule, function: Any) -> None:
        with pytest.raises(TypeError, match=problem):
            event_spec(rule, group="Tests")(function)

    def tool_call(event: h.InputEvent, ctx: h.ExtensionContext) -> h.ToolCallResult | None: ...

    check(r"InputEvent.type is not 'tool_call'", h.Rule.GATE, tool_call)

    def agent_start(event: h.AgentStartEvent, ctx: h.ExtensionContext) -> h.ToolCallResult | None: ...

    check("a notification hook is declared -> None", h.Rule.NOTIFICATION, agent_start)

    def input(event: h.InputEvent, ctx: h.ExtensionContext) -> None: ...

    check("a chained hook is declared -> Model | None", h.Rule.CHAINED, input)

    def context(event: h.ContextEvent) -> None: ...

    check(r"takes \(event, ctx\)", h.Rule.CHAINED, context)

    def turn_start(event: Any, ctx: h.ExtensionContext) -> None: ...

    check("must be annotated with an Event model", h.Rule.NOTIFICATION, turn_start)

    def message_end(event: h.MessageEndEvent, ctx: h.ExtensionContext) -> h.MessageEndResult: ...

    check("return annotation must be", h.Rule.CHAINED, message_end)

    def register_things(register: Any, other: Any) -> None: ...

    with pytest.raises(TypeError, match="one annotated callback argument"):
        registration_spec()(register_things)


def test_the_occasional_modules_define_exactly_the_occasional_names() -> None:
    from pi_hookspecs import _event, _occasional, _tool_events

    def defined(module: Any) -> set[str]:
        return {
            name
            for name, value in vars(module).items()
            if isinstance(value, type) and value.__module__ == module.__name__
        }

    assert defined(_tool_events) == set(_event.TOOL_TIME)
    assert defined(_occasional) == set(h.events.OCCASIONAL) - _event.TOOL_TIME
    assert _occasional.__all__ == sorted(h.events.OCCASIONAL)  # spelled out for type checkers


def test_a_tool_time_event_does_not_make_the_other_occasional_events() -> None:
    """A run whose plugins implement ``bash_spawn`` or ``tool_result`` (a sandbox, an
    output filter) makes those events' classes, not the 37 other occasional ones."""
    code = (
        "import sys\nimport pi_hookspecs as h\n"
        "assert h.BashSpawnEvent.__module__ == 'pi_hookspecs._tool_events'\n"
        "assert h.events.ToolResultPatch is h.ToolResultPatch\n"
        "assert 'pi_hookspecs._occasional' not in sys.modules\n"
        "assert h.SessionTreeEvent.__module__ == 'pi_hookspecs._occasional'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ok"
