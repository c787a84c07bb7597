"""The sandbox: what scripts cannot do, and the limits."""

from __future__ import annotations

import time

import pytest
from codemode_helpers import Ledger, codemode, inventory_tools, rendezvous_tool, setup
from pi_codemode import runner
from pi_codemode import sandbox as sandbox_module
from pi_codemode.sandbox import Sandbox

from pi_core.testing import PiHarness, calls


def test_files_imports_and_network_are_refused(pi: PiHarness) -> None:
    setup(pi)
    secret = pi.write("secret.txt", "top secret")
    _, results = codemode(
        pi,
        f"open({str(secret)!r}).read()",
        "import os\nos.listdir('/')",
        f"from pathlib import Path\nPath({str(secret)!r}).read_text()",
        "import subprocess\nsubprocess.run(['ls'])",
        "import socket\nsocket.create_connection(('example.com', 80))",
    )
    assert all(r.is_error for r in results)
    assert all("top secret" not in r.text for r in results)
    opened, listed, path, sub, sock = (r.text for r in results)
    assert "Name `open` used when not defined" in opened and "nothing ran" in opened
    assert "PermissionError" in listed and "no file system" in listed
    assert "PermissionError" in path
    assert "Cannot resolve imported module `subprocess`" in sub
    assert "Cannot resolve imported module `socket`" in sock


def test_an_endless_loop_ends_at_the_deadline_and_the_next_script_runs(pi: PiHarness) -> None:
    setup(pi)
    started = time.perf_counter()
    _, [looped, after] = codemode(
        pi,
        '# @options: {"timeout_ms": 300}\nn = 0\nwhile True:\n    n += 1\n',
        'text("still working")',
    )
    assert time.perf_counter() - started < 10
    assert looped.is_error and "TimeoutError" in looped.text and "300 ms" in looped.text
    assert not after.is_error and "still working" in after.text


def test_a_huge_allocation_hits_the_memory_limit(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(pi, "blob = 'x' * (1024 * 1024 * 1024)\nlen(blob)")
    assert result.is_error and "MemoryError" in result.text


def test_the_type_check_rejects_a_wrong_call_before_anything_runs(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [unknown_arg, wrong_type, unknown_tool] = codemode(
        pi,
        "tools.bump(n=1)\ntools.bump(count=2)\n",
        "tools.bump(n=1)\ntools.bump(n='two')\n",
        "tools.bump(n=1)\ntools.no_such_tool()\n",
    )
    assert ledger.calls == []  # not even the valid first calls ran
    assert "Argument `count` does not match any known parameter of function `bump`" in unknown_arg.text
    assert 'Expected `int`, found `Literal["two"]`' in wrong_type.text
    assert "no_such_tool" in unknown_tool.text
    for result in (unknown_arg, wrong_type, unknown_tool):
        assert result.is_error and "nothing ran" in result.text and "No tool calls were made." in result.text


def test_too_many_tool_calls_fail_the_script(pi: PiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "MAX_TOOL_CALLS", 3)
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [result] = codemode(
        pi, "for i in range(10):\n    try:\n        tools.bump(n=i)\n    except Exception:\n        pass\n"
    )
    assert result.is_error and "more than 3 tool calls" in result.text
    assert ledger.calls == [("bump", 0), ("bump", 1), ("bump", 2)]


def test_scripts_cannot_call_codemode(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(pi, "tools.codemode(code='1')")
    assert result.is_error and "codemode" in result.text and "nothing ran" in result.text


def test_abort_stops_a_running_script(pi: PiHarness) -> None:
    from pi_hookspecs import tool

    @tool
    def stop(ctx: object) -> str:
        """Abort the run."""
        ctx.abort()  # type: ignore[attr-defined]
        return "stopping"

    setup(pi, stop)
    started = time.perf_counter()
    _, [result] = codemode(pi, "tools.stop()\nwhile True:\n    pass\n")
    assert time.perf_counter() - started < 10
    assert result.is_error and "aborted" in result.text


def _meet(name: str, timeout_ms: int) -> str:
    return f'# @options: {{"timeout_ms": {timeout_ms}}}\ntools.meet(name="{name}")\n'


def test_two_scripts_run_at_once_with_two_workers(pi: PiHarness) -> None:
    setup(pi, rendezvous_tool())
    pi.script(calls(("codemode", {"code": _meet("ann", 10000)}), ("codemode", {"code": _meet("bob", 10000)})), "done")
    results = pi.prompt("go").tool_results
    assert [r.is_error for r in results] == [False, False], [r.text for r in results]
    assert "ann met bob" in results[0].text and "bob met ann" in results[1].text


def test_one_worker_runs_one_script_at_a_time(pi: PiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    single = Sandbox(1)
    monkeypatch.setattr(sandbox_module, "get_sandbox", lambda: single)  # the tool imports it per run
    try:
        setup(pi, rendezvous_tool())
        pi.script(calls(("codemode", {"code": _meet("ann", 500)}), ("codemode", {"code": _meet("bob", 500)})), "done")
        results = pi.prompt("go").tool_results
        # the script that got the worker waited alone for its partner, whose script
        # could not start, until its deadline: the two never met
        assert not any("met" in r.text for r in results)
        assert all(r.is_error and "TimeoutError" in r.text for r in results)
    finally:
        single.close()
