"""Plugin discovery and loading: every source, the two trust phases, the controls,
and failures that become diagnostics instead of crashes."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import pi_hookspecs as h
from conftest import load_host, make_distribution, write
from pi_core.extensions import ExtensionLoadError, LoadOptions, PluginHost
from pi_hookspecs import hookimpl

# Installed distributions of these tests; the workspace's own plugins (pluggable-pi-mcp …) are
# installed in the same environment and must not take part.
TEST_EPS = ("good", "broken", "mod", "func", "empty", "sig", "cmd")

GOOD_PLUGIN = '''
from pi_hookspecs import hookimpl, tool

@tool
def weather(city: str) -> str:
    """Look up the weather of a city."""
    return f"sunny in {city}"

class Plugin:
    instances = 0

    def __init__(self):
        type(self).instances += 1
        self.calls = 0

    @hookimpl
    def register_tools(self, register):
        register(weather)

    @hookimpl
    def tool_call(self, event):
        self.calls += 1
'''


def install_good(site: Path) -> None:
    make_distribution(
        site,
        dist="pi-test-good",
        version="1.2.3",
        module="pi_test_good",
        code=GOOD_PLUGIN,
        entry_points={"good": "pi_test_good:Plugin"},
    )


def install_broken(site: Path) -> None:
    make_distribution(
        site,
        dist="pi-test-broken",
        version="0.0.1",
        module="pi_test_broken",
        code="import pi_test_this_module_does_not_exist\n",
        entry_points={"broken": "pi_test_broken"},
    )


def record(host: PluginHost, name: str) -> Any:
    return next(r for r in host.records if r.name == name)


# --------------------------------------------------------------------------- entry points


async def test_entry_point_plugin_from_an_installed_distribution(site_dir: Path) -> None:
    install_good(site_dir)
    install_broken(site_dir)
    host = await load_host(entry_points=TEST_EPS)
    good = record(host, "good")
    assert good.status == "loaded" and good.kind == "entrypoint"
    assert (good.source.distribution, good.source.version) == ("pi-test-good", "1.2.3")
    assert good.hooks == ["register_tools", "tool_call"]
    assert host.registry.tools["weather"].plugin == "good"
    broken = record(host, "broken")
    assert broken.status == "error"
    assert "ModuleNotFoundError: No module named 'pi_test_this_module_does_not_exist'" in broken.error
    assert any(d.plugin == "broken" and d.level == "error" for d in host.diagnostics)


async def test_a_class_is_instantiated_per_runtime_and_a_module_is_registered_as_is(site_dir: Path) -> None:
    install_good(site_dir)
    make_distribution(
        site_dir,
        dist="pi-test-mod",
        version="1",
        module="pi_test_mod",
        code="from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start():\n    pass\n",
        entry_points={"mod": "pi_test_mod"},
    )
    first = await load_host(entry_points=TEST_EPS)
    second = await load_host(entry_points=TEST_EPS)
    assert record(first, "good").plugin is not record(second, "good").plugin
    assert type(record(first, "good").plugin).instances == 2
    # the second host may hold a stand-in until a hook is called (an indexed plugin)
    assert record(first, "mod").plugin is second.plugin_of(record(second, "mod"))
    assert isinstance(record(first, "mod").plugin, types.ModuleType)


async def test_entry_point_to_something_that_is_not_a_plugin(site_dir: Path) -> None:
    make_distribution(
        site_dir,
        dist="pi-test-func",
        version="1",
        module="pi_test_func",
        code="def setup():\n    pass\n\nclass Empty:\n    pass\n",
        entry_points={"func": "pi_test_func:setup", "empty": "pi_test_func:Empty", "mod": "pi_test_func"},
    )
    host = await load_host(entry_points=TEST_EPS)
    assert "is not a pi plugin: expected a module or a class" in record(host, "func").error
    assert "class Empty has no @hookimpl methods" in record(host, "empty").error
    assert "defines no @hookimpl functions" in record(host, "mod").error


async def test_bad_hook_signature_is_a_diagnostic_and_others_still_load(site_dir: Path) -> None:
    make_distribution(
        site_dir,
        dist="pi-test-sig",
        version="1",
        module="pi_test_sig",
        code=(
            "from pi_hookspecs import hookimpl\nclass P:\n    @hookimpl\n"
            "    def tool_call(self, event, ctx, extra):\n        pass\n"
        ),
        entry_points={"sig": "pi_test_sig:P"},
    )
    install_good(site_dir)
    host = await load_host(entry_points=TEST_EPS)
    sig = record(host, "sig")
    assert sig.status == "error" and "extra" in sig.error and "tool_call" in sig.error
    assert record(host, "good").status == "loaded"
    assert [i.plugin for i in host.runner.handlers("tool_call")] == ["good"]


async def test_misspelled_hooks_are_reported() -> None:
    class Typo:
        @hookimpl
        def tool_results(self, event: Any) -> None: ...

        @hookimpl(optionalhook=True)
        def maybe_later(self) -> None: ...

    host = await load_host(Typo)
    (diag,) = [d for d in host.diagnostics if "unknown hook" in d.message]
    assert diag.plugin == "Typo" and "'tool_results' (did you mean 'tool_result'?)" in diag.message


# --------------------------------------------------------------------------- files


async def test_user_files_packages_and_typescript_files(agent_dir: Path) -> None:
    ext = agent_dir / "extensions"
    write(ext / "greeter.py", "from pi_hookspecs import hookimpl\n@hookimpl\ndef session_start(event):\n    pass\n")
    write(ext / "pkg" / "__init__.py", "from .impl import Plugin\n")
    write(
        ext / "pkg" / "impl.py",
        "from pi_hookspecs import hookimpl\nclass Plugin:\n    @hookimpl\n    def agent_end(self):\n        pass\n",
    )
    write(ext / "legacy.ts", "export default function () {}\n")
    write(ext / "tsdir" / "index.ts", "export default function () {}\n")
    write(ext / "_private.py", "raise SystemExit('never imported')\n")
    write(ext / "syntax.py", "def broken(:\n")
    host = await load_host()
    assert [(r.name, r.status) for r in host.records] == [("greeter", "loaded"), ("pkg", "loaded"), ("syntax", "error")]
    assert record(host, "pkg").hooks == ["agent_end"]
    assert "SyntaxError" in record(host, "syntax").error and "syntax.py:1" in record(host, "syntax").error
    skipped = sorted(d.plugin for d in host.diagnostics if "TypeScript" in d.message)
    assert skipped == ["legacy", "tsdir"]


async def test_settings_extensions_paths_and_modules(agent_dir: Path, tmp_path: Path, site_dir: Path) -> None:
    write(
        agent_dir / "mine" / "policy.py",
        "from pi_hookspecs import hookimpl\n@hookimpl\ndef tool_call(event):\n    return None\n",
    )
    write(
        site_dir / "pi_test_settings_mod.py",
        "from pi_hookspecs import hookimpl\nclass Audit:\n    @hookimpl\n"
        "    def tool_result(self, event):\n        return None\n",
    )
    (agent_dir / "settings.json").write_text(
        json.dumps({"extensions": ["mine/policy.py", "pi_test_settings_mod:Audit", "missing/nope.py", "x.ts"]})
    )
    host = await load_host()
    assert [(r.name, r.kind, r.status) for r in host.records] == [
        ("policy", "settings", "loaded"),
        ("pi_test_settings_mod:Audit", "settings", "loaded"),
    ]
    messages = [d.message for d in host.diagnostics]
    assert any("cannot load 'missing/nope.py': no such file" in m for m in messages)
    assert any("TypeScript" in m for m in messages)


def edit_in_place(path: Path, old: str, new: str) -> None:
    """Change ``path``'s text, keeping its size and modification time: an edit made within
    the clock tick (or, for CPython's bytecode check, the second) of the last import."""
    before = path.stat()
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def checked_hash_bytecode(source: Path) -> bool:
    """Whether ``source``'s ``.pyc`` exists and is validated by its source's hash (PEP 552)."""
    cached = Path(importlib.util.cache_from_source(str(source)))
    return cached.is_file() and int.from_bytes(cached.read_bytes()[4:8], "little") == 0b11


@pytest.mark.parametrize("kind", ["user", "cli"])
async def test_file_plugins_reload_fresh(
    agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # bytecode written, as users have it
    code = "from pi_hookspecs import hookimpl\nVERSION = 1\n@hookimpl\ndef agent_start():\n    pass\n"
    if kind == "user":
        path = write(agent_dir / "extensions" / "counter.py", code)
        options: dict[str, Any] = {}
    else:
        path = write(tmp_path / "work" / "counter.py", code)
        options = {"cwd": str(path.parent), "cli_extensions": ["./counter.py"]}
    first = await load_host(**options)
    again = await load_host(**options)
    assert record(first, "counter").plugin is record(again, "counter").plugin  # unchanged: cached
    assert record(first, "counter").plugin.VERSION == 1
    assert checked_hash_bytecode(path)  # its bytecode is kept, and checked against the source

    edit_in_place(path, "VERSION = 1", "VERSION = 2")
    new_session = await load_host(**options)  # a new session in the same process
    assert record(new_session, "counter").plugin.VERSION == 2
    reloaded = await load_host(fresh_files=True, **options)  # /reload
    assert record(reloaded, "counter").plugin.VERSION == 2
    assert record(reloaded, "counter").plugin is not record(new_session, "counter").plugin

    edit_in_place(path, "VERSION = 2", "VERSION = 3")
    assert record(await load_host(fresh_files=True, **options), "counter").plugin.VERSION == 3


async def test_package_plugins_reload_their_modules_fresh(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    package = agent_dir / "extensions" / "pack"
    write(
        package / "__init__.py",
        "from pi_hookspecs import hookimpl\nfrom .parts.helpers import VERSION\n"
        "@hookimpl\ndef agent_start():\n    pass\n",
    )
    write(package / "parts" / "__init__.py", "")
    helpers = write(package / "parts" / "helpers.py", "VERSION = 1\n")
    first = await load_host()
    assert record(first, "pack").plugin.VERSION == 1
    assert checked_hash_bytecode(helpers)

    edit_in_place(helpers, "VERSION = 1", "VERSION = 2")
    new_session = await load_host()
    assert record(new_session, "pack").plugin.VERSION == 2
    assert record(new_session, "pack").plugin is not record(first, "pack").plugin
    edit_in_place(helpers, "VERSION = 2", "VERSION = 3")
    reloaded = record(await load_host(fresh_files=True), "pack").plugin
    assert reloaded.VERSION == 3
    assert record(await load_host(), "pack").plugin is reloaded  # unchanged since: cached


async def test_module_with_several_classes_needs_pi_plugin(agent_dir: Path) -> None:
    body = (
        "from pi_hookspecs import hookimpl\nclass A:\n    @hookimpl\n    def agent_start(self): pass\n"
        "class B:\n    @hookimpl\n    def agent_end(self): pass\n"
    )
    write(agent_dir / "extensions" / "two.py", body)
    write(agent_dir / "extensions" / "chosen.py", body + "__pi_plugin__ = B\n")
    write(
        agent_dir / "extensions" / "ctor.py",
        "from pi_hookspecs import hookimpl\nclass P:\n    def __init__(self):\n"
        "        raise RuntimeError('no config')\n    @hookimpl\n    def agent_start(self): pass\n",
    )
    host = await load_host()
    assert "several plugin classes (A, B)" in record(host, "two").error
    assert record(host, "chosen").hooks == ["agent_end"]
    assert "creating P() failed: RuntimeError: no config" in record(host, "ctor").error


# --------------------------------------------------------------------------- project trust


def project_plugin(project: Path) -> Path:
    marker = project / "imported.txt"
    write(
        project / ".pi" / "extensions" / "proj.py",
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start():\n    pass\n",
    )
    return marker


async def test_untrusted_project_code_never_runs(project: Path) -> None:
    marker = project_plugin(project)
    host = await load_host(cwd=str(project))
    assert not marker.exists()
    assert [(r.name, r.status) for r in host.records] == [("proj", "skipped")]
    assert "not trusted" in record(host, "proj").error


async def test_project_trust_hook_decides_then_project_plugins_load(project: Path) -> None:
    marker = project_plugin(project)

    class Trusting:
        @hookimpl
        def project_trust(self, event: Any) -> Any:
            self.asked = event.cwd
            return {"trusted": "yes"}

    host = await load_host(Trusting, cwd=str(project))
    assert marker.read_text() == "ran"
    assert record(host, "proj").status == "loaded" and host.project_trusted
    assert record(host, "Trusting").plugin.asked == str(project.resolve())


async def test_phase_two_keeps_the_plugin_manager_unless_the_project_adds_plugins(project: Path) -> None:
    """Each plugin is registered with pluggy once: the trust bootstrap's manager is the
    final one when the project adds no plugin; a trusted project plugin gets a new
    manager holding every plugin in load order."""

    class Early:
        @hookimpl
        def agent_start(self) -> None:
            pass

    project_plugin(project)
    host = PluginHost(LoadOptions(sdk_plugins=[Early], entry_points=False, builtins=[], cwd=str(project)))
    host.load_phase_one()
    first = host.pm
    await host.load_phase_two(project_trusted=False)  # the project's plugin is skipped
    assert host.pm is first and host.runner.pm is first
    assert [impl.plugin_name for impl in host.pm.hook.agent_start.get_hookimpls()] == ["Early"]

    trusted = PluginHost(LoadOptions(sdk_plugins=[Early], entry_points=False, builtins=[], cwd=str(project)))
    trusted.load_phase_one()
    first = trusted.pm
    await trusted.load_phase_two(project_trusted=True)
    assert trusted.pm is not first and trusted.runner.pm is trusted.pm
    in_load_order = [r.name for r in trusted.records if r.status == "loaded"]
    assert sorted(in_load_order) == ["Early", "proj"]
    assert [impl.plugin_name for impl in trusted.pm.hook.agent_start.get_hookimpls()] == in_load_order


async def test_project_plugins_do_not_take_part_in_the_trust_decision(project: Path) -> None:
    write(
        project / ".pi" / "extensions" / "self_trust.py",
        "from pi_hookspecs import hookimpl\n@hookimpl\ndef project_trust(event):\n    return {'trusted': 'yes'}\n",
    )
    host = await load_host(cwd=str(project))
    assert not host.project_trusted and record(host, "self_trust").status == "skipped"


async def test_project_settings_extensions_only_when_trusted(project: Path) -> None:
    write(project / "tools" / "lint.py", "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_end():\n    pass\n")
    write(project / ".pi" / "settings.json", json.dumps({"extensions": ["../tools/lint.py"]}))
    untrusted = await load_host(cwd=str(project))
    assert [(r.name, r.status) for r in untrusted.records] == [("lint", "skipped")]
    trusted = await load_host(cwd=str(project), project_trusted=True)
    assert [(r.name, r.kind, r.status) for r in trusted.records] == [("lint", "settings", "loaded")]


async def test_load_order_of_all_sources(agent_dir: Path, project: Path, site_dir: Path) -> None:
    install_good(site_dir)
    body = "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start():\n    pass\n"
    write(agent_dir / "extensions" / "user_plugin.py", body)
    write(agent_dir / "conf" / "configured.py", body)
    (agent_dir / "settings.json").write_text(json.dumps({"extensions": ["conf/configured.py"]}))
    write(project / ".pi" / "extensions" / "project_plugin.py", body)
    write(project / "cli_plugin.py", body)

    class Builtin:
        @hookimpl(trylast=True)
        def agent_start(self) -> None: ...

    class Sdk:
        @hookimpl
        def agent_start(self) -> None: ...

    host = await load_host(
        Sdk,
        builtins=[("core", Builtin)],
        entry_points=TEST_EPS,
        cwd=str(project),
        cli_extensions=["./cli_plugin.py"],
        project_trusted=True,
    )
    assert [(r.name, r.kind) for r in host.records] == [
        ("core", "builtin"),
        ("good", "entrypoint"),
        ("user_plugin", "user"),
        ("configured", "settings"),
        ("project_plugin", "project"),
        ("cli_plugin", "cli"),
        ("Sdk", "sdk"),
    ]
    order = [i.plugin for i in host.runner.handlers("agent_start")]
    assert order == ["Sdk", "cli_plugin", "project_plugin", "configured", "user_plugin", "core"]


# --------------------------------------------------------------------------- controls


async def test_cli_extension_by_path_module_and_entry_point_name(site_dir: Path, project: Path) -> None:
    install_good(site_dir)
    write(project / "local.py", "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start():\n    pass\n")
    write(site_dir / "pi_test_climod.py", "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_end():\n    pass\n")
    host = await load_host(cwd=str(project), cli_extensions=["./local.py", "pi_test_climod", "good", "./gone.py"])
    assert [(r.name, r.kind, r.status) for r in host.records] == [
        ("local", "cli", "loaded"),
        ("pi_test_climod", "cli", "loaded"),
        ("good", "cli", "loaded"),
    ]
    assert record(host, "good").source.distribution == "pi-test-good"
    assert any("cannot load './gone.py'" in d.message for d in host.diagnostics)


@pytest.mark.parametrize(("value", "expected"), [("", set()), ("good", {"good"}), (" good , other ", {"good"})])
async def test_pi_extensions_env_filters_installed_plugins(
    value: str, expected: set[str], site_dir: Path, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_good(site_dir)
    install_broken(site_dir)
    write(
        agent_dir / "extensions" / "other.py", "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start(): pass\n"
    )

    class Builtin:
        @hookimpl
        def agent_start(self) -> None: ...

    monkeypatch.setenv("PI_EXTENSIONS", value)  # read at load time, not import time
    host = await load_host(builtins=[("core", Builtin)], entry_points=TEST_EPS)
    loaded = {r.name for r in host.records if r.status == "loaded"}
    assert loaded == expected | {"core"} | ({"other"} if "other" in value else set())
    assert record(host, "broken").status == "disabled"  # never imported: no error
    assert "PI_EXTENSIONS" in record(host, "broken").error


async def test_disabled_extensions_setting_and_no_extensions(site_dir: Path, agent_dir: Path) -> None:
    install_good(site_dir)
    install_broken(site_dir)
    (agent_dir / "settings.json").write_text(json.dumps({"disabledExtensions": ["broken"]}))
    host = await load_host(entry_points=TEST_EPS)
    assert {r.name: r.status for r in host.records} == {"good": "loaded", "broken": "disabled"}
    assert not host.diagnostics

    class Explicit:
        @hookimpl
        def agent_start(self) -> None: ...

    host = await load_host(Explicit, entry_points=TEST_EPS, no_extensions=True)
    assert {r.name: r.status for r in host.records} == {"good": "disabled", "broken": "disabled", "Explicit": "loaded"}


async def test_strict_mode_raises_load_errors(site_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_broken(site_dir)
    monkeypatch.setenv("PI_EXTENSIONS_STRICT", "1")
    with pytest.raises(ExtensionLoadError, match="pi_test_this_module_does_not_exist"):
        await load_host(entry_points=TEST_EPS)


async def test_same_name_from_two_sources_is_registered_under_a_qualified_name(site_dir: Path, agent_dir: Path) -> None:
    install_good(site_dir)
    write(
        agent_dir / "extensions" / "good.py", "from pi_hookspecs import hookimpl\n@hookimpl\ndef agent_start(): pass\n"
    )
    host = await load_host(entry_points=TEST_EPS)
    assert [(r.name, r.status) for r in host.records] == [("good", "loaded"), ("good@user", "loaded")]
    assert any("registered as 'good@user'" in d.message for d in host.diagnostics)


async def test_plugin_tool_replaces_builtin_tool_but_plugins_conflict() -> None:
    def provider(label: str, text: str, kind_builtin: bool = False) -> Any:
        @h.tool(name="read")
        def read_tool(path: str) -> str:
            """Read a file."""
            return text

        return type(label, (), {"register_tools": hookimpl(lambda self, register: register(read_tool))})

    host = await load_host(
        provider("Second", "two"), provider("Third", "three"), builtins=[("core", provider("Core", "builtin"))]
    )
    reg = host.registry.tools["read"]
    assert reg.plugin == "Second" and reg.shadows is not None and reg.shadows.plugin == "core"
    assert any(d.plugin == "Third" and "already registered by plugin 'Second'" in d.message for d in host.diagnostics)


async def test_broken_settings_file_is_reported_not_fatal(agent_dir: Path) -> None:
    (agent_dir / "settings.json").write_text('{\n  "extensions": [\n    "a.py",\n  ]\n}\n')
    host = await load_host()
    # The host loads and says nothing itself: settings problems are reported once, by
    # the resource loader (tests/cli/test_cli_bad_files.py checks the one line per mode).
    assert host.diagnostics == []
    (error,) = host.settings.errors
    assert f"{agent_dir / 'settings.json'}:4:3: invalid JSON" in str(error)


async def test_registration_hook_that_raises_is_a_diagnostic() -> None:
    class Half:
        @hookimpl
        def register_commands(self, register: Any) -> None:
            register("one", lambda a, c: None)
            raise RuntimeError("config missing")

    host = await load_host(Half)
    assert "one" in host.registry.commands
    assert any(
        d.plugin == "Half" and "register_commands failed: RuntimeError: config missing" in d.message
        for d in host.diagnostics
    )


async def test_phase_one_only_then_phase_two(project: Path) -> None:
    project_plugin(project)
    host = PluginHost(LoadOptions(cwd=str(project), entry_points=False, builtins=[]))
    host.load_phase_one()
    assert host.records == [] and host.project_needs_trust()
    await host.load_phase_two(project_trusted=True)
    assert [r.name for r in host.loaded] == ["proj"]


async def test_run_registration_without_a_session() -> None:
    """The command line reads flags, subcommands and providers through the host's one
    registration API after phase one (no session, no private calls)."""

    class Flags:
        @hookimpl
        async def register_flags(self, register: Any) -> None:
            register("plan", description="Start in plan mode")
            register("Bad Flag!")

    class Crashes:
        @hookimpl
        def register_flags(self, register: Any) -> None:
            raise OSError("no config")

    class Commands:
        @hookimpl
        def register_cli_commands(self, register: Any) -> None:
            register("greet", lambda args: 0, help="Say hi")

    host = PluginHost(LoadOptions(sdk_plugins=[Flags, Crashes, Commands], entry_points=False, builtins=[]))
    host.load_phase_one()
    added = await host.run_registration("register_flags")
    assert list(host.registry.flags) == ["plan"] and host.registry.flags["plan"].plugin == "Flags"
    assert [(d.plugin, d.level) for d in added] == [("Flags", "error"), ("Crashes", "error")]
    assert added[0].message.startswith("register_flags: invalid flag: name")
    assert "register_flags failed: OSError: no config" in added[1].message
    assert not host.registry.cli_commands  # only the hook asked for ran
    assert await host.run_registration("register_cli_commands") == []
    assert host.registry.cli_commands["greet"].plugin == "Commands"
    with pytest.raises(ValueError, match="'session_start' is not a registration hook"):
        await host.run_registration("session_start")


def test_the_command_line_collects_plugin_flags_and_subcommands_through_the_host(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from pi_core.cli.main import plugin_flag_definitions
    from pi_core.cli.plugin_commands import load_cli_commands

    write(
        agent_dir / "extensions" / "cli_plugin.py",
        """
        from pi_hookspecs import hookimpl

        @hookimpl
        def register_flags(register):
            register("tour", description="A flag")
            register("Bad Flag!")

        @hookimpl
        def register_cli_commands(register):
            register("tour-cli", lambda args: 0, help="A subcommand")
    """,
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PI_EXTENSIONS", "cli_plugin")
    pre = types.SimpleNamespace(extension=[], no_extensions=False)
    assert [flag.value.name for flag in plugin_flag_definitions(pre)] == ["tour"]
    assert "pi: error: plugin 'cli_plugin'" in capsys.readouterr().err
    assert list(load_cli_commands()) == ["tour-cli"]


def test_a_plugin_subcommand_declared_in_pi_cli_commands_starts_without_loading_plugins(
    site_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pi NAME`` looks NAME up in the ``pi.cli_commands`` entry-point group first
    (``pi acp``: the editor waits for its handshake); a broken entry falls back to the
    plugins' ``register_cli_commands``."""
    from pi_core.cli import cli_main as main
    from pi_core.cli import plugin_commands

    write(
        site_dir / "pi_test_fastcmd.py",
        """
        import sys

        def main(args):
            print("fast", args)
            return 3
    """,
    )
    info = site_dir / "pi_test_fastcmd-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: pi-test-fastcmd\nVersion: 1.0\n")
    write(
        info / "entry_points.txt",
        "[pi.cli_commands]\nfastcmd = pi_test_fastcmd:main\nbroken = pi_test_fastcmd:missing\n",
    )
    write(info / "RECORD", "")
    loaded: list[str] = []
    registered = {"broken": types.SimpleNamespace(name="broken", main=lambda args: 5)}
    monkeypatch.setattr(plugin_commands, "load_cli_commands", lambda: loaded.append("plugins") or registered)
    with pytest.raises(SystemExit) as exit_info:
        main(["fastcmd", "--flag", "x"])
    assert exit_info.value.code == 3 and loaded == []
    assert "fast ['--flag', 'x']" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["broken"])
    assert exit_info.value.code == 5 and loaded == ["plugins"]
    assert "entry point 'pi_test_fastcmd:missing' (pi.cli_commands) failed to load" in capsys.readouterr().err
