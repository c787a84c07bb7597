"""ModelRegistry: built-ins, models.json, auth.json, plugin providers, selection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from wire_server import (
    WireServer,
    anthropic_message,
    anthropic_stream,
    chat_chunks,
    responses_events,
    responses_stream,
    use_server,
)

from pi_core.ai import MessageBuilder, ModelRegistry, ModelResolutionError, resolve_config_value
from pi_core.ai.auth import BEARER_ENV, ENV_API_KEYS, CommandError
from pi_hookspecs import (
    AssistantMessage,
    DoneEvent,
    LlmContext,
    Model,
    ProviderDefinition,
    StartEvent,
    StreamOptions,
    TextContent,
    UserMessage,
)

KEY_VARS = (*{name for names in ENV_API_KEYS.values() for name in names}, *BEARER_ENV.values())


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def write_models(agent_dir: Path, data: object) -> Path:
    path = agent_dir / "models.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_builtins_and_auth_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ModelRegistry()
    assert registry.errors == []
    opus = registry.get("anthropic", "claude-opus-4-8")
    assert opus is not None and opus.api == "anthropic-messages" and opus.context_window == 1_000_000
    assert opus.cost.input == 5 and "image" in opus.input
    assert registry.get("openai", "gpt-5.5") is not None
    assert not registry.has_auth("anthropic")
    # no credentials: no model (the offline demo answers only when chosen by name)
    assert registry.available() == [] and registry.default_model() is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert registry.has_auth("anthropic") and registry.api_key("anthropic") == "sk-env"
    # pi 1.6.0's default model for anthropic (the old hand-written catalogue had claude-opus-4-8)
    assert registry.default_model().ref == "anthropic/claude-opus-5-5"  # type: ignore[union-attr]


def test_auth_json_wins_over_environment(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    (agent_dir / "auth.json").write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-stored"}}))
    registry = ModelRegistry()
    assert registry.api_key("openai") == "sk-stored"
    (agent_dir / "auth.json").write_text(json.dumps({"openai": {"type": "api_key", "key": "!echo sk-from-command"}}))
    assert registry.api_key("openai") == "sk-from-command"


def test_malformed_auth_json_is_reported(agent_dir: Path) -> None:
    (agent_dir / "auth.json").write_text('{"openai": ')
    registry = ModelRegistry()
    assert registry.api_key("openai") is None
    assert registry.errors and registry.errors[0].startswith(f"{agent_dir / 'auth.json'}: invalid JSON at line 1")


def test_config_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "secret")
    assert resolve_config_value("$MY_KEY") == "secret"
    assert resolve_config_value("Bearer ${MY_KEY}") == "Bearer secret"
    assert resolve_config_value("literal-key") == "literal-key"
    assert resolve_config_value("$$5 and $!") == "$5 and !"
    assert resolve_config_value("$!bang") == "!bang"
    assert resolve_config_value("!printf from-shell") == "from-shell"
    assert resolve_config_value("$MISSING_VARIABLE_X") is None
    with pytest.raises(CommandError, match="exited with status 3"):
        resolve_config_value("!exit 3")


def test_models_json_openai_compatible_endpoint(agent_dir: Path) -> None:
    write_models(
        agent_dir,
        {
            "$schema": "https://pi.dev/schemas/models.schema.json",
            "providers": {
                "ollama": {
                    "baseUrl": "http://localhost:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "models": [
                        {"id": "qwen2.5-coder:7b"},
                        {"id": "llava", "input": ["text", "image"], "contextWindow": 8192},
                    ],
                },
                "anthropic": {
                    "baseUrl": "https://proxy.example.com",
                    "modelOverrides": {
                        "claude-opus-4-8": {"name": "Opus via proxy", "cost": {"input": 1}},
                        "not-a-model": {"name": "x"},
                    },
                },
            },
        },
    )
    registry = ModelRegistry()
    assert registry.errors == []
    qwen = registry.get("ollama", "qwen2.5-coder:7b")
    assert qwen is not None and qwen.api == "openai-completions" and qwen.base_url == "http://localhost:11434/v1"
    assert qwen.context_window == 128_000 and qwen.input == ["text"]
    assert registry.get("ollama", "llava").context_window == 8192  # type: ignore[union-attr]
    assert registry.has_auth("ollama") and registry.api_key("ollama") == "ollama"
    opus = registry.get("anthropic", "claude-opus-4-8")
    assert opus.base_url == "https://proxy.example.com" and opus.name == "Opus via proxy"  # type: ignore[union-attr]
    assert opus.cost.input == 1 and opus.cost.output == 25  # type: ignore[union-attr]
    assert registry.get("anthropic", "claude-sonnet-4-6").base_url == "https://proxy.example.com"  # type: ignore[union-attr]


def test_models_json_json_error_names_file_and_line(agent_dir: Path) -> None:
    path = write_models(agent_dir, '{\n  "providers": {\n    "ollama": {"baseUrl": "x",}\n  }\n}\n')
    registry = ModelRegistry()
    assert len(registry.errors) == 1
    assert registry.errors[0].startswith(f"{path}: invalid JSON at line 3, column")
    assert registry.get("anthropic", "claude-opus-4-8") is not None  # built-ins still work


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {
                "providers": {
                    "ollama": {
                        "baseUrl": "u",
                        "api": "openai-completions",
                        "models": [{"id": "m", "contextWindow": "big"}],
                    }
                }
            },
            "providers.ollama.models[0].contextWindow: Input should be a valid integer",
        ),
        ({"providers": {"ollama": {"baseURL": "u"}}}, "providers.ollama.baseURL: unknown field"),
        ({"providers": {"ollama": {"models": [{"name": "no id"}]}}}, "providers.ollama.models[0].id: required field"),
        (
            {"providers": {"acme": {"api": "openai-completions", "models": [{"id": "m"}]}}},
            'providers.acme: a new provider needs "baseUrl" and "api"',
        ),
        (
            {"providers": {"acme": {"baseUrl": "u", "models": [{"id": "m"}]}}},
            'providers.acme: a new provider needs "baseUrl" and "api"',
        ),
        ([1, 2], 'expected a JSON object with "providers"'),
    ],
)
def test_models_json_schema_errors_name_the_field(agent_dir: Path, data: object, expected: str) -> None:
    path = write_models(agent_dir, data)
    registry = ModelRegistry()
    # the broken part first; a new provider left without baseUrl by it is a second line
    assert 1 <= len(registry.errors) <= 2 and all(e.startswith(f"{path}: ") for e in registry.errors)
    assert expected in registry.errors[0]
    assert registry.get("openai", "gpt-5.5") is not None


def test_one_bad_model_hides_neither_the_others_nor_the_provider(agent_dir: Path) -> None:
    path = write_models(
        agent_dir,
        {
            "providers": {
                "lm": {
                    "baseUrl": "http://x/v1",
                    "api": "openai-completions",
                    "apiKey": "k",
                    "models": [{"id": "bad", "contextWindow": "big"}, {"id": "good"}],
                    "modelOverrides": {"good": {"maxTokens": -1}},
                },
                "broken": 5,
            }
        },
    )
    registry = ModelRegistry()
    assert registry.get("lm", "good") is not None and registry.get("lm", "bad") is None
    assert registry.errors == [
        f"{path}: providers.lm.models[0].contextWindow: Input should be a valid integer, unable to parse string as an "
        f'integer (got "big"); model lm/bad is skipped',
        f"{path}: providers.lm.modelOverrides.good.maxTokens: Input should be greater than 0 (got -1); "
        "the override of lm/good is skipped",
        f"{path}: providers.broken: expected an object, got a number; provider 'broken' is skipped",
    ]


def test_reload_picks_up_changes(agent_dir: Path) -> None:
    registry = ModelRegistry()
    assert registry.get("lm", "m") is None
    write_models(
        agent_dir,
        {"providers": {"lm": {"baseUrl": "http://x/v1", "api": "openai-completions", "models": [{"id": "m"}]}}},
    )
    registry.reload()
    assert registry.get("lm", "m") is not None


def test_selection_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    # pi 1.6.0's catalogue offers most of these ids on gateways too (opencode, cloudflare, …):
    # a bare id resolves to the one provider with a credential (test_ai_catalog compares with pi 1.6.0)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    registry = ModelRegistry()
    assert registry.resolve("anthropic/claude-opus-4-8").model.ref == "anthropic/claude-opus-4-8"
    assert registry.resolve("claude-opus-4-8").model.ref == "anthropic/claude-opus-4-8"
    selection = registry.resolve("opus-4-8:high")
    assert selection.model.id == "claude-opus-4-8" and selection.thinking_level == "high"
    assert registry.resolve("Sonnet 4.6").model.id == "claude-sonnet-4-6"
    assert registry.resolve("gpt-5.4-mini").model.id == "gpt-5.4-mini"
    assert registry.resolve("gpt-5.5", provider="OpenAI").model.ref == "openai/gpt-5.5"
    custom = registry.resolve("openai/gpt-9-preview:low")
    assert custom.model.id == "gpt-9-preview" and custom.model.api == "openai-responses"
    assert custom.thinking_level == "low" and "Using custom model id" in (custom.warning or "")
    with pytest.raises(ModelResolutionError, match='Model "no-such-model" not found'):
        registry.resolve("no-such-model")
    with pytest.raises(ModelResolutionError, match='Unknown provider "nope"'):
        registry.resolve("x", provider="nope")
    with pytest.raises(ModelResolutionError, match="not found"):
        registry.resolve("claude-opus-4-8:turbo")


def test_bare_id_on_several_providers(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_models(
        agent_dir,
        {
            "providers": {
                "proxy": {"baseUrl": "http://p/v1", "api": "openai-completions", "models": [{"id": "gpt-5.5"}]}
            }
        },
    )
    registry = ModelRegistry()
    with pytest.raises(
        ModelResolutionError,
        match=r"ambiguous across providers: azure/gpt-5.5, cloudflare-ai-gateway/"
        r"gpt-5.5, openai/gpt-5.5, opencode/gpt-5.5, proxy/gpt-5.5\. No matching provider is auth",
    ):
        registry.resolve("gpt-5.5")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert registry.resolve("gpt-5.5").model.ref == "openai/gpt-5.5"


def test_scope_globs() -> None:
    registry = ModelRegistry()
    selected, warnings = registry.resolve_scope(["anthropic/claude-opus-*:high", "gpt-5.5", "zzz*", "haiku:weird"])
    refs = [s.model.ref for s in selected]
    assert "anthropic/claude-opus-4-8" in refs and "openai/gpt-5.5" in refs and any("haiku" in r for r in refs)
    assert all(s.thinking_level == "high" for s in selected if "opus" in s.model.id)
    # pi 1.6.0: an id on several providers adds each of them, with a warning
    assert {"azure/gpt-5.5", "opencode/gpt-5.5"} <= set(refs)
    assert (
        'Pattern "gpt-5.5" matches several providers: azure, cloudflare-ai-gateway, openai, opencode. '
        "Use provider/id to choose one." in warnings
    )
    assert 'No models match pattern "zzz*"' in warnings
    assert any("Invalid thinking level" in w for w in warnings)


def test_plugin_providers(agent_dir: Path) -> None:
    registry = ModelRegistry()
    registry.add_provider(
        ProviderDefinition(
            name="anthropic", base_url="https://gateway.example.com", headers={"X-Gateway-Key": "$GATEWAY"}
        ),
        source="plugin:gw",
    )
    opus = registry.get("anthropic", "claude-opus-4-8")
    assert opus.base_url == "https://gateway.example.com"  # type: ignore[union-attr]
    assert opus.headers == {"X-Gateway-Key": "$GATEWAY"}  # type: ignore[union-attr]
    registry.add_provider(
        {
            "name": "acme",
            "base_url": "https://api.acme.example/v1",
            "api": "openai-completions",
            "api_key": "$ACME_KEY",
            "models": [{"id": "acme-chat", "name": "Acme Chat", "max_tokens": 8192}],
        },
        source="plugin:acme",
    )
    acme = registry.get("acme", "acme-chat")
    assert acme is not None and acme.base_url == "https://api.acme.example/v1" and acme.max_tokens == 8192
    write_models(agent_dir, {"providers": {"acme": {"modelOverrides": {"acme-chat": {"contextWindow": 64000}}}}})
    registry.reload()
    assert registry.get("acme", "acme-chat").context_window == 64000  # type: ignore[union-attr]
    registry.remove_providers("plugin:acme")
    assert registry.get("acme", "acme-chat") is None


def test_a_plugin_provider_may_offer_the_models_of_a_catalogue_provider(agent_dir: Path) -> None:
    registry = ModelRegistry(models_path=agent_dir / "models.json")
    registry.add_provider(
        ProviderDefinition(
            name="corp-claude", base_url="https://llm.corp.example", api="anthropic-messages", catalogue="anthropic"
        ),
        source="plugin:corp",
    )
    opus, ours = registry.get("anthropic", "claude-opus-4-8"), registry.get("corp-claude", "claude-opus-4-8")
    assert opus is not None and ours is not None
    assert (ours.provider, ours.base_url, ours.context_window) == (
        "corp-claude",
        "https://llm.corp.example",
        opus.context_window,
    )
    with pytest.raises(ValueError, match="catalogue 'nope' is not a provider of pi's model catalogue"):
        registry.add_provider(ProviderDefinition(name="x", api="openai-completions", catalogue="nope"))


def test_a_session_registry_takes_pi_s_providers_from_the_plugin_host(agent_dir: Path) -> None:
    from pi_core.ai import builtin

    registry = ModelRegistry(models_path=agent_dir / "models.json", builtins=False)
    assert registry.get("anthropic", "claude-opus-4-8") is None  # nothing but what a host gives it
    own = builtin.registrations()
    registered = [(value, "builtin") for value in [*own.apis.values(), *own.providers, *own.logins.values()]]
    gateway = ProviderDefinition(name="anthropic", base_url="https://gateway.example.com")
    assert registry.use_registrations([*registered, (gateway, "plugin")]) == []
    opus = registry.get("anthropic", "claude-opus-4-8")
    assert opus is not None and opus.base_url == "https://gateway.example.com"  # the plugin on top of pi's own
    assert registry.login_method("anthropic") is own.logins["anthropic"]


async def test_registry_stream_resolves_key_and_headers(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_KEY", "from-env")
    write_models(
        agent_dir,
        {
            "providers": {
                "local": {
                    "baseUrl": f"{wire.url}/v1",
                    "api": "openai-completions",
                    "apiKey": "${LOCAL_KEY}",
                    "headers": {"X-Team": "!printf platform"},
                    "models": [{"id": "llama", "headers": {"X-Model": "yes"}}],
                }
            }
        },
    )
    registry = ModelRegistry()
    model = registry.resolve("local/llama").model
    wire.enqueue(chat_chunks([{"content": "hello"}]))
    message = await registry.complete(model, LlmContext(messages=[UserMessage(content="hi")]))
    assert message.text() == "hello", message.error_message
    headers = wire.requests[0].headers
    assert headers["authorization"] == "Bearer from-env"
    assert headers["x-team"] == "platform" and headers["x-model"] == "yes"

    override = await registry.complete(
        model, LlmContext(messages=[UserMessage(content="hi")]), StreamOptions(api_key="cli-key")
    )
    assert override.stop_reason == "error"  # no canned response left: the server answers 500
    assert wire.requests[1].headers["authorization"] == "Bearer cli-key"


async def test_model_fields_of_models_json_reach_requests_and_read_back_in_camel_case(
    agent_dir: Path, wire: WireServer
) -> None:
    sampling = {"samplingParams": {"top_p": 0.9}, "samplingParamsByThinkingLevel": {"off": {"top_k": 20}}}
    write_models(
        agent_dir,
        {
            "providers": {
                "chat": {
                    "baseUrl": f"{wire.url}/v1",
                    "api": "openai-completions",
                    "apiKey": "k",
                    "models": [
                        {"id": "c", "promptCache": {"short": 300}, "inputLimits": {"maxRequestBytes": 9}, **sampling}
                    ],
                },
                "resp": {
                    "baseUrl": f"{wire.url}/v1",
                    "api": "openai-responses",
                    "apiKey": "k",
                    "models": [{"id": "r", **sampling}],
                },
            }
        },
    )
    registry = ModelRegistry()
    chat = registry.resolve("chat/c").model
    assert chat.prompt_cache == {"short": 300}
    shown = chat.to_json()  # as RPC clients see a model: pi 1.6.0's spelling
    assert shown["promptCache"] == {"short": 300} and shown["inputLimits"] == {"maxRequestBytes": 9}
    assert shown["samplingParams"] == {"top_p": 0.9} and "prompt_cache" not in shown
    wire.enqueue(chat_chunks([{"content": "hello"}]))
    await registry.complete(chat, LlmContext(messages=[UserMessage(content="hi")]))
    assert (wire.requests[0].body["top_p"], wire.requests[0].body["top_k"]) == (0.9, 20)
    wire.enqueue(responses_stream(responses_events([{"type": "message", "text": "hello"}])))
    await registry.complete(registry.resolve("resp/r").model, LlmContext(messages=[UserMessage(content="hi")]))
    assert (wire.requests[1].body["top_p"], wire.requests[1].body["top_k"]) == (0.9, 20)


async def test_registry_stream_auth_header_for_anthropic_endpoint(agent_dir: Path, wire: WireServer) -> None:
    write_models(
        agent_dir,
        {
            "providers": {
                "gateway": {
                    "baseUrl": wire.url,
                    "api": "anthropic-messages",
                    "apiKey": "gw-token",
                    "authHeader": True,
                    "models": [{"id": "claude-proxy"}],
                }
            }
        },
    )
    registry = ModelRegistry()
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "via gateway"}])))
    message = await registry.complete(
        registry.resolve("gateway/claude-proxy").model, LlmContext(messages=[UserMessage(content="hi")])
    )
    assert message.text() == "via gateway"
    headers = wire.requests[0].headers
    assert headers["authorization"] == "Bearer gw-token" and "x-api-key" not in headers


async def test_registry_stream_missing_key_is_clear(agent_dir: Path) -> None:
    registry = ModelRegistry()
    model = registry.resolve("anthropic/claude-sonnet-4-6").model
    message = await registry.complete(model, LlmContext(messages=[UserMessage(content="hi")]))
    assert message.stop_reason == "error"
    assert message.error_message.startswith("No API key for provider: anthropic")


async def test_registry_stream_uses_the_provider_stream_function() -> None:
    calls: list[tuple[str, str | None]] = []

    async def acme_stream(model: Model, context: LlmContext, options: StreamOptions):  # type: ignore[no-untyped-def]
        calls.append((model.id, options.api_key))
        message = AssistantMessage(content=[TextContent(text="custom protocol")], stop_reason="stop")
        yield StartEvent(partial=message)
        yield DoneEvent(reason="stop", message=message)

    registry = ModelRegistry()
    registry.add_provider(
        ProviderDefinition(
            name="acme", api_key="literal", models=[Model(id="a1", api="acme-wire")], stream=acme_stream
        ),
        source="plugin:acme",
    )
    assert registry.has_auth("acme")
    message = await registry.complete(registry.resolve("acme/a1").model, LlmContext())
    assert message.text() == "custom protocol" and message.provider == "acme"
    assert calls == [("a1", "literal")]


def test_faux_models_need_no_auth() -> None:
    registry = ModelRegistry()
    assert registry.has_auth("faux")
    assert registry.resolve("offline-demo").model.api == "faux"


def test_config_fields_is_the_python_dump_of_models_json_models() -> None:
    """The registry reads a validated models.json model's fields directly (no serializer
    build per run): the same dict as ``model_dump(exclude_none=True)``, nested models
    as dicts, ``None`` kept inside dicts and lists, containers copied."""
    from pi_core.ai.config import ModelConfig, ModelOverride
    from pi_core.ai.registry import config_fields

    model = ModelConfig.model_validate(
        {
            "id": "m",
            "name": "M",
            "api": "openai-completions",
            "type": "chat",
            "contextWindow": 8192,
            "input": ["text", "image"],
            "reasoning": True,
            "thinkingLevelMap": {"off": None, "high": "max"},
            "headers": {"x-a": "1"},
            "compat": {"a": None, "b": [None, {"c": 1}]},
            "cost": {
                "input": 1,
                "output": 2,
                "cacheRead": 0,
                "cacheWrite": 0,
                "tiers": [{"inputTokensAbove": 1000, "input": 2, "output": 4, "cacheRead": 0, "cacheWrite": 0}],
            },
            "samplingParamsByThinkingLevel": {"high": {"temperature": 1}},
        }
    )
    override = ModelOverride.model_validate({"maxTokens": 100, "cost": {"input": 5}, "headers": {"x-b": "2"}})
    for config, exclude in ((model, {"type"}), (model, set()), (override, set())):
        fields = config_fields(config, exclude=exclude)
        assert fields == config.model_dump(exclude_none=True, exclude=exclude)
        assert list(fields) == list(config.model_dump(exclude_none=True, exclude=exclude))
    fields = config_fields(model)
    assert isinstance(fields["cost"]["input"], float) and isinstance(fields["cost"]["tiers"][0], dict)
    fields["headers"]["x-a"] = "changed"
    fields["compat"]["b"].append(2)
    assert model.headers == {"x-a": "1"} and model.compat == {"a": None, "b": [None, {"c": 1}]}


async def test_a_plugin_api_with_transcript_rules_gets_the_context_prepared(agent_dir: Path) -> None:
    from pi_hookspecs import ApiDefinition, SystemMessage, ToolCall, ToolResultMessage, TranscriptRules

    seen: list[LlmContext] = []

    async def api(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
        seen.append(context)
        out.start()
        out.text_end(out.text_start("ok"))
        out.stop("stop")

    registry = ModelRegistry(models_path=agent_dir / "models.json")
    registry.add_api(ApiDefinition(name="acme-wire", stream=api, transcript=TranscriptRules(tool_call_id_max_length=8)))
    registry.add_provider(
        ProviderDefinition(
            name="acme",
            api="acme-wire",
            base_url="http://x",
            models=[Model(id="m", name="m", api="acme-wire", provider="acme")],
        )
    )
    model = registry.get("acme", "m")
    assert model is not None
    foreign = AssistantMessage(
        provider="other",
        api="openai-completions",
        model="o",
        stop_reason="toolUse",
        content=[ToolCall(id="call|with/odd+chars", name="ls", arguments={})],
    )
    context = LlmContext(
        messages=[
            SystemMessage(content="You are pi."),
            UserMessage(content="hi"),
            foreign,
            ToolResultMessage(tool_call_id="call|with/odd+chars", tool_name="ls", content=[TextContent(text="a")]),
            AssistantMessage(provider="other", api="x", model="o", stop_reason="error", content=[]),
        ]
    )
    answer = await registry.complete(model, context)
    assert answer.stop_reason == "stop", answer.error_message
    (prepared,) = seen
    assert prepared.system_prompt == "You are pi." and not any(isinstance(m, SystemMessage) for m in prepared.messages)
    call = prepared.messages[1].content[0]
    assert call.id == "call_wit" and prepared.messages[2].tool_call_id == "call_wit"  # safe, at most 8, and followed
    assert len(prepared.messages) == 3  # the errored turn is dropped
