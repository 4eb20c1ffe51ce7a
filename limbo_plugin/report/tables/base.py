"""The table model every generator returns and every writer (Markdown, CSV, JSON, HTML) reads.

A generator returns a :class:`Table`, or a :class:`Skipped` naming what input is missing: a table
without its inputs is never filled with zeros. Rates are :class:`RateCell`s carrying ``k``, ``n``
and the Wilson-on-Kish interval, so every writer shows the same numbers and tests can check them.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

if TYPE_CHECKING:  # a figure worker unpickles these tables without the records' models
    from limbo_plugin.report.icc import IccBook, Measure
    from limbo_plugin.store.view import EpisodeView

Kind = Literal["text", "int", "float", "rate", "pvalue", "percent"]
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class RateCell:
    """``k`` events in ``n`` episodes with a 95% Wilson interval on the Kish effective n."""

    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None
    n_eff: float


Cell = str | int | float | RateCell | None


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    kind: Kind = "text"
    digits: int = 1


@dataclass
class Table:
    id: str
    title: str
    description: str
    columns: list[Column]
    rows: list[dict[str, Cell]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def column(self, key: str) -> Column:
        return next(c for c in self.columns if c.key == key)

    def cell(self, row: int, key: str) -> Cell:
        return self.rows[row].get(key)

    def find(self, **labels: str) -> dict[str, Cell]:
        """The first row whose text cells equal ``labels`` (tests and figures use it)."""
        for row in self.rows:
            if all(row.get(k) == v for k, v in labels.items()):
                return row
        raise KeyError(f"{self.id}: no row with {labels}")


@dataclass(frozen=True)
class Skipped:
    id: str
    title: str
    reason: str


Result = Table | Skipped
Predicate = Callable[["EpisodeView"], bool]


def rate(rows: Sequence[EpisodeView], measure: Measure, book: IccBook) -> RateCell:
    """The cell's rate with the Wilson-on-Kish interval, ρ from ``book`` (one estimate per
    outcome and experiment: the same interval the summary and the gate show)."""
    estimate = book.rate(rows, measure)
    if estimate.n == 0:
        return RateCell(k=0, n=0, rate=None, low=None, high=None, n_eff=0.0)
    return RateCell(k=estimate.k, n=estimate.n, rate=estimate.rate, low=estimate.low,
                    high=estimate.high, n_eff=estimate.n_eff)


def mean(values: Iterable[float]) -> float | None:
    data = list(values)
    return sum(data) / len(data) if data else None


def group(rows: Iterable[EpisodeView], key: Callable[[EpisodeView], K]
          ) -> dict[K, list[EpisodeView]]:
    out: dict[K, list[EpisodeView]] = defaultdict(list)
    for row in rows:
        out[key(row)].append(row)
    return dict(out)


ICC_NOTE = "Rates with 95% Wilson intervals on the Kish effective sample size; "


def icc_note(book: IccBook, *measures: Measure) -> str:
    """The table's note on its intervals: which ρ they used (the book's scope) and, for each
    outcome the table shows, its value(s) and from how many cells."""
    from limbo_plugin.report.icc import scope_note

    return (ICC_NOTE + scope_note(book.scope) + ". ρ: "
            + "; ".join(f"{m.name} {book.describe(m)}" for m in measures) + ".")



@contextmanager
def quiet_fit() -> Iterator[None]:
    """Silence the numerical warnings of model fits (separation, boundary estimates).

    A fit that cannot be trusted raises ``ValueError`` in :mod:`limbo_plugin.stats`, which the
    table turns into a stated reason; the warnings statsmodels and numpy print on the way would
    only be noise in ``limbo report``'s output.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"statsmodels(\..*)?")
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        yield

