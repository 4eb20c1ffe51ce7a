"""``--limbo-sample N``: a pilot of N worlds, stratified over fault families and templates.

A real model is smoke-tested for cents before a study spends dollars. The N worlds — a world is
``(template, instance, focal write, fault mode)``, and every configuration of a chosen world
runs, so a pilot still compares agents or conditions on identical worlds — are dealt from the
families in turns, one world each, so every family gets an equal share while it has worlds
left; within a family its templates take turns. Which template comes first within a family, and
which world within a template, is decided by a hash of the seed and the names, so the sample
depends only on the collected worlds and the seed: the same on every worker, under ``-n``, on a
re-run and in ``limbo plan``.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from limbo_plugin.errors import UsageError
from limbo_plugin.records import EpisodeKey
from limbo_plugin.spec.registry import SpecRegistry

FORMS = "N or N:SEED with N ≥ 1 (e.g. 20, or 20:7 for another sample of 20)"
_FORM = re.compile(r"^(?P<count>\d+)(?::(?P<seed>\d+))?$")
MAX_SAMPLE = 10_000_000


@dataclass(frozen=True)
class Sample:
    """``count`` worlds drawn with ``seed``."""

    count: int
    seed: int = 0

    @classmethod
    def parse(cls, raw: str) -> Sample:
        match = _FORM.match(raw.strip())
        if match is None:
            raise UsageError(f"--limbo-sample {raw!r}: expected {FORMS}")
        count, seed = int(match["count"]), int(match["seed"] or 0)
        if not 1 <= count <= MAX_SAMPLE:
            raise UsageError(f"--limbo-sample {raw!r}: expected {FORMS}")
        return cls(count, seed)


def _rank(seed: int, *names: object) -> str:
    return hashlib.sha256("\x1f".join([str(seed), *map(str, names)]).encode()).hexdigest()


def sample_worlds(keys: Iterable[EpisodeKey], sample: Sample,
                  registry: SpecRegistry) -> set[EpisodeKey]:
    """The worlds of ``keys`` in the sample (all of them when there are no more than its
    count)."""
    worlds = sorted(set(keys), key=lambda k: (k.template, k.instance, k.focal_write,
                                              k.fault_mode))
    if len(worlds) <= sample.count:
        return set(worlds)
    strata: dict[str, dict[str, list[EpisodeKey]]] = defaultdict(lambda: defaultdict(list))
    for key in worlds:
        family = "none" if key.fault_mode == "none" else registry.fault_mode(key.fault_mode).family
        strata[family][key.template].append(key)
    rank = {family: i for i, family in enumerate(registry.family_order)}
    # Each family's worlds in its own order: its templates in turns, each template's worlds
    # in the seed's order; then the families in turns, so each gets an equal share.
    queues = [_interleave(sample.seed, family, strata[family])
              for family in sorted(strata, key=lambda f: (rank.get(f, len(rank)), f))]
    chosen: list[EpisodeKey] = []
    depth = 0
    while len(chosen) < sample.count:
        for queue in queues:
            if depth < len(queue):
                chosen.append(queue[depth])
                if len(chosen) == sample.count:
                    break
        depth += 1
    return set(chosen)


def _interleave(seed: int, family: str, templates: dict[str, list[EpisodeKey]]
                ) -> list[EpisodeKey]:
    """A family's worlds: one of each template in turn (templates in the seed's order)."""
    columns = [sorted(templates[name], key=lambda k: _rank(seed, family, k.id))
               for name in sorted(templates, key=lambda t: _rank(seed, family, t))]
    out: list[EpisodeKey] = []
    for depth in range(max(len(c) for c in columns)):
        out += [column[depth] for column in columns if depth < len(column)]
    return out
