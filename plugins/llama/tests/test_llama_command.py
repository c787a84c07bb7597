"""``/llama`` run by a real pi session (``session.run_command``, the path the terminal
and RPC mode take) against the scripted router: list, load (with progress, and the
question when other models are loaded), unload, download (with Hugging Face search and
quantizations), the command's abort signal stopping a load or a download, a dead
router. After a change the session's catalogue offers the router's models at once (no
``/reload``: the plugin's contexts stay valid), and the router is the one pi's stored
login names (``ctx.model_registry.get_provider_auth``), its key included."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_kit import stock
from scripted_router import ScriptedRouter, dead_url

from pi_core.testing import PiHarness
from pi_llama import LlamaPlugin, client
from pi_llama.catalog import read_snapshot


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOAD_POLL", "UNLOAD_POLL", "DOWNLOAD_POLL"):
        monkeypatch.setattr(client, name, 0.01)


@pytest.fixture
def router(pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedRouter]:
    with ScriptedRouter() as server:
        monkeypatch.setenv("LLAMA_BASE_URL", server.url)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", "hf-secret")
        monkeypatch.delenv("PI_OFFLINE", raising=False)
        yield stock(server)


def start(pi: PiHarness, mode: str = "print") -> LlamaPlugin:
    plugin = LlamaPlugin()
    pi.use(plugin).set_mode(mode)
    pi.run(pi.astart())
    return plugin


def llama(pi: PiHarness, args: str = "") -> None:
    pi.run(pi.session.run_command("llama", args))


def notes(pi: PiHarness) -> list[tuple[str, str]]:
    return [(c.args["level"], c.args["message"]) for c in pi.ui.of("notify")]


def text(pi: PiHarness) -> str:
    return "\n".join(message for _, message in notes(pi))


def statuses(pi: PiHarness) -> list[str | None]:
    return [c.args["text"] for c in pi.ui.of("set_status")]


def offered(pi: PiHarness) -> list[str]:
    return sorted(m.id for m in pi.session.models.models() if m.provider == "llama.cpp")


def test_list(router: ScriptedRouter, pi: PiHarness) -> None:
    start(pi)
    llama(pi)
    out = text(pi)
    assert f"llama.cpp at {router.url}:" in out
    assert "qwen3-8b · loaded · 33k context" in out and "gemma-3-4b · loaded (sleeping) · 131k context" in out
    assert "  llama-3.2-1b\n" in out + "\n"
    assert pi.plugin_errors == []


def test_load_then_unload_updates_the_catalogue_without_a_reload(router: ScriptedRouter, pi: PiHarness) -> None:
    start(pi, "rpc")
    assert "llama-3.2-1b" not in offered(pi)
    pi.ui.answer("select", "Keep loaded and load")
    llama(pi, "load llama-3.2-1b")
    asked = pi.ui.of("select")[0]
    assert (asked.title, asked.args["options"]) == (
        "3 models are loaded",
        ["Unload all and load", "Keep loaded and load", "Cancel"],
    )
    assert router.state.posted("/models/load") == [{"model": "llama-3.2-1b"}]
    assert router.state.posted("/models/unload") == []
    assert any(s and s.startswith("Loading llama-3.2-1b: Loading tensors · 75%") for s in statuses(pi))
    assert statuses(pi)[-1] is None  # the status line is cleared
    assert ("info", "Loaded llama-3.2-1b (loaded · 8k context)") in notes(pi)
    snapshot = read_snapshot(router.url)
    assert snapshot is not None and "llama-3.2-1b" in snapshot.model_ids()
    # /model and --model offer it at once, and nothing was reloaded (same plugin runtime)
    assert "llama-3.2-1b" in offered(pi)
    assert pi.session.models.get("llama.cpp", "llama-3.2-1b").context_window == 8192

    llama(pi, "unload llama-3.2-1b")
    assert router.state.posted("/models/unload") == [{"model": "llama-3.2-1b"}]
    assert ("info", "Unloaded llama-3.2-1b") in notes(pi)
    assert "llama-3.2-1b" not in offered(pi)
    assert pi.plugin_errors == []


def test_unload_all_and_load(router: ScriptedRouter, pi: PiHarness) -> None:
    start(pi, "tui")
    pi.ui.answer("select", "Unload all and load")
    llama(pi, "load llama-3.2-1b")
    assert sorted(b["model"] for b in router.state.posted("/models/unload")) == ["gemma-3-4b", "julia-1", "qwen3-8b"]
    assert offered(pi) == ["llama-3.2-1b"]


def test_the_menu_loads_the_chosen_model(router: ScriptedRouter, pi: PiHarness) -> None:
    start(pi, "tui")
    pi.ui.answer("select", "llama-3.2-1b", "Cancel", "Close")
    llama(pi)
    first = pi.ui.of("select")[0]
    assert first.title == f"llama.cpp · {router.url}"
    assert first.args["options"][-2:] == ["Download model…", "Close"] and "llama-3.2-1b" in first.args["options"]
    assert router.state.posted("/models/load") == []  # "Cancel" at the question


def _stop_when(pi: PiHarness, router: ScriptedRouter, args: str, started: str) -> None:
    """Run ``/llama args`` and abort the session (Esc, Ctrl+C, RPC ``abort``) once the
    router got ``started``; the command must end on its own, well before it would be
    cancelled."""

    async def scenario() -> None:
        session = pi.session
        task = asyncio.ensure_future(session.run_command("llama", args))
        while not router.state.posted(started):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert session.command_running
        session.abort()
        await asyncio.wait_for(task, 1.0)  # returns through the signal: no CancelledError
        assert not session.command_running

    pi.run(scenario())


def test_abort_stops_a_load_on_the_router(router: ScriptedRouter, pi: PiHarness) -> None:
    router.state.load_polls = 10_000
    start(pi)
    _stop_when(pi, router, "load llama-3.2-1b", "/models/load")
    assert router.state.posted("/models/unload") == [{"model": "llama-3.2-1b"}]
    assert ("warning", "Stopped loading llama-3.2-1b") in notes(pi)
    assert not any(message.startswith("Loaded") for _, message in notes(pi))
    assert pi.plugin_errors == []


def test_abort_stops_a_download(router: ScriptedRouter, pi: PiHarness) -> None:
    router.state.download_polls = 10_000
    start(pi, "rpc")
    _stop_when(pi, router, "download org/Slow-GGUF:Q4_K_M", "/models")
    assert router.state.posted("/models/unload") == [{"model": "org/Slow-GGUF:Q4_K_M"}]
    assert ("warning", "Stopped downloading org/Slow-GGUF:Q4_K_M") in notes(pi)
    assert not any(message.startswith("Downloaded") for _, message in notes(pi))


def test_download_with_search_and_quantization(router: ScriptedRouter, pi: PiHarness) -> None:
    router.state.hf_models = [{"id": "org/Tiny-GGUF", "downloads": 42}]
    router.state.hf_details["org/Tiny-GGUF"] = {
        "id": "org/Tiny-GGUF",
        "siblings": [{"rfilename": "Tiny-Q4_K_M.gguf", "size": 2048}, {"rfilename": "Tiny-Q8_0.gguf", "size": 4096}],
    }
    start(pi, "tui")
    pi.ui.answer("input", "tiny")
    pi.ui.answer("select", "org/Tiny-GGUF · 42 downloads", "Q8_0 · 4.00 KiB")
    llama(pi, "download")
    quantization = pi.ui.of("select")[1]
    assert (quantization.title, quantization.args["options"]) == (
        "Select quantization: org/Tiny-GGUF",
        ["Q4_K_M · 2.00 KiB · recommended", "Q8_0 · 4.00 KiB"],
    )
    assert router.state.posted("/models") == [{"model": "org/Tiny-GGUF:Q8_0"}]
    assert any(s and "Downloading model · " in s and "B / " in s for s in statuses(pi))
    assert ("info", "Downloaded org/Tiny-GGUF:Q8_0") in notes(pi)
    assert any(r.path == "/models" and r.query.get("reload") == ["1"] for r in router.state.requests)
    hf = [r for r in router.state.requests if r.path.startswith("/api/models")]
    assert hf and all(r.headers["Authorization"] == "Bearer hf-secret" for r in hf)


def test_download_of_an_exact_reference_without_hugging_face(
    router: ScriptedRouter, pi: PiHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", dead_url())
    start(pi)
    llama(pi, "download org/Exact-GGUF:Q4_K_M")
    assert router.state.posted("/models") == [{"model": "org/Exact-GGUF:Q4_K_M"}]
    # a search needs Hugging Face: one line saying it is not reachable
    before = len(notes(pi))
    llama(pi, "search qwen")
    ((level, message),) = notes(pi)[before:]
    assert level == "error" and message.startswith("Hugging Face is not reachable at http://127.0.0.1:")


def test_the_stored_login_names_the_router_and_its_key(
    router: ScriptedRouter, pi: PiHarness, pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/login llama.cpp`` stored a URL and a key: ``/llama`` reaches that router with
    that key, read through the contract (``get_provider_auth``), not ``LLAMA_BASE_URL``."""
    monkeypatch.setenv("LLAMA_BASE_URL", dead_url())
    (pi_agent_dir / "auth.json").write_text(
        json.dumps({"llama.cpp": {"type": "api_key", "key": "sk-router", "env": {"LLAMA_BASE_URL": router.url}}})
    )
    start(pi)
    llama(pi, "list")
    assert f"llama.cpp at {router.url}:" in text(pi)
    listed = [r for r in router.state.requests if r.path == "/models"]
    assert listed and all(r.headers.get("Authorization") == "Bearer sk-router" for r in listed)


def test_a_dead_router_is_one_line(pi_agent_dir: Path, pi: PiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    url = dead_url()
    monkeypatch.setenv("LLAMA_BASE_URL", url)
    start(pi)
    llama(pi, "load x")
    errors = [message for level, message in notes(pi) if level == "error"]
    assert len(errors) == 1 and errors[0].startswith(f"Could not reach llama.cpp server at {url}: ")
    assert "\n" not in errors[0]


def test_unconfigured(pi_agent_dir: Path, pi: PiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    start(pi)
    llama(pi)
    assert notes(pi) == [("warning", "Configure llama.cpp with /login llama.cpp (or set LLAMA_BASE_URL)")]
