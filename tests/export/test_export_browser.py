"""The exported page in a real browser: Debian's chromium driven by Playwright.

Skips (saying why) where Playwright or a chromium binary is missing; Playwright's own
browser downloads are never used: the test launches the system's chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from session_fixture import TEXTS, Fixture, write_rich_session

from pi_core.export.html import export_session_html

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def _chromium() -> str | None:
    explicit = os.environ.get("PI_TEST_CHROMIUM")
    if explicit:
        return explicit
    for candidate in CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (it is in the dev dependency group: uv sync)"
)
CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium browser installed: `apt-get install chromium` (or set PI_TEST_CHROMIUM) to run the "
    "browser test of the HTML export",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Fixture, Path]:
    fixture = write_rich_session(tmp_path / "sessions")
    return fixture, export_session_html(fixture.path, tmp_path / "page.html")


class Opened:
    def __init__(self, browser: Any, path: Path, **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def entry(self, entry_id: str) -> Any:
        return self.page.locator(f'[id="entry-{entry_id}"]')


@pytest.fixture
def opened(browser: Any, exported: tuple[Fixture, Path]) -> Iterator[Opened]:
    opened = Opened(browser, exported[1], viewport={"width": 1280, "height": 900})
    yield opened
    opened.context.close()


ACTIVE_TEXTS = {
    "system": TEXTS["system"],
    "user": TEXTS["user"],
    "assistant_tools": TEXTS["assistant"],
    "result_bash": "alpha.txt",
    "result_read": "def greet",
    "result_edit": TEXTS["edit_diff"],
    "result_plugin": "plugin failed",
    "fork_point": "Done with the tools.",
    "branch_summary": TEXTS["branch_summary"],
    "image_user": TEXTS["image_caption"],
    "shell": TEXTS["shell_output"],
    "custom": TEXTS["custom"],
    "hidden_custom": TEXTS["hidden_custom"],
    "plugin_state": "my-plugin",
    "compaction": TEXTS["compaction"],
    "system_update": "Tools removed: read",
    "context_edit": "left out of the model's context",
    "session_info": TEXTS["name"],
    "usage": "cache_warm",
    "error_answer": TEXTS["error"],
    "last_user": "Last question",
    "leaf": "Final answer of the active branch",
    "model_change": TEXTS["model"],
    "thinking_change": "Thinking level: high",
}


def test_loads_without_errors_or_fetches_and_shows_every_entry(opened: Opened, exported: tuple[Fixture, Path]) -> None:
    fixture, path = exported
    page = opened.page
    assert opened.problems == []
    assert opened.requests == [path.as_uri()]  # nothing but the page itself
    assert page.evaluate("window.__pwned") is None  # the <script> texts never ran
    for key, text in ACTIVE_TEXTS.items():
        element = opened.entry(fixture.ids[key])
        assert element.is_visible(), key
        assert text in element.inner_text(), key
    assert TEXTS["thinking"] in opened.entry(fixture.ids["assistant_tools"]).inner_text()
    assert page.get_by_text(TEXTS["orphan"]).is_visible()
    # images are decoded pictures, not broken ones
    sizes = page.eval_on_selector_all("img", "els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight])")
    assert sizes == [[True, 3, 2], [True, 3, 2]]
    # the abandoned branch is in the tree but not in the conversation
    other = opened.entry(fixture.ids["other_branch"])
    assert not other.is_visible()
    assert page.locator(f'.tree-node[data-id="{fixture.ids["other_branch"]}"]').is_visible()


def test_collapsing_a_tool_result(opened: Opened, exported: tuple[Fixture, Path]) -> None:
    fixture, _ = exported
    result = opened.entry(fixture.ids["result_bash"])
    output = result.locator(".tool-output")
    assert output.is_visible() and "beta.txt" in output.inner_text()
    result.locator("summary").click()
    assert not output.is_visible()
    assert result.locator("summary").is_visible()  # the header stays, to open it again
    result.locator("summary").click()
    assert output.is_visible()
    # the toolbar collapses every result, and opens them again
    button = opened.page.locator('.toolbar button[data-action="tools"]')
    button.click()
    assert not output.is_visible()
    assert not opened.entry(fixture.ids["result_read"]).locator(".tool-output").is_visible()
    assert button.get_attribute("aria-pressed") == "false"
    opened.page.keyboard.press("o")
    assert output.is_visible()
    # thinking hides and shows
    thinking = opened.page.locator(".thinking").first
    opened.page.locator('.toolbar button[data-action="thinking"]').click()
    assert not thinking.is_visible()
    opened.page.keyboard.press("t")
    assert thinking.is_visible()
    assert opened.problems == []


def test_clicking_the_tree_shows_another_branch(opened: Opened, exported: tuple[Fixture, Path]) -> None:
    fixture, _ = exported
    ids = fixture.ids
    opened.page.locator(f'.tree-node[data-id="{ids["user_2"]}"] a').click()
    assert opened.entry(ids["other_branch"]).is_visible()
    assert TEXTS["other_branch"] in opened.entry(ids["other_branch"]).inner_text()
    assert opened.entry(ids["user"]).is_visible()  # the shared start
    assert not opened.entry(ids["leaf"]).is_visible() and not opened.entry(ids["branch_summary"]).is_visible()
    node = opened.page.locator(f'.tree-node[data-id="{ids["other_branch"]}"]')
    assert "in-path" in (node.get_attribute("class") or "") and "leaf" in (node.get_attribute("class") or "")
    # and back to the active branch
    opened.page.locator(f'.tree-node[data-id="{ids["leaf"]}"] a').click()
    assert opened.entry(ids["leaf"]).is_visible() and not opened.entry(ids["other_branch"]).is_visible()
    # a link to an entry of another branch opens that branch
    opened.page.goto(f"{opened.page.url.split('#')[0]}#entry-{ids['other_branch']}")
    opened.page.wait_for_function(f"() => !document.getElementById('entry-{ids['other_branch']}').hidden")
    assert opened.entry(ids["other_branch"]).is_visible() and not opened.entry(ids["leaf"]).is_visible()
    # searching the tree narrows it
    opened.page.fill("#tree-search", "approach")
    visible = opened.page.locator(".tree-node:visible")
    assert visible.count() == 2  # the branch summary and the user message of the other branch
    assert "2 / " in opened.page.locator("#tree-status").inner_text()
    assert opened.problems == []


def test_a_phone_sized_window(browser: Any, exported: tuple[Fixture, Path]) -> None:
    fixture, path = exported
    opened = Opened(
        browser, path, viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True, device_scale_factor=2
    )
    try:
        page = opened.page
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1], f"horizontal overflow: {width}"
        wide = page.evaluate(
            """() => [...document.querySelectorAll('#content *')]
                 .filter(e => e.offsetParent !== null && e.getBoundingClientRect().right > window.innerWidth + 1)
                 .map(e => e.tagName + '.' + e.className).slice(0, 5)"""
        )
        assert wide == []
        assert opened.entry(fixture.ids["leaf"]).is_visible()
        # the tree is a drawer: closed, it covers nothing; opened, a tap shows a branch
        tree = page.locator("#sidebar")
        assert not tree.is_visible() or tree.bounding_box()["x"] + tree.bounding_box()["width"] <= 0
        page.locator("#sidebar-open").tap()
        page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().left >= 0")
        page.locator(f'.tree-node[data-id="{fixture.ids["other_branch"]}"] a').tap()
        assert opened.entry(fixture.ids["other_branch"]).is_visible()
        page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().right <= 0")
        assert opened.problems == []
    finally:
        opened.context.close()
