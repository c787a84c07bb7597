"""pi's core: the runtime, the built-in tools and the ``pi`` command.

Plugins must not import from here: their contract is :mod:`pi_hookspecs`.
"""

__version__ = "0.1.0"
