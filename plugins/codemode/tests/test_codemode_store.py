"""store() / load(): kept across calls, persisted per branch, only for successful scripts."""

from __future__ import annotations

import json
from typing import Any

from codemode_helpers import codemode, setup
from pi_codemode import STORE_ENTRY

from pi_core.testing import PiHarness


def _user_entry(pi: PiHarness, text: str) -> str:
    for entry in pi.session.sm.get_entries():
        message = getattr(entry, "message", None)
        if getattr(message, "role", None) == "user":
            content = message.content
            body = content if isinstance(content, str) else "".join(getattr(b, "text", "") for b in content)
            if body == text:
                return str(entry.id)
    raise AssertionError(f"no user message {text!r}")


def _value(result: Any) -> Any:
    return json.loads(result.text.split("\n\n", 1)[1])


def test_values_persist_across_calls_and_only_successful_scripts_write(pi: PiHarness) -> None:
    setup(pi)
    codemode(pi, 'store("cursor", 1)\nstore("tmp", {"a": [1, 2]})\nload("cursor")', prompt="first")
    _, [second, failed, after] = codemode(
        pi,
        'store("cursor", load("cursor") + 1)\nstore("tmp", None)\n[load("cursor"), load("tmp", "gone")]',
        'store("cursor", 99)\nraise ValueError("nope")',
        '[load("cursor"), load("missing", "default")]',
        prompt="second",
    )
    assert _value(second) == [2, "gone"]
    assert failed.is_error
    assert _value(after) == [2, "default"]  # the failed script's write was dropped
    entries = [e for e in pi.session_entries() if e.get("customType") == STORE_ENTRY]
    assert [e["data"] for e in entries] == [
        {"set": {"cursor": 1, "tmp": {"a": [1, 2]}}, "delete": []},
        {"set": {"cursor": 2}, "delete": ["tmp"]},
    ]


def test_each_branch_sees_the_values_written_on_its_path(pi: PiHarness) -> None:
    setup(pi)
    codemode(pi, 'store("cursor", 1)\nstore("note", "from the root path")', prompt="first")
    codemode(pi, 'store("cursor", 2)', prompt="second")
    # /tree back to before "second": that branch never stored 2
    pi.run(pi.session.navigate_tree(_user_entry(pi, "second")))
    _, [result] = codemode(pi, '[load("cursor"), load("note")]', prompt="other branch")
    assert _value(result) == [1, "from the root path"]
    # ...and back on the original path the value is still 2
    leaf = next(
        e["id"]
        for e in reversed(pi.session_entries())
        if e.get("customType") == STORE_ENTRY and e["data"]["set"] == {"cursor": 2}
    )
    pi.run(pi.session.navigate_tree(leaf))
    _, [result] = codemode(pi, 'load("cursor")', prompt="original branch")
    assert _value(result) == 2


def test_a_fork_keeps_the_values_of_its_path(pi: PiHarness) -> None:
    setup(pi)
    codemode(pi, 'store("cursor", 1)', prompt="first")
    codemode(pi, 'store("cursor", 2)', prompt="second")
    runtime = pi._runtime
    pi.run(runtime.fork(_user_entry(pi, "second")))
    assert pi.session is runtime.session
    _, [result] = codemode(pi, 'load("cursor")', prompt="in the fork")
    assert _value(result) == 1


def test_store_rejects_values_that_are_not_json_or_too_large(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(
        pi,
        "errors = []\n"
        "for key, value in [('a', {1, 2}), ('b', 'x' * 300000)]:\n"
        "    try:\n"
        "        store(key, value)\n"
        "    except (TypeError, ValueError) as e:\n"
        "        errors.append(type(e).__name__)\n"
        "errors\n",
    )
    assert not result.is_error, result.text
    assert _value(result) == ["TypeError", "ValueError"]
