"""``python -m pi_core`` runs the ``pi`` command."""

from .cli import main

main()
