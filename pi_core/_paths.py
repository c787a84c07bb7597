"""Where pi keeps its files (shared with the TypeScript pi).

* the agent directory: ``~/.pi/agent``, or ``$PI_CODING_AGENT_DIR``;
* the project directory: ``<cwd>/.pi``.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_DIR_NAME = ".pi"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def agent_dir() -> Path:
    """The agent directory, read from the environment on every call."""
    override = os.environ.get(AGENT_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / CONFIG_DIR_NAME / "agent"


def project_dir(cwd: str | os.PathLike[str]) -> Path:
    return Path(cwd) / CONFIG_DIR_NAME
