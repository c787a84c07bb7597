"""The HTML export's renderer: every entry type, the tree, images, escaping, the page's
guarantees (self-contained, no fetch), and the lazy imports."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest
from session_fixture import PNG_B64, TEXTS, Fixture, write_rich_session

from pi_core.export.html import (
    ExportError,
    default_output_name,
    export_manager_html,
    export_session_html,
    render_session_html,
)
from pi_core.session import SessionManager


class Page(HTMLParser):
    """The parsed page: elements with their attributes, text per element id, scripts."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._stack: list[tuple[str, dict[str, str | None], list[str]]] = []
        self.text_by_id: dict[str, str] = {}
        self._raw: str | None = None
        self.feed(html)

    VOID: ClassVar[frozenset[str]] = frozenset({"meta", "img", "input", "br", "link", "hr"})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        if tag not in self.VOID:
            self._stack.append((tag, attributes, []))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            name, attributes, texts = self._stack.pop()
            text = "".join(texts)
            if self._stack:
                self._stack[-1][2].append(text)
            if name == "script":
                self.scripts.append((attributes, text))
            if name == "style":
                self.styles.append(text)
            element_id = attributes.get("id")
            if element_id:
                self.text_by_id[element_id] = text
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._stack:
            self._stack[-1][2].append(data)

    def with_attr(self, name: str, value: str | None = None) -> list[tuple[str, dict[str, str | None]]]:
        return [(t, a) for t, a in self.elements if name in a and (value is None or a[name] == value)]


@pytest.fixture
def fixture(tmp_path: Path) -> Fixture:
    return write_rich_session(tmp_path)


@pytest.fixture
def html(fixture: Fixture, tmp_path: Path) -> str:
    out = export_session_html(fixture.path, tmp_path / "page.html")
    return out.read_text(encoding="utf-8")


def test_every_entry_type_is_shown(fixture: Fixture, html: str) -> None:
    page = Page(html)
    ids = fixture.ids
    for key in (
        "system",
        "user",
        "assistant_tools",
        "fork_point",
        "user_2",
        "other_branch",
        "branch_summary",
        "image_user",
        "shell",
        "custom",
        "hidden_custom",
        "plugin_state",
        "compaction",
        "system_update",
        "context_edit",
        "session_info",
        "usage",
        "error_answer",
        "last_user",
        "leaf",
        "model_change",
        "thinking_change",
    ):
        assert f"entry-{ids[key]}" in page.text_by_id, key
    text = {key: page.text_by_id[f"entry-{ids[key]}"] for key in ids if f"entry-{ids[key]}" in page.text_by_id}
    assert TEXTS["system"] in text["system"] and "bash" in text["system"] and "Run a shell command" in text["system"]
    assert TEXTS["user"] in text["user"] and TEXTS["label"] in text["user"]
    assistant = text["assistant_tools"]
    for expected in (
        TEXTS["thinking"],
        TEXTS["assistant"],
        "print('hi')",
        "ls ",
        "/work/src/greet.py",
        TEXTS["write_content"],
        "my_plugin_tool",
        "Nested calls: 1",
    ):
        assert expected in assistant, expected
    # tool results sit inside their calls, each under its own entry id
    assert TEXTS["bash_output"] in page.text_by_id[f"entry-{ids['result_bash']}"]
    assert TEXTS["read_output"] in page.text_by_id[f"entry-{ids['result_read']}"].replace("\n", "\n")
    assert TEXTS["edit_diff"] in page.text_by_id[f"entry-{ids['result_edit']}"]
    assert "plugin failed" in page.text_by_id[f"entry-{ids['result_plugin']}"]
    assert TEXTS["orphan"] in html  # a result whose call is not in the session stands alone
    assert TEXTS["other_branch"] in text["other_branch"]
    assert TEXTS["branch_summary"] in text["branch_summary"]
    assert TEXTS["image_caption"] in text["image_user"]
    assert TEXTS["shell"] in text["shell"] and TEXTS["shell_output"] in text["shell"]
    assert TEXTS["custom"] in text["custom"] and "[build-status]" in text["custom"]
    assert TEXTS["hidden_custom"] in text["hidden_custom"] and "hidden in the terminal" in text["hidden_custom"]
    assert "Plugin state: my-plugin" in text["plugin_state"]
    assert TEXTS["compaction"] in text["compaction"] and "51,234 tokens" in text["compaction"]
    assert "/work/out.py" in text["compaction"]  # the files it lists
    assert 'section "skills"' in text["system_update"] and "Tools removed: read" in text["system_update"]
    assert 'Removed system prompt section "cwd"' in text["system_update"]
    assert "left out of the model's context" in text["context_edit"]
    assert TEXTS["name"] in text["session_info"]
    assert "cache_warm" in text["usage"]
    assert TEXTS["error"] in text["error_answer"]
    assert "Model: " + TEXTS["model"] in text["model_change"] and "high" in text["thinking_change"]
    # the session's name titles the page; the header adds up the usage
    assert f"<title>{TEXTS['name']} - pi</title>" in html
    assert "fixture/fixture-model, fixture/other-model" in html
    # the totals are the assistant messages' (as pi 1.6.0 counts): not the compaction's, the
    # branch summary's (100 in, 10 out, $0.002 each) nor the cache warm-up's (R500)
    assert page.text_by_id["stat-tokens"] == "↑1.2k ↓300"
    assert page.text_by_id["stat-cost"] == "$0.003"
    assert page.text_by_id["stat-tool-calls"] == "5"


def test_the_active_branch_is_shown_and_marked(fixture: Fixture, html: str) -> None:
    page = Page(html)
    ids = fixture.ids
    hidden = {a["data-entry-id"] for t, a in page.with_attr("data-entry-id") if "hidden" in a}
    # the abandoned branch is hidden; everything on the path to the leaf is shown
    assert {ids["user_2"], ids["other_branch"]} <= hidden
    for key in ("system", "user", "assistant_tools", "result_bash", "fork_point", "branch_summary", "leaf"):
        assert ids[key] not in hidden, key
    nodes = {a["data-id"]: a["class"] or "" for t, a in page.with_attr("data-id")}
    assert "in-path" in nodes[ids["leaf"]] and "leaf" in nodes[ids["leaf"]].split()
    assert "in-path" in nodes[ids["user"]]
    assert "in-path" not in nodes[ids["other_branch"]]
    # the tree lists every entry; the branch point shows two branches, the active one first
    assert set(nodes) == set(ids.values())
    order = [a["data-id"] for t, a in page.with_attr("data-id")]
    assert order.index(ids["branch_summary"]) < order.index(ids["user_2"])
    prefixes = re.findall(r'data-id="([^"]+)"(?: hidden)?><a [^>]*><span class="tree-prefix">([^<]*)</span>', html)
    prefix = dict(prefixes)
    assert prefix[ids["branch_summary"]].startswith("├─") and prefix[ids["user_2"]].startswith("└─")
    state = json.loads(next(text for attrs, text in page.scripts if attrs.get("id") == "pi-state"))
    assert state["leaf"] == ids["leaf"]
    assert [link[0] for link in state["entries"]] == list(dict.fromkeys(ids.values()))
    assert dict(map(tuple, state["entries"]))[ids["branch_summary"]] == ids["fork_point"]


def test_images_are_inline_data_uris(fixture: Fixture, html: str) -> None:
    page = Page(html)
    images = [a for t, a in page.elements if t == "img"]
    assert len(images) == 2  # the user's picture and the tool result's
    assert all(a["src"] == f"data:image/png;base64,{PNG_B64}" for a in images)
    assert base64.b64decode(PNG_B64).startswith(b"\x89PNG")


def test_a_script_in_the_session_is_text_never_markup(fixture: Fixture, html: str) -> None:
    assert "<script>window.__pwned" not in html
    assert html.count("&lt;script&gt;window.__pwned = 1&lt;/script&gt;") >= 6
    page = Page(html)
    # three scripts: the two data blocks (tree, session file) and the page's own code
    assert [attrs.get("type") for attrs, _ in page.scripts] == ["application/json", "application/json", None]
    assert not any(a.get(name) for t, a in page.elements for name in a if name.startswith("on"))


@pytest.mark.parametrize(
    "evil",
    [
        "</script><script>alert(1)</script>",
        '"><img src=x onerror=alert(1)>',
        "[click](javascript:alert(1))",
        "<!-- </script> -->",
        "{{ 7*7 }} {% raw %}",
    ],
)
def test_hostile_text_in_every_field(evil: str) -> None:
    entries: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "e1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": evil}, {"type": "image", "data": evil, "mimeType": evil}],
            },
        },
        {
            "type": "message",
            "id": evil,
            "parentId": "e1",
            "timestamp": evil,
            "message": {
                "role": "assistant",
                "provider": evil,
                "model": evil,
                "stopReason": "error",
                "errorMessage": evil,
                "content": [
                    {"type": "thinking", "thinking": evil},
                    {"type": "text", "text": evil},
                    {"type": "toolCall", "id": evil, "name": evil, "arguments": {evil: evil}},
                ],
            },
        },
        {
            "type": "message",
            "id": "e3",
            "parentId": evil,
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "role": "toolResult",
                "toolCallId": evil,
                "toolName": evil,
                "isError": True,
                "content": [{"type": "text", "text": evil}],
            },
        },
        {"type": "label", "id": "e4", "parentId": "e3", "targetId": "e1", "label": evil},
        {"type": "custom_message", "id": "e5", "parentId": "e4", "customType": evil, "content": evil},
        {"type": "compaction", "id": "e6", "parentId": "e5", "summary": evil, "firstKeptEntryId": "e5"},
        {"type": evil, "id": "e7", "parentId": "e6"},
        {
            "type": "message",
            "id": "e8",
            "parentId": "e7",
            "message": {"role": "system", "content": evil, "toolsAdded": [{"name": evil, "description": evil}]},
        },
    ]
    html = render_session_html({"type": "session", "id": evil, "cwd": evil}, entries, "e8")
    page = Page(html)
    assert [attrs.get("type") for attrs, _ in page.scripts] == ["application/json", "application/json", None]
    assert not [a for t, a in page.elements if t in ("img",) and "onerror" in a]
    assert not [a for t, a in page.elements if t == "a" and (a.get("href") or "").startswith("javascript")]
    if "{{" in evil:
        assert "{{ 7*7 }} {% raw %}" in html  # text, never a template
    state = next(text for attrs, text in page.scripts if attrs.get("id") == "pi-state")
    assert json.loads(state)["leaf"] == "e8"  # the data block survives "</script>" in an id
    jsonl = json.loads(next(text for attrs, text in page.scripts if attrs.get("id") == "pi-session-jsonl"))
    assert [json.loads(line) for line in jsonl.splitlines()][1:] == entries


def test_the_page_fetches_nothing_and_runs_only_its_own_code(html: str) -> None:
    page = Page(html)
    csp = next(
        a["content"] for t, a in page.elements if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None and "default-src 'none'" in csp and "img-src data:" in csp
    script = next(text for attrs, text in page.scripts if not attrs.get("type"))

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src '{digest(script)}'" in csp
    assert f"style-src '{digest(page.styles[0])}'" in csp
    for tag, attrs in page.elements:
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            if tag in ("img", "script", "link", "iframe"):
                assert value == "" or value.startswith("data:"), (tag, value)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)


def test_markdown_and_code_are_rendered() -> None:
    entries = [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "a\nb"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {
                "role": "assistant",
                "stopReason": "stop",
                "content": [
                    {
                        "type": "text",
                        "text": (
                            "# Title\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n```python\ndef f():\n    return 1\n```\n\n"
                            "![remote](https://example.com/a.png) [docs](https://example.com)"
                        ),
                    }
                ],
            },
        },
    ]
    html = render_session_html({"id": "s"}, entries, "a1")
    assert "<h1>Title</h1>" in html and "<table>" in html
    assert '<span class="k">def</span>' in html  # Pygments coloured the Python block
    assert "a<br />\nb" in html  # a line break typed by the user stays one
    # a remote picture becomes a link, never a fetch
    assert 'src="https://example.com/a.png"' not in html
    assert '<a href="https://example.com/a.png" rel="noopener noreferrer">[image: remote]</a>' in html
    assert '<a href="https://example.com" rel="noopener noreferrer">docs</a>' in html


def test_system_prompt_and_tools_of_a_session_without_system_entries() -> None:
    entries = [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "hi"},
        }
    ]
    tools = [
        {
            "name": "grep",
            "description": "Search files",
            "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
        }
    ]
    html = render_session_html({"id": "s"}, entries, "u1", system_prompt="You are helpful.", tools=tools)
    assert "You are helpful." in html and "Search files" in html and "<code>pattern</code>" in html
    # a session that records its prompt shows its own, not the live one
    entries.insert(
        0,
        {
            "type": "message",
            "id": "s0",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "system", "content": "Recorded prompt"},
        },
    )
    entries[1]["parentId"] = "s0"
    html = render_session_html({"id": "s"}, entries, "u1", system_prompt="You are helpful.", tools=tools)
    assert "Recorded prompt" in html and "You are helpful." not in html


def test_tool_call_pairing_follows_the_branch_not_the_id() -> None:
    """Two branches reuse the call id call_1 (as a scripted model does): each result
    belongs to the call on its own branch."""

    def call(entry_id: str, parent: str | None, command: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "assistant",
                "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": command}}],
            },
        }

    def result(entry_id: str, parent: str, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
            },
        }

    entries = [
        {
            "type": "message",
            "id": "u",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "go"},
        },
        call("a1", "u", "echo one"),
        result("r1", "a1", "out-one"),
        call("a2", "u", "echo two"),
        result("r2", "a2", "out-two"),
    ]
    page = Page(render_session_html({"id": "s"}, entries, "r2"))
    assert "out-one" in page.text_by_id["entry-a1"] and "out-two" not in page.text_by_id["entry-a1"]
    assert "out-two" in page.text_by_id["entry-a2"] and "out-one" not in page.text_by_id["entry-a2"]


def test_a_long_chain_does_not_recurse() -> None:
    entries = [
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": f"e{i - 1}" if i else None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"},
        }
        for i in range(3000)
    ]
    html = render_session_html({"id": "s"}, entries, "e2999")
    assert "message 2999" in html and html.count('class="tree-node') == 3000


def test_files_and_errors(fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    written = export_session_html(fixture.path)
    assert written == Path(default_output_name(fixture.path))  # relative, as pi 1.6.0 reports it
    assert written.name == f"pi-session-{fixture.path.name[: -len('.jsonl')]}.html"
    # a directory receives the default name
    folder = tmp_path / "pages"
    folder.mkdir()
    assert export_session_html(fixture.path, folder) == folder / written.name
    with pytest.raises(ExportError, match=r"^File not found: .*nope\.jsonl$"):
        export_session_html(tmp_path / "nope.jsonl")
    junk = tmp_path / "junk.jsonl"
    junk.write_text("this is not a session\n")
    with pytest.raises(ExportError, match=r"^Session file is not a valid pi session: .*junk\.jsonl$"):
        export_session_html(junk)
    with pytest.raises(ExportError, match=r"^Cannot write .*missing/x\.html: No such file or directory$"):
        export_session_html(fixture.path, tmp_path / "missing" / "x.html")
    # the session file is read, never changed
    before = fixture.path.read_bytes()
    export_session_html(fixture.path, tmp_path / "again.html")
    assert fixture.path.read_bytes() == before


def test_an_open_session_exports_from_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    sm = SessionManager.in_memory(tmp_path)
    with pytest.raises(ExportError, match="Nothing to export yet"):
        export_manager_html(sm)
    sm.append_message({"role": "user", "content": "kept in memory only"})
    written = export_manager_html(sm, system_prompt="Live prompt", tools=[{"name": "ls", "description": "List"}])
    assert written == Path(f"pi-session-{sm.get_session_id()}.html")
    text = written.read_text()
    assert "kept in memory only" in text and "Live prompt" in text


def test_importing_the_module_loads_no_renderer_library() -> None:
    code = (
        "import sys, pi_core.export.html, pi_core.cli.main\n"
        "print(sorted(m for m in ('jinja2', 'markdown_it', 'pygments') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_truncated_tool_output_says_where_the_rest_is() -> None:
    entries = [
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {
                "role": "assistant",
                "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "make"}}],
            },
        },
        {
            "type": "message",
            "id": "r",
            "parentId": "a",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "bash",
                "content": [{"type": "text", "text": "last lines"}],
                "details": {"truncation": {"truncated": True}, "fullOutputPath": "/tmp/pi-bash-1.log"},
            },
        },
    ]
    page = Page(render_session_html({"id": "s"}, entries, "r"))
    assert "the full output was saved to /tmp/pi-bash-1.log" in page.text_by_id["entry-r"]


# ---------------------------------------------------------------------------- header totals


def _message(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": message,
    }


def _usage(inp: int, out: int, cost: dict[str, float], read: int = 0, write: int = 0) -> dict[str, Any]:
    return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": write, "cost": cost}


def test_header_totals_count_what_pi_1_6_0_counts() -> None:
    """Tokens and cost of every assistant message on every branch - and of nothing else: a
    compaction's call (↑100 ↓10 here), a branch summary's and a cache warm-up are not
    added (before, this session showed ↑400 ↓40; pi 1.6.0 shows ↑300 ↓30)."""
    from pi_core.export._view import build_page

    entries = [
        _message("u1", None, {"role": "user", "content": "hi"}),
        _message(
            "a1",
            "u1",
            {
                "role": "assistant",
                "provider": "p",
                "model": "m1",
                "content": [
                    {"type": "text", "text": "x"},
                    {"type": "toolCall", "id": "same", "name": "bash", "arguments": {}},
                    {"type": "toolCall", "id": "same", "name": "bash", "arguments": {}},
                ],
                "usage": _usage(100, 10, {"input": 0.1, "output": 0.2, "total": 0.5}, read=1000),
            },
        ),
        _message("t1", "a1", {"role": "toolResult", "toolCallId": "same", "toolName": "bash", "content": "ok"}),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "t1",
            "summary": "s",
            "firstKeptEntryId": "t1",
            "tokensBefore": 5000,
            "usage": _usage(100, 10, {"total": 1.0}),
        },
        {
            "type": "branch_summary",
            "id": "b1",
            "parentId": "c1",
            "fromId": "t1",
            "summary": "s",
            "usage": _usage(7, 7, {"total": 1.0}),
        },
        {
            "type": "usage",
            "id": "w1",
            "parentId": "b1",
            "kind": "cache_warm",
            "usage": _usage(0, 0, {"total": 1.0}, read=9),
        },
        # a session from before cost.total was recorded: the sum of the parts
        _message(
            "a2",
            "w1",
            {
                "role": "assistant",
                "model": "m2",
                "content": "y",
                "usage": _usage(200, 20, {"input": 0.01, "cacheRead": 0.02}, write=3),
            },
        ),
        # another branch counts too; no usage, odd values, no model
        _message("a3", "u1", {"role": "assistant", "content": [], "usage": {"input": "many", "output": True}}),
        {"type": "custom_message", "id": "m1", "parentId": "a3", "customType": "note", "content": "n", "display": True},
    ]
    stats = build_page({"id": "s"}, entries, "a2").stats
    assert (stats.input, stats.output, stats.cache_read, stats.cache_write) == (300, 30, 1000, 3)
    assert stats.tokens_text() == "↑300 ↓30 R1.0k W3"
    assert stats.cost == pytest.approx(0.53)
    assert stats.tool_calls == 2  # every toolCall block, as pi 1.6.0 counts them
    assert stats.models == ["p/m1", "m2"]
    assert stats.messages_text() == "1 user, 3 assistant, 1 tool results, 1 custom, 1 compactions, 1 branch summaries"
    html = render_session_html({"id": "s"}, entries, "a2")
    page = Page(html)
    assert page.text_by_id["stat-tokens"] == "↑300 ↓30 R1.0k W3"
    assert page.text_by_id["stat-cost"] == "$0.530"


def test_no_usage_at_all() -> None:
    from pi_core.export._view import build_page

    stats = build_page({}, [_message("u1", None, {"role": "user", "content": "hi"})], "u1").stats
    assert stats.tokens_text() == "0" and stats.cost == 0 and stats.tool_calls == 0 and stats.models == []


# ---------------------------------------------------------------------------- tree filters


def test_tree_filters_and_their_layout(fixture: Fixture) -> None:
    """The rows each filter lists (the browser test checks that the page's script lists the
    same rows with the same prefixes)."""
    from pi_core.export import _view

    lines = [json.loads(line) for line in fixture.path.read_text().splitlines()]
    ids = fixture.ids
    page = _view.build_page(lines[0], lines[1:], ids["leaf"])
    rows = {row.entry.id: row for row in page.tree}
    assert rows[ids["model_change"]].traits == {"settings"}
    assert rows[ids["user"]].traits == {"user", "labeled"}
    assert rows[ids["result_bash"]].traits == {"tool-result"}
    assert rows[ids["error_answer"]].traits == frozenset()  # no text, but an error: listed
    # the Default view is laid out by the server: settings entries are not listed
    assert not rows[ids["usage"]].shown and rows[ids["usage"]].prefix == ""
    assert rows[ids["branch_summary"]].prefix.startswith("├─") and rows[ids["user_2"]].prefix.startswith("└─")

    def listed(mode: str, leaf: str) -> list[str]:
        return [row.entry.id for row in page.tree if _view.filter_shows(row, mode, leaf)]

    assert listed("user", ids["leaf"]) == [ids[k] for k in ("user", "image_user", "last_user", "leaf", "user_2")]
    assert listed("labeled", ids["other_branch"]) == [ids["user"], ids["other_branch"]]
    assert len(listed("all", ids["leaf"])) == len(page.tree)
    no_tools = listed("no-tools", ids["leaf"])
    assert ids["result_bash"] not in no_tools and ids["label"] not in no_tools and ids["assistant_tools"] in no_tools


def test_an_answer_of_tool_calls_alone_is_not_listed() -> None:
    """Its results are listed, each naming its call (as in pi's /tree), unless it is the leaf."""
    from pi_core.export import _view

    call = {"type": "toolCall", "id": "c", "name": "ls", "arguments": {}}
    entries = [
        _message("u1", None, {"role": "user", "content": "hi"}),
        _message(
            "a1",
            "u1",
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, call], "stopReason": "toolUse"},
        ),
        _message("t1", "a1", {"role": "toolResult", "toolCallId": "c", "toolName": "ls", "content": "x"}),
        _message("a2", "t1", {"role": "assistant", "content": [call], "stopReason": "aborted"}),
        _message("a3", "a2", {"role": "assistant", "content": [call], "stopReason": "toolUse"}),
    ]
    page = _view.build_page({}, entries, "a3")
    shown = {row.entry.id: row.shown for row in page.tree}
    assert shown == {"u1": True, "a1": False, "t1": True, "a2": True, "a3": True}
    assert [row.prefix for row in page.tree if row.shown] == ["", "", "", ""]
