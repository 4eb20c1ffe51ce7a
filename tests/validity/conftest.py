"""Fixtures of the validity suite: one session-wide sweep of scripted episodes.

The propositions are checked from several angles over the same worlds (outcomes, keys sent,
late commits, keyable writes); a world depends only on its key, so each (world, policy,
contract) episode is run once per session and every check reads the same record. Determinism
itself is proven by ``test_determinism.py``, which runs episodes twice on purpose.
"""

from __future__ import annotations

import pytest
from validitykit import ScriptedEpisode

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry


@pytest.fixture(scope="session")
def scripted_episode(registry: SpecRegistry) -> ScriptedEpisode:
    records: dict[tuple[EpisodeKey, str, str], EpisodeRecord] = {}

    def episode(key: EpisodeKey, policy: str, contract: str = "native") -> EpisodeRecord:
        if (key, policy, contract) not in records:
            config = RunConfig(agent=f"scripted:{policy}", contract=contract)
            records[key, policy, contract] = run_episode(key, config, registry=registry)
        return records[key, policy, contract]

    return episode
