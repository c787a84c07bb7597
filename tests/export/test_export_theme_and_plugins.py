"""The exported page in the user's pi theme and with what the plugins' renderers draw,
looked at in Debian's chromium (Playwright): the theme's backgrounds (its ``export``
section, or derived from ``userMessageBg`` as pi 1.6.0 derives them) whatever the
browser's scheme, its syntax colours where readable, every code token still >= 4.5:1; and
``/export`` from the real interactive ``pi`` putting a plugin's tool, message and entry
renderings on the page as preformatted text."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_export_browser import CHROMIUM, TOKEN_COLOURS_JS, Opened, browser, code_page, contrast

from pi_core.cli.tui.theme import load_theme, page_theme, theme_from_json
from pi_core.export._theme import backgrounds

__all__ = ["browser", "code_page"]  # the fixtures, shared with the page's other browser tests

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium browser installed: `apt-get install chromium` (or set PI_TEST_CHROMIUM) to run the "
    "browser test of the HTML export",
)
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cli"))
sys.path.insert(0, str(REPO / "tests" / "ai"))


def rgb(css: str) -> list[float]:
    return [float(part) for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]


def hex_rgb(colour: str) -> list[float]:
    return [float(int(colour[i : i + 2], 16)) for i in (1, 3, 5)]


def themed_copy(code_page: Path, theme: Any) -> Path:
    """The code page's session rendered again with ``theme``."""
    import re

    from pi_core.export.html import render_session_html

    html = code_page.read_text(encoding="utf-8")
    jsonl = re.search(r'<script type="application/json" id="pi-session-jsonl">(.*?)</script>', html, re.S)
    assert jsonl, "the page holds its session"
    lines = [json.loads(line) for line in json.loads(jsonl.group(1)).splitlines() if line.strip()]
    header, entries = lines[0], lines[1:]
    path = code_page.with_name(f"themed-{theme.name}.html")
    path.write_text(render_session_html(header, entries, entries[-1]["id"], theme=theme), encoding="utf-8")
    return path


def unreadable_tokens(opened: Opened) -> list[Any]:
    tokens = opened.page.evaluate(TOKEN_COLOURS_JS)
    assert len(tokens) > 20
    return [
        (t["text"], t["cls"], t["color"], t["background"], round(contrast(t["color"], t["background"]), 2))
        for t in tokens
        if t["alpha"] < 1 or t["opacity"] < 1 or contrast(t["color"], t["background"]) < 4.5
    ]


@pytest.mark.parametrize(("name", "scheme"), [("light", "dark"), ("dark", "light")])
def test_a_built_in_theme_fixes_the_page_whatever_the_browser_scheme(
    browser: Any, code_page: Path, name: str, scheme: str
) -> None:
    theme = page_theme(load_theme(name, None, str(REPO)))
    page_bg = backgrounds(theme)[0]
    opened = Opened(
        browser, themed_copy(code_page, theme), viewport={"width": 1200, "height": 900}, color_scheme=scheme
    )
    try:
        page = opened.page
        assert rgb(page.evaluate("getComputedStyle(document.body).backgroundColor")) == hex_rgb(page_bg)
        user = page.locator(".msg-user").first
        assert rgb(user.evaluate("e => getComputedStyle(e).backgroundColor")) == hex_rgb(
            theme.colors["userMessageBg"] or ""
        )
        assert unreadable_tokens(opened) == []
        assert opened.problems == []
    finally:
        opened.context.close()


TOMATO = {
    "name": "tomato",
    "appearance": "light",
    "vars": {"paper": "#fff4ec", "ink": "#202020"},
    "export": {"pageBg": "#f0e6dc", "cardBg": "paper"},
}


def tomato_theme() -> Any:
    dark = json.loads((REPO / "pi_core/cli/tui/themes/light.json").read_text())
    data = {**dark, **TOMATO, "vars": {**dark.get("vars", {}), **TOMATO["vars"]}}
    data["colors"] = {**dark["colors"], "syntaxKeyword": "#a01010", "syntaxString": "#fff0f0", "text": "ink"}
    return data


def test_a_custom_themes_export_colours_and_syntax_colours(browser: Any, code_page: Path, tmp_path: Path) -> None:
    file = tmp_path / "tomato.json"
    file.write_text(json.dumps(tomato_theme()))
    theme = theme_from_json(json.loads(file.read_text()), str(file))
    theme.path = str(file)
    opened = Opened(browser, themed_copy(code_page, page_theme(theme)), viewport={"width": 1200, "height": 900})
    try:
        page = opened.page
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(240, 230, 220)"  # pageBg
        card = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--card').trim()")
        assert card == "#fff4ec"  # cardBg through its var
        assert page.evaluate("getComputedStyle(document.body).color") == "rgb(32, 32, 32)"
        keyword = page.locator(".highlight .k").first
        assert keyword.evaluate("e => getComputedStyle(e).color") == "rgb(160, 16, 16)"  # syntaxKeyword
        string = page.locator(".highlight .s2, .highlight .s1, .highlight .s").first
        assert string.evaluate("e => getComputedStyle(e).color") != "rgb(255, 240, 240)"  # unreadable: not taken
        assert unreadable_tokens(opened) == []
    finally:
        opened.context.close()


# ---------------------------------------------------------------------------- plugin renderers, end to end

PLUGIN = '''
from pi_hookspecs import hookimpl, tool


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@hookimpl
def register_tools(register):
    register(weather)


@hookimpl
def register_tool_renderers(register):
    def resolve(name, next):
        if name != "weather":
            return next()
        return {
            "render_call": lambda args, options: f"WEATHER CALL for {args['city']}",
            "render_result": lambda result, options: ["WEATHER RESULT", "expanded" if options["expanded"] else "short"],
        }

    register(resolve)


@hookimpl
def register_message_renderers(register):
    register("card", lambda message, options: f"CARD<{message.content}>")


@hookimpl
def register_entry_renderers(register):
    register("note", lambda entry, options: [f"NOTE number {entry.data['n']}"])


@hookimpl
def register_commands(register):
    async def card(args, ctx):
        await ctx.send_message({"customType": "card", "content": "hello", "display": True})
        ctx.append_entry("note", {"n": 7})

    register("card", card)
'''


@pytest.fixture
def interactive(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    from cli_helpers import agent_dir
    from interactive_pty import Pi
    from wire_server import chat_chunks, use_server

    servers = use_server()
    wire = next(servers)
    provider = {
        "baseUrl": f"{wire.url}/v1",
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024}],
    }
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    (agent_dir() / "settings.json").write_text(json.dumps({"theme": "light"}))
    project = tmp_path / "project"
    project.mkdir()
    (project / "cards.py").write_text(PLUGIN)
    call = {
        "index": 0,
        "id": "call_w",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
    }
    usage = {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}
    wire.enqueue(
        chat_chunks([{"tool_calls": [call]}], finish_reason="tool_calls", usage=usage),
        chat_chunks([{"content": "It is sunny."}], usage=usage),
    )
    started: list[Any] = []

    def start() -> Any:
        pi = Pi("--model", "local/local-model", "-e", str(project / "cards.py"), cwd=project)
        started.append(pi)
        return pi, project

    yield start
    for pi in started:
        pi.close()
    servers.close()


def test_export_puts_the_plugins_renderings_on_the_page(browser: Any, interactive: Callable[..., Any]) -> None:
    pi, project = interactive()
    pi.expect("› ")
    pi.line("weather in Oslo?")
    pi.expect("WEATHER CALL for Oslo")
    pi.expect("It is sunny.")
    pi.line("/card")
    pi.expect("NOTE number 7")
    pi.line("/export page.html")
    pi.expect("Session exported to: page.html")
    pi.line("/quit")
    pi.wait_exit()
    opened = Opened(browser, project / "page.html", viewport={"width": 1200, "height": 900}, color_scheme="dark")
    try:
        page = opened.page
        renders = page.eval_on_selector_all("pre.plugin-render", "els => els.map(e => e.textContent)")
        assert "WEATHER CALL for Oslo" in renders
        assert "WEATHER RESULT\nshort" in renders and "WEATHER RESULT\nexpanded" in renders
        assert "CARD<hello>" in renders and "NOTE number 7" in renders
        assert page.locator("pre.plugin-render", has_text="WEATHER CALL for Oslo").is_visible()
        assert "sunny in Oslo" not in page.locator(".tool-weather").inner_text()  # the renderer's, not pi's drawing
        # the terminal's theme (light), though the browser prefers dark
        light = backgrounds(page_theme(load_theme("light", None, str(project))))[0]
        assert rgb(page.evaluate("getComputedStyle(document.body).backgroundColor")) == hex_rgb(light)
        assert opened.problems == []
    finally:
        opened.context.close()
