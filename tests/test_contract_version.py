"""A plugin made for another major version of the plugin contract is not imported: one
error names both versions (``pi extensions list``, the start of ``pi -p``), instead of an
AttributeError from inside the plugin. Installed distributions here are real ones: a
package plus its ``.dist-info`` on a ``sys.path`` folder."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import pi_hookspecs
from conftest import load_host, write
from pi_core import _entrypoints
from pi_core.extensions import ExtensionLoadError
from pi_core.extensions.contract import CONTRACT, contract_mismatch, satisfies, unmet_requirement

CONTRACT_2_PLUGIN = """
import pi_hookspecs
from pi_hookspecs import hookimpl

pi_hookspecs.HookOnlyInContract2  # what a plugin for contract 2.x would use: AttributeError here

class Plugin:
    @hookimpl
    def agent_start(self):
        pass
"""

PLUGIN = """
from pi_hookspecs import hookimpl

class Plugin:
    @hookimpl
    def agent_start(self):
        pass
"""


def install(site: Path, *, dist: str, version: str, module: str, code: str, requires: list[str]) -> None:
    """A real installed distribution: ``module.py`` and its ``.dist-info`` with
    ``Requires-Dist`` headers (as a wheel built by hatchling writes them) and a readme."""
    write(site / f"{module}.py", code)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    headers = ["Metadata-Version: 2.4", f"Name: {dist}", f"Version: {version}", "License-Expression: MIT"]
    headers += [f"Requires-Dist: {value}" for value in requires]
    headers += ["Description-Content-Type: text/markdown"]
    # the readme after the blank line: a line there that looks like a header is not one
    write(info / "METADATA", "\n".join(headers) + "\n\n# readme\nRequires-Dist: pluggable-pi-hookspecs>=9\n")
    write(info / "entry_points.txt", f"[pi.extensions]\n{module.removeprefix('pi_test_')} = {module}:Plugin\n")
    write(info / "RECORD", "")


def install_contract_2(site: Path) -> None:
    install(
        site,
        dist="pluggable-pi-foo",
        version="2.1.0",
        module="pi_test_foo",
        code=CONTRACT_2_PLUGIN,
        requires=["pluggable-pi-hookspecs<3,>=2", "pydantic>=2.7"],
    )


def expected_message() -> str:
    have = pi_hookspecs.__version__
    return (
        f"pluggable-pi-foo 2.1.0 needs the plugin contract pluggable-pi-hookspecs>=2,<3; pi has {have}: not loaded "
        f"(install a release of pluggable-pi-foo made for the contract {have.split('.')[0]}.x, "
        "or a pi whose contract is pluggable-pi-hookspecs>=2,<3)"
    )


async def test_a_plugin_for_contract_2_is_one_error_naming_both_versions_and_is_not_imported(site_dir: Path) -> None:
    install_contract_2(site_dir)
    install(
        site_dir,
        dist="pi-test-bar",
        version="1.4.0",
        module="pi_test_bar",
        code=PLUGIN,
        requires=["pluggable-pi-hookspecs<2,>=1.0"],
    )
    host = await load_host(entry_points=["foo", "bar"])
    foo = next(r for r in host.records if r.name == "foo")
    assert (foo.status, foo.error) == ("error", expected_message())
    assert [d.format() for d in host.diagnostics] == [f"error: plugin 'foo': {expected_message()}"]
    assert "pi_test_foo" not in sys.modules  # never imported: no AttributeError
    bar = next(r for r in host.records if r.name == "bar")
    assert bar.status == "loaded" and bar.source.version == "1.4.0"


async def test_what_the_contract_check_ignores(site_dir: Path) -> None:
    """A requirement of the plugin's extras, one for another platform, a plugin without
    any requirement on the contract: all load."""
    install(
        site_dir,
        dist="pi-test-extra",
        version="1.0",
        module="pi_test_extra",
        code=PLUGIN,
        requires=['pluggable-pi-hookspecs>=7; extra == "future"', "pluggable-pi-hookspecs>=1.0"],
    )
    install(
        site_dir,
        dist="pi-test-elsewhere",
        version="1.0",
        module="pi_test_elsewhere",
        code=PLUGIN,
        requires=['pluggable-pi-hookspecs>=7; sys_platform == "no-such-platform"'],
    )
    install(site_dir, dist="pi-test-free", version="1.0", module="pi_test_free", code=PLUGIN, requires=[])
    host = await load_host(entry_points=["extra", "elsewhere", "free"])
    assert [(r.name, r.status) for r in host.records] == [
        ("elsewhere", "loaded"),
        ("extra", "loaded"),
        ("free", "loaded"),
    ]
    assert host.diagnostics == []


async def test_a_disabled_plugin_is_not_checked_and_strict_mode_raises(
    site_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_contract_2(site_dir)
    monkeypatch.setenv("PI_EXTENSIONS", "")
    host = await load_host(entry_points=["foo"])
    assert [(r.name, r.status) for r in host.records] == [("foo", "disabled")] and host.diagnostics == []
    monkeypatch.delenv("PI_EXTENSIONS")
    monkeypatch.setenv("PI_EXTENSIONS_STRICT", "1")
    with pytest.raises(ExtensionLoadError, match="needs the plugin contract pluggable-pi-hookspecs>=2,<3"):
        await load_host(entry_points=["foo"])


async def test_e_name_of_an_installed_plugin_is_checked_too(site_dir: Path) -> None:
    install_contract_2(site_dir)
    host = await load_host(entry_points=False, cli_extensions=["foo"])
    assert [(r.name, r.kind, r.status, r.error) for r in host.records] == [("foo", "cli", "error", expected_message())]


def pi(*args: str, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "PI_EXTENSIONS": "foo",
    }
    return subprocess.run(
        [sys.executable, "-m", "pi_core", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_pi_extensions_list_and_the_start_of_pi_p_show_the_one_error(site_dir: Path, tmp_path: Path) -> None:
    install_contract_2(site_dir)
    listed = pi("extensions", "list", site=site_dir, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    block = listed.stdout[listed.stdout.index("foo  [entry point]") :].splitlines()
    assert block[:3] == ["foo  [entry point]  error", "    from: pluggable-pi-foo 2.1.0", f"    {expected_message()}"]
    assert "AttributeError" not in listed.stdout + listed.stderr
    run = pi("-p", "--model", "faux/offline-demo", "hi", site=site_dir, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [f"pi: error: plugin 'foo': {expected_message()}"]
    assert "offline demo model" in run.stdout


# --------------------------------------------------------------------------- reading the requirement


def test_requirements_on_reads_what_importlib_metadata_reads() -> None:
    """The workspace's installed plugins, as the walk at the start of pi found them."""
    found = {ep.distribution for ep in _entrypoints.entry_points("pi.extensions")}
    assert "pluggable-pi-mcp" in found
    for dist in sorted(d for d in found if d):
        reference = tuple(
            r for r in metadata.requires(dist) or [] if r.split(";")[0].replace("_", "-").startswith(CONTRACT)
        )
        assert _entrypoints.requirements_on(dist, CONTRACT) == reference, dist
    assert _entrypoints.requirements_on("pluggable-pi-mcp", CONTRACT)  # every plugin pins the contract


def test_the_installed_plugins_pass_the_check() -> None:
    assert {
        ep.name: contract_mismatch(ep.distribution, ep.version) for ep in _entrypoints.entry_points("pi.extensions")
    } == {ep.name: None for ep in _entrypoints.entry_points("pi.extensions")}


SPECIFIERS = [
    ">=1.0,<2",
    "<2,>=1.0",
    ">=1.0,<1.1",
    ">=2,<3",
    "<3,>=2.0",
    "==1.0",
    "==1.0.0",
    "!=1.0",
    ">1.0",
    ">1",
    "<=1.0",
    "<1.0.1",
    ">=1.0.0.0",
    "~=1.0",
    "~=1.1",
    "==1.*",
    "==2.*",
    ">=1.0rc1",
    "<1.0.1rc1",
    ">=1.0.post1",
    "===1.0.0",
    ">=1.0, <2",
    " >= 1.0 , < 2 ",
]
VERSIONS = ["1.0.0", "1.0", "1", "1.0.1", "1.1.0", "2.0.0", "0.9", "1.0.0rc1", "2.0.0rc1", "1.0.0.post1", "1.0.0+local"]


@pytest.mark.parametrize("version", VERSIONS)
def test_satisfies_agrees_with_packaging(version: str) -> None:
    for specifier in SPECIFIERS:
        reference = SpecifierSet(specifier).contains(Version(version), prereleases=True)
        assert satisfies(specifier, version) is reference, (specifier, version)


def test_unmet_requirement_forms() -> None:
    assert unmet_requirement(["pluggable-pi-hookspecs<2,>=1.0"], "1.0.0") is None
    assert unmet_requirement(["pluggable-pi-hookspecs<2,>=1.0"], "2.0.0") == ">=1.0,<2"
    assert unmet_requirement(["pluggable_pi_hookspecs (<2,>=1.0)"], "2.0.0") == ">=1.0,<2"  # the old form
    assert unmet_requirement(["Pluggable__Pi.hookspecs>=3"], "2.0.0") == ">=3"  # any spelling of the name
    assert unmet_requirement(["pluggable-pi-hookspecs>=1.0,<2"], "2.0.0.dev1") == ">=1.0,<2"  # packaging decides
    assert unmet_requirement(["pluggable-pi-hookspecs[extra]>=3"], "2.0.0") == ">=3"
    assert unmet_requirement(["pluggable-pi-hookspecs @ file:///somewhere"], "2.0.0") is None
    assert unmet_requirement(["pluggable-pi-hookspecs"], "2.0.0") is None
    assert unmet_requirement(['pluggable-pi-hookspecs>=3; extra == "test"'], "2.0.0") is None
    assert unmet_requirement(["pluggable-pi-hookspecs>=1", "pluggable-pi-hookspecs<2"], "2.0") == "<2"


def test_the_usual_pins_are_decided_without_importing_packaging() -> None:
    """At every start: packaging costs milliseconds to import."""
    code = (
        "import sys\nfrom pi_core.extensions.contract import unmet_requirement\n"
        "assert unmet_requirement(['pluggable-pi-hookspecs<2,>=1.0'], '1.0.0') is None\n"
        "assert unmet_requirement(['pluggable-pi-hookspecs<3,>=2'], '1.0.0') == '>=2,<3'\n"
        "assert unmet_requirement(['pluggable-pi-hookspecs>=1.0,<1.1; extra == \"x\"'], '1.0.0') is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('packaging')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
