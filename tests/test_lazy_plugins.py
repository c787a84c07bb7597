"""Installed plugins a run does not need are not imported (pi_core.extensions.lazy).

The first start imports every installed plugin and indexes its hooks in the agent
folder's cache; later starts register a stand-in for a plugin whose files are unchanged
and import it when one of its hooks is first called (a registration hook read on
demand: when its table is read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import load_host, make_distribution
from pi_core.extensions import PluginHost
from pi_core.extensions.lazy import index_path
from pi_hookspecs import SessionShutdownEvent

sys.path.insert(0, str(Path(__file__).resolve().parent / "cli"))

from cli_helpers import configure_local_endpoint, run_pi
from wire_server import WireServer, chat_chunks

MARKS = "PI_TEST_LAZY_MARKS"
"""A file each test plugin appends a line to when it is imported and when a hook runs."""

RARE_PLUGIN = """
import os
from pi_hookspecs import hookimpl

def _mark(what):
    with open(os.environ["PI_TEST_LAZY_MARKS"], "a") as fh:
        fh.write(what + "\\n")

_mark("imported")

@hookimpl
def register_cli_commands(register):
    register("rare-tour", lambda args: _mark("tour " + " ".join(args)), help="A rare tour")

@hookimpl
def session_before_tree(event):
    _mark("tree")
"""

SHUTDOWN_PLUGIN = """
import os
from pi_hookspecs import hookimpl

def _mark(what):
    with open(os.environ["PI_TEST_LAZY_MARKS"], "a") as fh:
        fh.write(what + "\\n")

_mark("shutdown-plugin imported")

class Plugin:
    @hookimpl
    def session_shutdown(self, event):
        _mark("shutdown " + event.reason)
"""


def marks(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def record(host: PluginHost, name: str) -> Any:
    return next(r for r in host.records if r.name == name)


@pytest.fixture
def marks_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "marks.txt"
    monkeypatch.setenv(MARKS, str(path))
    return path


def forget(module: str) -> None:
    """A new process: the plugin's module not imported."""
    sys.modules.pop(module, None)


def install(site_dir: Path, name: str, code: str, attr: str = "") -> None:
    """Test plugin ``name``: distribution ``pi-test-<name>`` with module ``pi_test_<name>``
    (its entry point that module, or ``attr`` in it)."""
    module = f"pi_test_{name}"
    make_distribution(
        site_dir,
        dist=f"pi-test-{name}",
        version="1",
        module=module,
        code=code,
        entry_points={name: f"{module}:{attr}" if attr else module},
    )


async def restart(*names: str) -> PluginHost:
    """A new start with the plugins ``names``, their modules not imported."""
    for name in names:
        forget(f"pi_test_{name}")
    return await load_host(entry_points=names)


# --------------------------------------------------------------------------- in process


async def test_an_indexed_plugin_is_imported_on_its_first_hook_call(site_dir: Path, marks_file: Path) -> None:
    install(site_dir, "shut", SHUTDOWN_PLUGIN, "Plugin")
    first = await load_host(entry_points=("shut",))
    assert not record(first, "shut").deferred
    assert marks(marks_file) == ["shutdown-plugin imported"]
    index = json.loads(index_path(first.agent_dir).read_text())["plugins"]["shut"]
    assert [h["hook"] for h in index["hooks"]] == ["session_shutdown"] and index["static"] is True

    second = await restart("shut")
    shut = record(second, "shut")
    assert shut.deferred and shut.status == "loaded" and shut.hooks == ["session_shutdown"]
    assert "pi_test_shut" not in sys.modules
    assert marks(marks_file) == ["shutdown-plugin imported"]
    await second.runner.emit("session_shutdown", SessionShutdownEvent(reason="quit"))
    assert marks(marks_file) == ["shutdown-plugin imported", "shutdown-plugin imported", "shutdown quit"]
    assert "pi_test_shut" in sys.modules and not second.diagnostics


async def test_a_changed_plugin_file_makes_the_index_stale(site_dir: Path, marks_file: Path) -> None:
    install(site_dir, "rare", RARE_PLUGIN)
    await load_host(entry_points=("rare",))
    assert record(await restart("rare"), "rare").deferred
    # another version of the distribution (the module's file untouched): imported at
    # start, then indexed again
    (site_dir / "pi_test_rare-1.dist-info").rename(site_dir / "pi_test_rare-2.dist-info")
    metadata = site_dir / "pi_test_rare-2.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 1", "Version: 2"))
    assert not record(await restart("rare"), "rare").deferred
    assert record(await restart("rare"), "rare").deferred
    # a hook added to the plugin: its file changed, so it is imported at start again
    source = site_dir / "pi_test_rare.py"
    source.write_text(source.read_text() + "\n@hookimpl\ndef agent_start():\n    _mark('agent_start')\n")
    host = await restart("rare")
    rare = record(host, "rare")
    assert not rare.deferred and "agent_start" in rare.hooks
    hooks = json.loads(index_path(host.agent_dir).read_text())["plugins"]["rare"]["hooks"]
    assert sorted(h["hook"] for h in hooks) == ["agent_start", "register_cli_commands", "session_before_tree"]


async def test_hooks_the_index_did_not_know_are_reported_and_registered(site_dir: Path, marks_file: Path) -> None:
    """The index says less than the plugin has (its files unchanged): found when the
    plugin is imported, reported in one warning, re-indexed, and called from then on."""
    install(site_dir, "rare", RARE_PLUGIN)
    first = await load_host(entry_points=("rare",))
    path = index_path(first.agent_dir)
    data = json.loads(path.read_text())
    entry = data["plugins"]["rare"]
    entry["hooks"] = [h for h in entry["hooks"] if h["hook"] != "session_before_tree"]
    entry["hooks"].append({"attr": "tool_result", "hook": "tool_result", "args": ["event"], "async": False, "opts": {}})
    path.write_text(json.dumps(data))
    host = await restart("rare")
    rare = record(host, "rare")
    assert rare.deferred and rare.hooks == ["register_cli_commands", "tool_result"]
    assert "rare-tour" in host.registry.cli_commands  # reading the table imports it
    warnings = [d for d in host.diagnostics if d.plugin == "rare"]
    assert len(warnings) == 1 and warnings[0].level == "warning"
    assert "session_before_tree" in warnings[0].message and "re-indexed" in warnings[0].message
    hooks = json.loads(path.read_text())["plugins"]["rare"]["hooks"]
    assert sorted(h["hook"] for h in hooks) == ["register_cli_commands", "session_before_tree"]
    assert host.runner.has_handlers("session_before_tree")


async def test_a_damaged_index_entry_means_an_import_at_start(site_dir: Path, marks_file: Path) -> None:
    install(site_dir, "rare", RARE_PLUGIN)
    first = await load_host(entry_points=("rare",))
    path = index_path(first.agent_dir)
    data = json.loads(path.read_text())
    for damage in ({"attr": "x", "hook": "agent_start", "args": ["a b"], "async": False}, "not a hook"):
        data["plugins"]["rare"]["hooks"] = [damage]
        path.write_text(json.dumps(data))
        host = await restart("rare")
        rare = record(host, "rare")
        assert rare.status == "loaded" and not rare.deferred and "pi_test_rare" in sys.modules
        assert not host.diagnostics
        hooks = json.loads(path.read_text())["plugins"]["rare"]["hooks"]
        assert sorted(h["hook"] for h in hooks) == ["register_cli_commands", "session_before_tree"]  # indexed again
    path.write_text("{not json")
    assert not record(await restart("rare"), "rare").deferred
    assert json.loads(path.read_text())["plugins"]["rare"]["hooks"]  # written again


async def test_a_deferred_plugin_that_fails_to_import_is_one_line(site_dir: Path, marks_file: Path) -> None:
    (site_dir / "pi_test_dep.py").write_text("VALUE = 1\n")
    install(site_dir, "shut", "import pi_test_dep\n" + SHUTDOWN_PLUGIN, "Plugin")
    await load_host(entry_points=("shut",))
    forget("pi_test_shut")
    forget("pi_test_dep")
    (site_dir / "pi_test_dep.py").unlink()  # a dependency removed; the plugin's own file is unchanged
    host = await load_host(entry_points=("shut",))
    assert record(host, "shut").deferred and not host.diagnostics
    await host.runner.emit("session_shutdown", SessionShutdownEvent(reason="quit"))
    shut = record(host, "shut")
    assert shut.status == "error" and "No module named 'pi_test_dep'" in (shut.error or "")
    assert [e.format().split(" (", 1)[0] for e in host.runner.errors] == [
        "plugin 'shut', hook session_shutdown: import failed: ModuleNotFoundError: No module named 'pi_test_dep'"
    ]
    assert not host.runner.has_handlers("session_shutdown")  # tried once, then out of the way
    await host.runner.emit("session_shutdown", SessionShutdownEvent(reason="quit"))
    assert len(host.runner.errors) == 1


GATE_PLUGIN = """
import pi_test_gate_dep
from pi_hookspecs import hookimpl

@hookimpl
def tool_call(event):
    if event.tool_name == "bash":
        return {"block": True, "reason": "no shell here"}
"""


async def test_a_plugin_guarding_tool_calls_is_never_deferred(site_dir: Path, marks_file: Path) -> None:
    """The attack: a policy plugin's dependency disappears after the plugin was indexed.
    Deferred, its import would fail at the first ``tool_call`` and the tool would run
    without the policy (fail-open). A plugin implementing a fail-closed event
    (``tool_call``, ``user_bash``, ``bash_spawn``, ``file_access``) is imported at start,
    so its failure is reported before anything runs, as without the index."""
    (site_dir / "pi_test_gate_dep.py").write_text("VALUE = 1\n")
    install(site_dir, "gate", GATE_PLUGIN)
    await load_host(entry_points=("gate",))
    forget("pi_test_gate_dep")
    (site_dir / "pi_test_gate_dep.py").unlink()
    host = await restart("gate")
    gate = record(host, "gate")
    assert not gate.deferred and gate.status == "error"
    assert [d.message.split(" (", 1)[0] for d in host.diagnostics if d.plugin == "gate"] == [
        "import failed: ModuleNotFoundError: No module named 'pi_test_gate_dep'"
    ]


async def test_a_required_plugin_is_never_deferred(site_dir: Path, marks_file: Path, agent_dir: Path) -> None:
    """A plugin named in ``requiredExtensions`` must be known to load at start: pi
    refuses to start without it, which a deferred import would only find out later."""
    install(site_dir, "shut", SHUTDOWN_PLUGIN, "Plugin")
    await load_host(entry_points=("shut",))
    assert record(await restart("shut"), "shut").deferred  # not required: deferred
    (agent_dir / "settings.json").write_text(json.dumps({"requiredExtensions": ["shut"]}))
    host = await restart("shut")
    assert not record(host, "shut").deferred and "pi_test_shut" in sys.modules
    assert host.missing_required() == []


async def test_a_late_registration_keeps_the_first_plugin_in_load_order(site_dir: Path, marks_file: Path) -> None:
    """A deferred plugin registers its command when the commands are read, after a
    plugin later in load order: the earlier one still keeps the name."""
    command = "@hookimpl\ndef register_commands(register):\n    register('same', lambda args, ctx: None)\n"
    install(site_dir, "aaa", "from pi_hookspecs import hookimpl\n" + command)
    install(
        site_dir,
        "bbb",
        "from pi_hookspecs import hookimpl\n"
        + command
        + "@hookimpl\ndef register_tools(register):\n    pass\n",  # needed at start: never deferred
    )
    await load_host(entry_points=("aaa", "bbb"))
    host = await restart("aaa", "bbb")
    assert record(host, "aaa").deferred and not record(host, "bbb").deferred
    assert "pi_test_aaa" not in sys.modules
    assert host.registry.commands["same"].plugin == "aaa"
    warnings = [d for d in host.diagnostics if d.level == "warning"]
    assert [(d.plugin, "already registered by plugin 'aaa'" in d.message) for d in warnings] == [("bbb", True)]


async def test_plugins_registering_what_every_start_needs_are_imported(site_dir: Path, marks_file: Path) -> None:
    install(
        site_dir, "tools", "from pi_hookspecs import hookimpl\n@hookimpl\ndef register_tools(register):\n    pass\n"
    )
    await load_host(entry_points=("tools",))
    assert not record(await restart("tools"), "tools").deferred
    assert "pi_test_tools" in sys.modules


COMMANDS_PLUGIN = """
import os
from pi_hookspecs import hookimpl

def _mark(what):
    with open(os.environ["PI_TEST_LAZY_MARKS"], "a") as fh:
        fh.write(what + "\\n")

@hookimpl
def register_tools(register):
    pass  # needed at start: imported at start, never deferred

@hookimpl
def register_commands(register):
    _mark("commands")
    register("greet", lambda args, ctx: None, description="Greets")

@hookimpl
def register_cli_commands(register):
    _mark("subcommands")
    register("greet-cli", lambda args: 0, help="Greets")
"""


async def test_a_plugin_imported_at_start_registers_its_commands_when_they_are_read(
    site_dir: Path, marks_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Describing a command can cost a plugin work at every start; a run reads the
    commands only for a slash command and the subcommands only for ``pi NAME``."""
    install(site_dir, "cmds", COMMANDS_PLUGIN)
    host = await load_host(entry_points=("cmds",))
    assert not record(host, "cmds").deferred and "pi_test_cmds" in sys.modules
    assert marks(marks_file) == []
    assert host.registry.commands["greet"].plugin == "cmds"
    assert marks(marks_file) == ["commands"]
    assert "greet-cli" in host.registry.cli_commands
    assert marks(marks_file) == ["commands", "subcommands"]
    with monkeypatch.context() as patch:  # plugins loaded eagerly: at start, as before
        patch.setenv("PI_LAZY_PLUGINS", "0")
        await restart("cmds")
        assert marks(marks_file) == ["commands", "subcommands", "commands", "subcommands"]


async def test_strict_mode_and_the_switch_import_every_plugin(
    site_dir: Path, marks_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(site_dir, "rare", RARE_PLUGIN)
    await load_host(entry_points=("rare",))
    for variable, value in (("PI_LAZY_PLUGINS", "0"), ("PI_EXTENSIONS_STRICT", "1")):
        with monkeypatch.context() as patch:
            patch.setenv(variable, value)
            assert not record(await restart("rare"), "rare").deferred


# --------------------------------------------------------------------------- the pi command


def test_pi_p_does_not_import_a_plugin_it_does_not_need(site_dir: Path, marks_file: Path, tmp_path: Path) -> None:
    """The real ``pi``: the first run indexes the plugins; the second ``pi -p`` imports
    neither the CLI-command plugin nor, until the session ends, the shutdown one;
    ``pi rare-tour`` imports the first and runs its command; a deferred plugin that no
    longer imports is one line."""
    install(site_dir, "rare", RARE_PLUGIN)
    (site_dir / "pi_test_dep.py").write_text("VALUE = 1\n")
    install(site_dir, "shut", "import pi_test_dep\n" + SHUTDOWN_PLUGIN, "Plugin")
    server = WireServer()
    configure_local_endpoint(server.url, model="m")
    env = {
        "PYTHONPATH": os.pathsep.join([str(site_dir), os.environ.get("PYTHONPATH", "")]),
        "PI_EXTENSIONS": "rare,shut",
    }
    work = tmp_path / "work"
    work.mkdir()

    def pi(*args: str) -> subprocess.CompletedProcess[str]:
        return run_pi(*args, cwd=work, env=env)

    try:
        for run in range(2):
            marks_file.unlink(missing_ok=True)
            server.enqueue(chat_chunks([{"content": "done"}]))
            done = pi("-p", "--no-session", "--model", "local/m", "hi")
            assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "done", "")
            if run == 0:  # indexed: both imported at start
                assert marks(marks_file) == ["imported", "shutdown-plugin imported", "shutdown quit"]
            else:  # only the shutdown plugin, when the session ends
                assert marks(marks_file) == ["shutdown-plugin imported", "shutdown quit"]
        marks_file.unlink()
        listed = pi("extensions", "list", "--json")  # reads every registry table: imports it
        assert listed.returncode == 0, listed.stderr
        found = json.loads(listed.stdout)
        plugins = found["plugins"] if isinstance(found, dict) else found
        rare = next(p for p in plugins if p["name"] == "rare")
        assert (rare["status"], rare["cli_commands"]) == ("loaded", ["rare-tour"])
        assert marks(marks_file) == ["imported"]
        marks_file.unlink()
        done = pi("rare-tour", "now")
        assert done.returncode == 0, done.stderr
        assert marks(marks_file) == ["imported", "tour now"]
        # the shutdown plugin's dependency removed (its own file unchanged): one line
        # when its hook is first called, and the run goes on
        (site_dir / "pi_test_dep.py").unlink()
        server.enqueue(chat_chunks([{"content": "done"}]))
        done = pi("-p", "--no-session", "--model", "local/m", "hi")
        assert (done.returncode, done.stdout.strip()) == (0, "done"), done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "pi: extension error (pi_test_shut:Plugin) in session_shutdown: import failed: "
            "ModuleNotFoundError: No module named 'pi_test_dep'"
        ), done.stderr
    finally:
        server.close()
