"""A pytest plugin for profiling the per-item path without the episodes: each world runs once,
and every later item of the same world and configuration (``--limbo-repeat``) replays its
record from memory, so a profile shows what pytest and Limbo do around an episode.

    PYTHONPATH=benchmarks python -m cProfile -o run.prof -m pytest specs -p replay_episodes \\
        --limbo-repeat=5 --limbo-records=/tmp/replayed.jsonl

Not for real runs: a replayed record is the first run's with its repeat number changed.
"""

from __future__ import annotations

from typing import Any

import limbo_plugin.episode as episode_module

_run_episode = episode_module.run_episode
_records: dict[tuple[str, str], Any] = {}


def replayed(key: Any, config: Any, **kwargs: Any) -> Any:
    context = kwargs["context"]
    world = (key.id, config.fingerprint())
    if world not in _records:
        _records[world] = _run_episode(key, config, **kwargs)
        return _records[world]
    return _records[world].model_copy(update={"repeat": context.repeat})


episode_module.run_episode = replayed
