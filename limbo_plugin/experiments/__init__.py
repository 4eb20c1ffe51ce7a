"""Experiment specs (``specs/experiments/*.yaml``) and their expansion into episodes.

An experiment lists templates, instances, focal writes, fault modes, contracts, documentation
variants, instruction variants, conditions, operator variants and agents. Expansion is their
product, restricted to applicable (focal write, mode) pairs, sorted and seed-free: pytest-xdist
requires every worker to collect the same items in the same order.

A study's design is rarely one product: the paper's E1 adds instances for two sparse writes only,
E5 crosses each delay mode with its own grid of bounds, E4 runs its guard ablations on two models
only. An experiment may therefore list ``arms``: partial designs, each overriding any dimension of
the top level (which then only supplies defaults). Its episodes are the union over the arms,
de-duplicated and sorted like any experiment's, so an episode two arms share runs once and the
collection stays identical on every worker. An experiment without arms is its own single design.

The package: :mod:`.design` (the spec's pydantic models), :mod:`.expand` (worlds, run
configurations, :class:`Episode`), :mod:`.experiment` (a loaded experiment: its parts, checks and
episodes), :mod:`.labels` (keywords, markers, xfail) and :mod:`.selection` (what collected items
run, for the pytest-xdist controller).
"""

from limbo_plugin.errors import SpecError
from limbo_plugin.experiments.design import Arm, Design, ExperimentSpec
from limbo_plugin.experiments.expand import Episode, iter_worlds
from limbo_plugin.experiments.experiment import Experiment, find_experiment, load_experiment
from limbo_plugin.experiments.labels import EpisodeLabels, episode_labels
from limbo_plugin.experiments.selection import (
    agents_of_items,
    compares_agents,
    counted_plans,
    plans_of_items,
)

__all__ = ["Arm", "Design", "Episode", "EpisodeLabels", "Experiment", "ExperimentSpec",
           "SpecError", "agents_of_items", "compares_agents", "counted_plans", "episode_labels",
           "find_experiment", "iter_worlds", "load_experiment", "plans_of_items"]
