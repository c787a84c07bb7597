"""Shared fixtures. Tests never autoload the plugins installed in the environment:
they register exactly the plugins they need."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pi_core.extensions import LoadOptions, PluginHost

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_env(pi_agent_dir: Path) -> Path:
    """A private agent dir and no plugin-related environment leaking into a test: the
    published kit's ``pi_agent_dir`` (pi_core.testing), for every test."""
    return pi_agent_dir


@pytest.fixture
def agent_dir(pi_agent_dir: Path) -> Path:
    return pi_agent_dir


@pytest.fixture
def project(pi_project: Path) -> Path:
    return pi_project


async def load_host(*plugins: Any, **options: Any) -> PluginHost:
    """A fully loaded host with only ``plugins`` (as SDK plugins) unless told otherwise."""
    options.setdefault("entry_points", False)
    options.setdefault("builtins", [])
    trusted = options.pop("project_trusted", None)
    host = PluginHost(LoadOptions(sdk_plugins=list(plugins), **options))
    await host.load(project_trusted=trusted)
    return host


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def make_distribution(
    site: Path,
    *,
    dist: str,
    version: str,
    module: str,
    code: str,
    entry_points: dict[str, str],
) -> None:
    """A real installed distribution: a module plus its ``.dist-info`` with
    ``entry_points.txt``, in ``site`` (a directory put on ``sys.path``)."""
    write(site / f"{module}.py", code)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = ["[pi.extensions]", *(f"{name} = {target}" for name, target in entry_points.items())]
    write(info / "entry_points.txt", "\n".join(lines) + "\n")
    write(info / "RECORD", "")


@pytest.fixture
def site_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on ``sys.path`` to install test distributions into."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in [m for m in sys.modules if m.startswith("pi_test_")]:
        del sys.modules[name]
