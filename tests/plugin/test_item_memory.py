"""What a run keeps per episode item stays small: a 50,000-episode run holds every item, its
selection key and its summary row to the end (benchmarks/README.md, target 4a)."""

from __future__ import annotations

import pytest

from limbo_plugin.plugin.items import EpisodeItem
from limbo_plugin.records import run_fingerprint
from limbo_plugin.runconfig import RunConfig


def episode_items(project: pytest.Pytester, *args: str) -> list[EpisodeItem]:
    items, _ = project.inline_genitems("--experiment", "small", *args)
    episodes = [i for i in items if isinstance(i, EpisodeItem)]
    assert episodes
    return episodes


def test_an_items_labels_are_matched_without_a_keyword_set_of_its_own(
        project: pytest.Pytester) -> None:
    """``-k`` sees the labels through ``listextrakeywords``; pytest's per-item set, which cost
    about 480 bytes per episode once filled, stays empty."""
    for item in episode_items(project, "--agent", "scripted:same_key"):
        key, config = item.episode.key, item.episode.config
        assert item.extra_keyword_matches == set()
        assert {key.template, key.fault_mode, config.contract, config.condition,
                "scripted-same_key"} <= item.listextrakeywords()


def test_an_agents_keyword_selects_its_episodes(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--agent", "scripted:same_key",
                               "--collect-only", "-q", "-k", "scripted-same_key and billing")
    result.stdout.fnmatch_lines(["*4/8 tests collected (4 deselected)*"])


def test_a_configurations_fingerprint_is_one_object() -> None:
    """The run keeps a configuration's fingerprint once per episode (in what it selected and
    in what it recorded), and a run has few configurations: equal fingerprints are one object.
    (Episode ids are all different: interning them would cost the interned table's entry,
    about what the copy it saves costs.)"""
    config, same = RunConfig(), RunConfig()
    assert config is not same
    assert run_fingerprint(config) is run_fingerprint(same)
