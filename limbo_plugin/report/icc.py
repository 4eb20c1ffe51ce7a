"""One ρ per outcome and experiment, and the one interval of a cell that every output shows.

SPEC §7 and the paper's §5 take each cell's 95% interval as Wilson on the Kish effective sample
size, with ρ "the within-cell intra-class correlation by template, estimated once per
experiment". :class:`IccBook` is that estimate: for an outcome (duplicate, EOS, …) and an
experiment, the one-way ANOVA of :func:`~limbo_plugin.stats.icc_within_cells` over the
experiment's cells — one cell per configuration and fault family, the rows of the end-of-run
summary — each centred on its own mean. The terminal summary, ``summary.md``/``.json``, the gate
and every ``limbo report`` table ask the same book, so a cell has one interval wherever it is
shown. A table cell that mixes experiments (rare: a pooled row over two record files) uses the
estimate over those experiments' cells together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from limbo_plugin.records import run_fingerprint
from limbo_plugin.stats import RateEstimate, icc_within_cells, rate_with_interval


class Episode(Protocol):
    """What the estimate reads of an episode (a record, an outcome or a report row)."""

    @property
    def template(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def fired(self) -> bool: ...


def experiment_of(episode: Any) -> str | None:
    """The experiment a record says it belongs to (``None`` for a record that does not say)."""
    return getattr(episode, "experiment", None)


def counted(episode: Any) -> bool:
    """The denominator of the summary's rates: fired episodes, every fault-free one."""
    return bool(episode.family == "none" or episode.fired)


@dataclass(frozen=True)
class Measure:
    """A binary outcome (``test``) over the episodes it is defined on (``scope``)."""

    name: str
    test: Callable[[Any], bool]
    scope: Callable[[Any], bool] = counted


DUPLICATE = Measure("duplicate", lambda e: e.duplicates > 0)
EOS = Measure("eos", lambda e: bool(e.eos))
TS = Measure("ts", lambda e: bool(e.ts))
OVERCLAIM = Measure("overclaim", lambda e: bool(e.overclaim))


def by_template(episodes: Iterable[Any], test: Callable[[Any], bool]) -> dict[str, list[bool]]:
    table: dict[str, list[bool]] = defaultdict(list)
    for episode in episodes:
        table[episode.template].append(bool(test(episode)))
    return dict(table)


class IccBook:
    """ρ of each measure and experiment over ``episodes`` (one run's, or the loaded files'),
    computed when first asked for."""

    def __init__(self, episodes: Iterable[Any]) -> None:
        self._by_experiment: dict[str | None, list[Any]] = defaultdict(list)
        for episode in episodes:
            self._by_experiment[experiment_of(episode)].append(episode)
        self._cache: dict[tuple[str, frozenset[str | None]], float] = {}

    @property
    def experiments(self) -> list[str | None]:
        return sorted(self._by_experiment, key=lambda e: (e is None, e or ""))

    def rho(self, measure: Measure, experiments: Iterable[str | None]) -> float:
        chosen = frozenset(experiments)
        key = (measure.name, chosen)
        if key not in self._cache:
            cells: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
            for experiment in chosen:
                for episode in self._by_experiment.get(experiment, ()):
                    if measure.scope(episode):
                        cells[experiment, run_fingerprint(episode), episode.family].append(
                            episode)
            self._cache[key] = icc_within_cells(by_template(members, measure.test)
                                                for members in cells.values())
        return self._cache[key]

    def rate(self, episodes: Sequence[Any], measure: Measure) -> RateEstimate:
        """The cell's rate and interval, with ρ of its experiment(s)."""
        rho = self.rho(measure, {experiment_of(e) for e in episodes})
        return rate_with_interval(by_template(episodes, measure.test), icc=rho)

    def describe(self, measure: Measure) -> str:
        """``ρ duplicate: e1 0.281, e2 0.190`` (or one number for one experiment)."""
        values = [(e, self.rho(measure, [e])) for e in self.experiments]
        if len(values) == 1:
            return f"{values[0][1]:.3f}"
        return ", ".join(f"{e or 'unnamed'} {v:.3f}" for e, v in values)


_LAST: list[tuple[Sequence[Any], IccBook]] = []


def book_of(episodes: Sequence[Any]) -> IccBook:
    """The book of ``episodes``, built once for the same sequence object (every table of one
    report is handed the same loaded rows)."""
    if _LAST and _LAST[0][0] is episodes:
        return _LAST[0][1]
    book = IccBook(episodes)
    _LAST[:] = [(episodes, book)]
    return book
