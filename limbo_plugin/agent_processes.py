"""The processes an in-process agent starts end with its episode.

A ``python:`` agent runs inside the test process, and whatever it starts (a tool server, a
shell, a helper that daemonizes itself) is that process's child. Left running, such a child
holds the caller's output pipe open after pytest has finished (a CI step that waits for it
hangs until it ends) and may go on acting on the world after the episode was graded.
:func:`ended_with_the_episode` ends every process the agent started, its grandchildren
included, when the agent returns: on Linux the test process becomes a *child subreaper* for the
episode (``prctl(PR_SET_CHILD_SUBREAPER)``), so a grandchild whose parent exits is handed to it
rather than to init, and is found and ended too. Elsewhere the direct children are.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 2.0
"""How long the agent's processes get to end on SIGTERM before SIGKILL."""


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (read from ``/proc``; empty where there is none)."""
    found: set[int] = set()
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name (2nd field) is in parentheses and may hold spaces: split after it
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid) and fields[0] != "Z":
            found.add(int(entry.name))
    return found


@functools.cache
def _libc() -> Any:
    """The C library, loaded once: ``find_library`` runs ``ldconfig`` each time it is asked,
    which every episode of a ``python:`` agent would otherwise pay for twice."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None


def _subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or stop being one); whether the kernel agreed."""
    libc = _libc()
    if libc is None:
        return False
    try:
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except AttributeError:  # no prctl: not Linux
        return False


@contextlib.contextmanager
def ended_with_the_episode() -> Iterator[None]:
    """Run an agent; then end every process it started and is still running."""
    pid = os.getpid()
    before = children(pid)
    reaping = _subreaper(True)
    try:
        yield
    finally:
        if os.getpid() == pid:  # a forked child leaving the agent is not the episode's process
            _end(pid, before, reaping)


def _end(pid: int, before: set[int], reaping: bool) -> None:
    """End the children of ``pid`` not in ``before``, then those they leave (adopted while
    this process is a subreaper), until none is left."""
    try:
        for _ in range(8):  # each round ends the ones found; orphans of those are adopted next
            started = children(pid) - before
            if not started:
                return
            _terminate(started)
    finally:
        if reaping:
            _subreaper(False)


def _terminate(pids: set[int]) -> None:
    for target in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    left = set(pids)
    while left and time.monotonic() < deadline:
        left = {p for p in left if not _reaped(p)}
        if left:
            time.sleep(0.02)
    for target in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(target, 0)


def _reaped(pid: int) -> bool:
    """Whether ``pid`` (a child of this process) has ended; reaps it if so."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped elsewhere (a subprocess object), or not ours
        return not Path(f"/proc/{pid}").exists()
    return done == pid
