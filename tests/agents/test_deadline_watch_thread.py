"""The episode time limit is watched by one thread per process, not one thread per episode.

Starting and joining a thread per episode cost more CPU than a scripted episode's own work;
the limit itself must hold as before (``tests/safety/test_episode_timeout.py``,
``tests/agents/test_hostile_providers.py``).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from limbo_plugin.agents import AgentSession
from limbo_plugin.agents.deadline import wall_clock_limit
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

KEY = EpisodeKey(template="invoice_batch", instance=0, focal_write="charge_1",
                 fault_mode="timeout_post")


def watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "limbo-episode-watchdog"]


class SeesTheWatchdog:
    """A scripted agent that notes which watchdog threads are alive while it runs."""

    name = "sees_the_watchdog"

    def __init__(self) -> None:
        self.seen: list[list[threading.Thread]] = []

    def run(self, session: AgentSession) -> None:
        self.seen.append(watchdog_threads())
        session.call("finish", {"status": "completed", "summary": "done"})


def test_one_watch_thread_serves_every_episode(registry: SpecRegistry) -> None:
    agent = SeesTheWatchdog()
    for _ in range(5):
        record = run_episode(KEY, RunConfig(), registry=registry,
                             agent=agent, time_limit_s=600)
        assert record.error is None
    assert all(len(seen) == 1 for seen in agent.seen), agent.seen
    assert len({id(seen[0]) for seen in agent.seen}) == 1, "a new thread per episode"


def test_ended_episodes_are_let_go_and_a_later_limit_still_fires() -> None:
    from limbo_plugin.agents.deadline import _watch_thread

    for _ in range(50):
        with wall_clock_limit(600):
            pass
    # what an ended episode's watchdog holds (its record callback, hence its world) is not
    # kept until its deadline, half an hour later
    assert len(_watch_thread()._watched) <= 1
    # a shorter limit than the one the thread sleeps towards wakes it
    start = time.monotonic()
    fired = False
    try:
        with wall_clock_limit(0.3):
            while time.monotonic() - start < 60:
                time.sleep(0.01)
    except BaseException as exc:  # EpisodeTimeout derives from BaseException
        fired = type(exc).__name__ == "EpisodeTimeout"
    assert fired and time.monotonic() - start < 60


PROFILED_LIMITS = """
import signal, sys, time
from limbo_plugin.agents.deadline import EpisodeTimeout, wall_clock_limit

sys.setprofile(lambda *args: None)  # what pyinstrument, coverage and debuggers install
for _ in range(20):
    with wall_clock_limit(600):
        sum(range(100))
start = time.monotonic()
with wall_clock_limit(0.2):
    try:
        while time.monotonic() - start < 60:
            time.sleep(0.01)
    except EpisodeTimeout:
        pass
for _ in range(20):  # C calls after the limits: each used to spin forever under the profiler
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    sum(range(100))
print("done", flush=True)
"""


def test_limits_end_cleanly_under_a_profiler(tmp_path: Path) -> None:
    """Dropping a pending timeout must clear the interpreter's pending flag too: under
    ``sys.setprofile`` a flag left set made the next C call spin at full CPU, for good."""
    run = subprocess.run([sys.executable, "-c", PROFILED_LIMITS], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
