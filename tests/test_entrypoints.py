"""pi_core._entrypoints finds what importlib.metadata finds, without importing it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from pi_core._entrypoints import entry_points


def _reference(group: str) -> list[tuple[str, str, str, str | None, str | None]]:
    rows = []
    for ep in metadata.entry_points(group=group):
        dist = ep.dist
        rows.append((group, ep.name, ep.value, dist.metadata["Name"] if dist else None, dist.version if dist else None))
    return sorted(rows)


def _ours(group: str) -> list[tuple[str, str, str, str | None, str | None]]:
    return sorted((e.group, e.name, e.value, e.distribution, e.version) for e in entry_points(group))


@pytest.mark.parametrize("group", ["pi.extensions", "pi.cli_commands", "console_scripts", "pytest11"])
def test_same_answer_as_importlib_metadata_in_this_environment(group: str) -> None:
    assert _ours(group) == _reference(group)
    if group in ("pi.extensions", "console_scripts"):
        assert _ours(group), "the workspace installs entry points of this group"


def _dist(site: Path, name: str, version: str, body: str, *, metadata_name: str | None = None) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {metadata_name or name}\nVersion: {version}\n\nName: not a header\n"
    )
    (info / "entry_points.txt").write_text(body)


def test_first_distribution_on_the_path_wins_and_groups_are_separate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "pi-thing", "2.0", "# comment\n[pi.extensions]\nthing = thing_mod:Plugin [extra]\n\n[other]\nx = y\n")
    _dist(second, "pi_thing", "1.0", "[pi.extensions]\nold = old_mod\n")
    _dist(second, "Pi.Other", "0.3", "[pi.cli_commands]\nfast = other_mod:main\n", metadata_name="Pi.Other")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    assert _ours("pi.extensions") == _reference("pi.extensions")
    assert _ours("pi.cli_commands") == _reference("pi.cli_commands")
    [thing] = [e for e in entry_points("pi.extensions") if e.distribution == "pi-thing"]
    assert (thing.name, thing.version) == ("thing", "2.0")
    assert not [e for e in entry_points("pi.extensions") if e.name == "old"]


def test_load_imports_the_named_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pi_ep_target.py").write_text("class Outer:\n    class Inner:\n        pass\n")
    _dist(tmp_path, "pi-ep-target", "1.0", "[pi.extensions]\ntarget = pi_ep_target:Outer.Inner\nmod = pi_ep_target\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {e.name: e for e in entry_points("pi.extensions")}
    assert found["target"].load().__qualname__ == "Outer.Inner"
    assert found["mod"].load().__name__ == "pi_ep_target"
    sys.modules.pop("pi_ep_target", None)


def test_a_zip_on_the_path_falls_back_to_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pi_zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pi-zipped\nVersion: 1.0\n")
        zf.writestr("pi_zipped-1.0.dist-info/entry_points.txt", "[pi.extensions]\nzipped = pi_zipped\n")
    monkeypatch.syspath_prepend(str(archive))
    assert ("pi.extensions", "zipped", "pi_zipped", "pi-zipped", "1.0") in _ours("pi.extensions")


def test_a_run_walks_the_installed_distributions_once(tmp_path: Path) -> None:
    """Finding pi's plugins answers pydantic's plugin lookup too: neither pi nor pydantic
    (building its first schema) asks importlib.metadata to walk every distribution."""
    code = (
        "import importlib.metadata as m\ncalls = []\n"
        "for name in ('entry_points', 'distributions', 'distribution'):\n"
        "    real = getattr(m, name)\n"
        "    setattr(m, name, lambda *a, _real=real, _name=name, **k: (calls.append(_name), _real(*a, **k))[1])\n"
        "import pi_core._entrypoints\npi_core._entrypoints.prepare()  # as pi_core.cli.main does\n"
        "from pi_core.extensions import LoadOptions, PluginHost\n"
        f"host = PluginHost(LoadOptions(cwd={str(tmp_path)!r}))\nhost.load_phase_one()\n"
        "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"
        "assert M(x=1).x == 1\n"
        "import httpx2\n"
        "print(calls)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_importing_httpx2_and_building_a_schema_leave_importlib_metadata_unimported() -> None:
    """pydantic's plugin lookup and httpx2's version are answered by the walk; httpx2 sees
    the version importlib.metadata would give, and the real module's other names."""
    code = (
        "import sys\nimport pi_core._entrypoints\npi_core._entrypoints.prepare()\n"
        "import httpx2\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"
        "assert M(x=1).x == 1\n"
        "assert 'importlib.metadata' not in sys.modules\n"
        "stub = sys.modules['httpx2.__version__']\n"
        "import os, runpy\nreal = runpy.run_path(os.path.join(os.path.dirname(httpx2.__file__), '__version__.py'))\n"
        "assert (httpx2.__title__, httpx2.__version__) == (real['__title__'], real['__version__'])\n"
        "assert stub.__description__ and isinstance(stub.__description__, str)\n"
        "try:\n    stub.not_a_name\nexcept AttributeError:\n    print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ok"


def test_pydantic_plugins_are_left_to_pydantic_when_one_is_installed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site).mkdir()
    (site / "pi_pyd_plugin.py").write_text(
        "class Plugin:\n    def new_schema_validator(self, *a, **k):\n"
        "        return None, None, None\nplugin = Plugin()\n"
    )
    _dist(site, "pi-pyd-plugin", "1.0", "[pydantic]\nmine = pi_pyd_plugin:plugin\n")
    code = (
        f"import sys\nsys.path.insert(0, {str(site)!r})\n"
        "import pi_core._entrypoints\npi_core._entrypoints.prepare()\n"
        "from pi_core.extensions import LoadOptions, PluginHost\n"
        f"PluginHost(LoadOptions(cwd={str(tmp_path)!r})).load_phase_one()\n"
        "from pydantic.plugin import _loader\nprint(len(list(_loader.get_plugins())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"
