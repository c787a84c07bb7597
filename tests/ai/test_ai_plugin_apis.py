"""pi 1.6.0's APIs that a separately installed plugin provides: a request of one of
them without its plugin fails with one line naming the package to install."""

from __future__ import annotations

from pi_core.ai import stream
from pi_core.ai.builtin import BUILTIN_APIS, PLUGIN_APIS, missing_plugin_message
from pi_hookspecs import LlmContext, Model, StreamOptions, UserMessage


def test_plugin_apis_are_not_built_in() -> None:
    assert PLUGIN_APIS["bedrock-converse-stream"] == "pluggable-pi-bedrock"
    assert not set(PLUGIN_APIS) & set(BUILTIN_APIS)


async def test_a_request_without_the_plugin_names_the_package() -> None:
    model = Model(id="anthropic.claude-test-v1:0", provider="amazon-bedrock", api="bedrock-converse-stream")
    context = LlmContext(messages=[UserMessage(content="hi")])
    message = await stream(model, context, StreamOptions(api_key="unused")).result()
    assert message.stop_reason == "error"
    assert message.error_message == missing_plugin_message(model)
    assert "pi install pluggable-pi-bedrock" in (message.error_message or "") and "\n" not in (
        message.error_message or ""
    )


def test_other_unknown_apis_get_no_package_hint() -> None:
    assert missing_plugin_message(Model(id="x", provider="p", api="something-else")) is None
