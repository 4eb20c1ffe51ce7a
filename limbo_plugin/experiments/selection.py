"""What the collected items of a run will run (agents, conditions, model options): the
pytest-xdist controller collects nothing itself, so it expands the workers' experiment files
again to check every agent is ready before the first episode."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from limbo_plugin.agents.registry import AgentPlan
from limbo_plugin.errors import SpecError
from limbo_plugin.experiments.expand import Episode
from limbo_plugin.experiments.experiment import load_experiment
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

REPEAT_SUFFIX = re.compile(r"-rep\d+$")


def compares_agents(episodes: Iterable[Episode]) -> bool:
    """Whether the episodes run more than one agent (their item names then say which)."""
    return len({e.config.agent for e in episodes}) > 1


def agents_of_items(node_ids: Iterable[str], root: Path, registry: SpecRegistry,
                    overrides: Mapping[str, str | None], defaults: RunConfig) -> set[str]:
    """The agents the collected items ``node_ids`` run (see :func:`plans_of_items`)."""
    return {plan.agent for plan in plans_of_items(node_ids, root, registry, overrides, defaults)}


def plans_of_items(node_ids: Iterable[str], root: Path, registry: SpecRegistry,
                   overrides: Mapping[str, str | None], defaults: RunConfig,
                   model_options: Mapping[str, Any] | None = None) -> set[AgentPlan]:
    """The agents, with their conditions and model options, of the collected items
    ``node_ids`` (``specs/experiments/e3.yaml::<name>``). The pytest-xdist controller collects
    nothing itself; it learns what the workers selected (after ``-k`` and ``-m``) by expanding
    their experiment files again. ``model_options`` are the command line's, over each
    experiment's own."""
    return set(counted_plans(node_ids, root, registry, overrides, defaults, model_options))


def counted_plans(node_ids: Iterable[str], root: Path, registry: SpecRegistry,
                  overrides: Mapping[str, str | None], defaults: RunConfig,
                  model_options: Mapping[str, Any] | None = None) -> Counter[AgentPlan]:
    """:func:`plans_of_items`, with how many of the items run each plan (the run's plan line:
    episodes, calls and cost per agent)."""
    by_file: dict[str, list[str]] = {}
    for node_id in node_ids:
        file, sep, name = node_id.partition("::")
        if sep and file.endswith((".yaml", ".yml")):
            by_file.setdefault(file, []).append(name)
    plans: Counter[AgentPlan] = Counter()
    for file, names in by_file.items():
        try:
            experiment = load_experiment(root / file, registry)
        except (SpecError, OSError):
            continue  # not an experiment, or a broken one (collected as a spec-error item)
        options = {**experiment.spec.model_options, **(model_options or {})}
        episodes = experiment.episodes(registry, overrides, defaults)
        plan_of = {e.id: AgentPlan.of(e.config.agent, e.config.condition, options)
                   for e in episodes}
        for name in names:  # a repeat (-rep2) runs its episode's plan
            plan = plan_of.get(name) or plan_of.get(REPEAT_SUFFIX.sub("", name))
            if plan is not None:
                plans[plan] += 1
    return plans
