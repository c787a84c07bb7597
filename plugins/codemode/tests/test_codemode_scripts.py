"""Real scripts calling real tools through the whole pipeline (the scripted model)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from codemode_helpers import Ledger, codemode, inventory_tools, rendezvous_tool, setup

from pi_core.testing import PiHarness
from pi_hookspecs import hookimpl

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_two_calls_and_a_filter_only_the_output_reaches_the_model(pi: PiHarness) -> None:
    setup(pi)
    pi.write("app.log", "INFO start\nERROR disk full\nINFO tick\nERROR net down\n")
    pi.write("notes.txt", "remember the disk\n")
    run, [result] = codemode(
        pi,
        'log = tools.read(path="app.log")\n'
        'notes = tools.bash(command="wc -l < notes.txt")\n'
        'errors = [line for line in log.splitlines() if line.startswith("ERROR")]\n'
        'text("\\n".join(errors))\n'
        'print("notes lines:", notes.strip())\n',
    )
    assert not result.is_error
    assert result.text.startswith("Script completed\nWall time: ")
    assert "ERROR disk full\nERROR net down" in result.text
    assert "INFO" not in result.text  # filtered before the model saw it
    assert "<console_output>\nnotes lines: 1\n</console_output>" in result.text
    assert [c["name"] for c in result.details["calls"]] == ["read", "bash"]
    # nested calls ran through the pipeline with the codemode call as parent
    parent = result.tool_call_id
    nested = [e for e in run.events if e.type == "tool_execution_end" and e.parent_tool_call_id == parent]
    assert [e.tool_name for e in nested] == ["read", "bash"]
    assert [e.tool_call_id for e in nested] == [f"{parent}/1", f"{parent}/2"]
    # the model saw the script's output, not the nested results
    seen = run.requests[1].messages[-1]
    assert "ERROR disk full" in seen.content[0].text and "INFO start" not in seen.content[0].text


def test_gather_runs_tool_calls_concurrently(pi: PiHarness) -> None:
    # meet() only returns once both calls are in flight: sequential calls would hang
    # until the script's deadline
    setup(pi, rendezvous_tool())
    _, [result] = codemode(
        pi,
        '# @options: {"timeout_ms": 10000}\n'
        'a, b = await asyncio.gather(async_tools.meet(name="ann"), async_tools.meet(name="bob"))\n'
        "[a, b]\n",
    )
    assert not result.is_error, result.text
    assert '"ann met bob"' in result.text and '"bob met ann"' in result.text


def test_a_failing_call_raises_inside_the_script_and_can_be_caught(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [result] = codemode(
        pi,
        "try:\n"
        '    tools.explode(message="boom: disk on fire")\n'
        "except RuntimeError as error:\n"
        '    text(f"caught: {error}")\n'
        "tools.bump(n=2)\n",
    )
    assert not result.is_error, result.text
    assert "caught: boom: disk on fire" in result.text
    assert ledger.calls == [("explode", "boom: disk on fire"), ("bump", 2)]
    assert [c["status"] for c in result.details["calls"]] == ["error", "ok"]


def test_a_failure_after_side_effects_keeps_them_and_the_partial_output(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(
        pi,
        'tools.write(path="out/report.txt", content="written before the failure")\n'
        'text("first part")\n'
        'print("about to fail")\n'
        "items = [1, 2]\n"
        "items[5]\n",
    )
    assert result.is_error
    assert (pi.project / "out" / "report.txt").read_text() == "written before the failure"
    assert result.text.startswith("Script failed\n")
    head, error = result.text.split("Script error:\n")
    assert "first part" in head and "<console_output>\nabout to fail\n</console_output>" in head
    assert 'File "script.py", line 5' in error and "IndexError" in error
    assert "not undone): write (ok)" in error


def test_a_failing_call_not_caught_fails_the_script(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [result] = codemode(pi, 'tools.bump(n=1)\ntools.explode(message="no way")\ntools.bump(n=2)\n')
    assert result.is_error
    assert "RuntimeError: no way" in result.text
    assert ledger.calls == [("bump", 1), ("explode", "no way")]  # the last call never ran


def test_blocked_calls_fail_inside_the_script(pi: PiHarness) -> None:
    class NoShell:
        @hookimpl
        def tool_call(self, event: Any) -> Any:
            if event.tool_name == "bash":
                return {"block": True, "reason": "no shell from scripts"}
            return None

    setup(pi).use(NoShell)
    _, [result] = codemode(
        pi,
        "try:\n    tools.bash(command='ls')\nexcept RuntimeError as e:\n    text(str(e))\n",
    )
    assert "no shell from scripts" in result.text and not result.is_error


def test_output_items_are_numbered_and_the_final_expression_counts(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(pi, 'text("one")\ntext({"two": 2})\n"three"\n')
    body = result.text.split("\n\n", 1)[1]
    assert body == '==> text 1/3 <==\none\n==> text 2/3 <==\n{\n  "two": 2\n}\n==> text 3/3 <==\nthree'


def test_exit_ends_the_script_successfully(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, [result] = codemode(pi, 'text("done early")\nexit()\ntools.bump(n=1)\n')
    assert not result.is_error and "done early" in result.text
    assert ledger.calls == []


def test_long_output_keeps_start_and_end_and_the_full_text_goes_to_a_file(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(
        pi,
        '# @options: {"max_output_tokens": 100}\ntext("START" + "x" * 5000 + "END")\n',
    )
    assert "START" in result.text and "END" in result.text and len(result.text) < 1000
    path = Path(result.details["full_output_path"])
    assert path.read_text() == "START" + "x" * 5000 + "END"
    assert str(path) in result.text


def test_images_are_shown_and_saved(pi: PiHarness) -> None:
    setup(pi)
    pi.write("dot.png", "")
    (pi.project / "dot.png").write_bytes(base64.b64decode(PNG))
    _, [result] = codemode(
        pi,
        f'img = tools.read(path="dot.png")\nimage(img)\nimage("data:image/png;base64,{PNG}")\n',
    )
    assert not result.is_error, result.text
    images = [b for b in result.message.content if b.type == "image"]
    assert len(images) == 2 and images[1].data == PNG
    saved = [line.split("saved to ")[1].rstrip("]") for line in result.text.splitlines() if "saved to" in line]
    assert len(saved) == 2 and Path(saved[1]).read_bytes() == base64.b64decode(PNG)


def test_bad_options_line_fails_before_running(pi: PiHarness) -> None:
    ledger = Ledger()
    setup(pi, *inventory_tools(ledger))
    _, results = codemode(
        pi,
        'tools.bump(n=1)\n# @options: {"timeout_ms": 5}\n',
        '# @options: {"timeout": 5}\ntools.bump(n=1)\n',
    )
    assert all(r.is_error for r in results)
    assert "must be the first line" in results[0].text and "unknown option(s) timeout" in results[1].text
    assert ledger.calls == []


def test_a_markdown_fence_is_stripped(pi: PiHarness) -> None:
    setup(pi)
    _, [result] = codemode(pi, '```python\ntext("fenced")\n```')
    assert not result.is_error and "fenced" in result.text


def test_gather_with_a_failing_call_keeps_the_other_results(pi: PiHarness) -> None:
    setup(pi)
    pi.write("a.txt", "A")
    pi.write("b.txt", "B")
    _, [result] = codemode(
        pi,
        "async def safe(path: str) -> str:\n"
        "    try:\n"
        "        return await async_tools.read(path=path)\n"
        "    except RuntimeError as error:\n"
        '        return f"failed: {error}"\n'
        'await asyncio.gather(*[safe(p) for p in ["a.txt", "missing.txt", "b.txt"]])\n',
    )
    assert not result.is_error, result.text
    assert '"A",\n  "failed: File not found: missing.txt",\n  "B"' in result.text
    assert [c["status"] for c in result.details["calls"]] == ["ok", "error", "ok"]
