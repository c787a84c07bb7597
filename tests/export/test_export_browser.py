"""The exported page in a real browser: Debian's chromium driven by Playwright.

Skips (saying why) where Playwright or a chromium binary is missing; Playwright's own
browser downloads are never used: the test launches the system's chromium.
"""

from __future__ import annotations

import json
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
    # a message the terminal hides is hidden here too, until asked for (as pi 1.6.0)
    hidden = opened.entry(fixture.ids["hidden_custom"])
    assert not hidden.is_visible()
    page.keyboard.press("h")
    assert hidden.is_visible() and TEXTS["hidden_custom"] in hidden.inner_text()
    page.locator('.toolbar button[data-action="hidden"]').click()
    assert not hidden.is_visible()
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
    # the branch summary and the user message of the other branch, and the leaf on view
    # (always listed)
    assert visible.count() == 3
    assert {n.get_attribute("data-id") for n in visible.all()} == {
        ids["branch_summary"],
        ids["user_2"],
        ids["other_branch"],
    }
    assert "3 / " in opened.page.locator("#tree-status").inner_text()
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


# ---------------------------------------------------------------------------- code colours

CODE_ANSWER = """Some code in a few languages:

```python
def add(a, b):
    # the sum of two numbers
    return a + b  # noqa: E501 "quoted" 0x1F
```

```javascript
const total = items.reduce((sum, item) => sum + item.price, 0); // add up
```

```bash
for f in *.txt; do echo "$f" | wc -l; done
```

```json
{"name": "pi", "version": [1, 6, 0], "ok": true, "none": null}
```

```diff
--- a/x.py
+++ b/x.py
@@ -1 +1 @@
-old line
+new line
```

```
plain text without a language
```
"""

# every element of a code block that holds text: its colour, and the first opaque
# background behind it (an element's own, else its parent's, ...), as [r, g, b]
TOKEN_COLOURS_JS = """() => {
  const rgb = (value) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(value);
    if (!m) return null;
    const parts = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return { rgb: parts.slice(0, 3), alpha: parts.length > 3 ? parts[3] : 1 };
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const bg = rgb(getComputedStyle(node).backgroundColor);
      if (bg && bg.alpha > 0.5) return bg.rgb;
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of document.querySelectorAll('#messages .highlight, #messages .highlight *')) {
    const text = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('');
    if (!text.trim() || el.offsetParent === null) continue;
    const style = getComputedStyle(el);
    out.push({ text: text.trim(), cls: el.className, color: rgb(style.color).rgb, alpha: rgb(style.color).alpha,
               opacity: Number(style.opacity), background: background(el) });
  }
  return out;
}"""


def _luminance(rgb: list[float]) -> float:
    def channel(value: float) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: list[float], b: list[float]) -> float:
    """The WCAG contrast ratio of two colours (1 to 21)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.fixture
def code_page(tmp_path: Path) -> Path:
    """A session whose answer has code blocks in several languages and whose tool results
    are highlighted files (read of a .py, write of a .json)."""
    from pi_core.export.html import render_session_html

    def entry(n: int, message: dict[str, Any]) -> dict[str, Any]:
        parent = f"e{n - 1}" if n > 1 else None
        return {
            "type": "message",
            "id": f"e{n}",
            "parentId": parent,
            "timestamp": "2026-01-02T03:04:05Z",
            "message": message,
        }

    entries = [
        entry(1, {"role": "user", "content": "Show me code", "timestamp": 1}),
        entry(
            2,
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": CODE_ANSWER},
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "/w/calc.py"}},
                    {
                        "type": "toolCall",
                        "id": "c2",
                        "name": "write",
                        "arguments": {"path": "/w/a.json", "content": '{"a": [1, 2]}'},
                    },
                ],
                "provider": "p",
                "model": "m",
                "stopReason": "toolUse",
            },
        ),
        entry(
            3,
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "isError": False,
                "content": [{"type": "text", "text": "class Calc:\n    def add(self, a, b):\n        return a + b\n"}],
            },
        ),
        entry(
            4,
            {
                "role": "toolResult",
                "toolCallId": "c2",
                "toolName": "write",
                "isError": False,
                "content": [{"type": "text", "text": "Wrote 13 bytes"}],
            },
        ),
    ]
    header = {
        "type": "session",
        "version": 3,
        "id": "0194aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee",
        "timestamp": "2026-01-02T03:04:05Z",
        "cwd": "/w",
    }
    path = tmp_path / "code.html"
    path.write_text(render_session_html(header, entries, "e4"), encoding="utf-8")
    return path


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_code_token_is_readable(browser: Any, code_page: Path, scheme: str) -> None:
    """Every piece of text in a code block contrasts with the background behind it by at
    least 4.5:1 (WCAG AA), in the light and in the dark colour scheme: no rule of one
    scheme's code style may apply on the other's background."""
    opened = Opened(browser, code_page, viewport={"width": 1200, "height": 900}, color_scheme=scheme)
    try:
        tokens = opened.page.evaluate(TOKEN_COLOURS_JS)
        texts = {t["text"] for t in tokens}
        # the names and the punctuation are there to be checked (they were the invisible ones)
        assert {"def", "add", "(", ")", ":", "return", "+", "Calc", "const", "reduce", "true"} <= texts
        assert any("plain text without a language" in t for t in texts)
        unreadable = [
            (t["text"], t["cls"], t["color"], t["background"], round(contrast(t["color"], t["background"]), 2))
            for t in tokens
            if t["alpha"] < 1 or t["opacity"] < 1 or contrast(t["color"], t["background"]) < 4.5
        ]
        assert unreadable == [], f"{len(unreadable)} of {len(tokens)} code tokens unreadable on {scheme}"
        # and the scheme really differs: the code background follows it
        page_bg = opened.page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (page_bg == "rgb(244, 244, 246)") == (scheme == "light")
        assert opened.problems == []
    finally:
        opened.context.close()


# ---------------------------------------------------------------------------- the tree's filters

VISIBLE_ROWS_JS = """() => [...document.querySelectorAll('#tree .tree-node')].filter(n => !n.hidden)
  .map(n => [n.dataset.id, n.querySelector('.tree-prefix').textContent])"""


def _python_rows(fixture: Fixture, mode: str) -> list[list[str]]:
    """The rows the filter lists, and their prefixes, as _view works them out."""
    from pi_core.export import _view

    lines = [json.loads(line) for line in fixture.path.read_text().splitlines()]
    page = _view.build_page(lines[0], lines[1:], fixture.ids["leaf"])
    for row in page.tree:
        row.shown = _view.filter_shows(row, mode, fixture.ids["leaf"])
    _view.layout_tree(page.tree)
    return [[row.entry.id, row.prefix] for row in page.tree if row.shown]


def test_tree_filters(opened: Opened, exported: tuple[Fixture, Path]) -> None:
    fixture, _ = exported
    ids = fixture.ids
    page = opened.page
    every = set(ids.values())
    settings = {
        ids[k]
        for k in ("label", "model_change", "thinking_change", "plugin_state", "context_edit", "session_info", "usage")
    }
    results = {ids[k] for k in ("result_bash", "result_read", "result_edit", "result_write", "result_plugin", "orphan")}
    expected = {
        "default": every - settings,
        "no-tools": every - settings - results,
        "user": {ids[k] for k in ("user", "user_2", "image_user", "last_user")} | {ids["leaf"]},
        "labeled": {ids["user"], ids["leaf"]},  # the leaf on view is always listed
        "all": every,
    }
    # the page opens with Default, laid out by the server as the script lays it out
    assert page.locator(".tree-filters button[aria-pressed=true]").inner_text() == "Default"
    assert page.evaluate(VISIBLE_ROWS_JS) == _python_rows(fixture, "default")
    for mode in ("all", "user", "labeled", "no-tools", "default"):
        page.locator(f'.tree-filters button[data-filter="{mode}"]').click()
        rows = page.evaluate(VISIBLE_ROWS_JS)
        assert {row[0] for row in rows} == expected[mode], mode
        assert rows == _python_rows(fixture, mode), mode  # same rows, same prefixes
        assert page.locator("#tree-count").inner_text() == f"{len(rows)} / {len(every)} entries"
        assert page.locator(".tree-filters button[aria-pressed=true]").get_attribute("data-filter") == mode
    # User: the two branches hang under the first user message, the active one first
    page.locator('.tree-filters button[data-filter="user"]').click()
    prefixes = dict(page.evaluate(VISIBLE_ROWS_JS))
    assert prefixes[ids["user"]] == ""
    assert prefixes[ids["image_user"]].startswith("├─") and prefixes[ids["user_2"]].startswith("└─")
    assert prefixes[ids["leaf"]].startswith("│")
    # a filter and a search narrow together; clearing the search keeps the filter
    page.fill("#tree-search", "approach")
    assert [row[0] for row in page.evaluate(VISIBLE_ROWS_JS)] == [ids["leaf"], ids["user_2"]]
    page.fill("#tree-search", "")
    assert {row[0] for row in page.evaluate(VISIBLE_ROWS_JS)} == expected["user"]
    # viewing another branch lists its leaf, whatever the filter
    page.locator('.tree-filters button[data-filter="labeled"]').click()
    page.locator(f'.tree-node[data-id="{ids["user"]}"] a').click()
    page.goto(f"{page.url.split('#')[0]}#entry-{ids['other_branch']}")
    page.wait_for_function(f"() => !document.getElementById('entry-{ids['other_branch']}').hidden")
    assert {row[0] for row in page.evaluate(VISIBLE_ROWS_JS)} == {ids["user"], ids["other_branch"]}
    assert opened.problems == []


def test_clicking_a_hidden_message_in_the_tree_shows_it(opened: Opened, exported: tuple[Fixture, Path]) -> None:
    fixture, _ = exported
    hidden = opened.entry(fixture.ids["hidden_custom"])
    assert not hidden.is_visible()
    opened.page.locator(f'.tree-node[data-id="{fixture.ids["hidden_custom"]}"] a').click()
    assert hidden.is_visible()
    assert opened.page.locator('.toolbar button[data-action="hidden"]').get_attribute("aria-pressed") == "true"


# ---------------------------------------------------------------------------- the JSONL download


def test_download_the_session_file(opened: Opened, exported: tuple[Fixture, Path], tmp_path: Path) -> None:
    fixture, _ = exported
    with opened.page.expect_download() as info:
        opened.page.locator("#download-jsonl").click()
    download = info.value
    assert download.suggested_filename == f"{fixture.session_id}.jsonl"
    target = tmp_path / "downloaded.jsonl"
    download.save_as(target)
    text = target.read_text(encoding="utf-8")
    original = fixture.path.read_text(encoding="utf-8")
    assert [json.loads(line) for line in text.splitlines()] == [json.loads(line) for line in original.splitlines()]
    assert text == original  # written as pi writes the file: the same bytes
    assert opened.requests == [opened.page.url.split("#")[0]]  # no fetch: the lines are in the page
    assert opened.problems == []


# ---------------------------------------------------------------------------- narrow windows

LINES_OF_TEXT_JS = """(selector) => {
  const el = document.querySelector(selector);
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
}"""


@pytest.mark.parametrize("width", [320, 390, 414])
def test_header_of_a_phone_sized_window(browser: Any, code_page: Path, width: int) -> None:
    """An unnamed session has a long title ("Session <uuid>"): the "☰ Tree" button keeps
    to one line beside it, and nothing sticks out of the window."""
    opened = Opened(browser, code_page, viewport={"width": width, "height": 800}, is_mobile=True, has_touch=True)
    try:
        page = opened.page
        assert page.locator("h1").inner_text().startswith("Session 0194aaaa")
        assert page.evaluate(LINES_OF_TEXT_JS, "#sidebar-open") == 1
        for selector in ("#sidebar-open", "h1", ".toolbar", "#download-jsonl"):
            box = page.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, selector
        sizes = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert sizes[0] <= sizes[1], f"horizontal overflow: {sizes}"
        # the drawer's filter buttons fit in it
        page.locator("#sidebar-open").tap()
        page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().left >= 0")
        drawer = page.locator("#sidebar").bounding_box()
        assert drawer is not None
        for box in page.locator(".tree-filters button").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().toJSON())"
        ):
            assert box["right"] <= drawer["x"] + drawer["width"] + 0.5
        assert opened.problems == []
    finally:
        opened.context.close()


# ---------------------------------------------------------------------------- against pi 1.6.0

PI_TS = os.environ.get("PI_TS", "")

HEADER_JS_TS = """() => Object.fromEntries([...document.querySelectorAll('.header-info .info-item')]
  .map(i => [i.querySelector('.info-label').textContent.replace(':', '').trim(),
             i.querySelector('.info-value').textContent.trim()]))"""
HEADER_JS_PY = """() => Object.fromEntries([...document.querySelectorAll('.info > div')]
  .map(i => [i.querySelector('dt').textContent.trim(), i.querySelector('dd').textContent.trim()]))"""


@pytest.mark.skipif(not (PI_TS and Path(PI_TS).exists()), reason="PI_TS does not name an installed pi 1.6.0")
def test_header_totals_equal_pi_1_6_0s(browser: Any, exported: tuple[Fixture, Path], tmp_path: Path) -> None:
    """pi 1.6.0 exports the same file; its page (drawn by its script) and ours show the same
    models, message and tool-call counts, tokens and cost - the fixture's compaction and
    branch summary calls, and its cache warm-up, counted by neither."""
    import subprocess

    fixture, ours = exported
    theirs = tmp_path / "ts.html"
    subprocess.run(
        [PI_TS, "--export", str(fixture.path), str(theirs)],
        check=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")},
    )
    values = {}
    for name, path, script in (("ts", theirs, HEADER_JS_TS), ("py", ours, HEADER_JS_PY)):
        opened = Opened(browser, path)
        try:
            values[name] = opened.page.evaluate(script)
        finally:
            opened.context.close()
    ts, py = values["ts"], values["py"]
    assert ts["Tokens"] == py["Tokens"] == "↑1.2k ↓300"
    # pi 1.6.0 means "$0.003" too, but its page loses the "$" ("$$" in the script it pastes
    # in with String.replace becomes "$")
    assert py["Cost"] == "$0.003" and ts["Cost"].lstrip("$") == "0.003"
    assert ts["Tool Calls"] == py["Tool calls"]
    assert ts["Messages"] == py["Messages"]
    assert ts["Models"] == py["Models"]
