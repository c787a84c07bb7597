"""Where pi keeps its files (shared with the TypeScript pi).

* the agent directory: ``~/.pi/agent``, or ``$PI_CODING_AGENT_DIR``;
* the project directory: ``<cwd>/.pi``.

The lookup is the contract's (:mod:`pi_hookspecs.toolkit`), so pi and its plugins can
never disagree about where these are.
"""

from __future__ import annotations

from pi_hookspecs.toolkit import AGENT_DIR_ENV, CONFIG_DIR_NAME, agent_dir, project_dir

__all__ = ["AGENT_DIR_ENV", "CONFIG_DIR_NAME", "agent_dir", "project_dir"]
