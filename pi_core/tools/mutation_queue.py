"""The per-file mutation queue used by ``edit`` and ``write``.

It lives in the plugin contract (:mod:`pi_hookspecs.files`) so that plugin tools join
the very same queue without importing pi's core; this module re-exports it.
"""

from __future__ import annotations

from pi_hookspecs.files import file_mutation_lock, mutation_queue_key, pending_mutations, with_file_mutation_queue

__all__ = ["file_mutation_lock", "mutation_queue_key", "pending_mutations", "with_file_mutation_queue"]
