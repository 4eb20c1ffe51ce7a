"""ρ by template for each outcome, and the one interval of a cell that every output shows.

SPEC §7 and the paper's §5 take each cell's 95% interval as Wilson on the Kish effective sample
size, with ρ the within-cell intra-class correlation by template: the one-way ANOVA of
:func:`~limbo_plugin.stats.icc_within_cells` over a set of cells (a cell: one configuration and
fault family, a row of the end-of-run summary), each centred on its own mean.

Which cells ρ is estimated over is the book's **scope**:

``configuration`` (the default)
    the cells of the cell's own configuration (agent × contract × condition × docs ×
    instruction × operator) within its experiment. A cell's interval then depends only on its
    own configuration's records: the terminal summary, ``limbo summary``, the gate,
    ``limbo compare`` and every ``limbo report`` table show the same interval for it, and it does
    not move when another agent's records join the report.
``experiment``
    the paper's "estimated once per experiment": the cells of every configuration of the cell's
    experiment in the loaded records. ``limbo report --rho experiment`` (and ``limbo reproduce``,
    for the paper's tables) uses it; a cell's interval then depends on what else was loaded.

A table cell that pools several configurations (an "agents pooled" row) uses the estimate over
the cells of those configurations together (under ``experiment``: of their experiments).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from limbo_plugin.records import run_fingerprint
from limbo_plugin.stats import RateEstimate, icc_within_cells, rate_with_interval

RhoScope = Literal["configuration", "experiment"]
RHO_SCOPES: tuple[RhoScope, ...] = get_args(RhoScope)
DEFAULT_SCOPE: RhoScope = "configuration"


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


Config = tuple[str | None, str]
"""(experiment, run fingerprint): the records a configuration's ρ is estimated from."""


def config_of(episode: Any) -> Config:
    return experiment_of(episode), run_fingerprint(episode)


def _config_order(config: Config) -> tuple[bool, str, str]:
    return config[0] is None, config[0] or "", config[1]


@dataclass(frozen=True)
class Rho:
    """One estimate of ρ and the number of cells (configuration × family with episodes in the
    measure's scope) it was estimated over."""

    value: float
    cells: int


class IccBook:
    """ρ of each measure over ``episodes`` (one run's, or the loaded files'), for the cells
    ``scope`` names, computed when first asked for."""

    def __init__(self, episodes: Iterable[Any], scope: RhoScope = DEFAULT_SCOPE) -> None:
        if scope not in RHO_SCOPES:
            raise ValueError(f"unknown ρ scope {scope!r}; valid: {', '.join(RHO_SCOPES)}")
        self.scope: RhoScope = scope
        self._by_config: dict[Config, list[Any]] = defaultdict(list)
        # each episode's configuration, by identity: a report asks for the configurations of
        # a cell's episodes a thousand times over, and building the fingerprint each time was
        # most of a large report's table time (the book holds the episodes: no id is reused)
        self._config_of: dict[int, Config] = {}
        for episode in episodes:
            config = config_of(episode)
            self._by_config[config].append(episode)
            self._config_of[id(episode)] = config
        self._cache: dict[tuple[str, frozenset[Config]], Rho] = {}

    @property
    def experiments(self) -> list[str | None]:
        return sorted({e for e, _ in self._by_config}, key=lambda e: (e is None, e or ""))

    @property
    def configs(self) -> list[Config]:
        return sorted(self._by_config, key=_config_order)

    def _pool(self, configs: Iterable[Config]) -> frozenset[Config]:
        """The configurations whose cells a cell of ``configs`` takes its ρ from."""
        chosen = frozenset(configs)
        if self.scope == "experiment":
            experiments = {e for e, _ in chosen}
            return frozenset(c for c in self._by_config if c[0] in experiments)
        return chosen

    def estimate(self, measure: Measure, configs: Iterable[Config]) -> Rho:
        """ρ of ``measure`` for a cell of ``configs`` (under the book's scope)."""
        return self._over(measure, self._pool(configs))

    def _over(self, measure: Measure, pool: frozenset[Config]) -> Rho:
        key = (measure.name, pool)
        if key not in self._cache:
            cells: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
            # in the configurations' order, not the set's (which follows the hash seed): the
            # cells' sums of squares add up in one order, so ρ is the same to the last digit
            for config in sorted(pool, key=_config_order):
                for episode in self._by_config.get(config, ()):
                    if measure.scope(episode):
                        cells[config, episode.family].append(episode)
            value = icc_within_cells(by_template(members, measure.test)
                                     for members in cells.values())
            self._cache[key] = Rho(value, len(cells))
        return self._cache[key]

    def rho(self, measure: Measure, experiments: Iterable[str | None]) -> float:
        """ρ pooled over every configuration of ``experiments`` (the paper's estimate, whatever
        the book's scope)."""
        chosen = set(experiments)
        return self._over(measure, frozenset(c for c in self._by_config if c[0] in chosen)).value

    def rate(self, episodes: Sequence[Any], measure: Measure) -> RateEstimate:
        """The cell's rate and interval, with ρ of its configuration(s) (or experiment(s))."""
        known = self._config_of
        rho = self.estimate(measure, {known.get(id(e)) or config_of(e) for e in episodes}).value
        return rate_with_interval(by_template(episodes, measure.test), icc=rho)

    def describe(self, measure: Measure) -> str:
        """Which ρ the intervals of ``measure`` used, and from how many cells."""
        if self.scope == "experiment":
            values = [(e, self.estimate(measure, [c for c in self._by_config if c[0] == e]))
                      for e in self.experiments]
            parts = [f"{_num(r)} ({r.cells} cells)" if len(values) == 1
                     else f"{e or 'unnamed'} {_num(r)} ({r.cells} cells)" for e, r in values]
            return ", ".join(parts) + _ones([r for _, r in values])
        found = [self.estimate(measure, [c]) for c in self._by_config]
        found = [r for r in found if r.cells] or found
        if not found:
            return "no cells"
        if len(found) == 1:
            return f"{_num(found[0])} ({found[0].cells} cells)" + _ones(found)
        low, high = min(r.value for r in found), max(r.value for r in found)
        sizes = sorted({r.cells for r in found})
        cells = (f"{sizes[0]} cells each" if len(sizes) == 1
                 else f"{sizes[0]}–{sizes[-1]} cells each")
        return (f"{low:.3f}–{high:.3f} over {len(found)} configurations ({cells})"
                + _ones(found))


def _num(rho: Rho) -> str:
    return f"{rho.value:.3f}"


def _ones(found: Sequence[Rho]) -> str:
    ones = sum(1 for r in found if r.value >= 1.0)
    if not ones:
        return ""
    which = "it" if len(found) == 1 else f"{ones} of {len(found)}"
    return (f" [ρ reaches 1.0 for {which}: a tiny design where every template's episodes agree "
            "within each cell, so each template counts as one observation]")


def scope_note(scope: RhoScope) -> str:
    """What a table's note says of the ρ its intervals use."""
    if scope == "experiment":
        return ("ρ by template is the paper's within-cell one-way ANOVA estimate pooled once "
                "per outcome and experiment over every configuration's cells "
                "(configuration × fault family) in the loaded records")
    return ("ρ by template is the within-cell one-way ANOVA estimate over each configuration's "
            "own cells (configuration × fault family, within its experiment), as in the run's "
            "summary and the gate; a cell pooling configurations uses their cells together")


_LAST: list[tuple[Sequence[Any], IccBook]] = []


def book_of(episodes: Sequence[Any]) -> IccBook:
    """The book of ``episodes``, built once for the same sequence object (every table of one
    report is handed the same loaded rows; :func:`use_book` sets the one a report uses)."""
    if _LAST and _LAST[0][0] is episodes:
        return _LAST[0][1]
    book = IccBook(episodes)
    _LAST[:] = [(episodes, book)]
    return book


def use_book(episodes: Sequence[Any], scope: RhoScope) -> IccBook:
    """Make the book of ``episodes`` the one with ``scope`` (``limbo report --rho``)."""
    book = IccBook(episodes, scope)
    _LAST[:] = [(episodes, book)]
    return book
