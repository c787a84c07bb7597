"""The scripted offline model, plugin stream functions, and import laziness."""

from __future__ import annotations

import subprocess
import sys

from wire_server import collect

from pi_core.ai import (
    FauxResponse,
    FauxScript,
    calculate_cost,
    clamp_thinking_level,
    complete,
    faux_model,
    faux_script_for,
    offline_demo_model,
    stream,
    stream_function,
    supported_thinking_levels,
)
from pi_core.ai._json import parse_streaming_json
from pi_hookspecs import (
    AbortController,
    AssistantMessage,
    DoneEvent,
    LlmContext,
    Model,
    ModelCost,
    StartEvent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    Usage,
    UserMessage,
)

BASH = ToolDeclaration(name="bash", description="Run a command")


def ask(text: str = "hi", *, tools: list[ToolDeclaration] | None = None) -> LlmContext:
    return LlmContext(messages=[UserMessage(content=text)], tools=tools or [])


async def test_scripted_responses_stream_like_a_provider() -> None:
    script = FauxScript(
        [
            FauxResponse(
                thinking="Considering the files.", text="Let me check.", tool_calls=[("bash", {"command": "ls -la"})]
            ),
            "All done here.",
        ]
    )
    model = faux_model(script, id="scripted", cost=ModelCost(input=1, output=1))
    assert faux_script_for(model) is script
    s = stream(model, ask(tools=[BASH]))
    events = await collect(s)
    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert kinds.count("text_delta") > 1 and kinds.count("thinking_delta") > 1
    assert kinds.count("toolcall_delta") > 1
    message = await s.result()
    thinking, text, call = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Considering the files."
    assert isinstance(text, TextContent) and text.text == "Let me check."
    assert isinstance(call, ToolCall) and call.arguments == {"command": "ls -la"} and call.id
    assert message.stop_reason == "toolUse" and message.api == "faux" and message.provider == "faux"
    assert message.usage.output > 0 and message.usage.cost.total > 0

    second = await complete(model, ask("thanks"))
    assert second.text() == "All done here." and second.stop_reason == "stop"
    assert script.requests == 2 and script.contexts[1].messages[0].content == "thanks"


async def test_callable_entries_see_the_context() -> None:
    def echo(context: LlmContext) -> FauxResponse:
        last = context.messages[-1]
        assert isinstance(last, ToolResultMessage)
        return FauxResponse(text=f"The tool said: {last.content[0].text}")

    async def later(context: LlmContext) -> str:
        return "async entry"

    script = FauxScript(
        [FauxResponse(tool_calls=[ToolCall(id="c1", name="bash", arguments={"command": "pwd"})]), echo, later]
    )
    model = faux_model(script, id="echo")
    first = await complete(model, ask())
    result = ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="/home")])
    second = await complete(model, LlmContext(messages=[UserMessage(content="hi"), first, result]))
    assert second.text() == "The tool said: /home"
    assert (await complete(model, ask())).text() == "async entry"


async def test_exhausted_script_is_a_clear_error() -> None:
    model = faux_model(FauxScript(["only one"]), id="short")
    assert (await complete(model, ask())).text() == "only one"
    message = await complete(model, ask())
    assert message.stop_reason == "error"
    assert message.error_message.startswith(
        "Faux script exhausted: request 2 has no scripted response (the script had 1)"
    )


async def test_scripted_errors_usage_and_stop_reasons() -> None:
    script = FauxScript(
        [
            FauxResponse(text="partial", error_message="Anthropic API error (529): Overloaded"),
            FauxResponse(text="long", stop_reason="length", usage={"input": 10, "output": 5}),
        ]
    )
    model = faux_model(script, id="errors", cost=ModelCost(input=1_000_000, output=1_000_000))
    failed = await complete(model, ask())
    assert failed.stop_reason == "error" and failed.error_message == "Anthropic API error (529): Overloaded"
    assert failed.text() == "partial"
    truncated = await complete(model, ask())
    assert truncated.stop_reason == "length"
    assert (truncated.usage.input, truncated.usage.output, truncated.usage.total_tokens) == (10, 5, 15)
    assert truncated.usage.cost.total == 15


async def test_abort_during_faux_stream() -> None:
    model = faux_model(FauxScript([FauxResponse(text="word " * 50)]), id="abortable")
    controller = AbortController()
    s = stream(model, ask(), StreamOptions(signal=controller.signal))
    async for event in s:
        if event.type == "text_delta":
            controller.abort()
    message = await s.result()
    assert message.stop_reason == "aborted" and len(message.text()) < 250


async def test_offline_demo_calls_bash_then_summarises() -> None:
    model = offline_demo_model()
    first = await complete(model, ask("what is in this folder?", tools=[BASH]))
    assert first.stop_reason == "toolUse"
    call = first.tool_calls()[0]
    assert call.name == "bash" and call.arguments == {"command": "ls"}
    result = ToolResultMessage(tool_call_id=call.id, tool_name="bash", content=[TextContent(text="a.py\nb.md\n")])
    context = LlmContext(messages=[UserMessage(content="what is in this folder?"), first, result], tools=[BASH])
    second = await complete(model, context)
    assert second.stop_reason == "stop"
    assert "listed 2 entries: a.py, b.md" in second.text()
    again = await complete(model, ask("and now?", tools=[BASH]))
    assert again.tool_calls()[0].name == "bash"
    no_tools = await complete(model, ask("hello"))
    assert no_tools.stop_reason == "stop" and "offline demo model" in no_tools.text()


async def test_plugin_stream_function_is_wrapped() -> None:
    model = Model(id="custom", provider="acme", api="acme-api")

    async def good(model: Model, context: LlmContext, options: StreamOptions):  # type: ignore[no-untyped-def]
        message = AssistantMessage(content=[TextContent(text="from plugin")], stop_reason="stop")
        yield StartEvent(partial=message)
        yield {"type": "text_start", "content_index": 0}
        yield DoneEvent(reason="stop", message=message)

    message = await stream_function(good, model, ask()).result()
    assert message.text() == "from plugin"
    assert (message.api, message.provider, message.model) == ("acme-api", "acme", "custom")

    async def broken(model: Model, context: LlmContext, options: StreamOptions):  # type: ignore[no-untyped-def]
        yield StartEvent(partial=AssistantMessage())
        raise RuntimeError("plugin exploded")

    failed = await stream_function(broken, model, ask()).result()
    assert failed.stop_reason == "error" and failed.error_message == "plugin exploded"

    async def unfinished(model: Model, context: LlmContext, options: StreamOptions):  # type: ignore[no-untyped-def]
        yield StartEvent(partial=AssistantMessage())

    message = await stream_function(unfinished, model, ask()).result()
    assert message.error_message == "The stream of provider acme ended without a done or error event"


async def test_unknown_api_is_an_error_not_an_exception() -> None:
    message = await complete(Model(id="x", provider="p", api="nope"), ask())
    assert message.stop_reason == "error"
    assert message.error_message == "No implementation for API 'nope' (model p/x)"


def test_thinking_levels_and_cost() -> None:
    plain = Model(id="m")
    assert supported_thinking_levels(plain) == ["off"]
    assert clamp_thinking_level(plain, "high") == "off"
    reasoning = Model(id="r", reasoning=True)
    assert supported_thinking_levels(reasoning) == ["off", "minimal", "low", "medium", "high"]
    assert clamp_thinking_level(reasoning, "max") == "high"
    no_off = Model(id="r", reasoning=True, thinking_level_map={"off": None, "minimal": None, "xhigh": "xhigh"})
    assert supported_thinking_levels(no_off) == ["low", "medium", "high", "xhigh"]
    assert clamp_thinking_level(no_off, "off") == "low"
    assert clamp_thinking_level(no_off, "max") == "xhigh"
    assert clamp_thinking_level(reasoning, None) == "off"
    usage = Usage(
        input=1_000_000, output=2_000_000, cache_read=1_000_000, cache_write=1_000_000, cache_write_1h=400_000
    )
    calculate_cost(Model(id="c", cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75)), usage)
    assert usage.cost.cache_write == 0.6 * 3.75 + 0.4 * 6
    assert round(usage.cost.total, 6) == round(3 + 30 + 0.3 + 0.6 * 3.75 + 0.4 * 6, 6)


def test_streaming_json() -> None:
    assert parse_streaming_json('{"command": "ls -l') == {"command": "ls -l"}
    assert parse_streaming_json('{"a": [1, {"b": tr') == {"a": [1, {}]}
    assert parse_streaming_json('{"a": 1, "b"') == {"a": 1}
    assert parse_streaming_json("not json") == {}
    assert parse_streaming_json('{"x": "\\u00e9"}') == {"x": "é"}


def test_importing_pi_core_ai_does_not_import_the_sdks() -> None:
    code = (
        "import sys, pi_core.ai, pi_core.ai.registry, pi_core.ai.apis.anthropic, "
        "pi_core.ai.apis.openai_responses, pi_core.ai.apis.openai_completions\n"
        "loaded = [m for m in ('anthropic', 'openai', 'httpx2', 'httpx') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
        "other = sorted(m for m in sys.modules if m.startswith('pi_core.') and not m.startswith(('pi_core.ai', "
        "'pi_core._paths', 'pi_core._fs', 'pi_core._async', 'pi_core._record')))\n"
        "print(','.join(other))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    sdk_line, other_line = done.stdout.splitlines()
    assert sdk_line == ""
    assert other_line == ""


async def test_aclose_before_the_first_step_still_ends_the_stream() -> None:
    model = faux_model(FauxScript(["never sent"]), id="closed-early")
    s = stream(model, ask())
    s._ensure_started()
    await s.aclose()
    events = await collect(s)
    assert [e.type for e in events] == ["error"]
    message = await s.result()
    assert message.stop_reason == "aborted"


def test_preload_imports_the_http_client_in_the_background() -> None:
    code = (
        "import sys, pi_core.ai\n"
        "thread = pi_core.ai.preload('openai-completions')\n"
        "thread.join()\n"
        "print('pi_core.ai.apis._transport' in sys.modules and 'pi_core.ai.apis._sse' in sys.modules,\n"
        "      'pi_core.ai.apis.openai_completions' in sys.modules,\n"
        "      'openai' in sys.modules, pi_core.ai.preload('openai-completions'), pi_core.ai.preload('faux'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True True False None None"


def test_the_registry_keeps_the_offline_demo_as_its_model_dumps() -> None:
    """The registry's catalogue entry for faux/offline-demo, written out to spare every
    start a Model validator, is what the model itself dumps; its script is registered."""
    from pi_core.ai.faux import faux_script_for, register_offline_demo

    fields = register_offline_demo()
    model = offline_demo_model()
    assert fields == model.model_dump(exclude_none=True, exclude={"provider"})
    assert faux_script_for(model) is not None
