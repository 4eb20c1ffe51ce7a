"""A wall-clock limit on one episode, whatever the agent (scripted, a model, a harness, yours).

A per-call timeout bounds each model call, but an agent can still hang between calls: a Python
agent in a loop, a provider that accepts the connection and never answers, a retry loop that
backs off for hours. :func:`wall_clock_limit` arms ``SIGALRM`` for the episode; when it fires,
:class:`EpisodeTimeout` is raised wherever the agent is, even in a blocking read or a sleep.

It derives from :class:`BaseException`, like ``KeyboardInterrupt``, so that the ``except
Exception`` blocks of an agent or an HTTP library cannot swallow it (or, worse, classify it as a
transient error and retry). The episode runner turns it into an infrastructure error: the
episode is recorded, excluded from the statistics and re-run by ``--limbo-resume``.

Signals reach only the main thread; in another thread (a notebook running episodes in a pool)
the limit is not enforced, and the per-call timeout is what bounds a hung provider.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

DEFAULT_EPISODE_TIMEOUT_S = 1800.0
"""Thirty minutes: a 40-call episode of a slow reasoning model fits; a hung one does not."""


class EpisodeTimeout(BaseException):
    """The episode ran longer than its wall-clock limit."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the episode exceeded its wall-clock limit of {seconds:g} s "
                         "(--limbo-episode-timeout)")
        self.seconds = seconds


def enforceable() -> bool:
    """Whether a limit can be enforced here: on POSIX, in the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def wall_clock_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`EpisodeTimeout` in the block if it runs longer than ``seconds``."""
    if not seconds or not enforceable():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise EpisodeTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
