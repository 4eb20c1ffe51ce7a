"""ρ is summed over its cells in one order, whatever the hash seed: a pooled estimate's cells
came from a set of configurations, whose order follows ``PYTHONHASHSEED``, and floating-point
sums in another order differ in the last digit (a report table's ``n_eff`` changed between two
runs of ``limbo report`` on the same files)."""

from __future__ import annotations

from typing import Any

import pytest

from limbo_plugin.report import icc
from limbo_plugin.store.view import EpisodeView


def _episode(agent: str, template: str, duplicates: int) -> EpisodeView:
    return EpisodeView(episode_id=f"{template}-e", template=template, family="misleading_500",
                       agent=agent, contract="native", docs="default", instruction="default",
                       condition="vanilla", operator="truthful", fired=True, ts=True,
                       eos=not duplicates, overclaim=False, duplicates=duplicates,
                       experiment="default")


def test_cells_are_read_in_the_configurations_order(monkeypatch: pytest.MonkeyPatch) -> None:
    agents = [f"scripted:agent_{i}" for i in range(8)]
    episodes = [_episode(agent, template, (i + j) % 2) for i, agent in enumerate(agents)
                for j, template in enumerate(("a", "b", "c"))]
    book = icc.IccBook(episodes, scope="experiment")
    asked: list[Any] = []

    class Recording(dict[Any, Any]):
        def get(self, key: Any, default: Any = None) -> Any:
            asked.append(key)
            return super().get(key, default)

    book._by_config = Recording(book._by_config)
    book.rho(icc.DUPLICATE, ["default"])
    assert asked == book.configs
