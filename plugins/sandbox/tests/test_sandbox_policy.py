"""The policy: where it is read from, what it resolves to, how the plugin fails closed;
the parts of the backends that need no sandbox to check (profiles, filters)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_testkit import Machine, machine, need_some_sandbox  # noqa: F401

from pi_core.testing import ECHO, PiHarness, call
from pi_sandbox import SandboxError, SandboxPlugin, landlock, load_policy, seatbelt
from pi_sandbox.proxy import HostMatcher, split_host_port
from pi_sandbox.settings import DEFAULT_DENY_READ, Plan, Policy, filter_env, plan
from pi_sandbox.violations import find


def write_settings(directory: Path, data: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "settings.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_the_defaults_are_workspace_write_with_network_off(tmp_path: Path) -> None:
    policy = load_policy(tmp_path / "agent", managed=tmp_path / "none.json")
    assert (policy.preset, policy.network, policy.source, policy.write_project) == (
        "workspace-write",
        "off",
        "defaults",
        True,
    )
    assert "~/.ssh" in policy.deny_read and "{agent}/auth.json" in policy.deny_read


def test_user_settings_extend_the_defaults(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    path = write_settings(
        agent,
        {
            "sandbox": {
                "allowedHosts": ["pypi.org"],
                "denyRead": ["~/work/secrets"],
                "allowWrite": ["~/.cache/pip"],
                "env": {"allow": ["GITHUB_TOKEN"]},
            }
        },
    )
    policy = load_policy(agent, managed=tmp_path / "none.json")
    assert policy.source == str(path)
    assert policy.network == "proxy" and policy.allowed_hosts == ("pypi.org",)
    assert policy.deny_read == (*DEFAULT_DENY_READ, "~/work/secrets")
    assert policy.allow_write == ("~/.cache/pip",) and policy.env_allow == ("GITHUB_TOKEN",)


def test_strict_keeps_the_network_off_unless_asked_explicitly(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write_settings(agent, {"sandbox": {"preset": "strict", "allowedHosts": ["pypi.org"]}})
    policy = load_policy(agent, managed=tmp_path / "none.json")
    assert (policy.network, policy.write_project, policy.env_minimal) == ("off", False, True)


def test_a_managed_file_wins_over_the_user(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write_settings(agent, {"sandbox": {"preset": "off"}})
    managed = write_settings(tmp_path / "etc", {"sandbox": {"preset": "strict"}})
    policy = load_policy(agent, managed=managed)
    assert policy.preset == "strict" and policy.source == str(managed)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{nope", "settings.json:1:2: invalid JSON"),
        (
            {"sandbox": {"preset": "lenient"}},
            "sandbox.preset: must be one of 'strict', 'workspace-write', 'off', not 'lenient'",
        ),
        (
            {"sandbox": {"allowedHost": ["x"]}},
            "sandbox.allowedHost: unknown key (known: acceptWeaker, allowSockets, allowWrite, allowedHosts,",
        ),
        ({"sandbox": {"denyRead": "~/x"}}, "sandbox.denyRead: must be a list of strings"),
        ({"sandbox": {"env": {"allow": [1]}}}, "sandbox.env.allow: must be a list of strings"),
        ({"sandbox": {"env": {"pass": []}}}, "sandbox.env.pass: unknown key (known: allow, deny)"),
        ({"sandbox": "on"}, "sandbox must be an object"),
    ],
)
def test_invalid_settings_name_the_file(tmp_path: Path, content: object, message: str) -> None:
    path = write_settings(tmp_path / "agent", content)
    with pytest.raises(SandboxError) as raised:
        load_policy(tmp_path / "agent", managed=tmp_path / "none.json")
    assert str(path) in str(raised.value) and message in str(raised.value)


def test_invalid_settings_refuse_every_command(pi: PiHarness, pi_agent_dir: Path) -> None:
    write_settings(pi_agent_dir, {"sandbox": {"preset": "lenient"}})
    pi.use(SandboxPlugin)
    pi.script(call("bash", command="echo should-not-run > ran.txt"), ECHO)
    result = pi.prompt("go").tool_results[0]
    assert result.is_error and result.text.startswith("Blocked: pluggable-pi-sandbox: invalid settings in")
    assert not (pi.project / "ran.txt").exists()
    user = pi.run(pi.session.execute_bash("echo should-not-run > ran.txt"))
    assert user.cancelled and "pluggable-pi-sandbox: invalid settings" in user.output
    assert not (pi.project / "ran.txt").exists()


@pytest.mark.skipif(sys.platform == "darwin", reason="sandbox-exec exists on macOS")
def test_no_sandbox_on_this_machine_refuses_every_command(pi: PiHarness, machine: Machine) -> None:
    pi.use(SandboxPlugin).configure(sandbox={"backend": "sandbox-exec"})
    pi.script(call("bash", command="echo should-not-run > ran.txt"), ECHO)
    result = pi.prompt("go").tool_results[0]
    assert result.is_error and "no sandbox is available on this machine: sandbox-exec: not available" in result.text
    assert not (pi.project / "ran.txt").exists()


def test_preset_off_runs_commands_unconfined(pi: PiHarness, machine: Machine) -> None:
    pi.use(SandboxPlugin).configure(sandbox={"preset": "off"})
    pi.script(call("bash", command="echo x > ~/outside && echo key=$OPENAI_API_KEY"), ECHO)
    assert pi.prompt("go").tool_results[0].text.strip() == "key=sk-test-not-for-commands"
    assert (machine.home / "outside").exists()


def test_commands_cannot_change_the_users_settings(pi: PiHarness, machine: Machine) -> None:
    need_some_sandbox()
    pi.use(SandboxPlugin).configure(sandbox={"preset": "workspace-write"})
    pi.script(
        call("bash", command='echo \'{"sandbox": {"preset": "off"}}\' > "$PI_CODING_AGENT_DIR/settings.json"'), ECHO
    )
    result = pi.prompt("turn it off").tool_results[0]
    assert result.is_error
    assert json.loads((machine.agent / "settings.json").read_text()) == {"sandbox": {"preset": "workspace-write"}}


# --------------------------------------------------------------------------- parts


def test_the_environment_filter() -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "OPENAI_API_KEY": "k",
        "GITHUB_TOKEN": "t",
        "AWS_PROFILE": "p",
        "DB_PASSWORD": "pw",
        "EDITOR": "vi",
        "LC_ALL": "C",
        "PI_SESSION_ID": "s",
        "SSH_AUTH_SOCK": "/tmp/a",
    }
    filtered = filter_env(env, Policy())
    assert sorted(filtered) == ["EDITOR", "HOME", "LC_ALL", "PATH", "PI_SESSION_ID"]
    assert "GITHUB_TOKEN" in filter_env(env, Policy(env_allow=("GITHUB_TOKEN",)))
    minimal = filter_env(env, Policy(env_minimal=True, env_allow=("EDITOR",)))
    assert sorted(minimal) == ["EDITOR", "HOME", "LC_ALL", "PATH", "PI_SESSION_ID"]
    assert sorted(filter_env(env, Policy(env_minimal=True))) == ["HOME", "LC_ALL", "PATH", "PI_SESSION_ID"]


def test_the_plan_resolves_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    for folder in (".ssh", ".aws", "project/.git/hooks", "cache"):
        (home / folder).mkdir(parents=True)
    (home / "project" / ".git" / "config").write_text("")
    (home / ".netrc").write_text("")
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    policy = Policy(
        allow_write=("~/cache", "~/missing"), deny_read=(*DEFAULT_DENY_READ, "{project}/.env*"), agent_dir=str(agent)
    )
    (home / "project" / ".env.local").write_text("")
    the_plan = plan(policy, str(home / "project"))
    assert str(home / "project") in the_plan.writable and str(home / "cache") in the_plan.writable
    assert not any("missing" in p for p in the_plan.writable)
    assert {str(home / ".ssh"), str(home / ".aws"), str(home / ".netrc"), str(home / "project" / ".env.local")} <= set(
        the_plan.deny
    )
    # the agent directory is below the temp folder here, so it is protected too
    assert the_plan.protected == [
        str(agent),
        str(home / "project" / ".git" / "hooks"),
        str(home / "project" / ".git" / "config"),
    ]


def test_hosts_match_by_name_and_port() -> None:
    hosts = HostMatcher(["pypi.org", "*.pythonhosted.org", "localhost:8080", "[::1]"])
    assert hosts.allows("PyPI.org.", 443) and hosts.allows("files.pythonhosted.org", 443)
    assert not hosts.allows("pythonhosted.org", 443) and not hosts.allows("evilpypi.org", 443)
    assert hosts.allows("localhost", 8080) and not hosts.allows("localhost", 80)
    assert hosts.allows("::1", 5) and not hosts.allows("127.0.0.1", 80)
    assert HostMatcher(["*"]).allows("anything", 1)
    assert split_host_port("[::1]:8080", 443) == ("::1", 8080) and split_host_port("a.b", 443) == ("a.b", 443)
    with pytest.raises(ValueError):
        split_host_port("a:99999", 443)


def test_refusals_are_recognised_in_output(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    secret = tmp_path / "home" / ".ssh"
    secret.mkdir(parents=True)
    the_plan = Plan(cwd=str(tmp_path / "project"), writable=[str(tmp_path / "project")], deny=[str(secret)])
    output = "\n".join(
        [
            f"bash: line 1: {tmp_path}/home/outside: Read-only file system",
            f"cat: {secret}/id_rsa: Permission denied",
            f"PermissionError: [Errno 13] Permission denied: '{tmp_path}/home/other'",
            "cat: inside.txt: Permission denied",  # in the project: ordinary permissions
            "curl: (6) Could not resolve host: example.com",
        ]
    )
    found = [(kind, target) for kind, target, _, _ in find(output, the_plan)]
    assert found == [
        ("write", f"{tmp_path}/home/outside"),
        ("read", f"{secret}/id_rsa"),
        ("write", f"{tmp_path}/home/other"),
        ("network", "example.com"),
    ]


def test_the_seccomp_program_jumps_stay_inside_it() -> None:
    for machine_name in ("x86_64", "aarch64"):
        for network in (None, "off", "proxy", "on"):
            for flags in ({}, {"no_user_namespaces": True, "no_sysv_ipc": True}):
                program = landlock.seccomp_program(machine_name, network=network, allow_tcp=network == "proxy", **flags)
                for index, (code, jt, jf, _) in enumerate(program):
                    if code in (0x15, 0x35, 0x45):
                        assert index + 1 + jt < len(program) and index + 1 + jf < len(program)
                assert program[-1] == (0x06, 0, 0, landlock.SECCOMP_RET_ERRNO | landlock.EPERM)
                assert program[-2] == (0x06, 0, 0, landlock.SECCOMP_RET_ALLOW)


def test_the_landlock_launcher_never_runs_a_command_it_could_not_confine(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for bad in (["--network", "sideways", "--"], ["--deny"], ["--port", "x", "--"], ["--bogus", "1", "--"]):
        done = subprocess.run(
            [sys.executable, "-I", "-S", landlock.__file__, *bad, "touch", str(marker)], capture_output=True, text=True
        )
        assert done.returncode == 126 and "cannot confine the command with Landlock" in done.stderr
        assert not marker.exists()
    spec = {
        "network": "proxy",
        "proxy_port": 8080,
        "deny": ["/a b"],
        "write": ["/w"],
        "keep": [],
        "mask": ["/s"],
        "empty": "/e",
    }
    assert landlock.parse([*landlock.arguments(spec), "cmd", "--x"]) == (spec, ["cmd", "--x"])


def test_the_seatbelt_profile(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "key").write_text("")
    the_plan = Plan(
        cwd=str(tmp_path / "project"),
        writable=[str(tmp_path / "project")],
        protected=[],
        deny=[str(tmp_path / "key")],
        network="proxy",
    )
    profile = seatbelt.profile(the_plan, proxy_port=4321)
    assert profile.startswith("(version 1)\n(deny default)\n")
    assert f'(deny file-read* file-write* (literal "{tmp_path}/key"))' in profile
    assert f'(allow file-write* (subpath "{tmp_path}/project"))' in profile
    assert '(allow network-outbound (remote ip "localhost:4321"))' in profile
    assert "(allow network*)" not in profile
    argv = seatbelt.build_argv(the_plan, ["/bin/sh", "-c", "true"], proxy_port=4321)
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[-4:] == ["--", "/bin/sh", "-c", "true"]


@pytest.mark.skipif(not seatbelt.available(), reason="sandbox-exec runs on macOS only")
def test_sandbox_exec_confines_a_command(tmp_path: Path) -> None:  # pragma: no cover - macOS
    (tmp_path / "project").mkdir()
    the_plan = Plan(cwd=str(tmp_path / "project"), writable=[str(tmp_path / "project")], network="off")
    argv = seatbelt.build_argv(
        the_plan, ["/bin/sh", "-c", f"echo ok > {tmp_path}/project/in; echo no > {tmp_path}/out"]
    )
    subprocess.run(argv, cwd=tmp_path / "project", capture_output=True)
    assert (tmp_path / "project" / "in").exists() and not (tmp_path / "out").exists()
