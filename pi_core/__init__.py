"""pi's core: the runtime, the built-in tools and the ``pi`` command.

Plugins must not import from here: their contract is :mod:`pi_hookspecs`. A front end
that serves the whole runtime to another user interface (pluggable-pi-acp's ``pi acp``) uses the
public SDK only: :mod:`pi_core.runtime` (``create_agent_session``) and the objects it
documents (``docs/sdk.md``).
"""

__version__ = "1.0.0"
