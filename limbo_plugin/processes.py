"""Stopping a child process: ask it to end, wait a while, then kill it; one way, everywhere.

A server Limbo starts (``limbo serve`` for an MCP client, the scripted model server) and a
harness CLI it runs are stopped alike: SIGTERM, up to ``grace_s`` seconds for the process to
end on its own (flush, close its sockets), then SIGKILL. A harness CLI starts helpers of its
own (its MCP server, shells), so it runs in a process group of its own and is stopped as a
group (``group=True``); :func:`kill_group` removes whatever such a group left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Any

DEFAULT_GRACE_S = 10.0


def stop(process: subprocess.Popen[Any], *, grace_s: float = DEFAULT_GRACE_S,
         group: bool = False) -> int:
    """Stop ``process`` (its process group if ``group``) and reap it; its exit status."""
    if process.poll() is not None:
        return process.returncode
    _send(process, signal.SIGTERM, group)
    try:
        return process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _send(process, signal.SIGKILL, group)
        return process.wait()


def kill_group(pgid: int) -> None:
    """SIGKILL every process left in group ``pgid`` (none left is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _send(process: subprocess.Popen[Any], signum: signal.Signals, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
