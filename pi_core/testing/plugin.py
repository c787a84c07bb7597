"""The pytest plugin (``pytest11`` entry point ``pi``): fixtures for testing pi plugins.

* ``pi_agent_dir`` — a temporary agent directory (``PI_CODING_AGENT_DIR`` points at it);
* ``pi_project`` — a temporary project folder;
* ``pi`` — a :class:`~pi_core.testing.PiHarness` on the scripted model in that project.

Installed plugins never load in a harness: a test names its plugins with ``pi.use(...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from . import PiHarness


@pytest.fixture
def pi_agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "pi-agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    for name in ("PI_EXTENSIONS", "PI_EXTENSIONS_STRICT", "PI_TRACE_HOOKS", "PI_CODING_AGENT_SESSION_DIR"):
        monkeypatch.delenv(name, raising=False)
    return agent


@pytest.fixture
def pi_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def pi(pi_agent_dir: Path, pi_project: Path) -> Iterator[PiHarness]:
    harness = PiHarness(pi_agent_dir, pi_project)
    try:
        yield harness
    finally:
        harness.close()
