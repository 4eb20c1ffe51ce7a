"""``--limbo-shard K/N``: a deterministic, cost-balanced 1/N of a run's episodes, by world.

A study runs on N machines (a CI matrix, a Kubernetes Indexed Job), each collecting the same
episodes and keeping its shard. Every episode of one world — the same ``(template, instance,
focal write, fault mode)`` under every configuration — lands on the same shard, so paired
comparisons (conditions, contracts, agents on identical worlds) can be made within a shard, and
the shards' record files merge (``limbo merge``) into exactly the unsharded run.

Balance is by expected cost, in seconds, of each world's episodes (:func:`episode_cost`):
worlds are dealt, most expensive first, to the shard with the least expected cost so far
(longest-processing-time-first, within 4/3 of the best possible makespan). The assignment
depends only on the collected episodes and N, never on the machine, time, or process, so it is
the same on every shard, under ``-n``, and on a re-run.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from limbo_plugin.errors import UsageError
from limbo_plugin.experiments import Episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.spec.registry import SpecRegistry

FORMS = "K/N with 0 ≤ K < N (e.g. 0/4), or env:VAR/N (e.g. env:JOB_COMPLETION_INDEX/4)"
_FORM = re.compile(r"^(?:(?P<index>\d+)|env:(?P<var>[A-Za-z_][A-Za-z0-9_]*))/(?P<count>\d+)\Z")


MAX_SHARDS = 10_000
"""The most shards a run may be split into (more than a study has worlds)."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (from 0) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str, environ: Mapping[str, str] | None = None) -> Shard:
        """``K/N`` or ``env:VAR/N`` (K read from the environment variable ``VAR``, as a
        Kubernetes Indexed Job sets ``JOB_COMPLETION_INDEX``); a bad value is one line."""
        environ = os.environ if environ is None else environ
        match = _FORM.match(text.strip())
        if match is None:
            raise UsageError(f"--limbo-shard expects {FORMS}; got {text!r}")
        if len(match["count"]) > 6 or int(match["count"]) > MAX_SHARDS:
            raise UsageError(f"--limbo-shard {text}: at most {MAX_SHARDS:,} shards")
        count = int(match["count"])
        if match["var"] is not None:
            raw = environ.get(match["var"])
            if raw is None or not raw.strip().isdigit():
                state = "is not set" if raw is None else f"is {raw!r}, not a shard number"
                raise UsageError(f"--limbo-shard {text}: the environment variable "
                                 f"{match['var']} {state}")
            index = int(raw)
        else:
            index = int(match["index"])
        if count < 1 or index >= count:
            raise UsageError(f"--limbo-shard {text}: expected {FORMS}")
        return cls(index=index, count=count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


# -- the cost model ------------------------------------------------------------------------------
SECONDS_PER_CALL = {"scripted": 0.0001, "python": 0.0001, "mcp": 0.002, "litellm": 1.0,
                    "harness": 1.0}
"""Expected wall time of one tool call by agent kind: in process; over MCP; one model turn
(a model-backed agent makes about one model call per tool call). Unknown kinds count as model
calls."""
SECONDS_PER_START = {"mcp": 0.6, "harness": 2.0}
"""Fixed start-up of an episode by agent kind (starting ``limbo mcp`` or an agent CLI)."""
RECOVERY_CALLS = 2
"""Calls a fault adds on average: a read-back and a re-issue, or an escalation and a wait."""


def expected_calls(registry: SpecRegistry, key: EpisodeKey) -> int:
    """The reference plan's tool calls (each item of a ``for_each`` step counts), ``finish``,
    and :data:`RECOVERY_CALLS` when a fault is injected."""
    task = registry.template(key.template).instantiate(key.instance)
    plan = sum(len(step.items) if step.items is not None else 1 for step in task.plan)
    return plan + 1 + (0 if key.fault_mode == "none" else RECOVERY_CALLS)


def episode_cost(episode: Episode, calls: int) -> float:
    """Expected seconds of one episode of ``calls`` tool calls under its agent."""
    kind = episode.config.agent.partition(":")[0]
    per_call = SECONDS_PER_CALL.get(kind, 1.0)
    return per_call * calls + SECONDS_PER_START.get(kind, 0.0)


# -- the assignment ------------------------------------------------------------------------------
def assign_worlds(costs: Mapping[str, float], count: int) -> dict[str, int]:
    """The shard of each world: most expensive first (ties broken by a hash of the world id,
    so equal worlds of one template spread over the shards) to the least loaded shard (ties:
    the lowest index)."""
    order = sorted(costs, key=lambda world: (-costs[world], _digest(world)))
    loads = [(0.0, shard) for shard in range(count)]
    assignment: dict[str, int] = {}
    for world in order:
        load, shard = heapq.heappop(loads)
        assignment[world] = shard
        heapq.heappush(loads, (load + costs[world], shard))
    return assignment


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def shard_of_each(episodes: Sequence[Episode], registry: SpecRegistry, count: int) -> list[int]:
    """The shard of every episode, in order (all episodes of a world share one)."""
    calls: dict[str, int] = {}
    costs: dict[str, float] = {}
    for episode in episodes:
        world = episode.key.id
        if world not in calls:
            calls[world] = expected_calls(registry, episode.key)
        costs[world] = costs.get(world, 0.0) + episode_cost(episode, calls[world])
    assignment = assign_worlds(costs, count)
    return [assignment[episode.key.id] for episode in episodes]


def expected_costs(episodes: Sequence[Episode], registry: SpecRegistry, count: int
                   ) -> list[float]:
    """The expected seconds each shard gets (what the balance test and users look at)."""
    loads = [0.0] * count
    calls: dict[str, int] = {}
    for episode, shard in zip(episodes, shard_of_each(episodes, registry, count), strict=True):
        world = episode.key.id
        if world not in calls:
            calls[world] = expected_calls(registry, episode.key)
        loads[shard] += episode_cost(episode, calls[world])
    return loads
