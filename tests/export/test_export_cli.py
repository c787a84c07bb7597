"""``pi --export`` and RPC ``export_html``: the real ``pi`` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_fixture import TEXTS, write_rich_session

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_helpers import configure_local_endpoint, run_pi, text_reply, tool_reply
from rpc_client import RpcProcess
from wire_server import WireServer, use_server


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_export_writes_the_default_name_here(tmp_path: Path) -> None:
    fixture = write_rich_session(tmp_path / "sessions")
    here = tmp_path / "here"
    here.mkdir()
    done = run_pi("--export", str(fixture.path), cwd=here)
    assert done.returncode == 0, done.stderr
    page = here / f"pi-session-{fixture.path.stem}.html"  # pi 1.6.0's name, reported as written
    assert done.stdout == f"Exported to: {page.name}\n"
    html = page.read_text(encoding="utf-8")
    for key in ("system", "user", "assistant", "bash_output", "compaction", "branch_summary", "custom"):
        assert TEXTS[key].split("\n")[0] in html, key
    assert done.stderr == ""


def test_export_to_a_named_file(tmp_path: Path) -> None:
    fixture = write_rich_session(tmp_path)
    done = run_pi("--export", str(fixture.path), "out/page.html", cwd=tmp_path, env={})
    assert done.returncode == 1
    assert (
        one_line_error(done.stderr) == f"pi: Cannot write {tmp_path / 'out' / 'page.html'}: No such file or directory"
    )
    (tmp_path / "out").mkdir()
    done = run_pi("--export", str(fixture.path), "out/page.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Exported to: out/page.html\n"
    assert TEXTS["other_branch"] in (tmp_path / "out" / "page.html").read_text()


def test_export_errors_are_one_line(tmp_path: Path) -> None:
    missing = run_pi("--export", "nope.jsonl", cwd=tmp_path)
    assert missing.returncode == 1 and missing.stdout == ""
    assert one_line_error(missing.stderr) == f"pi: File not found: {tmp_path / 'nope.jsonl'}"

    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    junk = run_pi("--export", "notes.jsonl", cwd=tmp_path)
    assert junk.returncode == 1
    assert one_line_error(junk.stderr) == f"pi: Session file is not a valid pi session: {tmp_path / 'notes.jsonl'}"

    folder = run_pi("--export", str(tmp_path), cwd=tmp_path)
    assert one_line_error(folder.stderr) == f"pi: {tmp_path} is a directory, not a session file"

    fixture = write_rich_session(tmp_path / "s")
    extra = run_pi("--export", str(fixture.path), "a.html", "b.html", cwd=tmp_path)
    assert extra.returncode == 1
    assert one_line_error(extra.stderr) == "pi: --export takes one output path after the session file, not 2"
    assert not list(tmp_path.glob("*.html"))


def test_help_mentions_export(tmp_path: Path) -> None:
    done = run_pi("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "--export SESSION.jsonl" in done.stdout and "pi --export SESSION.jsonl [OUT.html]" in done.stdout


def test_export_of_a_session_pi_wrote(tmp_path: Path, wire: WireServer) -> None:
    """A real ``pi -p`` run (a tool call, then an answer) exported: the page shows the
    prompt, the call, its output, the answer, and the system prompt and tools pi recorded."""
    model = configure_local_endpoint(wire.url)
    (tmp_path / "notes.txt").write_text("a note\n")
    wire.enqueue(tool_reply("bash", {"command": "cat notes.txt"}), text_reply("The note says: a note"))
    sessions = tmp_path / "sessions"
    done = run_pi("-p", "--model", model, "--session-dir", str(sessions), "read <the> notes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (session_file,) = sessions.glob("*.jsonl")
    exported = run_pi("--export", str(session_file), "page.html", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    html = (tmp_path / "page.html").read_text()
    assert "read &lt;the&gt; notes" in html
    assert "$ cat notes.txt" in html and "a note" in html and "The note says: a note" in html
    assert "System prompt" in html and "Available tools" in html
    assert 'class="tool-decl-name">bash<' in html and 'class="tool-decl-name">read<' in html


def test_rpc_export_html(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    with RpcProcess(
        "--no-extensions",
        "--model",
        "faux/offline-demo",
        cwd=project,
        env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
    ) as rpc:
        nothing = rpc.call("export_html")
        assert nothing["success"] is False
        assert nothing["error"] == "Nothing to export yet - start a conversation first"
        rpc.prompt_and_settle("What is <here>?")
        session_file = Path(rpc.ok("get_state")["sessionFile"])

        target = tmp_path / "rpc.html"
        assert rpc.ok("export_html", outputPath=str(target)) == {"path": str(target)}
        html = target.read_text()
        assert "What is &lt;here&gt;?" in html
        assert "The <code>ls</code> command listed" in html  # the answer's Markdown, rendered
        assert "System prompt" in html and 'class="tool-decl-name">bash<' in html

        default = rpc.ok("export_html")
        assert default == {"path": f"pi-session-{session_file.stem}.html"}  # relative, as pi 1.6.0
        assert (project / default["path"]).is_file()

        bad = rpc.call("export_html", outputPath=3)
        assert bad["success"] is False and bad["error"] == 'export_html "outputPath" must be a file path (a string)'
        unwritable = rpc.call("export_html", outputPath=str(tmp_path / "no" / "such" / "x.html"))
        assert unwritable["success"] is False
        assert unwritable["error"] == f"Cannot write {tmp_path / 'no' / 'such' / 'x.html'}: No such file or directory"
        # the session goes on after an export
        rpc.prompt_and_settle("And now?")


PI_TS = os.environ.get("PI_TS")


@pytest.mark.skipif(not PI_TS, reason="PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)")
def test_a_session_of_pi_1_6_0_exports_under_the_name_pi_1_6_0_gives_it(tmp_path: Path, wire: WireServer) -> None:
    assert PI_TS is not None
    ts_agent = tmp_path / "ts-agent"
    ts_agent.mkdir()
    models = {
        "providers": {
            "local": {
                "baseUrl": f"{wire.url}/v1",
                "api": "openai-completions",
                "apiKey": "k",
                "models": [{"id": "local-model", "contextWindow": 32000, "maxTokens": 1024}],
            }
        }
    }
    (ts_agent / "models.json").write_text(json.dumps(models))
    (tmp_path / "notes.txt").write_text("a note from pi 1.6.0\n")
    wire.enqueue(tool_reply("bash", {"command": "cat notes.txt"}), text_reply("Done <reading>"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    sessions = tmp_path / "sessions"
    written = subprocess.run(
        [PI_TS, "-p", "--model", "local/local-model", "--session-dir", str(sessions), "read the notes"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PI_CODING_AGENT_DIR": str(ts_agent)},
    )
    assert written.returncode == 0, written.stderr
    (session_file,) = sessions.glob("*.jsonl")

    theirs_dir, ours_dir = tmp_path / "theirs", tmp_path / "ours"
    theirs_dir.mkdir()
    ours_dir.mkdir()
    theirs = subprocess.run(
        [PI_TS, "--export", str(session_file)],
        cwd=theirs_dir,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PI_CODING_AGENT_DIR": str(ts_agent)},
    )
    assert theirs.returncode == 0, theirs.stderr
    ours = run_pi("--export", str(session_file), cwd=ours_dir)
    assert ours.returncode == 0, ours.stderr
    assert [p.name for p in ours_dir.iterdir()] == [p.name for p in theirs_dir.iterdir()]
    assert ours.stdout == theirs.stdout  # "Exported to: pi-session-….html", relative in both
    html = next(ours_dir.iterdir()).read_text()
    assert "read the notes" in html and "$ cat notes.txt" in html and "a note from pi 1.6.0" in html
    assert "Done &lt;reading&gt;" in html
    assert "System prompt" in html and 'class="tool-decl-name">bash<' in html  # as pi 1.6.0 recorded them
