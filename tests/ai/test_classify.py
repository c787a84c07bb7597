"""Classifier and image models: the catalogue's typed models, ``models.json`` ``type``,
the four built-in wire APIs that are not llama.cpp's (TypeSafe's System One, Cloudflare
Workers AI, OpenAI Decisions, OpenRouter images) against a local server speaking each,
and every refusal a caller can cause, as one-line error results."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_server import Canned, WireServer, json_error, use_server

from pi_core.ai import ModelRegistry
from pi_core.ai.auth import BEARER_ENV, ENV_API_KEYS
from pi_core.testing import PiHarness
from pi_hookspecs import (
    AbortController,
    ApiDefinition,
    ModelRegistryView,
    OAuthCredentials,
    ProviderDefinition,
    StreamOptions,
    hookimpl,
)

KEY_VARS = (*{name for names in ENV_API_KEYS.values() for name in names}, *BEARER_ENV.values())

QUESTIONS: dict[str, Any] = {
    "sentiment": {
        "type": "choice",
        "instructions": "How does the user feel?",
        "criteria": {"positive": "Happy", "negative": "Unhappy", "neutral": "Neither"},
    },
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["none", "this week", "today"]},
    "approved": {"type": "bool", "instructions": "Approved?", "criteria": {"true": "Approval", "false": "No"}},
}
WIRE_ANSWERS = {
    "sentiment": {
        "type": "choice",
        "choice": "positive",
        "probabilities": {"positive": 0.9, "negative": 0.05, "neutral": 0.05},
        "confidence": 0.85,
    },
    "urgency": {"type": "score", "score": 0.4, "confidence": 0.7},
    "approved": {"type": "noul", "noul": 0.93},
}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def ok(body: Any) -> Canned:
    return Canned(status=200, content_type="application/json", body=[json.dumps(body).encode()])


def registry_with(agent_dir: Path, providers: dict[str, Any]) -> ModelRegistry:
    path = agent_dir / "models.json"
    path.write_text(json.dumps({"providers": providers}), encoding="utf-8")
    registry = ModelRegistry(models_path=path)
    assert registry.errors == []
    return registry


# --------------------------------------------------------------------------- the catalogue


def test_classifier_and_image_models_are_apart_from_chat_models(agent_dir: Path) -> None:
    registry = ModelRegistry(models_path=agent_dir / "models.json")
    jev = registry.get_of_type("classifier", "typesafe", "jev-latest")
    assert jev is not None and jev.type == "classifier" and jev.api == "typesafe-system-one"
    assert jev.base_url == "https://api.typesafe.ai/v1/" and "image" in jev.input
    luna = registry.get_of_type("classifier", "openai", "gpt-6-luna")
    assert luna is not None and luna.api == "openai-decisions" and luna.context_window == 922000
    clef = registry.get_of_type("classifier", "cloudflare-workers-ai", "@cf/cloudflare/clef")
    assert clef is not None and (clef.compat or {}).get("imageInput") == "images"
    painter = registry.get_of_type("image", "openrouter", "google/gemini-2.5-flash-image")
    assert painter is not None and painter.api == "openrouter-images" and "image" in (painter.output or [])
    # never among the chat models, and a chat lookup does not find them
    assert all(m.model_type == "chat" for m in registry.models())
    assert registry.get("typesafe", "jev-latest") is None
    chat_luna = registry.get_of_type("chat", "openai", "gpt-6-luna")  # the same id, another model
    assert chat_luna is not None and chat_luna.api == "openai-responses" and chat_luna.model_type == "chat"
    ids = {(m.provider, m.id) for m in registry.models_of_type("classifier")}
    assert {("openrouter", "~typesafe/jev-latest"), ("vercel-ai-gateway", "typesafe-ai/jev")} <= ids
    assert {m.provider for m in registry.models_of_type("classifier", "opencode")} == {"opencode"}


def test_available_needs_a_credential_and_decisions_an_api_key(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = ModelRegistry(models_path=agent_dir / "models.json")
    assert registry.available_of_type("classifier") == []
    monkeypatch.setenv("TYPESAFE_API_KEY", "ts-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    refs = {m.ref for m in registry.available_of_type("classifier")}
    assert refs == {"typesafe/jev-latest", "openai/gpt-6-luna"}
    # signed in with a ChatGPT account: the Decisions API refuses that token (pi 1.6.0)
    registry.auth.set_oauth("openai", OAuthCredentials(access="a", refresh="r", expires=9_999_999_999_999))
    assert registry.credentials.logged_in("openai")
    refs = {m.ref for m in registry.available_of_type("classifier")}
    assert refs == {"typesafe/jev-latest"}


def test_models_json_declares_classifier_and_image_models(agent_dir: Path) -> None:
    registry = registry_with(
        agent_dir,
        {
            "acme": {
                "baseUrl": "http://acme.invalid/v1",
                "apiKey": "k",
                "api": "openai-completions",
                "compat": {"imageInput": "state-image-urls"},
                "models": [
                    {"id": "chat-1"},
                    {"id": "judge", "type": "classifier", "api": "typesafe-system-one", "contextWindow": 8000},
                    {"id": "judge", "name": "Judge (chat)"},
                    {"id": "painter", "type": "image", "api": "openrouter-images", "output": ["image", "text"]},
                ],
            }
        },
    )
    assert [m.id for m in registry.models() if m.provider == "acme"] == ["chat-1", "judge"]
    judge = registry.get_of_type("classifier", "acme", "judge")
    assert judge is not None and judge.context_window == 8000 and judge.base_url == "http://acme.invalid/v1"
    assert (judge.compat or {}).get("imageInput") == "state-image-urls"  # the provider's compat
    painter = registry.get_of_type("image", "acme", "painter")
    assert painter is not None and painter.output == ["image", "text"]


def test_a_bad_type_in_models_json_skips_that_model_with_one_line(agent_dir: Path) -> None:
    path = agent_dir / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "acme": {
                        "baseUrl": "http://acme.invalid",
                        "api": "openai-completions",
                        "models": [{"id": "x", "type": "oracle"}, {"id": "y"}],
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    registry = ModelRegistry(models_path=path)
    assert len(registry.errors) == 1 and "models[0].type" in registry.errors[0] and "\n" not in registry.errors[0]
    assert [m.id for m in registry.models() if m.provider == "acme"] == ["y"]


# --------------------------------------------------------------------------- System One (TypeSafe)


async def test_typesafe_system_one_round_trip(agent_dir: Path, wire: WireServer) -> None:
    registry = registry_with(agent_dir, {"typesafe": {"baseUrl": wire.url + "/v1", "apiKey": "ts-key"}})
    wire.enqueue(ok({"answers": WIRE_ANSWERS, "usage": {"input_tokens": 1200, "output_tokens": 3}}))
    result = await registry.classify(
        {"provider": "typesafe", "id": "jev-latest"}, {"state": {"message": "works, thanks"}, "questions": QUESTIONS}
    )
    assert result.stop_reason == "stop", result.error_message
    assert (result.api, result.provider, result.model) == ("typesafe-system-one", "typesafe", "jev-latest")
    assert result.answers["sentiment"].choice == "positive"  # type: ignore[union-attr]
    assert result.answers["sentiment"].probabilities["negative"] == 0.05  # type: ignore[union-attr]
    assert result.answers["urgency"].score == 0.4  # type: ignore[union-attr]
    assert result.answers["approved"].type == "bool" and result.answers["approved"].probability == 0.93  # type: ignore[union-attr]
    assert result.usage is not None and (result.usage.input, result.usage.output, result.usage.total_tokens) == (
        1200,
        3,
        1203,
    )
    assert result.usage.cost.total == 0  # TypeSafe's direct Jev has no catalogue price
    [request] = wire.requests
    assert request.path == "/v1/systemone"
    assert request.headers["authorization"] == "Bearer ts-key"
    assert request.body["model"] == "jev-latest" and request.body["state"] == {"message": "works, thanks"}
    assert request.body["questions"]["approved"]["type"] == "noul"  # the wire name of bool
    assert request.body["questions"]["urgency"]["criteria"] == ["none", "this week", "today"]
    assert "assets" not in request.body and "typesafe-danger-zone-images" not in request.headers


async def test_usage_is_priced_from_the_catalogue(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    registry = registry_with(agent_dir, {"openrouter": {"baseUrl": wire.url + "/api/v1"}})
    wire.enqueue(ok({"answers": {"approved": WIRE_ANSWERS["approved"]}, "usage": {"input_tokens": 1_000_000}}))
    question = {"approved": QUESTIONS["approved"]}
    result = await registry.classify(
        {"provider": "openrouter", "id": "~typesafe/jev-latest"}, {"state": {}, "questions": question}
    )
    assert result.stop_reason == "stop" and result.usage is not None
    assert result.usage.cost.input == pytest.approx(0.042) and result.usage.cost.total == pytest.approx(0.042)
    assert wire.requests[0].path == "/api/v1/systemone"


async def test_images_as_assets_with_typesafes_opt_in_header(agent_dir: Path, wire: WireServer) -> None:
    registry = registry_with(agent_dir, {"typesafe": {"baseUrl": wire.url, "apiKey": "k"}})
    wire.enqueue(ok({"answers": {"approved": WIRE_ANSWERS["approved"]}}))
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    result = await registry.classify(
        {"provider": "typesafe", "id": "jev-latest"},
        {"state": {"task": "t"}, "images": [image], "questions": {"approved": QUESTIONS["approved"]}},
    )
    assert result.stop_reason == "stop", result.error_message
    body = wire.requests[0].body
    assert body["assets"] == {"<image-1>": {"type": "image", "format": "png", "data_base64": PNG}}
    assert body["state"] == ["<image-1>", {"task": "t"}]
    assert wire.requests[0].headers["typesafe-danger-zone-images"] == "true"
    assert result.usage is None  # no counts reported, none made up


async def test_images_for_openrouter_go_before_the_state(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    registry = registry_with(agent_dir, {"openrouter": {"baseUrl": wire.url}})
    wire.enqueue(ok({"answers": {"approved": WIRE_ANSWERS["approved"]}}))
    image = {"type": "image", "data": PNG, "mime_type": "image/png"}
    await registry.classify(
        {"provider": "openrouter", "id": "cloudflare/clef"},
        {"state": {"a": 1}, "images": [image], "questions": {"approved": QUESTIONS["approved"]}},
    )
    body = wire.requests[0].body
    assert body["state"] == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}, {"a": 1}]
    assert "assets" not in body and "typesafe-danger-zone-images" not in wire.requests[0].headers


# --------------------------------------------------------------------------- Cloudflare Workers AI


async def test_cloudflare_run_record_and_account_in_the_url(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDFLARE_API_KEY", "cf-key")
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "acct42")
    base = wire.url + "/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai"
    registry = registry_with(agent_dir, {"cloudflare-workers-ai": {"baseUrl": base}})
    wire.enqueue(
        ok({"success": True, "result": {"state": "Completed", "result": {"answers": WIRE_ANSWERS, "usage": {}}}}),
        ok({"success": True, "result": {"model": "@cf/cloudflare/clef", "answers": WIRE_ANSWERS}}),
        ok({"success": False, "errors": [{"message": "Model is busy"}, {"message": "try later"}]}),
    )
    context = {"state": {"x": 1}, "questions": QUESTIONS}
    jev = await registry.classify({"provider": "cloudflare-workers-ai", "id": "typesafe/jev"}, context)
    assert jev.stop_reason == "stop" and jev.answers["approved"].probability == 0.93  # type: ignore[union-attr]
    request = wire.requests[0]
    assert request.path == "/client/v4/accounts/acct42/ai/run"
    assert request.body["model"] == "typesafe/jev" and request.body["input"]["questions"]["approved"]["type"] == "noul"
    clef = await registry.classify({"provider": "cloudflare-workers-ai", "id": "@cf/cloudflare/clef"}, context)
    assert clef.stop_reason == "stop"
    failed = await registry.classify({"provider": "cloudflare-workers-ai", "id": "@cf/cloudflare/clef"}, context)
    assert failed.stop_reason == "error" and failed.answers == {}
    assert failed.error_message == "Cloudflare Workers AI error: Model is busy; try later"


async def test_clef_takes_at_most_four_images_and_no_gif(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDFLARE_API_KEY", "cf-key")
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "a")
    registry = registry_with(agent_dir, {"cloudflare-workers-ai": {"baseUrl": wire.url}})
    clef = {"provider": "cloudflare-workers-ai", "id": "@cf/cloudflare/clef"}
    png = {"type": "image", "data": PNG, "mime_type": "image/png"}
    five = await registry.classify(
        clef, {"state": {}, "images": [png] * 5, "questions": {"approved": QUESTIONS["approved"]}}
    )
    assert five.stop_reason == "error" and "at most 4 images" in (five.error_message or "")
    gif = {**png, "mime_type": "image/gif"}
    refused = await registry.classify(
        clef, {"state": {}, "images": [gif], "questions": {"approved": QUESTIONS["approved"]}}
    )
    assert refused.stop_reason == "error" and "image/gif" in (refused.error_message or "")
    assert wire.requests == []  # refused before any request


# --------------------------------------------------------------------------- OpenAI Decisions


async def test_openai_decisions_round_trip(agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    registry = registry_with(agent_dir, {"openai": {"baseUrl": wire.url + "/v1"}})
    wire.enqueue(
        ok(
            {
                "answers": [
                    {"name": "approved", "type": "predicate", "probability": 0.2},
                    {
                        "name": "sentiment",
                        "type": "choice",
                        "choice": "neutral",
                        "probabilities": [
                            {"value": "positive", "probability": 0.1},
                            {"value": "negative", "probability": 0.1},
                            {"value": "neutral", "probability": 0.8},
                        ],
                        "confidence": 0.7,
                    },
                    {"name": "urgency", "type": "score", "score": 1.5, "confidence": 0.4},
                ],
                "usage": {"input_tokens": 2_000_000, "output_tokens": 0},
            }
        )
    )
    result = await registry.classify(
        {"provider": "openai", "id": "gpt-6-luna"}, {"state": {"n": 1}, "questions": QUESTIONS}
    )
    assert result.stop_reason == "stop", result.error_message
    assert result.answers["sentiment"].probabilities == {"positive": 0.1, "negative": 0.1, "neutral": 0.8}  # type: ignore[union-attr]
    assert result.answers["approved"].probability == 0.2  # type: ignore[union-attr]
    assert result.usage is not None and result.usage.cost.input == pytest.approx(0.2)
    body = wire.requests[0].body
    assert wire.requests[0].path == "/v1/decisions" and body["input"] == '{"n":1}'
    by_name = {q["name"]: q for q in body["questions"]}
    assert by_name["approved"] == {
        "type": "predicate",
        "name": "approved",
        "instructions": "Approved?\n\nTrue means: Approval\nFalse means: No",
    }
    assert by_name["urgency"]["levels"] == [{"label": "none"}, {"label": "this week"}, {"label": "today"}]
    assert by_name["sentiment"]["choices"][0] == {"value": "positive", "description": "Happy"}


async def test_openai_decisions_refusal_keeps_the_usage_and_504_is_not_retried(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    registry = registry_with(agent_dir, {"openai": {"baseUrl": wire.url}})
    luna = {"provider": "openai", "id": "gpt-6-luna"}
    question = {"approved": QUESTIONS["approved"]}
    wire.enqueue(ok({"answers": [{"name": "approved", "type": "refusal"}], "usage": {"input_tokens": 10}}))
    refused = await registry.classify(luna, {"state": {}, "questions": question})
    assert refused.stop_reason == "error" and refused.error_message == "OpenAI Decisions refused to answer approved"
    assert refused.usage is not None and refused.usage.input == 10
    wire.enqueue(Canned(status=504, content_type="text/html", body=[b"<html>gateway timeout</html>"]))
    timed_out = await registry.classify(luna, {"state": {}, "questions": question})
    assert timed_out.stop_reason == "error" and "timed out at the gateway" in (timed_out.error_message or "")
    assert len(wire.requests) == 2  # the 504 was not retried
    # other failures are retried (pi's default of two retries for these calls)
    wire.enqueue(
        json_error(503, {"error": {"message": "overloaded"}}),
        ok({"answers": [{"name": "approved", "type": "predicate", "probability": 1}]}),
    )
    retried = await registry.classify(
        luna, {"state": {}, "questions": question}, StreamOptions(extra={"max_retry_delay": 1})
    )
    assert retried.stop_reason == "stop" and len(wire.requests) == 4


# --------------------------------------------------------------------------- OpenRouter images


async def test_openrouter_images_round_trip(agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    registry = registry_with(agent_dir, {"openrouter": {"baseUrl": wire.url + "/api/v1"}})
    wire.enqueue(
        ok(
            {
                "id": "gen-1",
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": "A fox.",
                            "images": [
                                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                                {"type": "image_url", "image_url": {"url": "https://example.invalid/remote.png"}},
                            ],
                        }
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1290},
            }
        )
    )
    painter = registry.get_of_type("image", "openrouter", "google/gemini-2.5-flash-image")
    assert painter is not None
    reference = {"type": "image", "data": PNG, "mime_type": "image/png"}
    result = await registry.generate_images(
        painter, {"input": [{"type": "text", "text": "A red fox, watercolor"}, reference]}
    )
    assert result.stop_reason == "stop", result.error_message
    assert [b.type for b in result.output] == ["text", "image"] and result.response_id == "gen-1"
    assert result.output[1].data == PNG and result.output[1].mime_type == "image/png"  # type: ignore[union-attr]
    assert result.usage is not None and result.usage.output == 1290 and result.usage.cost.total > 0
    body = wire.requests[0].body
    assert wire.requests[0].path == "/api/v1/chat/completions" and body["stream"] is False
    assert body["modalities"] == (["image", "text"] if "text" in (painter.output or []) else ["image"])
    assert body["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }


# --------------------------------------------------------------------------- refusals and failures


async def test_what_a_caller_gets_wrong_is_one_line_and_sends_nothing(
    agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    registry = registry_with(
        agent_dir,
        {
            "typesafe": {"baseUrl": wire.url, "apiKey": "k"},
            "acme": {
                "baseUrl": wire.url,
                "apiKey": "k",
                "models": [{"id": "text-judge", "type": "classifier", "api": "typesafe-system-one"}],
            },
        },
    )
    context = {"state": {}, "questions": {"approved": QUESTIONS["approved"]}}
    cases = [
        ({"provider": "typesafe", "id": "nope"}, context, "No classifier model typesafe/nope"),
        ({"provider": "openai", "id": "gpt-5.5"}, context, "(a chat model"),
        ({"id": "jev-latest"}, context, "provider and id"),
        ({"provider": "typesafe", "id": "jev-latest"}, {"state": {}, "questions": {"q": {"type": "maybe"}}}, "invalid"),
        ({"provider": "typesafe", "id": "jev-latest"}, {"questions": {}}, "state"),
        (
            {"provider": "acme", "id": "text-judge"},
            {**context, "images": [{"type": "image", "data": PNG, "mime_type": "image/png"}]},
            "does not take images",
        ),
    ]
    for model, request, expected in cases:
        result = await registry.classify(model, request)
        assert result.stop_reason == "error" and expected in (result.error_message or ""), result.error_message
        assert "\n" not in (result.error_message or "") and result.answers == {}
    assert wire.requests == []


async def test_http_errors_and_missing_keys(agent_dir: Path, wire: WireServer) -> None:
    registry = registry_with(agent_dir, {"typesafe": {"baseUrl": wire.url, "apiKey": "bad"}})
    wire.enqueue(json_error(401, {"error": {"message": "Invalid API key", "type": "auth"}}))
    context = {"state": {}, "questions": {"approved": QUESTIONS["approved"]}}
    result = await registry.classify({"provider": "typesafe", "id": "jev-latest"}, context)
    assert result.stop_reason == "error"
    assert result.error_message == "System One API error (401): Invalid API key [auth]"
    bare = ModelRegistry(models_path=agent_dir / "missing.json")
    missing = await bare.classify({"provider": "typesafe", "id": "jev-latest"}, context)
    assert missing.stop_reason == "error" and "No API key for provider: typesafe" in (missing.error_message or "")
    wire.enqueue(ok({"answers": {}}))
    malformed = await registry.classify({"provider": "typesafe", "id": "jev-latest"}, context)
    assert malformed.error_message == "System One API did not return an answer for approved"


async def test_an_aborted_call_is_aborted(agent_dir: Path, wire: WireServer) -> None:
    registry = registry_with(agent_dir, {"typesafe": {"baseUrl": wire.url, "apiKey": "k"}})
    controller = AbortController()
    wire.enqueue(Canned(status=200, content_type="application/json", body=[b'{"answers":'], hold=True))
    context = {"state": {}, "questions": {"approved": QUESTIONS["approved"]}}

    import asyncio

    call = asyncio.ensure_future(
        registry.classify(
            {"provider": "typesafe", "id": "jev-latest"}, context, StreamOptions(signal=controller.signal)
        )
    )
    while not wire.requests:
        await asyncio.sleep(0.01)
    controller.abort()
    result = await asyncio.wait_for(call, 10)
    assert result.stop_reason == "aborted" and result.error_message == "Request was aborted"
    already = await registry.classify(
        {"provider": "typesafe", "id": "jev-latest"}, context, StreamOptions(signal=controller.signal)
    )
    assert already.stop_reason == "aborted" and len(wire.requests) == 1


# --------------------------------------------------------------------------- plugin APIs


async def test_a_plugins_classifier_api(agent_dir: Path) -> None:
    seen: list[Any] = []

    async def classify(model: Any, context: Any, options: Any) -> dict[str, Any]:
        seen.append((model.ref, model.type, options.api_key, context.state))
        if context.state.get("fail"):
            raise RuntimeError("the oracle is asleep")
        return {"answers": {"approved": {"type": "bool", "probability": 0.5}}}

    registry = ModelRegistry(models_path=agent_dir / "models.json")
    problems = registry.use_registrations(
        [
            (ApiDefinition(name="oracle-api", classify=classify), "plugin:oracle"),
            (
                ProviderDefinition(
                    name="oracle",
                    base_url="http://oracle.invalid",
                    api_key="secret",
                    models=[{"id": "o-1", "type": "classifier", "api": "oracle-api"}, {"id": "o-1", "api": "faux"}],
                ),
                "plugin:oracle",
            ),
        ]
    )
    assert problems == []
    assert [m.ref for m in registry.models_of_type("classifier")] == ["oracle/o-1"]
    assert [m.ref for m in registry.models() if m.provider == "oracle"] == ["oracle/o-1"]  # a chat model, same id
    context = {"state": {"x": 1}, "questions": {"approved": QUESTIONS["approved"]}}
    result = await registry.classify({"provider": "oracle", "id": "o-1"}, context)
    assert result.stop_reason == "stop" and result.api == "oracle-api" and result.provider == "oracle"
    assert seen == [("oracle/o-1", "classifier", "secret", {"x": 1})]
    failed = await registry.classify({"provider": "oracle", "id": "o-1"}, {**context, "state": {"fail": True}})
    assert failed.stop_reason == "error" and failed.error_message == "the oracle is asleep"
    registry.remove_providers("plugin:oracle")
    gone = await registry.classify({"provider": "oracle", "id": "o-1"}, context)
    assert gone.stop_reason == "error" and "No classifier model" in (gone.error_message or "")


# --------------------------------------------------------------------------- ctx.model_registry


def test_plugins_reach_the_models_through_ctx(pi: PiHarness) -> None:
    seen: dict[str, Any] = {}

    class Look:
        @hookimpl
        def session_start(self, event: Any, ctx: Any) -> None:
            registry = ctx.model_registry
            seen["protocol"] = isinstance(registry, ModelRegistryView)
            seen["jev"] = registry.find_of_type("classifier", "typesafe", "jev-latest").api
            seen["same"] = registry.get_model_of_type("image", "openrouter", "google/gemini-2.5-flash-image").type
            seen["chat"] = registry.find("anthropic", "claude-opus-4-8") is not None
            seen["chat_only"] = all(m.model_type == "chat" for m in registry.get_all())
            seen["typed"] = len(registry.get_models_of_type("classifier")) > 50
            seen["available"] = registry.get_available_of_type("classifier")
            try:
                registry.get_models_of_type("oracle")
            except ValueError as error:
                seen["bad"] = str(error)

    pi.use(Look())
    pi.script("ok")
    pi.prompt("hi")
    assert seen == {
        "protocol": True,
        "jev": "typesafe-system-one",
        "same": "image",
        "chat": True,
        "chat_only": True,
        "typed": True,
        "available": [],
        "bad": "unknown model type 'oracle': expected chat, classifier or image",
    }


def test_an_api_must_serve_something() -> None:
    with pytest.raises(ValueError, match="needs stream, classify or generate_images"):
        ApiDefinition(name="nothing")


def test_the_typed_catalogue_is_well_formed() -> None:
    from pi_core.ai import catalog
    from pi_hookspecs.model_types import KNOWN_CLASSIFIER_APIS, KNOWN_IMAGE_APIS

    providers = ["typesafe", *catalog.provider_ids()]
    models = [m for p in providers for m in catalog.typed_models(p)]
    assert len(models) > 100
    for model in models:
        assert model["type"] in ("classifier", "image") and model["id"] and model["baseUrl"]
        assert model["api"] in (KNOWN_CLASSIFIER_APIS if model["type"] == "classifier" else KNOWN_IMAGE_APIS)
        assert model["type"] == "classifier" or "image" in model["output"]
    assert catalog.typed_providers() == {
        "typesafe": {"name": "TypeSafe", "baseUrl": "https://api.typesafe.ai/v1/", "api": "typesafe-system-one"}
    }


@pytest.mark.skipif(not os.environ.get("PI_TS"), reason="PI_TS does not name an installed pi 1.6.0")
def test_the_typed_catalogue_is_pi_1_6_0s() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from update_typed_catalog import export, pi_ts_root

    from pi_core.ai import catalog

    theirs = export(pi_ts_root(os.environ["PI_TS"]))["providers"]
    for provider, info in theirs.items():
        assert [(m["type"], m["id"], m["api"]) for m in info["models"]] == [
            (m["type"], m["id"], m["api"]) for m in catalog.typed_models(provider)
        ]


def test_choosing_a_classifier_to_chat_with_says_what_it_is(agent_dir: Path) -> None:
    from pi_core.ai import ModelResolutionError

    registry = ModelRegistry(models_path=agent_dir / "models.json")
    with pytest.raises(ModelResolutionError, match=r"typesafe/jev-latest is a classifier model: it does not chat"):
        registry.resolve("typesafe/jev-latest")
    chosen = registry.resolve("openrouter/black-forest-labs/flux.2-pro")  # a custom chat model id, with a warning
    assert "is an image model: it does not chat" in (chosen.warning or "")
