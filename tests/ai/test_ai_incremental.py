"""A request's work grows with the new messages, not with the history.

Each API converts a finished message once (pi_core.ai._memo.MessageMemo) and reuses
the converted start of a conversation that grew at its end (PrefixReuse); the JSON of
the message list is encoded incrementally too. Whatever happens to the history —
growth, compaction, a message replaced in the middle, another model, system messages —
the payload must equal the one built from nothing.
"""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from pi_core.ai import _memo, transform
from pi_core.ai.apis import _common, anthropic, openai_completions, openai_responses
from pi_hookspecs import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    LlmContext,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

BASH = ToolDeclaration(name="bash", description="Run", parameters={"type": "object", "properties": {}})


def model_for(api: str, provider: str = "local", id: str = "m", **fields: Any) -> Model:
    return Model(
        id=id,
        provider=provider,
        api=api,
        base_url="http://127.0.0.1:1",
        context_window=1_000_000,
        max_tokens=1_000,
        input=["text", "image"],
        **fields,
    )


def build(api: str, model: Model, messages: list[Any]) -> dict[str, Any]:
    context = LlmContext.model_construct(system_prompt="You are pi.", messages=messages, tools=[BASH])
    options = StreamOptions(api_key="k", session_id="s1")
    if api == "openai-completions":
        return openai_completions.build_payload(model, context, options, openai_completions.resolve_compat(model))
    if api == "anthropic-messages":
        return anthropic.build_request(model, context, options)[0]
    return openai_responses.build_payload(model, context, options)


def forget_everything() -> None:
    """Empty every memo and prefix cache, so the next build starts from nothing."""
    for module in (transform, anthropic, openai_completions, openai_responses):
        for value in vars(module).values():
            if isinstance(value, _memo.MessageMemo):
                value.clear()
            elif isinstance(value, _memo.PrefixReuse):
                value.save(None, [], [], None)
    _common._FRAGMENTS.items, _common._FRAGMENTS.ends, _common._FRAGMENTS.out = [], [], []


def turn(i: int, *, api: str = "openai-completions", provider: str = "local", model: str = "m") -> list[Any]:
    call = ToolCall(id=f"call_{i}|fc_{i}", name="bash", arguments={"command": f"echo {i}", "n": i})
    assistant = AssistantMessage(
        api=api,
        provider=provider,
        model=model,
        stop_reason="toolUse",
        content=[
            ThinkingContent(thinking=f"think {i}", thinking_signature="reasoning_content"),
            TextContent(text=f"step {i}"),
            call,
        ],
    )
    result = ToolResultMessage(tool_call_id=call.id, tool_name="bash", content=[TextContent(text=f"out {i}\n")])
    return [assistant, result]


def grown_history(turns: int, **kwargs: Any) -> list[Any]:
    messages: list[Any] = [UserMessage(content="start")]
    for i in range(turns):
        messages += turn(i, **kwargs)
    return messages


APIS = ["openai-completions", "anthropic-messages", "openai-responses"]


def same_as_from_nothing(api: str, model: Model, messages: list[Any]) -> dict[str, Any]:
    incremental = build(api, model, messages)
    encoded = json.loads(_common.encode_payload(incremental))
    forget_everything()
    fresh = build(api, model, list(messages))
    assert incremental == fresh
    assert encoded == json.loads(json.dumps(fresh))
    return incremental


@pytest.mark.parametrize("api", APIS)
def test_growth_edits_and_model_switches_give_the_payload_built_from_nothing(api: str) -> None:
    forget_everything()
    model = model_for(api)
    history = grown_history(3, api=api)
    same_as_from_nothing(api, model, history)
    steps: list[Callable[[list[Any]], list[Any]]] = [
        lambda h: h + turn(10, api=api),  # the usual: a turn more
        lambda h: [
            *h,
            UserMessage(content=[TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]),
        ],
        lambda h: h + turn(11, api="anthropic-messages", provider="other", model="x"),  # another model's turn
        lambda h: h[:1] + h[3:],  # the start compacted away
        lambda h: [
            *h[:2],
            ToolResultMessage(tool_call_id="call_0|fc_0", tool_name="bash", content=[TextContent(text="edited")]),
            *h[3:],
        ],  # replaced in the middle
        lambda h: [*h, CustomMessage(custom_type="note", content="a plugin's note", display=True)],
        lambda h: [
            *h,
            AssistantMessage(
                api=api, provider="local", model="m", stop_reason="error", content=[TextContent(text="half")]
            ),
        ],  # a failed turn, dropped
        lambda h: h + turn(12, api=api)[:1],  # a tool call still without its result
        lambda h: [*h, UserMessage(content="next")],  # ... which gets a synthetic one
        lambda h: [
            SystemMessage(content="head", sections={"a": "A"}),
            *h,
            SystemMessage(sections={"b": "B"}, tools_added=[BASH]),
        ],
        lambda h: h + turn(13, api=api),
    ]
    for step in steps:
        history = step(history)
        same_as_from_nothing(api, model, history)
    # the same history for another model of the same API
    same_as_from_nothing(api, model_for(api, id="other-model", reasoning=True), history)


@pytest.mark.parametrize("api", APIS)
def test_random_histories_agree_with_a_fresh_build(api: str) -> None:
    forget_everything()
    rng = random.Random(7)
    model = model_for(api)
    history = grown_history(2, api=api)
    for step in range(60):
        choice = rng.random()
        if choice < 0.6:
            history = history + turn(100 + step, api=api)
        elif choice < 0.75 and len(history) > 4:
            cut = rng.randrange(1, len(history) - 2)
            history = history[:1] + history[cut:]
        elif choice < 0.9:
            position = rng.randrange(len(history))
            history = [*history[:position], UserMessage(content=f"inserted {step}"), *history[position:]]
        else:
            history = history + turn(100 + step, api="openai-responses", provider="elsewhere", model="z")
        same_as_from_nothing(api, model, history)


def count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    calls: list[Any] = []
    original = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize(
    ("api", "module", "converter"),
    [
        ("openai-completions", openai_completions, "_assistant_message"),
        ("anthropic-messages", anthropic, "_assistant_blocks"),
        ("openai-responses", openai_responses, "_message_items"),
    ],
)
def test_each_message_is_converted_once(api: str, module: Any, converter: str, monkeypatch: pytest.MonkeyPatch) -> None:
    forget_everything()
    model = model_for(api)
    history = grown_history(200, api=api)
    calls = count_calls(monkeypatch, module, converter)
    transforms = count_calls(monkeypatch, transform, "_transform_one")
    build(api, model, history)
    assert len(calls) >= 200
    calls.clear()
    transforms.clear()
    for i in range(5):
        history = history + turn(1000 + i, api=api)
        build(api, model, history)
    new_assistants = [m for m in calls if isinstance(m, AssistantMessage)]
    # each turn converts its own assistant message, and at most the one it resumes from
    assert len(new_assistants) <= 10, len(new_assistants)
    assert len(transforms) <= 5 * 2 + 5, len(transforms)


def test_memo_entries_go_with_their_messages() -> None:
    memo = _memo.MessageMemo()
    message = UserMessage(content="x")
    memo.put(message, "k", 1)
    assert memo.get(message, "k") == 1
    assert memo.get(message, "other") is _memo.MISSING
    assert memo.get(UserMessage(content="x"), "k") is _memo.MISSING  # equal is not the same
    del message
    gc.collect()
    assert len(memo) == 0


def test_prefix_reuse_needs_the_same_objects_up_to_the_mark() -> None:
    reuse = _memo.PrefixReuse()
    a, b, c = object(), object(), object()
    reuse.save("k", [a, b, c], ["A", "B", "C"], (1, 1, "state"))
    assert reuse.resume("k", [a, b, c, object()]) == (1, ["A"], "state")
    assert reuse.resume("other", [a, b, c]) == (0, [], None)
    assert reuse.resume("k", [a, object(), c]) == (0, [], None)  # the marked one replaced
    assert reuse.resume("k", [object(), b, c]) == (0, [], None)  # something before it replaced
    assert reuse.resume("k", [a]) == (0, [], None)  # shorter than the mark


def test_payload_hooks_get_a_copy_they_may_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``before_provider_request`` handler editing the messages in place must not
    change what later requests send."""
    import asyncio

    forget_everything()
    model = model_for("openai-completions")
    history = grown_history(3)
    payload = build("openai-completions", model, history)

    def vandal(body: dict[str, Any]) -> None:
        for message in body["messages"]:
            message["content"] = "vandalised"

    edited = asyncio.run(_common.apply_payload_hook(StreamOptions(on_payload=vandal), payload))
    assert all(m["content"] == "vandalised" for m in edited["messages"])
    again = build("openai-completions", model, history + turn(9))
    assert not any(m.get("content") == "vandalised" for m in again["messages"])
    assert again["messages"][: len(payload["messages"])] == payload["messages"]


@pytest.mark.parametrize("reasoning", [False, True])
@pytest.mark.parametrize(
    "compat", [{}, {"requiresReasoningContentOnAssistantMessages": True, "requiresNonNullAssistantContent": True}]
)
def test_inline_conversions_give_the_converters_answers(reasoning: bool, compat: dict[str, Any]) -> None:
    """Plain user text and one-text-block assistant messages skip the memo and are
    converted inline: the result must be what the converters themselves give."""
    forget_everything()
    texts = ["hello", "  ", "", "x\n"]
    messages: list[Any] = []
    for text in texts:
        messages.append(UserMessage(content=text))
        messages.append(
            AssistantMessage(
                api="openai-completions",
                provider="local",
                model="m",
                stop_reason="stop",
                content=[TextContent(text=text)],
            )
        )
    model = model_for("openai-completions", reasoning=reasoning, compat=compat)
    resolved = openai_completions.resolve_compat(model)
    inline = openai_completions.convert_messages(model, "", messages, resolved)
    expected = []
    for message in messages:
        if isinstance(message, UserMessage):
            entry = openai_completions._user_message(message)
        else:
            entry = openai_completions._assistant_message(message, model, resolved)
        if entry is not None:
            expected.append(entry)
    assert inline == expected
    anthropic_model = model_for("anthropic-messages")
    inline_anthropic = anthropic.convert_messages(messages, anthropic_model, None)
    expected_anthropic = []
    for message in messages:
        if isinstance(message, UserMessage):
            param = anthropic._user_param(message)
        else:
            blocks = anthropic._assistant_blocks(message, False)
            param = {"role": "assistant", "content": blocks} if blocks else None
        if param is not None:
            expected_anthropic.append(param)
    assert inline_anthropic == expected_anthropic


def test_the_encoded_message_list_is_the_lists_json_whatever_changed() -> None:
    """The JSON of a request's message list is kept in runs of items between requests;
    growing, shrinking and replacing items anywhere (inside the long first run, among
    the last items) always gives the list's own JSON."""
    import random

    from pydantic_core import to_json

    fragments = _common._ListFragments()
    rng = random.Random(7)
    items: list[Any] = [{"role": "user", "content": f"m{n}"} for n in range(50)]
    for step in range(200):
        action = rng.choice(["grow", "grow", "replace_last", "replace_any", "shrink", "same"])
        if action == "grow":
            items = items + [{"role": "assistant", "content": f"s{step}.{n}"} for n in range(rng.randint(1, 12))]
        elif action == "replace_last" and items:
            items = [*items[:-1], {"role": "user", "content": f"r{step}"}]
        elif action == "replace_any" and items:
            at = rng.randrange(len(items))
            items = [*items[:at], {"role": "user", "content": f"x{step}"}, *items[at + 1 :]]
        elif action == "shrink":
            items = items[: rng.randint(0, len(items))]
        assert fragments.encode(items) == to_json(items), (step, action)
