"""No model, no answer: the real ``pi`` with an empty agent dir and no key variables.

Print and json mode refuse with one line on stderr naming the ways to configure a
model (key variables, ``pi auth login``, the agent dir's ``models.json``) and exit 1
before any hook, tool or request; interactive mode starts and says it; RPC answers a
prompt with an error. The offline demo answers only when named (``--model
faux/offline-demo``) and is offered in lists and cycles only as the current model.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import PI
from interactive_pty import clean_env, loose, pty_or_skip
from rpc_client import RpcProcess

from pi_core.ai.auth import BEARER_ENV, ENV_API_KEYS

KEY_VARS = {name for names in ENV_API_KEYS.values() for name in names} | set(BEARER_ENV.values())

WITNESS_PLUGIN = """
import os
from pi_hookspecs import hookimpl

def _seen(name):
    with open(os.environ["NO_MODEL_WITNESS"], "a", encoding="utf-8") as log:
        log.write(name + "\\n")

@hookimpl
def session_start(ctx):
    _seen("session_start")

@hookimpl
def before_agent_start(event, ctx):
    _seen("before_agent_start")

@hookimpl
def before_provider_request(event, ctx):
    _seen("before_provider_request")

@hookimpl
def tool_call(event, ctx):
    _seen("tool_call")

@hookimpl
def bash_spawn(event, ctx):
    _seen("bash_spawn")
"""


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty agent dir of its own (PI_CODING_AGENT_DIR)."""
    path = tmp_path / "agent-dir"
    path.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# a project\n")
    return root


@pytest.fixture
def witness(tmp_path: Path) -> tuple[Path, Path]:
    """A plugin that logs the hooks it sees (the session's start, a run, a tool call, a
    bash spawn, an HTTP request), and the log it writes."""
    plugin = tmp_path / "witness.py"
    plugin.write_text(WITNESS_PLUGIN)
    return plugin, tmp_path / "witness.log"


def bare_env(agent: Path, **extra: str) -> dict[str, str]:
    """The environment without any provider key, the agent dir ``agent``, no installed plugin."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(PYTHONUNBUFFERED="1", PI_EXTENSIONS="", PI_CODING_AGENT_DIR=str(agent), **extra)
    env.pop("PI_OFFLINE", None)
    return env


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def assert_names_the_ways(line: str, agent: Path) -> None:
    assert line.startswith("pi: No model available: ")
    for way in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "`pi auth login <provider>`", str(agent / "models.json")):
        assert way in line, (way, line)


def session_records(agent: Path) -> list[dict[str, object]]:
    return [
        json.loads(line) for path in (agent / "sessions").rglob("*.jsonl") for line in path.read_text().splitlines()
    ]


@pytest.mark.parametrize("mode", [["-p"], ["--mode", "json"]])
def test_print_and_json_mode_refuse_with_one_line(
    agent: Path, project: Path, witness: tuple[Path, Path], mode: list[str]
) -> None:
    plugin, log = witness
    marker = project / "ran-a-tool"
    done = run(
        *mode,
        "-e",
        str(plugin),
        f"summarise README.md, then run: touch {marker}",
        cwd=project,
        env=bare_env(agent, NO_MODEL_WITNESS=str(log)),
    )
    assert done.returncode == 1
    assert done.stdout == ""  # json mode too: no header, no event (as its other start-up errors)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert_names_the_ways(lines[0], agent)
    assert "Traceback" not in done.stderr
    assert not marker.exists()
    assert not log.exists()  # no session_start, no tool call, no bash, no request
    assert not any(r.get("type") == "message" for r in session_records(agent))


def test_the_message_names_the_default_agent_dir(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = bare_env(tmp_path, HOME=str(home))
    del env["PI_CODING_AGENT_DIR"]
    done = run("-p", "hi", cwd=project, env=env)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert f"add a provider to {home / '.pi' / 'agent' / 'models.json'}" in done.stderr


def test_the_demo_answers_when_named(agent: Path, project: Path, witness: tuple[Path, Path]) -> None:
    plugin, log = witness
    env = bare_env(agent, NO_MODEL_WITNESS=str(log))
    done = run("-p", "--model", "faux/offline-demo", "-e", str(plugin), "what is here?", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    assert "README.md" in done.stdout and "offline demo" in done.stdout
    seen = log.read_text().splitlines()
    assert {"session_start", "before_agent_start", "tool_call", "bash_spawn"} <= set(seen)  # the witness sees


def test_the_demo_answers_when_the_settings_name_it(agent: Path, project: Path) -> None:
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "faux", "defaultModel": "offline-demo"}))
    done = run("-p", "what is here?", cwd=project, env=bare_env(agent))
    assert done.returncode == 0, done.stderr
    assert "offline demo" in done.stdout


def test_a_resumed_demo_session_keeps_the_demo(agent: Path, project: Path) -> None:
    first = run("-p", "--model", "faux/offline-demo", "what is here?", cwd=project, env=bare_env(agent))
    assert first.returncode == 0, first.stderr
    again = run("-p", "-c", "and now?", cwd=project, env=bare_env(agent))
    assert again.returncode == 0, again.stderr
    assert "offline demo" in again.stdout


def test_settings_naming_a_model_without_credentials_is_an_error_before_any_tool(
    agent: Path, project: Path, witness: tuple[Path, Path]
) -> None:
    plugin, log = witness
    (agent / "settings.json").write_text(
        json.dumps({"defaultProvider": "anthropic", "defaultModel": "claude-opus-4-8"})
    )
    done = run("-p", "-e", str(plugin), "hi", cwd=project, env=bare_env(agent, NO_MODEL_WITNESS=str(log)))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "pi: No API key for provider 'anthropic': set its environment variable, run `pi auth login anthropic`, "
        "or configure apiKey in models.json"
    ]
    assert not ({"tool_call", "bash_spawn", "before_provider_request"} & set(log.read_text().splitlines()))


def test_pi_models_does_not_list_the_demo(agent: Path, project: Path) -> None:
    for args in (["models"], ["--list-models"]):
        done = run(*args, cwd=project, env=bare_env(agent))
        assert done.returncode == 0, done.stderr
        assert "offline-demo" not in done.stdout
        assert done.stdout.startswith("No model available: ") and str(agent / "models.json") in done.stdout
    with_key = run("models", cwd=project, env=bare_env(agent, ANTHROPIC_API_KEY="sk-test"))
    assert "anthropic" in with_key.stdout and "faux" not in with_key.stdout


# --------------------------------------------------------------------------- RPC


def rpc(agent: Path, project: Path, *args: str) -> RpcProcess:
    env = bare_env(agent)
    return RpcProcess("--no-extensions", *args, cwd=project, env={**env, **{k: "" for k in KEY_VARS}})


def local_models(agent: Path) -> None:
    """Two models of a local provider with a key (never called: only listed and cycled)."""
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-completions",
                        "apiKey": "test-key",
                        "models": [{"id": "alpha", "contextWindow": 32000}, {"id": "beta", "contextWindow": 32000}],
                    }
                }
            }
        )
    )


def test_rpc_prompt_without_a_model_is_an_error_response(agent: Path, project: Path) -> None:
    with rpc(agent, project) as client:
        assert client.ok("get_available_models") == {"models": []}
        assert "model" not in client.ok("get_state")
        response = client.call("prompt", message=f"run: touch {project / 'ran-a-tool'}")
        assert response["success"] is False
        assert response["error"].startswith("No model available: ") and str(agent / "models.json") in response["error"]
        assert client.ok("cycle_model") is None
    assert not (project / "ran-a-tool").exists()


def test_rpc_offers_the_demo_only_while_it_is_the_current_model(agent: Path, project: Path) -> None:
    local_models(agent)
    with rpc(agent, project, "--model", "faux/offline-demo") as client:
        listed = [(m["provider"], m["id"]) for m in client.ok("get_available_models")["models"]]
        assert sorted(listed) == [("faux", "offline-demo"), ("local", "alpha"), ("local", "beta")]
        chosen = [client.ok("cycle_model")["model"]["id"] for _ in range(3)]
        assert chosen == ["alpha", "beta", "alpha"]  # once left, the demo is not offered again
        listed = [(m["provider"], m["id"]) for m in client.ok("get_available_models")["models"]]
        assert listed == [("local", "alpha"), ("local", "beta")]
    with rpc(agent, project) as client:  # not named: the local provider's model, no demo
        assert client.ok("get_state")["model"]["provider"] == "local"
        listed = [(m["provider"], m["id"]) for m in client.ok("get_available_models")["models"]]
        assert listed == [("local", "alpha"), ("local", "beta")]


# --------------------------------------------------------------------------- interactive


class BarePi:
    """Interactive ``pi`` in a pseudo-terminal without ``--model`` (the shared ``Pi``
    helper always names the demo)."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str]) -> None:
        self.pexpect = pty_or_skip()
        self.log = io.StringIO()
        self.child = self.pexpect.spawn(
            PI[0],
            [*PI[1:], "--no-extensions", *args],
            cwd=str(cwd),
            env=env,
            dimensions=(40, 160),
            encoding="utf-8",
            codec_errors="replace",
            timeout=15,
        )
        self.child.logfile_read = self.log

    def expect(self, text: str) -> None:
        """Wait for ``text`` (escape sequences allowed between its characters)."""
        try:
            self.child.expect(loose(text))
        except (self.pexpect.TIMEOUT, self.pexpect.EOF) as exc:
            raise AssertionError(f"never saw {text!r}; the terminal showed:\n{self.screen_text()[-3000:]}") from exc

    def line(self, text: str) -> None:
        self.child.send(text + "\r")

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def wait_exit(self) -> int:
        self.child.expect(self.pexpect.EOF)
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def screen_text(self) -> str:
        return re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", self.log.getvalue())

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def spawned() -> Iterator[list[BarePi]]:
    started: list[BarePi] = []
    yield started
    for pi in started:
        pi.close()


def interactive_env(agent: Path) -> dict[str, str]:
    env = clean_env(PI_CODING_AGENT_DIR=str(agent), PI_EXTENSIONS="")
    return {k: v for k, v in env.items() if k not in KEY_VARS}


def flat(text: str) -> str:
    """The screen's text without line breaks (a long line wraps in the terminal)."""
    return re.sub(r"\s+", "", text)


def test_interactive_mode_starts_and_says_how_to_configure_a_model(
    agent: Path, project: Path, spawned: list[BarePi]
) -> None:
    pi = BarePi(cwd=project, env=interactive_env(agent))
    spawned.append(pi)
    pi.expect("no model")  # the header
    pi.expect("No model available: set an API key variable such as ANTHROPIC_API_KEY or OPENAI_API_KEY")
    pi.expect("› ")
    assert flat(f"add a provider to {agent / 'models.json'}; then choose it with /model") in flat(pi.screen_text())
    pi.line(f"run: touch {project / 'ran-a-tool'}")
    pi.expect("✖ No model available")
    pi.line("/model")
    pi.expect("No model is available: configure a provider key first (/login)")
    pi.line("/login groq")  # a provider without account sign-in: its key is asked for
    pi.expect("Enter Groq API key")
    pi.line("gsk-test")
    pi.expect("Saved API key for Groq")
    pi.expect("Model: groq/")  # the session starts on the provider's default model
    pi.line("/quit")
    assert pi.wait_exit() == 0
    assert not (project / "ran-a-tool").exists()
    assert json.loads((agent / "auth.json").read_text()) == {"groq": {"type": "api_key", "key": "gsk-test"}}


def test_interactive_picker_and_cycle_offer_the_demo_only_as_the_current_model(
    agent: Path, project: Path, spawned: list[BarePi]
) -> None:
    local_models(agent)
    pi = BarePi("--model", "faux/offline-demo", cwd=project, env=interactive_env(agent))
    spawned.append(pi)
    pi.expect("faux/offline-demo")
    pi.expect("› ")
    pi.send("\x10")  # Ctrl+P: from the demo to the first other model
    pi.expect("Model: local/alpha")
    pi.send("\x10")
    pi.expect("Model: local/beta")
    pi.send("\x10")  # the demo is no longer current: not offered again
    pi.expect("Model: local/alpha")
    pi.line("/model faux/offline-demo")  # chosen by name: the demo again
    pi.expect("Model: faux/offline-demo")
    pi.send("\x10")
    pi.expect("Model: local/alpha")
    pi.line("/quit")
    assert pi.wait_exit() == 0
