"""The real sandbox, with both Linux backends: bubblewrap and (bubblewrap forced off)
Landlock. A scripted model issues bash calls; real files and a real HTTP server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sandbox_testkit import (  # noqa: F401
    SECRET,
    HttpServer,
    Machine,
    backend,
    fetch,
    http_server,
    machine,
    need,
    need_some_sandbox,
    sandboxed,
)

from pi_core.testing import ECHO, PiHarness, call, calls
from pi_hookspecs import hookimpl
from pi_sandbox import SandboxPlugin


def test_a_write_outside_the_project_fails_and_the_model_is_told(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    pi.script(call("bash", command="echo x > ~/outside"), ECHO)
    result = pi.prompt("write outside").tool_results[0]
    assert result.is_error
    assert not (machine.home / "outside").exists()
    assert "[pluggable-pi-sandbox]" in result.text and f"writing {machine.home / 'outside'}" in result.text
    assert "outside the writable folders" in result.text


def test_writing_inside_the_project_and_the_temp_folder_works(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    pi.script(
        call(
            "bash",
            command=(
                "mkdir -p src && echo hello > src/a.txt && cat src/a.txt && echo t > $TMPDIR/t && mv src/a.txt b.txt"
            ),
        ),
        ECHO,
    )
    result = pi.prompt("write inside").tool_results[0]
    assert not result.is_error, result.text
    assert result.text.strip() == "hello"
    assert (pi.project / "b.txt").read_text() == "hello\n"
    assert (machine.tmp / "t").read_text() == "t\n"


def test_a_planted_private_key_cannot_be_read(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    pi.script(
        call("bash", command="cat ~/.ssh/id_rsa"), call("bash", command="cp ~/.ssh/id_rsa stolen; cat stolen"), ECHO
    )
    first, second = pi.prompt("read the key").tool_results
    for result in (first, second):
        assert result.is_error
        assert SECRET not in result.text
        assert "Permission denied" in result.text
    assert f"reading {machine.home / '.ssh'}" in first.text
    assert "a denied path" in first.text


def test_the_environment_loses_its_secrets(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    pi.script(call("bash", command="echo key=${OPENAI_API_KEY:-none} kept=$HARMLESS_SETTING sandbox=$PI_SANDBOX"), ECHO)
    assert pi.prompt("env").tool_results[0].text.strip() == "key=none kept=kept sandbox=workspace-write"


def test_allowed_environment_variables_pass(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend, env={"allow": ["OPENAI_API_KEY"]})
    pi.script(call("bash", command="echo key=${OPENAI_API_KEY:-none}"), ECHO)
    assert pi.prompt("env").tool_results[0].text.strip() == "key=sk-test-not-for-commands"


def test_network_off_refuses_a_local_http_server(
    pi: PiHarness, machine: Machine, backend: str, http_server: HttpServer
) -> None:
    sandboxed(pi, backend)
    pi.script(call("bash", command=fetch(http_server.url + "/off")), ECHO)
    result = pi.prompt("fetch").tool_results[0]
    assert result.is_error
    assert "hello from" not in result.text and http_server.paths == []
    assert "[pluggable-pi-sandbox]" in result.text and "network is off" in result.text


def test_the_proxy_lets_an_allowed_host_through_and_refuses_others(
    pi: PiHarness, machine: Machine, backend: str, http_server: HttpServer
) -> None:
    seen: list[Any] = []

    class Audit:
        @hookimpl
        async def sandbox_violation(self, event: Any, ctx: Any) -> None:
            seen.append((event, ctx.tool_call_id))

    sandboxed(pi, backend, allowedHosts=["127.0.0.1"])
    pi.use(Audit)
    localhost = http_server.url.replace("127.0.0.1", "localhost")
    pi.script(
        calls(
            ("bash", {"command": fetch(http_server.url + "/allowed")}),
            ("bash", {"command": fetch(localhost + "/denied")}),
        ),
        ECHO,
    )
    allowed, denied = pi.prompt("fetch").tool_results
    assert not allowed.is_error, allowed.text
    assert allowed.text.strip() == "hello from /allowed"
    assert denied.is_error and "hello from" not in denied.text
    assert "403" in denied.text
    assert f"network localhost:{http_server.port} (not in allowedHosts)" in denied.text
    assert http_server.paths == ["/allowed"]
    assert [(event.kind, event.target, event.source) for event, _ in seen] == [
        ("network", f"localhost:{http_server.port}", "tool")
    ]
    assert seen[0][1] == seen[0][0].tool_call_id and seen[0][0].backend == backend


def test_a_project_cannot_switch_the_sandbox_off(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    settings = pi.project / ".pi" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"sandbox": {"preset": "off", "allowWrite": ["~"], "network": "on"}}))
    pi.options.update(approve=True)  # even a trusted project
    pi.script(call("bash", command="echo x > ~/outside; cat ~/.ssh/id_rsa"), ECHO)
    result = pi.prompt("escape").tool_results[0]
    assert pi.session.services.project_trusted
    assert result.is_error and SECRET not in result.text
    assert not (machine.home / "outside").exists()


def test_protected_paths_stay_read_only_inside_the_project(pi: PiHarness, machine: Machine, backend: str) -> None:
    """bubblewrap keeps them read-only; Landlock cannot carve them out of the writable
    project, so they are restored once the command ended (pi_sandbox.guard)."""
    sandboxed(pi, backend)
    (pi.project / ".pi").mkdir()
    (pi.project / ".pi" / "settings.json").write_text("{}")
    pi.script(call("bash", command="echo '{\"x\": 1}' > .pi/settings.json; touch .pi/planted.py"), ECHO)
    result = pi.prompt("edit pi settings").tool_results[0]
    assert (pi.project / ".pi" / "settings.json").read_text() == "{}"
    assert not (pi.project / ".pi" / "planted.py").exists()
    if backend == "landlock":
        assert "restored as it was before the command" in result.text
    else:
        assert result.is_error and "a protected path" in result.text


def test_the_strict_preset_keeps_even_the_project_read_only(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend, preset="strict")
    pi.write("notes.txt", "keep\n")
    pi.script(
        call(
            "bash", command="cat notes.txt; echo y > notes.txt; echo t > $TMPDIR/t; echo home=${HARMLESS_SETTING:-gone}"
        ),
        ECHO,
    )
    result = pi.prompt("strict").tool_results[0]
    assert "keep" in result.text and "home=gone" in result.text
    assert (pi.project / "notes.txt").read_text() == "keep\n"
    assert (machine.tmp / "t").exists()


def test_a_nested_bash_call_is_sandboxed_too(pi: PiHarness, machine: Machine, backend: str) -> None:
    from pi_hookspecs import ToolContext, tool

    @tool
    async def run_twice(command: str, ctx: ToolContext) -> str:
        """Run a command twice through the bash tool."""
        outputs = []
        for _ in range(2):
            result = await ctx.execute_tool("bash", {"command": command})
            outputs.append(result.text_content())
        return "\n".join(outputs)

    sandboxed(pi, backend)
    pi.tool(run_twice)
    pi.script(call("run_twice", command="echo x > ~/outside; cat ~/.ssh/id_rsa"), ECHO)
    result = pi.prompt("nested").tool_results[0]
    assert SECRET not in result.text
    assert not (machine.home / "outside").exists()
    assert result.text.count("[pluggable-pi-sandbox]") == 2


def test_the_users_command_is_sandboxed(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    message = pi.run(pi.session.execute_bash("echo x > ~/outside; cat ~/.ssh/id_rsa; echo done"))
    assert message.output.rstrip().endswith("done") and SECRET not in message.output
    assert not (machine.home / "outside").exists()


def test_a_model_cannot_ask_for_unconfined(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    pi.script(call("bash", command="unconfined touch ~/outside"), ECHO)
    result = pi.prompt("escape").tool_results[0]
    assert result.is_error and not (machine.home / "outside").exists()


class AnswerUI:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[str] = []
        self.notes: list[tuple[str, str]] = []

    async def confirm(self, title: str, message: str = "", *, timeout: float | None = None) -> bool:
        self.asked.append(message)
        return self.answer

    def notify(self, message: str, level: str = "info") -> None:
        self.notes.append((level, message))

    def set_status(self, key: str, text: str | None) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        async def nothing(*args: Any, **kwargs: Any) -> None:
            return None

        return nothing


@pytest.mark.parametrize("answer", [True, False])
def test_the_user_may_run_one_command_unconfined_after_confirming(
    pi: PiHarness, machine: Machine, answer: bool
) -> None:
    need_some_sandbox()
    ui = AnswerUI(answer)
    pi.use(SandboxPlugin)
    pi.options.update(mode="rpc", ui=ui)
    message = pi.run(pi.session.execute_bash("unconfined touch ~/outside && echo made"))
    assert ui.asked and "touch ~/outside && echo made" in ui.asked[0]
    if answer:
        assert message.output.strip() == "made"
        assert (machine.home / "outside").exists()
    else:
        assert "not confirmed" in message.output and message.cancelled
        assert not (machine.home / "outside").exists()
    # only that one command: the next runs in the sandbox again
    again = pi.run(pi.session.execute_bash("touch ~/again"))
    assert not (machine.home / "again").exists() and again.exit_code != 0


def test_unconfined_is_refused_where_nobody_can_confirm(pi: PiHarness, machine: Machine) -> None:
    need_some_sandbox()
    pi.use(SandboxPlugin)
    message = pi.run(pi.session.execute_bash("unconfined touch ~/outside"))
    assert message.cancelled and "cannot ask" in message.output
    assert not (machine.home / "outside").exists()


def test_the_sandbox_command_shows_the_policy(pi: PiHarness, machine: Machine, backend: str) -> None:
    ui = AnswerUI(False)
    sandboxed(pi, backend, allowedHosts=["pypi.org"])
    pi.options.update(mode="rpc", ui=ui)
    assert pi.prompt("/sandbox").disposition == "handled"
    (_, text), *_ = [n for n in ui.notes if "pluggable-pi-sandbox" in n[1]]
    assert "preset workspace-write" in text and "network: through pi's proxy, only to pypi.org" in text
    assert ("bubblewrap" if backend == "bwrap" else "Landlock") in text
    assert "~/.ssh" in text or str(machine.home / ".ssh") in text


def test_a_codemode_script_calling_bash_is_sandboxed(pi: PiHarness, machine: Machine, backend: str) -> None:
    pi_codemode = pytest.importorskip("pi_codemode")
    seen: list[Any] = []

    class Audit:
        @hookimpl
        def sandbox_violation(self, event: Any) -> None:
            seen.append(event)

    sandboxed(pi, backend)
    pi.use(pi_codemode.CodemodePlugin, Audit).configure(sandbox={"backend": backend}, defaultTools=["+codemode"])
    script = (
        'out = tools.bash(command="cat ~/.ssh/id_rsa; echo x > ~/outside; echo in > inside.txt; echo ran")\n'
        "print(out)\n"
    )
    pi.script(call("codemode", code=script), "done")
    result = next(r for r in pi.prompt("go").tool_results if r.tool_name == "codemode")
    assert SECRET not in result.text and "ran" in result.text
    assert not (machine.home / "outside").exists() and (pi.project / "inside.txt").exists()
    assert {(event.kind, event.source) for event in seen} == {("read", "tool"), ("write", "tool")}
    assert all(event.tool_call_id and event.tool_call_id.startswith(result.tool_call_id + "/") for event in seen)
