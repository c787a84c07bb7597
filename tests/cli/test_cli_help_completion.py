"""``pi help [COMMAND]``, the plugin commands in ``pi --help``, and ``pi completion
bash|zsh|fish`` run for real in each shell (bash always; zsh and fish where installed),
against the real ``pi`` (a wrapper on PATH running this interpreter's pi_core)."""

from __future__ import annotations

import importlib.util
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_helpers import run_pi

from pi_core.cli import COMMANDS

HAS_MCP = importlib.util.find_spec("pi_mcp") is not None
needs_mcp = pytest.mark.skipif(not HAS_MCP, reason="pluggable-pi-mcp is not installed")

PLUGIN = """
from pi_hookspecs import hookimpl

@hookimpl
def register_cli_commands(register):
    register("tour-guide", lambda args: print("touring", args), help="A guided tour\\nsecond line")
    register("quiet", lambda args: 0)

@hookimpl
def register_flags(register):
    register("tour-speed", type="string", description="how fast")
"""


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """An installed plugin ``cli_plugin`` with two subcommands and a flag, the only one loaded."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "cli_plugin.py").write_text(PLUGIN)
    info = site / "pi_test_cli_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pi-test-cli-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pi.extensions]\ncli_plugin = cli_plugin\n")
    (info / "RECORD").write_text("")
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]), "PI_EXTENSIONS": "cli_plugin"}


# --------------------------------------------------------------------------- help


def test_pi_help_is_pi_dash_dash_help(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    helped = run_pi("help", cwd=tmp_path, env=plugin_env)
    dashed = run_pi("--help", cwd=tmp_path, env=plugin_env)
    assert helped.returncode == dashed.returncode == 0, helped.stderr
    assert helped.stdout == dashed.stdout
    assert helped.stdout.startswith("usage: pi ")


def test_help_lists_every_command_of_the_table_and_the_plugins_commands(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    out = run_pi("--help", cwd=tmp_path, env=plugin_env).stdout
    commands = out[out.index("\ncommands:\n") : out.index("\nexamples:\n")]
    for name, usage, description in COMMANDS:
        if description:  # an alias ("" ) is named in its command's line
            line = f"  pi {name} {usage}".rstrip()
            assert line in commands, line
            assert description.split("\n")[0] in commands
    assert "pi uninstall" not in commands.replace("(alias: pi uninstall)", "")
    plugin_part = commands[commands.index("plugin commands:") :].splitlines()
    assert "  pi tour-guide                 A guided tour" in plugin_part  # one line each
    assert "  pi quiet" in plugin_part
    assert "second line" not in out
    assert "--tour-speed VALUE" in out  # the plugin's flag, as before


def test_help_without_plugins_has_no_plugin_section(tmp_path: Path) -> None:
    out = run_pi("--help", cwd=tmp_path, env={"PI_EXTENSIONS": ""}).stdout
    # a command declared only in the pi.cli_commands entry-point group (pi acp) is still listed
    assert "  pi help [COMMAND]" in out
    assert "tour-guide" not in out


@needs_mcp
def test_help_lists_the_installed_plugin_commands(tmp_path: Path) -> None:
    out = run_pi("--help", cwd=tmp_path, env={"PI_EXTENSIONS": "mcp"}).stdout
    assert re.search(r"^  pi mcp +Manage MCP servers", out, re.MULTILINE), out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("install", "Usage: pi install"),
        ("uninstall", "Usage: pi remove"),  # the alias's command
        ("extensions", "Usage: pi extensions"),
        ("models", "Usage: pi models"),
        ("completion", "usage: pi completion bash|zsh|fish"),
        ("help", "usage: pi help [COMMAND]"),
    ],
)
def test_pi_help_command(tmp_path: Path, name: str, expected: str) -> None:
    done = run_pi("help", name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert run_pi(name, "--help", cwd=tmp_path).stdout == done.stdout


def test_pi_help_plugin_command(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    done = run_pi("help", "tour-guide", cwd=tmp_path, env=plugin_env)
    assert (done.returncode, done.stdout.strip()) == (0, "touring ['--help']")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["help", "nosuch"], "pi help: no command 'nosuch' (pi --help lists them)"),
        (["help", "instal"], "pi help: no command 'instal': did you mean 'install'?"),
        (["help", "Models"], "pi help: no command 'Models' (pi --help lists them)"),
        (
            ["help", "me", "fix", "it"],
            "pi help: takes one command name (pi --help lists them); "
            "to send the words as a prompt: pi -- help me fix it",
        ),
        (["completion"], 'pi completion: name a shell: bash, zsh or fish (e.g. eval "$(pi completion bash)")'),
        (
            ["completion", "tcsh"],
            "pi completion: unknown shell 'tcsh': bash, zsh or fish (e.g. eval \"$(pi completion bash)\")",
        ),
        (
            ["completion", "bash", "zsh"],
            'pi completion: takes one shell: bash, zsh or fish (e.g. eval "$(pi completion bash)")',
        ),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    done = run_pi(*args, cwd=tmp_path, stdin="")
    assert (done.returncode, done.stdout, done.stderr.strip()) == (2, "", message)


# --------------------------------------------------------------------------- completion

SCRIPT_MARKS = {
    "bash": "complete -o nospace -o default -o bashdefault -F _python_argcomplete pi",
    "zsh": "#compdef pi",
    "fish": "complete --command pi",
}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script(tmp_path: Path, shell: str) -> None:
    done = run_pi("completion", shell, cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert SCRIPT_MARKS[shell] in done.stdout
    modules = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert "argcomplete" in modules
    # no plugin, no runtime: printing a script is instant
    assert not {m for m in modules if m.startswith(("pi_core.extensions", "pi_core.runtime", "typer"))}


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """``pi`` on PATH: a wrapper running this interpreter's pi_core."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "pi"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m pi_core "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PI_EXTENSIONS": ""}
    return env


def _script(shell: str, tmp_path: Path, env: dict[str, str]) -> Path:
    path = tmp_path / f"pi-completion.{shell}"
    done = subprocess.run(["pi", "completion", shell], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    path.write_text(done.stdout)
    return path


BASH_COMPLETE = """
source "$1"
line="$2"
COMP_LINE="$line"; COMP_POINT=${#line}
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
complete -p pi >/dev/null  # the script registered pi
_python_argcomplete pi "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\\n' "${COMPREPLY[@]}"
"""


def bash_complete(line: str, script: Path, env: dict[str, str], cwd: Path) -> list[str]:
    """What bash offers on Tab after ``line``: the registered completion function called
    as bash calls it (COMP_WORDS, COMP_CWORD, COMP_LINE, COMP_POINT)."""
    done = subprocess.run(
        ["bash", "-c", BASH_COMPLETE, "bash", str(script), line],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [item.strip() for item in done.stdout.splitlines() if item.strip()]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_options_and_arguments(
    tmp_path: Path, shell_env: dict[str, str], plugin_env: dict[str, str]
) -> None:
    script = _script("bash", tmp_path, shell_env)
    env = {**shell_env, **plugin_env}

    def offers(line: str) -> list[str]:
        return bash_complete(line, script, env, tmp_path)

    assert offers("pi ins") == ["install"]
    assert sorted(offers("pi --mo")) == ["--mode", "--model", "--models"]
    everything = offers("pi ")
    assert everything[: len(COMMANDS)] == [name for name, _, _ in COMMANDS]  # the table, in order
    assert {"tour-guide", "quiet"} <= set(everything)  # and the plugins' commands
    assert offers("pi tou") == ["tour-guide"]
    assert offers("pi --tour") == ["--tour-speed"]  # a plugin's flag
    assert offers("pi --mode ") == ["text", "json", "rpc"]
    assert "--all" in offers("pi sessions --")  # a typer command's options
    assert offers("pi extensions ") == ["list"]
    assert {"login", "logout", "status"} <= set(offers("pi auth "))
    assert "--local" in offers("pi uninstall --")
    assert offers("pi help tou") == ["tour-guide"]
    assert offers("pi completion ") == ["bash", "zsh", "fish"]
    # the first word only: after an option or a prompt's word a command is no command,
    # and the words of a prompt or of a plugin's command (it parses them) are file names
    (tmp_path / "instructions.md").write_text("")
    assert offers("pi -p ins") == ["instructions.md"]
    files = {p.name + "/" if p.is_dir() else p.name for p in tmp_path.iterdir()}
    assert set(offers("pi tour-guide ")) == files
    assert set(offers("pi fix ")) == files


@needs_mcp
@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_offers_the_installed_mcp_command(tmp_path: Path, shell_env: dict[str, str]) -> None:
    script = _script("bash", tmp_path, shell_env)
    assert bash_complete("pi mc", script, {**shell_env, "PI_EXTENSIONS": "mcp"}, tmp_path) == ["mcp"]


NOT_ON_THE_HOT_PATH = {
    "argcomplete",
    "pi_core.cli.completion",
    "pi_core.cli.commands",
    "pi_core.cli.typos",
    "pi_core.cli.plugin_commands",
}


@pytest.mark.parametrize("args", [["--version"], ["-p", "--no-session", "--model", "faux/offline-demo", "hi"]])
def test_the_hot_path_imports_none_of_it(tmp_path: Path, args: list[str]) -> None:
    """``pi --version`` and ``pi -p`` import neither argcomplete nor the help, typo and
    completion code (a leftover COMP_LINE in the environment changes nothing)."""
    done = run_pi(*args, cwd=tmp_path, stdin="", env={"PYTHONPROFILEIMPORTTIME": "1", "COMP_LINE": "pi ins"})
    assert done.returncode == 0, done.stderr[-2000:]
    modules = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert "pi_core.cli" in modules
    assert not modules & NOT_ON_THE_HOT_PATH, sorted(modules & NOT_ON_THE_HOT_PATH)


# zsh: an interactive zsh in a pseudo-terminal, with compinit and the script loaded; keys
# are typed, Tab completes, and a widget bound to Ctrl+X writes the edited line to a file.
ZSHRC = """
PS1='%% '
autoload -Uz compinit && compinit -u -D
eval "$(pi completion zsh)"
dump() {{ print -r -- "$BUFFER" > {out} }}
zle -N dump
bindkey '^X' dump
"""


def zsh_type(keys: str, tmp_path: Path, env: dict[str, str]) -> tuple[str, str]:
    """The line zsh holds after ``keys``, and what it showed."""
    home = tmp_path / "zdot"
    home.mkdir(exist_ok=True)
    out = tmp_path / "zsh-buffer"
    out.unlink(missing_ok=True)
    (home / ".zshrc").write_text(ZSHRC.format(out=out))
    pid, fd = pty.fork()
    if pid == 0:  # the child: only exec
        try:
            os.execvpe("zsh", ["zsh", "-i"], {**env, "ZDOTDIR": str(home), "TERM": "dumb"})
        finally:
            os._exit(127)
    screen = b""
    try:
        os.write(fd, keys.encode() + b"\x18")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out.exists() and out.read_text().endswith("\n")):
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
        assert out.exists(), screen.decode(errors="replace")
        return out.read_text().rstrip("\n"), screen.decode(errors="replace")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (apt-get install zsh)")
def test_zsh_completes_for_real(tmp_path: Path, shell_env: dict[str, str], plugin_env: dict[str, str]) -> None:
    env = {**shell_env, **plugin_env}
    script = _script("zsh", tmp_path, env)
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True).returncode == 0
    assert zsh_type("pi ins\t", tmp_path, env)[0] == "pi install "
    assert zsh_type("pi tou\t", tmp_path, env)[0] == "pi tour-guide "
    line, screen = zsh_type("pi --mo\t\t", tmp_path, env)  # the second Tab lists them
    assert line == "pi --mode"
    for option, description in [
        ("--mode", "output interface"),
        ("--model", "provider/id"),
        ("--models", "comma-separated"),
    ]:
        assert re.search(rf"^{option} +-- {description}", screen, re.MULTILINE), screen


@needs_mcp
@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (apt-get install zsh)")
def test_zsh_offers_the_installed_mcp_command(tmp_path: Path, shell_env: dict[str, str]) -> None:
    assert zsh_type("pi mc\t", tmp_path, {**shell_env, "PI_EXTENSIONS": "mcp"})[0] == "pi mcp "


def fish_complete(line: str, env: dict[str, str], cwd: Path) -> list[tuple[str, str]]:
    """``complete -C LINE``: what fish offers on Tab, with each description."""
    done = subprocess.run(
        ["fish", "--no-config", "-c", 'pi completion fish | source; and complete -C "$argv[1]"', line],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [(name, description) for name, _, description in (row.partition("\t") for row in done.stdout.splitlines())]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (apt-get install fish)")
def test_fish_completes_for_real(tmp_path: Path, shell_env: dict[str, str], plugin_env: dict[str, str]) -> None:
    env = {**shell_env, **plugin_env}
    script = _script("fish", tmp_path, env)
    assert subprocess.run(["fish", "--no-execute", str(script)], capture_output=True).returncode == 0
    offered = fish_complete("pi ins", env, tmp_path)
    assert [name for name, _ in offered] == ["install"]
    # a command's description on one line, its continuation included
    assert offered[0][1].startswith("install a plugin package into pi's environment (and record it): a name")
    assert [name for name, _ in fish_complete("pi --mo", env, tmp_path)] == ["--mode", "--model", "--models"]
    assert ("tour-guide", "A guided tour") in fish_complete("pi tou", env, tmp_path)


@needs_mcp
@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (apt-get install fish)")
def test_fish_offers_the_installed_mcp_command(tmp_path: Path, shell_env: dict[str, str]) -> None:
    names = [name for name, _ in fish_complete("pi mc", {**shell_env, "PI_EXTENSIONS": "mcp"}, tmp_path)]
    assert names == ["mcp"]


def test_the_completion_script_needs_no_argcomplete_on_path(tmp_path: Path) -> None:
    """The script calls ``pi`` itself (not argcomplete's helper programs)."""
    script = run_pi("completion", "bash", cwd=tmp_path).stdout
    assert "register-python-argcomplete" not in script and "python-argcomplete-check" not in script
    assert textwrap.dedent(script).count("_python_argcomplete") >= 2
