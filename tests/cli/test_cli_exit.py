"""``pi -p`` and ``pi --mode json`` end the process as soon as their work is done
(``os._exit`` after the runtime is disposed, see ``pi_core.cli.process``): nothing
written may be lost on the way. The real ``pi`` runs in a subprocess against a scripted
faux model that a plugin (``-e``) registers; output goes to a pipe and nothing is killed."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_helpers import agent_dir, jsonl, run_pi

from pi_core.cli import cli_main, process

LINES = 4000
ANSWER = "".join(f"{i:05d}:" + "abcdefghij" * 10 + "\n" for i in range(LINES))  # ~420 KB, bigger than a pipe buffer

SCRIPTED_PLUGIN = """
import atexit
import os

from pi_core.ai.faux import FauxResponse, FauxScript, register_faux_script
from pi_hookspecs import hookimpl

LOG = os.environ["EXIT_LOG"]
ANSWER = "".join(f"{i:05d}:" + "abcdefghij" * 10 + "\\n" for i in range(LINES))


def log(line):
    with open(LOG, "a") as fh:
        fh.write(line + "\\n")


register_faux_script("scripted", "exit-test", FauxScript([
    FauxResponse(tool_calls=[("bash", {"command": "sleep 67 & echo child=$!"})]),
    FauxResponse(tool_calls=[("bash", {"command": "echo second tool call"})]),
    FauxResponse(text=ANSWER),
]))
atexit.register(log, "atexit")


class Teardown:
    def __del__(self):
        os.write(os.open(LOG, os.O_WRONLY | os.O_APPEND), b"interpreter teardown\\n")


KEEP = Teardown()


@hookimpl
def register_providers(register):
    register({"name": "scripted", "api": "faux", "api_key": "none",
              "models": [{"id": "exit-test", "name": "exit test", "api": "faux", "provider": "scripted"}]})


@hookimpl
def session_shutdown(event, ctx):
    log(f"session_shutdown {event.reason} {ctx.session_manager.get_entry_count()}")
"""


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _plugin(tmp_path: Path) -> Path:
    path = tmp_path / "scripted.py"
    path.write_text(textwrap.dedent(SCRIPTED_PLUGIN).replace("range(LINES)", f"range({LINES})"))
    return path


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie waiting for its reaper is gone


def _session_entries() -> list[dict]:
    files = list((agent_dir() / "sessions").rglob("*.jsonl"))
    assert len(files) == 1
    data = files[0].read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.decode().splitlines()]  # every line complete and parsing


def _check_session(entries: list[dict]) -> None:
    assert entries[0]["type"] == "session"
    messages = [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] != "system"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]
    assert "second tool call" in messages[4]["content"][0]["text"]
    final = messages[-1]
    assert final["stopReason"] == "stop" and "".join(b["text"] for b in final["content"]) == ANSWER


def _check_exit_log(log: Path, entries: list[dict]) -> None:
    # the plugin's shutdown hook and atexit handler ran; the interpreter was not torn down
    assert log.read_text().splitlines() == [f"session_shutdown quit {len(entries) - 1}", "atexit"]


@pytest.mark.parametrize("mode", ["print", "json"])
def test_fast_exit_loses_no_output_no_session_entry_and_no_shutdown_work(cwd: Path, tmp_path: Path, mode: str) -> None:
    log = tmp_path / "exit.log"
    flags = ["-p"] if mode == "print" else ["--mode", "json"]
    out = run_pi(
        *flags, "--model", "scripted/exit-test", "-e", str(_plugin(tmp_path)), "go", cwd=cwd, env={"EXIT_LOG": str(log)}
    )
    assert out.returncode == 0, out.stderr
    if mode == "print":
        assert out.stdout == ANSWER
    else:
        assert out.stdout.endswith("\n")
        records = jsonl(out.stdout)  # every line parses
        assert records[0]["type"] == "session" and records[-1]["type"] == "agent_settled"
        deltas = [r["assistantMessageEvent"] for r in records if r["type"] == "message_update"]
        assert "".join(d["delta"] for d in deltas if d["type"] == "text_delta") == ANSWER
        ends = [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"]
        assert "".join(b["text"] for b in ends[-1]["content"]) == ANSWER
    entries = _session_entries()
    _check_session(entries)
    _check_exit_log(log, entries)
    child = re.search(r"child=(\d+)", json.dumps(entries))
    assert child is not None
    assert not _alive(int(child.group(1))), "a process started by the bash tool outlived pi"


def test_provider_error_keeps_exit_status_1(cwd: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "failing.py"
    plugin.write_text(
        textwrap.dedent("""
        from pi_core.ai.faux import FauxResponse, FauxScript, register_faux_script
        from pi_hookspecs import hookimpl

        register_faux_script("scripted", "fails", FauxScript([FauxResponse(error_message="upstream exploded")]))

        @hookimpl
        def register_providers(register):
            register({"name": "scripted", "api": "faux", "api_key": "none",
                      "models": [{"id": "fails", "api": "faux", "provider": "scripted"}]})
    """)
    )
    out = run_pi("-p", "--no-session", "--model", "scripted/fails", "-e", str(plugin), "hi", cwd=cwd)
    assert out.returncode == 1 and "upstream exploded" in out.stderr
    # JSON mode, as pi 1.6.0: status 0, the error in the last message_end
    out = run_pi("--mode", "json", "--no-session", "--model", "scripted/fails", "-e", str(plugin), "hi", cwd=cwd)
    assert out.returncode == 0 and out.stderr == ""
    ends = [json.loads(line) for line in out.stdout.splitlines() if '"message_end"' in line]
    assert ends[-1]["message"]["stopReason"] == "error" and "upstream exploded" in ends[-1]["message"]["errorMessage"]


def test_an_answer_cut_at_the_output_limit_is_printed_and_exits_1(cwd: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "cut.py"
    plugin.write_text(
        textwrap.dedent("""
        from pi_core.ai.faux import FauxResponse, FauxScript, register_faux_script
        from pi_hookspecs import hookimpl

        register_faux_script("scripted", "cut", FauxScript([FauxResponse(text="half an answer", stop_reason="length")]))

        @hookimpl
        def register_providers(register):
            register({"name": "scripted", "api": "faux", "api_key": "none",
                      "models": [{"id": "cut", "api": "faux", "provider": "scripted"}]})
    """)
    )
    out = run_pi("-p", "--no-session", "--model", "scripted/cut", "-e", str(plugin), "hi", cwd=cwd)
    # as pi 1.6.0: the text is printed, the cut reported, the status 1
    assert out.returncode == 1 and out.stdout == "half an answer\n"
    assert "output token limit" in out.stderr


def test_in_process_calls_of_main_raise_system_exit(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the process's entry point leaves with os._exit: a test (or an embedding
    program) calling ``main`` gets SystemExit and keeps its collector."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["pi", "-p", "--no-session", "--model", "faux/offline-demo", "hi"])
    with open(os.devnull) as devnull:
        monkeypatch.setattr(sys, "stdin", devnull)
        for argv in (None, ["-p", "--no-session", "--model", "faux/offline-demo", "hi"]):
            with pytest.raises(SystemExit) as exit_info:
                cli_main(argv)
            assert exit_info.value.code == 0
    assert process._state == {"entry": False, "paused": False, "fast_exit": False}
    assert gc.isenabled()


def test_a_plugins_command_runs_with_the_collector_on(cwd: Path) -> None:
    """The agent command pauses the collector for its start-up; a plugin's subcommand,
    which may run for long (a server), runs with it on."""
    user_ext = agent_dir() / "extensions"
    user_ext.mkdir(parents=True, exist_ok=True)
    (user_ext / "gcstate.py").write_text(
        textwrap.dedent("""
        import gc
        from pi_hookspecs import hookimpl

        @hookimpl
        def register_cli_commands(register):
            register("gcstate", lambda args: print("collector on:", gc.isenabled()) or 0, help="gc state")
    """)
    )
    out = run_pi("gcstate", cwd=cwd, env={"PI_EXTENSIONS": "gcstate"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "collector on: True"


EXIT_WITH_THREADS = """
import concurrent.futures, sys, threading, time
from pi_core.cli import process

class Finalized:
    def __del__(self):
        print("interpreter torn down", flush=True)

KEPT = Finalized()  # deleted only when the interpreter tears its modules down

def work():
    time.sleep(0.3)
    print("the thread finished its work", flush=True)

process.enter()
pool = concurrent.futures.ThreadPoolExecutor(1)
pool.submit(lambda: None).result()  # an idle worker: a non-daemon thread
threading.Thread(target=work).start()  # non-daemon, still working
process.allow_fast_exit()
process.exit_process(3)
"""


def test_exit_waits_for_threads_and_pools_then_skips_the_teardown(tmp_path: Path) -> None:
    """A non-daemon thread still working, or an idle thread pool, once made the exit
    fall back to the interpreter's teardown. During that teardown a native thread that
    calls back into Python (pydantic-monty's runtime scheduling a result on the loop)
    is ended with pthread_exit, which aborts the process (SIGABRT, after the answer
    was printed: seen in about one codemode run in eight). The exit now waits for the
    threads as the teardown would (thread pools stopped first), runs the atexit
    handlers, and leaves without tearing the interpreter down."""
    script = tmp_path / "exit_with_threads.py"
    script.write_text(EXIT_WITH_THREADS)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["the thread finished its work"]
