"""A run ends when its episodes end, whatever threads an agent left running.

A ``python:`` agent runs inside the test process (``limbo_plugin.agents.python_agent``), and a
thread it starts and never stops, unless it is a daemon, keeps the interpreter alive after the
last record: Python joins every such thread at exit, and a CI job then hangs until its own
time limit. At the very end of the run (the last ``pytest_unconfigure``), :class:`LeftoverThreads`
gives those threads :data:`GRACE_S` seconds to finish (a thread pool's idle workers, which Python
itself would end at exit, are told to end at once); if some are still running it names them
on stderr and ends the process with the run's own exit status, its records, reports and
summaries already written.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

import pytest

GRACE_S = 10.0
"""How long the run waits, after its last report, for threads that would keep it alive."""


def blocking_threads() -> list[threading.Thread]:
    """Threads Python would wait for at exit: alive, not daemons, not the main one."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def release_pool_workers() -> None:
    """Tell every thread pool's workers that the interpreter is ending, as Python's own exit
    handler (``concurrent.futures.thread._python_exit``) does before it joins them: an idle
    worker then ends at once, a busy one when its task ends.

    A pool nobody shut down (litellm keeps one for its logging callbacks; an agent may leave
    its own) holds non-daemon threads that wait on their queue for ever, and Python ends them
    only at exit. Without this, each would wait out the whole grace and be named as an agent's
    leftover. A worker whose task hangs still counts against the grace and is named."""
    pools: Any = sys.modules.get("concurrent.futures.thread")  # its internals are private
    if pools is None:  # no pool was ever made
        return
    try:
        with pools._global_shutdown_lock:
            pools._shutdown = True
        queues = list(pools._threads_queues.values())
    except AttributeError:  # another Python's internals: the grace still covers them
        return
    for queue in queues:
        queue.put(None)


def wait_for(threads: list[threading.Thread], grace_s: float) -> list[threading.Thread]:
    """Join ``threads`` for at most ``grace_s`` seconds in all; those still alive."""
    deadline = time.monotonic() + grace_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]


SESSIONS = [0]
"""How many pytest configurations of this process are open: only the outermost one may end the
process (a run inside another, as pytester's in-process runs are, must leave its host alone)."""


def outermost(config: pytest.Config) -> bool:
    """Whether this run owns its process: the only open configuration, and not an xdist worker
    (whose process the controller ends)."""
    return SESSIONS[0] == 1 and not hasattr(config, "workerinput")


class LeftoverThreads:
    """The plugin: remembers the run's exit status, and ends a process threads would keep."""

    def __init__(self, grace_s: float = GRACE_S, *, owner: bool = True) -> None:
        self.grace_s = grace_s
        self.owner = owner
        """Whether this run owns its process (:func:`outermost`, when it was configured)."""
        self.status = 0

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.status = int(exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if not self.owner:
            return
        threads = blocking_threads()
        if not threads:
            return
        release_pool_workers()
        left = wait_for(threads, self.grace_s)
        if not left:
            return
        names = ", ".join(sorted(t.name for t in left))
        sys.stdout.flush()
        sys.stderr.write(f"limbo: {len(left)} thread(s) an agent started were still running "
                         f"{self.grace_s:g} s after the last episode ({names}); the run ends "
                         "without them (start such threads as daemons, or stop them when "
                         "run() returns)\n")
        sys.stderr.flush()
        os._exit(self.status)
