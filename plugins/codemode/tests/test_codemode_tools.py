"""How codemode presents and finds tools: description, modes, discovery helpers, MCP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from codemode_helpers import Ledger, codemode, inventory_tools, setup
from pi_codemode import CodemodePlugin

from pi_core.ai import current_tools
from pi_core.testing import PiHarness

HERE = Path(__file__).resolve().parent


def _declared(run: Any) -> dict[str, str]:
    return {t.name: t.description for t in current_tools(run.requests[0].messages)}


def _value(result: Any) -> Any:
    return json.loads(result.text.split("\n\n", 1)[1])


def test_mode_on_lists_codemode_tools_and_notes_declared_ones(pi: PiHarness) -> None:
    setup(pi, *inventory_tools(Ledger()))
    pi.script("ok")
    declared = _declared(pi.prompt("hi"))
    assert {"read", "bash", "edit", "write", "bump", "explode", "codemode"} <= set(declared)
    assert declared["read"].endswith("Codemode: scripts call it as `tools.read(...)`, which returns `str`.")
    description = declared["codemode"]
    assert description.startswith("Run a Python script that calls other tools")
    assert "## mcp__shop-db\nThe shop's inventory database" in description
    assert "# tool 'mcp__shop-db__count'\ndef mcp__shop_db__count(*, category: str) -> dict[str, Any]:" in description
    assert "price_list" not in description  # deferred: found with search_tools()
    assert "def read(" not in description and "def bump(" not in description  # declared directly


def test_mode_only_hides_declarations_and_lists_them_in_codemode(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger), codemode={"mode": "only"})
    pi.write("a.txt", "alpha")
    run, [result] = codemode(pi, 'tools.bump(n=1)\ntools.read(path="a.txt")')
    declared = _declared(run)
    assert list(declared) == ["codemode"]
    assert "def read(*, path: str" in declared["codemode"] and "def bump(*, n: int) -> str:" in declared["codemode"]
    assert "price_list" not in declared["codemode"]
    assert "alpha" in result.text and ledger.calls == [("bump", 1)]  # still callable
    assert {"read", "bump"} <= set(pi.session.tools.active_names)


def test_the_inline_budget_limits_listed_tools(pi: PiHarness) -> None:
    setup(pi, *inventory_tools(Ledger()), codemode={"mode": "only", "inlineBudget": 120})
    pi.script("ok")
    description = _declared(pi.prompt("hi"))["codemode"]
    assert "## mcp__shop-db (tools not listed)" in description or "## mcp__shop-db\n" in description
    assert "more tool(s) are not listed: find them with search_tools() or ALL_TOOLS." in description
    assert description.count("\ndef ") < 6


def test_an_inline_budget_of_zero_lists_only_namespaces(pi: PiHarness) -> None:
    setup(pi, *inventory_tools(Ledger()), codemode={"inlineBudget": 0})
    pi.script("ok")
    description = _declared(pi.prompt("hi"))["codemode"]
    assert "## mcp__shop-db (tools not listed)\nThe shop's inventory database" in description
    assert "\ndef " not in description


def test_structured_results_and_identifiers(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [result] = codemode(pi, 'r = tools.mcp__shop_db__count(category="fruit")\n[r["total"], r["items"][1]]')
    assert _value(result) == [2, "pear"]
    assert ledger.calls == [("count", "fruit")]


def test_discovery_helpers_find_unlisted_tools(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [result] = codemode(
        pi,
        'hits = search_tools("price list cents")\n'
        'ns = describe_namespace("shop_db")\n'
        "names = [t['name'] for t in ALL_TOOLS]\n"
        'stub = describe_tool("mcp__shop-db__price_list")\n'
        "prices = call_tool(hits[0]['identifier'])\n"
        "{'hit': hits[0]['name'], 'instructions': ns['instructions'],"
        " 'members': [t['identifier'] for t in ns['tools']],\n"
        " 'all': 'mcp__shop-db__price_list' in names and 'codemode' not in names, 'stub': stub.splitlines()[1],\n"
        " 'missing': [describe_tool('nope'), describe_namespace('nope')], 'prices': prices}\n",
    )
    assert not result.is_error, result.text
    value = _value(result)
    assert value["hit"] == "mcp__shop-db__price_list"
    assert value["instructions"] == "Prices are in cents. Search before you count."
    assert value["members"] == ["mcp__shop_db__count", "mcp__shop_db__price_list"]
    assert value["all"] is True
    assert value["stub"] == "def mcp__shop_db__price_list() -> Any:"  # MCP-named: a structured value
    assert value["missing"] == [None, None]
    assert value["prices"] == "apple 30\npear 45"
    assert ledger.calls == [("price_list", None)]


def test_a_codemode_tool_turns_codemode_on(pi: PiHarness) -> None:
    pi.use(CodemodePlugin).tool(*inventory_tools(Ledger()))  # no defaultTools: auto-enabled
    pi.script("ok")
    assert "codemode" in _declared(pi.prompt("hi"))


def test_auto_enable_can_be_turned_off(pi: PiHarness) -> None:
    pi.use(CodemodePlugin).tool(*inventory_tools(Ledger())).configure(autoEnableCodemode=False)
    pi.script("ok")
    assert "codemode" not in _declared(pi.prompt("hi"))


def test_codemode_is_off_by_default(pi: PiHarness) -> None:
    pi.use(CodemodePlugin)
    pi.script("ok")
    assert "codemode" not in _declared(pi.prompt("hi"))


def test_an_mcp_tool_called_from_a_script(pi: PiHarness) -> None:
    pytest.importorskip("pi_mcp")
    pytest.importorskip("mcp")
    from pi_mcp import McpPlugin

    server = HERE / "mcp_calc_server.py"
    (pi.agent_dir / "mcp.json").write_text(
        json.dumps({"mcpServers": {"calc": {"command": sys.executable, "args": [str(server)]}}})
    )
    pi.use(McpPlugin, CodemodePlugin).configure(defaultTools=["+codemode"])
    _, [result] = codemode(
        pi,
        "total = tools.mcp__calc__add(a=2, b=3)\n"
        'hits = search_tools("add numbers", namespace="calc")\n'
        "[total, [h['name'] for h in hits]]\n",
    )
    assert not result.is_error, result.text
    total, hits = _value(result)
    assert total == {"total": 5}  # the server's structured content
    assert hits[0] == "mcp__calc__add"
