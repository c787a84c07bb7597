"""The ``pi`` process around a run: the garbage collector during start-up, and a quick
exit once print or json mode is done.

Both apply only when :func:`pi_core.cli.main` runs as the process's entry point (the
``pi`` console script or ``python -m pi_core``); code that calls the CLI functions inside
another process (tests, embedding) keeps Python's normal collector and exit.

* **Start-up.** Imports, plugins and the loaded session build hundreds of thousands of
  objects that live until the process ends; collections during start-up, and every full
  collection later, rescan all of them (over a second in a 20,000-entry resume, most of
  it while the first request is built). The collector is off from
  the start of ``main`` until the runtime is open (:func:`startup_done`); then everything
  built so far is moved to the permanent generation (``gc.freeze``), which later
  collections never scan, and the collector is switched back on with a larger young
  generation (:data:`THRESHOLDS`). Garbage cycles made during start-up (about 2,000
  objects) are frozen too; a full collection to find them would cost 0.3 s.
* **Exit.** Tearing the interpreter down frees every object one by one: 50 ms after a
  small run, 0.4-0.9 s after a 20,000-entry resume, all after the answer is printed. Once print or json mode has disposed of its
  runtime (``session_shutdown`` handlers ran, child processes and MCP servers were
  stopped, the session file was fsynced and closed) it calls :func:`allow_fast_exit`;
  :func:`exit_process` then runs the ``atexit`` handlers, flushes stdout and stderr and
  leaves with ``os._exit``. A non-daemon thread still running (a normal exit waits for
  it) or a failing flush falls back to the normal shutdown.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn

_state = {"entry": False, "paused": False, "fast_exit": False}


def enter() -> None:
    """``main`` runs as the process's entry point: switch the collector off until
    :func:`startup_done`, and let :func:`allow_fast_exit` take effect."""
    _state["entry"] = True
    if gc.isenabled():
        gc.disable()
        _state["paused"] = True


#: Collector thresholds after start-up. A young generation of 10,000 objects instead of
#: 700 makes collections during a request (converting a long history for the provider)
#: rarer: in a 20,000-entry resume they cost 40 ms instead of 90 ms.
THRESHOLDS = (10_000, 10, 10)


def startup_done() -> None:
    """The runtime is open and the session loaded: freeze what start-up built and switch
    the collector back on. Does nothing unless :func:`enter` switched it off."""
    if _state["paused"]:
        _state["paused"] = False
        gc.freeze()
        gc.set_threshold(*THRESHOLDS)
        gc.enable()


def allow_fast_exit() -> None:
    """Print or json mode finished its work and disposed of its runtime (no effect
    unless :func:`enter` was called)."""
    if _state["entry"]:
        _state["fast_exit"] = True


def exit_process(status: int) -> NoReturn:
    """End the process with ``status``: at once after :func:`allow_fast_exit`, else
    through the normal interpreter shutdown (``sys.exit``)."""
    if not _state["fast_exit"]:
        sys.exit(status)
    main = threading.main_thread()
    if any(thread is not main and not thread.daemon for thread in threading.enumerate()):
        sys.exit(status)  # a normal exit waits for them (after stopping thread pools)
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None and not stream.closed:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)  # the normal shutdown reports it (and sets the status) as before
    os._exit(status)
