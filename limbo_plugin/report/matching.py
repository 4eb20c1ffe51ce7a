"""Comparisons between configurations on the worlds both have.

Every comparison of the paper is paired: the world depends only on its key, so two configurations
are compared on the same worlds. Record files from different experiments cover different worlds
(E4 runs two focal writes per template, E2 all of them): a rate over each configuration's own
worlds would compare different tasks. :func:`on_shared_worlds` keeps, for each agent, only the
worlds every compared configuration of that agent has, and counts what it left out, so a table
can say so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from limbo_plugin.store.view import EpisodeView


@dataclass(frozen=True)
class Matched:
    rows: list[EpisodeView]
    dropped: int
    """Episodes left out because some compared configuration of their agent lacks the world."""

    def note(self, what: str) -> str:
        if not self.dropped:
            return f"Every {what} has the same worlds (paired comparison)."
        return (f"Compared on the worlds every {what} has (per agent): {self.dropped} "
                "episode(s) on worlds only some of them ran are left out.")


def on_shared_worlds(rows: Sequence[EpisodeView],
                     configuration: Callable[[EpisodeView], Hashable],
                     by: Callable[[EpisodeView], Hashable] = lambda r: r.agent) -> Matched:
    """The episodes of ``rows`` whose world (episode id) every ``configuration`` of the same
    ``by`` group (default: the agent) has."""
    worlds: dict[Hashable, dict[Hashable, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        worlds[by(row)][configuration(row)].add(row.episode_id)
    shared = {group: set.intersection(*configs.values()) for group, configs in worlds.items()}
    kept = [r for r in rows if r.episode_id in shared[by(r)]]
    return Matched(rows=kept, dropped=len(rows) - len(kept))
