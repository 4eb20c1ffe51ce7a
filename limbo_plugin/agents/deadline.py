"""A wall-clock limit on one episode, whatever the agent (scripted, a model, a harness, yours).

A per-call timeout bounds each model call, but an agent can still hang between calls: a Python
agent in a loop, a provider that accepts the connection and never answers, a retry loop that
backs off for hours. :func:`wall_clock_limit` arms ``SIGALRM`` for the episode; when it fires,
:class:`EpisodeTimeout` is raised wherever the agent is, even in a blocking read or a sleep.

It derives from :class:`BaseException`, like ``KeyboardInterrupt``, so that the ``except
Exception`` blocks of an agent or an HTTP library cannot swallow it (or, worse, classify it as a
transient error and retry). The episode runner turns it into an infrastructure error: the
episode is recorded, excluded from the statistics and re-run by ``--limbo-resume``.

The alarm alone can be defeated: a bare ``except:`` swallows the exception, ``signal.alarm(0)``
disarms the timer. So a :class:`Watchdog` thread, which the agent's code cannot catch or
cancel, watches the same deadline: past it, it raises :class:`EpisodeTimeout` in the episode's
thread again and again (an asynchronous exception, plus the signal to wake a blocking call),
and once the grace period is over too, it gives the episode up: ``on_abandon`` records the
timeout and the process ends (under pytest-xdist the worker is replaced and the run goes on).

Signals reach only the main thread; in another thread (a notebook running episodes in a pool)
the limit is not enforced, and the per-call timeout is what bounds a hung provider.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

DEFAULT_EPISODE_TIMEOUT_S = 1800.0
"""Thirty minutes: a 40-call episode of a slow reasoning model fits; a hung one does not."""


class EpisodeTimeout(BaseException):
    """The episode ran longer than its wall-clock limit."""

    def __init__(self, seconds: float | None = None) -> None:
        limit = "its wall-clock limit" if seconds is None else \
            f"its wall-clock limit of {seconds:g} s"
        super().__init__(f"the episode exceeded {limit} (--limbo-episode-timeout)")
        self.seconds = seconds


MAX_EPISODE_TIMEOUT_S = 7 * 24 * 3600.0
"""The longest limit accepted (a week): beyond it a timer overflows, and no episode needs it."""
RAISE_EVERY_S = 0.5
"""How often the watchdog raises again in an episode that swallowed the timeout."""


def grace_s(seconds: float) -> float:
    """How long past its limit an episode may take to stop before it is given up: enough to
    unwind and grade, short enough not to stall a run."""
    return min(60.0, max(5.0, seconds * 0.1))


class Watchdog:
    """One episode's deadline, enforced in the episode's own thread by the process's watch
    thread (:class:`_WatchThread`).

    ``stop()`` when the episode ends in time. Past ``seconds`` it raises
    :class:`EpisodeTimeout` in the episode's thread every :data:`RAISE_EVERY_S` (a bare
    ``except:`` swallows one, not all; ``signal.alarm(0)`` does not reach it). Past the grace
    period it calls ``on_abandon`` (which records the episode) and ends the process with
    ``os._exit``: the one stop no Python code can refuse.
    """

    def __init__(self, seconds: float, on_abandon: Callable[[], None] | None = None,
                 grace: float | None = None) -> None:
        self.seconds = seconds
        self.grace = grace_s(seconds) if grace is None else grace
        self.on_abandon = on_abandon
        self.target = threading.get_ident()
        self.expired = False
        self.deadline = math.inf
        self._done = threading.Event()
        self._watching = False
        """Set by the watch thread before it first checks ``_done`` past the deadline, cleared
        when it has let this watchdog go; :meth:`join` waits while it is set."""
        self._let_go = threading.Event()

    def start(self) -> Watchdog:
        self.deadline = time.monotonic() + self.seconds
        _watch_thread().watch(self)
        return self

    def stop(self) -> None:
        self._done.set()

    def join(self) -> None:
        """Wait until the watch thread is done with this watchdog (at once unless it was past
        its deadline) and drop a timeout it raised just as the episode ended, so it cannot
        surface in the code that records it."""
        if self._watching:
            self._let_go.wait()
        if self.expired:
            _drop_pending_exception(self.target)

    def _enforce(self) -> None:
        """Past the deadline (the watch thread runs this): raise until stopped, then give up."""
        self.expired = True
        give_up = time.monotonic() + self.grace
        while not self._done.is_set() and time.monotonic() < give_up:
            self._interrupt()
            self._done.wait(RAISE_EVERY_S)
        if self._done.is_set():
            return
        try:
            if self.on_abandon is not None:
                self.on_abandon()
        finally:
            sys.stderr.flush()
            os._exit(EXIT_ABANDONED)

    def _interrupt(self) -> None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target),
                                                   ctypes.py_object(EpisodeTimeout))
        handler = signal.getsignal(signal.SIGALRM)
        if callable(handler) and self.target == threading.main_thread().ident:
            # wakes a blocking call (a sleep, a read): its handler runs Python code, where the
            # pending exception is raised
            with contextlib.suppress(OSError, ValueError):
                signal.pthread_kill(self.target, signal.SIGALRM)


class _Dropped(BaseException):
    """Stands in for a pending timeout so that the interpreter raises it, here, and is done."""


def _drop_pending_exception(target: int) -> None:
    """Drop an :class:`EpisodeTimeout` the watch thread may have queued for ``target``.

    Clearing it with ``PyThreadState_SetAsyncExc(target, NULL)`` leaves CPython's "asynchronous
    exception pending" flag set, since the interpreter clears that flag only when it raises one:
    under a profiler or a tracer (``sys.setprofile``: pyinstrument, coverage, a debugger) the
    next C call then spins forever. So a stand-in exception replaces the timeout and the loop
    below lets the interpreter raise it, which clears the flag. Only the target's own thread can
    do that; from another thread the plain clear is all there is.
    """
    if target != threading.get_ident():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), None)
        return
    try:
        if ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target),
                                                      ctypes.py_object(_Dropped)):
            while True:  # raised as the call returns, or at the first backward jump
                pass
    except _Dropped:
        pass


class _WatchThread:
    """The one thread per process that watches every episode's deadline.

    Starting and joining a thread for every episode cost more CPU than a scripted episode's own
    work; this one sleeps until the earliest deadline it watches. Arming a watchdog wakes it
    only when that deadline is earlier than the one it sleeps towards, so an episode that ends
    in time costs a lock and an event, and the thread wakes about once per time limit.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition(threading.Lock())
        self._watched: list[Watchdog] = []
        self._sleeping_until = math.inf
        self._thread = threading.Thread(target=self._run, name="limbo-episode-watchdog",
                                        daemon=True)
        self._thread.start()

    def watch(self, watchdog: Watchdog) -> None:
        with self._lock:  # the episodes that ended are let go here, not kept until a deadline
            self._watched = [w for w in self._watched if not w._done.is_set()]
            self._watched.append(watchdog)
            if watchdog.deadline < self._sleeping_until:
                self._lock.notify()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._watched = [w for w in self._watched if not w._done.is_set()]
                due = min(self._watched, key=lambda w: w.deadline, default=None)
                wait = math.inf if due is None else due.deadline - time.monotonic()
                if wait > 0:
                    self._sleeping_until = time.monotonic() + wait
                    self._lock.wait(None if math.isinf(wait) else wait)
                    self._sleeping_until = -math.inf  # awake: nothing needs to wake it
                    continue
                assert due is not None
                self._watched.remove(due)
                due._watching = True
            try:
                due._enforce()
            finally:
                due._watching = False
                due._let_go.set()


_WATCHER: _WatchThread | None = None
_WATCHER_LOCK = threading.Lock()


def _watch_thread() -> _WatchThread:
    global _WATCHER
    with _WATCHER_LOCK:
        if _WATCHER is None:
            _WATCHER = _WatchThread()
        return _WATCHER


def _forget_watch_thread() -> None:
    """In a forked child the watch thread does not exist: the first limit there starts one."""
    global _WATCHER, _WATCHER_LOCK
    _WATCHER, _WATCHER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_watch_thread)


EXIT_ABANDONED = 3
"""The exit status of a process whose episode would not stop (pytest's internal-error code)."""


def enforceable() -> bool:
    """Whether a limit can be enforced here: on POSIX, in the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def wall_clock_limit(seconds: float | None, on_abandon: Callable[[], None] | None = None
                     ) -> Iterator[Watchdog | None]:
    """Raise :class:`EpisodeTimeout` in the block if it runs longer than ``seconds``; give the
    block up (``on_abandon``, then end the process) if it still runs after the grace period."""
    if not seconds or not enforceable():
        yield None
        return

    def expire(signum: int, frame: Any) -> None:
        raise EpisodeTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    watchdog = Watchdog(seconds, on_abandon).start()
    try:
        yield watchdog
    finally:
        disarm(watchdog, previous)


def disarm(watchdog: Watchdog, previous: Any) -> None:
    """Stop the timer and the watchdog and put the previous SIGALRM handler back, whatever
    lands meanwhile: a timeout raised inside this (the timer or the watchdog firing just as the
    episode ended) would otherwise skip the rest and leave the timer armed, to fire later in
    code that is not the episode's."""
    while True:
        try:
            watchdog.stop()
            signal.setitimer(signal.ITIMER_REAL, 0)
            watchdog.join()
            signal.signal(signal.SIGALRM, previous)
            return
        except EpisodeTimeout:
            continue
