"""How an episode is selected and read in pytest: its keywords (``-k``), markers (``-m``),
expected-failure reason and the template spec it comes from, all derived from the specs."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from limbo_plugin.experiments.expand import Episode
from limbo_plugin.faults import expected_failure
from limbo_plugin.spec.registry import SpecRegistry


@dataclass(frozen=True)
class EpisodeLabels:
    """How users select and read an episode: keywords (``-k``), marker names (``-m``), why it
    is expected to fail (``xfail``), and the template spec it comes from (file, line)."""

    keywords: frozenset[str]
    markers: tuple[str, ...]
    xfail_reason: str | None
    spec_file: str
    spec_line: int | None


def episode_labels(episode: Episode, registry: SpecRegistry) -> EpisodeLabels:
    """Keywords: template, mode, family, contract, condition, the agent (``scripted-same_key``:
    so ``-k scripted`` selects by agent even where the default agent is not in the test id),
    and the focal write's tool and service (every service of the task for a fault-free
    episode). Markers: the family and, if
    it has one, its class (SPEC §3)."""
    key, config = episode.key, episode.config
    task = registry.template(key.template).instantiate(key.instance)
    mode = registry.fault_mode(key.fault_mode)
    keywords = {key.template, key.fault_mode, mode.family, config.contract, config.condition,
                sys.intern(config.agent.replace(":", "-"))}  # kept by every item: one copy
    reason = None
    if key.fault_mode != "none":
        focal = registry.catalog(config.contract).get(task.focal(key.focal_write).tool)
        assert focal is not None  # templates name only tools of their services
        keywords |= {focal.name, focal.service}
        reason = expected_failure(mode, focal)
    else:
        keywords |= set(task.services)
    fault_class = registry.fault_class(mode.family)
    markers = (mode.family,) if fault_class is None else (mode.family, fault_class)
    return EpisodeLabels(keywords=frozenset(keywords), markers=markers, xfail_reason=reason,
                         spec_file=task.spec_file, spec_line=task.spec_line)
