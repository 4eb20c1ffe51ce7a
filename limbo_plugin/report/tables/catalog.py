"""One generator per table of the paper (and the report's extra analyses), in report order.

:mod:`limbo_plugin.report.tables` exports these names; they live here so that importing one
table module (or :mod:`~limbo_plugin.report.tables.base`, as the figures do) does not import
every generator.

Each takes the merged episodes and the repeat runs and returns a
:class:`~limbo_plugin.report.tables.base.Table` or a
:class:`~limbo_plugin.report.tables.base.Skipped` with the reason. :data:`TABLES` declares
Limbo's own; an extension module's ``TABLES`` (:mod:`limbo_plugin.extensions`) adds more after
them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, TypeGuard

from limbo_plugin.extensions import declared
from limbo_plugin.report.icc import DEFAULT_SCOPE, RhoScope, use_book
from limbo_plugin.report.tables.agents import table3, table3_tiers
from limbo_plugin.report.tables.base import Result
from limbo_plugin.report.tables.behaviour import table_behaviour
from limbo_plugin.report.tables.conditions import table7
from limbo_plugin.report.tables.conditions_paper import table7_paper
from limbo_plugin.report.tables.contracts import table5, table_contract_classes
from limbo_plugin.report.tables.cue import table10
from limbo_plugin.report.tables.equivalence import table_equivalence, table_stability
from limbo_plugin.report.tables.harnesses import table8, table9
from limbo_plugin.report.tables.mcnemar import table_appendix_b
from limbo_plugin.report.tables.overclaim import table_overclaim
from limbo_plugin.report.tables.passk import table_pass_k
from limbo_plugin.report.tables.readpath import table_h3
from limbo_plugin.report.tables.regression import table_h1
from limbo_plugin.report.tables.reissues import table_key_reuse, table_reissue_timing
from limbo_plugin.report.tables.robustness import table_robustness
from limbo_plugin.report.tables.shapley import table4
from limbo_plugin.report.tables.spec_tables import SPEC_TABLES
from limbo_plugin.report.tables.stakes import table_stakes
from limbo_plugin.report.tables.waiting import table6
from limbo_plugin.store.view import EpisodeView

if TYPE_CHECKING:
    from limbo_plugin.spec.registry import SpecRegistry

PACKAGE = "limbo_plugin.report.tables"
"""Where Limbo's own :data:`TABLES` are declared, as extension modules declare theirs."""

Generator = Callable[[Sequence[EpisodeView], Sequence[EpisodeView]], Result]


def _rows_only(fn: Callable[[Sequence[EpisodeView]], Result]) -> Generator:
    @functools.wraps(fn)  # named after the table's function (``limbo list tables``)
    def generate(rows: Sequence[EpisodeView], repeats: Sequence[EpisodeView]) -> Result:
        return fn(rows)
    return generate


TABLES: tuple[Generator, ...] = (
    _rows_only(table3), _rows_only(table3_tiers), _rows_only(table4), _rows_only(table_h1),
    _rows_only(table_h3),
    _rows_only(table5),
    _rows_only(table_contract_classes),
    _rows_only(table6), _rows_only(table7_paper), _rows_only(table7),
    _rows_only(table_appendix_b),
    _rows_only(table8), _rows_only(table9),
    _rows_only(table_robustness),
    _rows_only(table10), _rows_only(table_behaviour), _rows_only(table_overclaim),
    _rows_only(table_stakes), _rows_only(table_reissue_timing), _rows_only(table_key_reuse),
    table_equivalence, table_stability, table_pass_k,
)


FITS: frozenset[Callable[..., Result]] = frozenset({table4, table_h1, table_stakes})
"""The generators that fit models or test with scipy and statsmodels: the slow half of the
tables. The others are made first, so that the figures, drawn from them, need not wait."""


@cache
def all_tables() -> tuple[Generator, ...]:
    """:data:`TABLES`, then every extension module's, in report order."""
    found = declared("TABLES", [PACKAGE], accepts=_is_generator,
                     what="a function (episodes, repeat runs) -> Table | Skipped")
    return tuple(d.value for d in found)


def _is_generator(item: object) -> TypeGuard[Generator]:
    return callable(item)


def build_tables(rows: Sequence[EpisodeView], repeats: Sequence[EpisodeView] = (),
                 registry: SpecRegistry | None = None, *,
                 rho: RhoScope = DEFAULT_SCOPE,
                 before_fits: Callable[[list[Result]], None] | None = None) -> list[Result]:
    """Every table on the episodes, in report order; with ``registry``, first the tables that
    describe the benchmark itself (:data:`SPEC_TABLES`: the paper's Tables 1, 2 and 11, from
    the specs). ``rho`` is the cells each interval's ρ is estimated over
    (:mod:`limbo_plugin.report.icc`). The tables that fit models (:data:`FITS`) are made last;
    ``before_fits`` is handed every other table before they start (the figures' tables among
    them). Each generator depends on the episodes alone, so the order they run in changes no
    table."""
    use_book(rows, rho)
    described: list[Result] = ([generate(registry) for generate in SPEC_TABLES]
                               if registry else [])
    generators = all_tables()
    made: dict[int, Result] = {i: generate(rows, repeats) for i, generate in enumerate(generators)
                               if not _fits(generate)}
    if before_fits is not None:
        before_fits(described + [made[i] for i in sorted(made)])
    for i, generate in enumerate(generators):
        if i not in made:
            made[i] = generate(rows, repeats)
    return described + [made[i] for i in range(len(generators))]


def _fits(generate: Generator) -> bool:
    return getattr(generate, "__wrapped__", generate) in FITS


