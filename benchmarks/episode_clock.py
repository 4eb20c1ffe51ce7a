"""A pytest plugin for the benchmarks: the CPU time a run spends inside its episodes.

    LIMBO_BENCH_EPISODE_CPU=FILE python -m pytest -p episode_clock …   (benchmarks/ on sys.path)

It wraps :func:`limbo_plugin.episode.run_episode` (the world, the agent, the grade and the record
object: what a scripted episode itself costs) and, when the run ends, writes to ``FILE`` the CPU
seconds spent inside it (``time.process_time``, summed) and the number of episodes, as
``SECONDS COUNT``. ``plugin_overhead.py --floor`` subtracts the first from the process's CPU:
what the run costs outside its episodes, the part that no faster episode can remove.

The wrapper costs two clock reads per episode, about a microsecond.

With ``LIMBO_BENCH_EPISODES_TWICE=1`` it runs every episode twice and keeps the second record:
under ``valgrind --tool=cachegrind`` the difference from a plain run is the instructions the
episodes execute inside pytest, a count that load does not move
(``plugin_overhead.py --floor --instructions``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

ENVIRONMENT_VARIABLE = "LIMBO_BENCH_EPISODE_CPU"
TWICE_VARIABLE = "LIMBO_BENCH_EPISODES_TWICE"


class EpisodeClock:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.episodes = 0

    def wrap(self) -> None:
        import limbo_plugin.episode as episode  # items.py looks it up at every call

        inner = episode.run_episode
        twice = bool(os.environ.get(TWICE_VARIABLE))

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                if twice:
                    inner(*args, **kwargs)
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.process_time() - start
                self.episodes += 1

        episode.run_episode = timed


_CLOCK = EpisodeClock()


def pytest_configure(config: Any) -> None:
    if os.environ.get(ENVIRONMENT_VARIABLE) or os.environ.get(TWICE_VARIABLE):
        _CLOCK.wrap()


def pytest_unconfigure(config: Any) -> None:
    target = os.environ.get(ENVIRONMENT_VARIABLE)
    if target:
        Path(target).write_text(f"{_CLOCK.seconds!r} {_CLOCK.episodes}\n", encoding="utf-8")
