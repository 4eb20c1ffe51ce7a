"""Shared names of the validity suite (its fixtures are in ``conftest.py``, which no test
module imports)."""

from __future__ import annotations

from collections.abc import Callable

from limbo_plugin.records import EpisodeRecord

ScriptedEpisode = Callable[..., EpisodeRecord]
"""``scripted_episode(key, policy, contract="native")``: the record of a scripted policy."""
