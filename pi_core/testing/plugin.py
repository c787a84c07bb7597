"""The pytest plugin (``pytest11`` entry point ``pi``): fixtures for testing pi plugins.

* ``pi_agent_dir`` — a temporary agent directory (``PI_CODING_AGENT_DIR`` points at it,
  and no ``PI_EXTENSIONS*`` / ``PI_TRACE_HOOKS`` / ``PI_CODING_AGENT_SESSION_DIR`` of
  the developer's environment leaks into the test); it lies outside ``tmp_path``, so a
  test that lists its ``tmp_path`` does not see it;
* ``pi_project`` — a temporary project folder;
* ``pi`` — a :class:`~pi_core.testing.PiHarness` on the scripted model in that project.

Installed plugins never load in a harness: a test names its plugins with ``pi.use(...)``.

pytest loads this module in every run of an environment where pluggable-pi is installed,
so it imports nothing of pi until the ``pi`` fixture is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .._paths import AGENT_DIR_ENV

if TYPE_CHECKING:
    from . import PiHarness

ISOLATED_VARIABLES = ("PI_EXTENSIONS", "PI_EXTENSIONS_STRICT", "PI_TRACE_HOOKS", "PI_CODING_AGENT_SESSION_DIR")
"""Environment variables of the developer's own pi that a test never sees."""


@pytest.fixture
def pi_agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path_factory.mktemp("pi-agent")
    monkeypatch.setenv(AGENT_DIR_ENV, str(agent))
    for name in ISOLATED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return agent


@pytest.fixture
def pi_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def pi(pi_agent_dir: Path, pi_project: Path) -> Iterator[PiHarness]:
    from . import pi_harness  # the harness imports the whole runtime: only when a test uses it

    yield from pi_harness(pi_agent_dir, pi_project)
