"""Stopping pytest-xdist's workers promptly when the controller is interrupted.

Ctrl-C at a terminal reaches every process of the run; SIGINT or SIGTERM sent to the
controller alone (``kill -INT``, a cancelled CI job, an evicted pod) reaches only the
controller, which then asks each worker's gateway to exit. A worker still starting up (importing
plugins, loading the specs, collecting) or running an episode does not read that request:
execnet lets it run for 5 s before it interrupts itself, and xdist waits 10 s per worker
before it kills them (with the children they started). Interrupting the workers as a terminal
would makes them stop now, each through its usual clean-up; a finished episode's record is
on the controller already (it rides on the report that showed it).
"""

from __future__ import annotations

import contextlib
import signal
from typing import Any


def interrupt_workers(config: Any) -> int:
    """Send SIGINT to every local worker process still running; how many were sent one."""
    dsession = config.pluginmanager.get_plugin("dsession")
    group = getattr(getattr(dsession, "nodemanager", None), "group", None)
    interrupted = 0
    for gateway in list(group or ()):
        # Only a local ``popen`` gateway has a process here to signal.
        popen = getattr(getattr(gateway, "_io", None), "popen", None)
        if popen is None or popen.poll() is not None:
            continue
        with contextlib.suppress(OSError):
            popen.send_signal(signal.SIGINT)
            interrupted += 1
    return interrupted
