"""Settings that take effect on a run, proven end to end: a real ``pi`` subprocess, a
local endpoint speaking the wire format, settings.json in the agent directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import agent_dir, jsonl, run_pi, text_reply
from wire_server import WireServer, anthropic_message, anthropic_stream, use_server

NO_PROXY_ENV = {
    name: ""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    )
}


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def models_json(providers: dict[str, object]) -> None:
    (agent_dir() / "models.json").write_text(json.dumps({"providers": providers}))


def settings_json(data: dict[str, object]) -> None:
    (agent_dir() / "settings.json").write_text(json.dumps(data))


def chat_provider(url: str, *models: dict[str, object]) -> dict[str, object]:
    return {
        "baseUrl": f"{url}/v1",
        "api": "openai-completions",
        "apiKey": "k",
        "models": [{"contextWindow": 32000, "maxTokens": 1024, **m} for m in models],
    }


def test_session_dir_setting_holds_the_sessions(wire: WireServer, cwd: Path) -> None:
    models_json({"local": chat_provider(wire.url, {"id": "m"})})
    settings_json({"sessionDir": "kept-sessions"})
    wire.enqueue(text_reply("ok"))
    out = run_pi("-p", "--model", "local/m", "hi", cwd=cwd)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    files = list((cwd / "kept-sessions").glob("*.jsonl"))
    assert len(files) == 1 and not (agent_dir() / "sessions").exists()
    listed = run_pi("sessions", "--json", cwd=cwd)
    assert files[0].name in listed.stdout
    # --session-dir wins over the setting
    wire.enqueue(text_reply("ok"))
    out = run_pi("-p", "--model", "local/m", "--session-dir", str(cwd / "other"), "hi", cwd=cwd)
    assert out.returncode == 0 and len(list((cwd / "other").glob("*.jsonl"))) == 1


def test_enabled_models_choose_the_startup_model(wire: WireServer, cwd: Path) -> None:
    models_json({"local": chat_provider(wire.url, {"id": "first"}, {"id": "second"})})
    settings_json({"enabledModels": ["local/sec*"]})
    wire.enqueue(text_reply("ok"))
    out = run_pi("-p", "hi", cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert wire.requests[0].body["model"] == "second"


def test_model_thinking_levels_set_the_level_of_that_model(wire: WireServer, cwd: Path) -> None:
    models_json(
        {"local": chat_provider(wire.url, {"id": "thinker", "reasoning": True}, {"id": "other", "reasoning": True})}
    )
    settings_json({"defaultThinkingLevel": "low", "modelThinkingLevels": {"local/thinker": "high"}})
    wire.enqueue(text_reply("ok"), text_reply("ok"))
    levels = []
    for model in ("local/thinker", "local/other"):
        out = run_pi("--mode", "json", "--model", model, "hi", cwd=cwd)
        assert out.returncode == 0, out.stderr
        ends = [e for e in jsonl(out.stdout) if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
        levels.append(ends[-1]["message"]["thinkingLevel"])
    assert levels == ["high", "low"]
    assert [r.body.get("reasoning_effort") for r in wire.requests] == ["high", "low"]


def test_thinking_budgets_reach_a_budget_based_request(wire: WireServer, cwd: Path) -> None:
    models_json(
        {
            "ant": {
                "baseUrl": wire.url,
                "api": "anthropic-messages",
                "apiKey": "k",
                "models": [{"id": "claude-test", "reasoning": True, "contextWindow": 200000, "maxTokens": 8000}],
            }
        }
    )
    settings_json({"thinkingBudgets": {"low": 1500}})
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "ok"}])))
    out = run_pi("-p", "--model", "ant/claude-test", "--thinking", "low", "hi", cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert wire.requests[0].body["thinking"]["budget_tokens"] == 1500


def test_http_proxy_setting_routes_requests_through_the_proxy(wire: WireServer, cwd: Path) -> None:
    # the provider's host does not exist; the "proxy" (the local server) receives the
    # request in absolute form, as an HTTP proxy does
    models_json({"far": chat_provider("http://pi-proxy-test.invalid:8", {"id": "m"})})
    settings_json({"httpProxy": wire.url})
    wire.enqueue(text_reply("via proxy"))
    out = run_pi("-p", "--model", "far/m", "hi", cwd=cwd, env=NO_PROXY_ENV)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "via proxy\n"
    assert wire.requests[0].path == "http://pi-proxy-test.invalid:8/v1/chat/completions"


def test_enable_skill_commands_false_sends_the_command_as_written(wire: WireServer, cwd: Path) -> None:
    skill = agent_dir() / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Deploy the app\n---\nRun the deploy steps.\n")
    models_json({"local": chat_provider(wire.url, {"id": "m"})})
    sent = []
    for setting in ({}, {"enableSkillCommands": False}):
        settings_json(setting)
        wire.enqueue(text_reply("ok"))
        out = run_pi("-p", "--model", "local/m", "/skill:deploy now", cwd=cwd)
        assert out.returncode == 0, out.stderr
        sent.append(json.dumps(wire.requests[-1].body["messages"][-1]["content"]))
    assert "Run the deploy steps." in sent[0]
    assert "Run the deploy steps." not in sent[1] and "/skill:deploy now" in sent[1]


def test_refused_and_unknown_keys_are_one_line_each(wire: WireServer, cwd: Path) -> None:
    models_json({"local": chat_provider(wire.url, {"id": "m"})})
    settings_json({"sessionShareDestination": "radius", "transport_typo": 1, "enableAnalytics": False})
    wire.enqueue(text_reply("ok"))
    out = run_pi("-p", "--model", "local/m", "hi", cwd=cwd)
    assert out.returncode == 0 and out.stdout == "ok\n"
    path = agent_dir() / "settings.json"
    assert out.stderr.splitlines() == [
        f'pi: {path}: sessionShareDestination = "radius" is not supported by this pi: /share makes a GitHub '
        "gist; this pi cannot share to Radius",
        f"pi: {path}: unknown setting transport_typo",
    ]


def test_images_auto_resize_shrinks_what_the_model_sees(wire: WireServer, cwd: Path) -> None:
    import base64
    import io

    from PIL import Image

    Image.new("RGB", (3000, 1500), (10, 120, 200)).save(cwd / "wide.png")
    models_json({"local": chat_provider(wire.url, {"id": "m", "input": ["text", "image"]})})
    sizes = []
    for setting in ({}, {"images": {"autoResize": False}}):
        settings_json(setting)
        wire.enqueue(text_reply("ok"))
        out = run_pi("-p", "--model", "local/m", "@wide.png", "what is this?", cwd=cwd)
        assert out.returncode == 0 and out.stderr == "", out.stderr
        parts = wire.requests[-1].body["messages"][-1]["content"]
        url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as image:
            sizes.append(image.size)
        notes = [p["text"] for p in parts if p["type"] == "text" and p["text"].startswith("[Image: original")]
        assert notes == (
            [
                "[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 "
                "to map to original image.]"
            ]
            if not setting
            else []
        )
    assert sizes == [(2000, 1000), (3000, 1500)]
    # the session keeps the original
    session = next((agent_dir() / "sessions").rglob("*.jsonl")).read_text()
    assert "[Image: original" not in session


def test_enabled_models_scope_rpc_model_cycling(wire: WireServer, cwd: Path) -> None:
    from rpc_client import RpcProcess

    models_json({"local": chat_provider(wire.url, {"id": "a"}, {"id": "b"}, {"id": "c"})})
    settings_json({"enabledModels": ["local/a", "local/c"]})
    with RpcProcess(cwd=cwd, env={"PI_EXTENSIONS": ""}) as rpc:
        assert rpc.ok("get_state")["model"]["id"] == "a"
        cycled = [rpc.ok("cycle_model") for _ in range(2)]
    assert [(c["model"]["id"], c["isScoped"]) for c in cycled] == [("c", True), ("a", True)]
