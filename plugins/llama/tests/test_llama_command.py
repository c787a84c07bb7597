"""``/llama`` through the plugin's command handler, against the scripted router: list,
load (with progress, and the question when other models are loaded), unload, download
(with Hugging Face search and quantizations), Esc stopping a load, a dead router."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_kit import FakeContext, stock
from scripted_router import ScriptedRouter, dead_url

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
        yield stock(server)


def plugin() -> LlamaPlugin:
    instance = LlamaPlugin()
    instance.register_providers(lambda _definition: None)
    return instance


async def test_list(router: ScriptedRouter) -> None:
    ctx = FakeContext("print")
    await plugin().command("", ctx)
    text = ctx.text()
    assert f"llama.cpp at {router.url}:" in text
    assert "qwen3-8b · loaded · 33k context" in text and "gemma-3-4b · loaded (sleeping) · 131k context" in text
    assert "  llama-3.2-1b\n" in text + "\n"


async def test_load_then_unload_refreshes_the_snapshot_and_reloads(router: ScriptedRouter) -> None:
    instance = plugin()
    ctx = FakeContext("rpc", answers=["Keep loaded and load"])
    await instance.command("load llama-3.2-1b", ctx)
    assert ctx.ui.asked[0] == (
        "3 models are loaded",
        ["Unload all and load", "Keep loaded and load", "Cancel"],
    )
    assert router.state.posted("/models/load") == [{"model": "llama-3.2-1b"}]
    assert router.state.posted("/models/unload") == []
    assert any(s and s.startswith("Loading llama-3.2-1b: Loading tensors · 75%") for s in ctx.ui.statuses)
    assert ctx.ui.statuses[-1] is None  # the status line is cleared
    assert ("info", "Loaded llama-3.2-1b (loaded · 8k context)") in ctx.ui.notes
    snapshot = read_snapshot(router.url)
    assert snapshot is not None and "llama-3.2-1b" in snapshot.model_ids()
    assert ctx.reloads == 1  # /model now offers it

    ctx = FakeContext("print")
    await instance.command("unload llama-3.2-1b", ctx)
    assert router.state.posted("/models/unload") == [{"model": "llama-3.2-1b"}]
    assert ("info", "Unloaded llama-3.2-1b") in ctx.ui.notes
    snapshot = read_snapshot(router.url)
    assert snapshot is not None and "llama-3.2-1b" not in snapshot.model_ids()


async def test_unload_all_and_load(router: ScriptedRouter) -> None:
    ctx = FakeContext("tui", answers=["Unload all and load"])
    await plugin().command("load llama-3.2-1b", ctx)
    assert sorted(b["model"] for b in router.state.posted("/models/unload")) == ["gemma-3-4b", "julia-1", "qwen3-8b"]


async def test_the_menu_loads_the_chosen_model(router: ScriptedRouter) -> None:
    ctx = FakeContext("tui", answers=["llama-3.2-1b", "Cancel", "Close"])
    await plugin().command("", ctx)
    title, options = ctx.ui.asked[0]
    assert title == f"llama.cpp · {router.url}"
    assert options[-2:] == ["Download model…", "Close"] and "llama-3.2-1b" in options
    assert router.state.posted("/models/load") == []  # "Cancel" at the question


async def test_escape_stops_a_load_on_the_router(router: ScriptedRouter) -> None:
    router.state.load_polls = 10_000
    ctx = FakeContext("print")
    task = asyncio.ensure_future(plugin().command("load llama-3.2-1b", ctx))
    while not router.state.posted("/models/load"):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert router.state.posted("/models/unload") == [{"model": "llama-3.2-1b"}]
    assert ("warning", "Stopped loading llama-3.2-1b") in ctx.ui.notes


async def test_download_with_search_and_quantization(router: ScriptedRouter) -> None:
    router.state.hf_models = [{"id": "org/Tiny-GGUF", "downloads": 42}]
    router.state.hf_details["org/Tiny-GGUF"] = {
        "id": "org/Tiny-GGUF",
        "siblings": [{"rfilename": "Tiny-Q4_K_M.gguf", "size": 2048}, {"rfilename": "Tiny-Q8_0.gguf", "size": 4096}],
    }
    ctx = FakeContext("tui", answers=["tiny", "org/Tiny-GGUF · 42 downloads", "Q8_0 · 4.00 KiB"])
    await plugin().command("download", ctx)
    assert ctx.ui.asked[2] == (
        "Select quantization: org/Tiny-GGUF",
        ["Q4_K_M · 2.00 KiB · recommended", "Q8_0 · 4.00 KiB"],
    )
    assert router.state.posted("/models") == [{"model": "org/Tiny-GGUF:Q8_0"}]
    assert any(s and "Downloading model · " in s and "B / " in s for s in ctx.ui.statuses)
    assert ("info", "Downloaded org/Tiny-GGUF:Q8_0") in ctx.ui.notes
    assert any(r.path == "/models" and r.query.get("reload") == ["1"] for r in router.state.requests)
    hf = [r for r in router.state.requests if r.path.startswith("/api/models")]
    assert hf and all(r.headers["Authorization"] == "Bearer hf-secret" for r in hf)


async def test_download_of_an_exact_reference_without_hugging_face(
    router: ScriptedRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", dead_url())
    ctx = FakeContext("print")
    await plugin().command("download org/Exact-GGUF:Q4_K_M", ctx)
    assert router.state.posted("/models") == [{"model": "org/Exact-GGUF:Q4_K_M"}]
    # a search needs Hugging Face: one line saying it is not reachable
    ctx = FakeContext("print")
    await plugin().command("search qwen", ctx)
    ((level, message),) = ctx.ui.notes
    assert level == "error" and message.startswith("Hugging Face is not reachable at http://127.0.0.1:")


async def test_a_dead_router_is_one_line(pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = dead_url()
    monkeypatch.setenv("LLAMA_BASE_URL", url)
    ctx = FakeContext("print")
    await plugin().command("load x", ctx)
    ((level, message),) = ctx.ui.notes
    assert level == "error" and message.startswith(f"Could not reach llama.cpp server at {url}: ")
    assert "\n" not in message


async def test_unconfigured(pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    ctx = FakeContext("print")
    await plugin().command("", ctx)
    assert ctx.ui.notes == [("warning", "Configure llama.cpp with /login llama.cpp (or set LLAMA_BASE_URL)")]
