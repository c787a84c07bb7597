"""The Responses API's newer features as pi 1.6.0 uses them (tools declared in
``additional_tools`` input items with their changes where they happen, the thinking
level in ``configuration_update`` items) and JSON-schema constrained sampling on the
OpenAI-style APIs; each against a local server speaking the wire format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from wire_server import WireServer, chat_chunks, responses_events, responses_stream, use_server

from pi_core.ai import stream
from pi_core.tools.bash import create_bash_tool
from pi_core.tools.edit import create_edit_tool
from pi_core.tools.find import create_find_tool
from pi_core.tools.read import create_read_tool
from pi_core.tools.write import create_write_tool
from pi_hookspecs import (
    AssistantMessage,
    LlmContext,
    Model,
    ModelCost,
    StreamOptions,
    SystemMessage,
    TextContent,
    ToolDeclaration,
    ToolReference,
    UserMessage,
)

OPTIONS = StreamOptions(api_key="sk-test", thinking_level="high")
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
STRICT_SCHEMA = {**SCHEMA, "additionalProperties": False}


def tool(name: str, strict: str | None = None) -> ToolDeclaration:
    fields: dict[str, Any] = {"name": name, "description": f"The {name} tool", "parameters": SCHEMA}
    if strict:
        fields["constrainedSampling"] = {"type": "json_schema", "strict": strict}
    return ToolDeclaration.model_validate(fields)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def responses_model(server: WireServer, **compat: Any) -> Model:
    return Model(
        id="gpt-test",
        provider="openai",
        api="openai-responses",
        base_url=f"{server.url}/v1",
        reasoning=True,
        cost=ModelCost(input=1, output=2),
        context_window=400_000,
        max_tokens=32_000,
        compat=compat or None,
    )


async def request(server: WireServer, model: Model, context: LlmContext, options: StreamOptions = OPTIONS) -> Any:
    server.enqueue(responses_stream(responses_events([{"type": "message", "text": "ok"}])))
    message = await stream(model, context, options).result()
    assert message.stop_reason == "stop", message.error_message
    return message, server.requests[-1].body


def answered(model: Model, text: str, level: str | None) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api=model.api,
        provider=model.provider,
        model=model.id,
        provider_thinking_level=level,
    )


def kinds(body: dict[str, Any]) -> list[str]:
    return [str(item.get("type") or item.get("role")) for item in body["input"]]


async def test_tools_and_their_changes_go_in_additional_tools_items(wire: WireServer) -> None:
    model = responses_model(wire, supportsAdditionalTools=True, supportsMidConvoSystemMessages=True)
    first = answered(model, "one", None)
    second = answered(model, "two", None)
    messages = [
        SystemMessage(content="You are pi.", tools_added=[tool("read"), tool("bash")]),
        UserMessage(content="hi"),
        first,
        SystemMessage(content="", tools_removed=[ToolReference(name="bash")]),
        UserMessage(content="go on"),
        second,
        SystemMessage(content="", tools_added=[tool("grep")]),
        UserMessage(content="more"),
    ]
    _, body = await request(wire, model, LlmContext(messages=messages))
    assert "tools" not in body
    assert kinds(body) == [
        "additional_tools",
        "developer",  # the prompt
        "user",
        "message",
        "developer",  # bash is no longer available
        "user",
        "message",
        "developer",  # the earlier tools stay available, bash does not
        "additional_tools",
        "user",
    ]
    head, removal, notice, later = body["input"][0], body["input"][4], body["input"][7], body["input"][8]
    assert head["role"] == "developer" and [t["name"] for t in head["tools"]] == ["read", "bash"]
    assert "- bash" in removal["content"] and "no longer available" in removal["content"]
    assert notice["content"].endswith("Still unavailable: bash.")
    assert later == {
        "type": "additional_tools",
        "role": "developer",
        "tools": [
            {"type": "function", "name": "grep", "description": "The grep tool", "parameters": SCHEMA, "strict": False}
        ],
    }

    # declared again: available again, and no longer listed as unavailable
    messages += [answered(model, "three", None), SystemMessage(content="", tools_added=[tool("bash")])]
    _, body = await request(wire, model, LlmContext(messages=[*messages, UserMessage(content="last")]))
    assert body["input"][-3]["role"] == "developer" and "Still unavailable" not in body["input"][-3]["content"]
    assert [t["name"] for t in body["input"][-2]["tools"]] == ["bash"]


async def test_without_the_flags_tools_stay_a_top_level_list(wire: WireServer) -> None:
    for compat in ({}, {"supportsAdditionalTools": True}):
        model = responses_model(wire, **compat)
        context = LlmContext(system_prompt="You are pi.", messages=[UserMessage(content="hi")], tools=[tool("read")])
        _, body = await request(wire, model, context)
        assert [t["name"] for t in body["tools"]] == ["read"]
        assert kinds(body) == ["developer", "user"] and body["reasoning"]["effort"] == "high"


async def test_thinking_level_goes_in_configuration_update_items(wire: WireServer) -> None:
    model = responses_model(wire, supportsMidConvoEffort=True)
    earlier = answered(model, "before", "low")
    other = answered(model.model_copy(update={"id": "gpt-other"}), "elsewhere", "low")
    context = LlmContext(
        system_prompt="You are pi.",
        messages=[UserMessage(content="a"), earlier, UserMessage(content="b"), other, UserMessage(content="c")],
    )
    message, body = await request(wire, model, context)
    # the request's effort stays fixed; the level is the last item
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert kinds(body) == [
        "developer",
        "user",
        "configuration_update",  # the level the earlier answer of this model was given
        "message",
        "user",
        "message",  # another model's: no update
        "user",
        "configuration_update",
    ]
    assert body["input"][2]["reasoning"] == {"effort": "low"} and body["input"][-1]["reasoning"] == {"effort": "high"}
    assert message.provider_thinking_level == "high"

    # off sends no update; a ChatGPT sign-in token on OpenAI's endpoint never does
    message, body = await request(wire, model, context, OPTIONS.model_copy(update={"thinking_level": "off"}))
    assert "configuration_update" not in kinds(body)[-1:] and body["reasoning"] == {"effort": "none"}
    assert message.provider_thinking_level is None
    signed_in = model.model_copy(update={"base_url": "https://api.openai.com/v1"})
    from pi_core.ai.apis.openai_responses import build_payload

    payload = build_payload(signed_in, context, OPTIONS.model_copy(update={"api_key": "eyJ.token"}))
    assert "configuration_update" not in kinds(payload) and payload["reasoning"]["effort"] == "high"


async def test_constrained_tools_are_strict_where_the_model_allows(wire: WireServer) -> None:
    context = LlmContext(messages=[UserMessage(content="hi")], tools=[tool("read", "prefer"), tool("plain")])
    _, body = await request(wire, responses_model(wire, supportsStrictMode=True), context)
    assert [(t["name"], t["strict"], t["parameters"]) for t in body["tools"]] == [
        ("read", True, STRICT_SCHEMA),
        ("plain", False, SCHEMA),
    ]

    wire.enqueue(chat_chunks([{"role": "assistant", "content": "ok"}]))
    completions = Model(
        id="local",
        provider="local",
        api="openai-completions",
        base_url=wire.url,
        cost=ModelCost(),
        context_window=32_000,
        max_tokens=4_000,
        compat={"supportsStrictMode": True},
    )
    message = await stream(completions, context, OPTIONS).result()
    assert message.stop_reason == "stop", message.error_message
    functions = [t["function"] for t in wire.requests[-1].body["tools"]]
    assert [(f["name"], f.get("strict"), f["parameters"]) for f in functions] == [
        ("read", True, STRICT_SCHEMA),
        ("plain", False, SCHEMA),
    ]

    # a tool that requires strictness fails the request where it cannot have it
    strictless = responses_model(wire)
    required = LlmContext(messages=[UserMessage(content="hi")], tools=[tool("read", "require")])
    message = await stream(strictless, required, OPTIONS).result()
    assert message.stop_reason == "error"
    assert 'Tool "read" requires JSON-schema constrained sampling' in (message.error_message or "")


def test_pi_built_in_tools_ask_for_strict_arguments() -> None:
    preferred = {"type": "json_schema", "strict": "prefer"}
    for create in (create_read_tool, create_bash_tool, create_edit_tool, create_write_tool):
        declaration = create().declaration()
        assert declaration.to_json()["constrainedSampling"] == preferred, declaration.name
    assert "constrainedSampling" not in create_find_tool().declaration().to_json()
