"""Table 5: duplicate rate by the focal write's contract class × contract variant and condition.

Over committed faults and redelivery (fired), agents pooled: the question is what the contract
lets any agent do, and the same writes must line up across variants, so rows use the *native*
class of the focal write (:func:`~limbo_plugin.report.facets.contract_class`). Documentation,
instruction and operator variants, when several are present, are columns of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import (
    CONTRACT_CLASS_ORDER,
    committed_or_redelivery,
    contract_class,
    variant_rank,
    variant_values,
    varying_variants,
)
from limbo_plugin.report.icc import DUPLICATE, book_of
from limbo_plugin.report.load import EpisodeRow
from limbo_plugin.report.tables.base import (
    Column,
    Result,
    Skipped,
    Table,
    icc_note,
    rate,
)

ID = "table5_contracts"
TITLE = "Table 5: duplicate rate by contract class and condition"
ALL = "all classes"


def _class_rank(name: str) -> tuple[int, str]:
    order = CONTRACT_CLASS_ORDER
    return (order.index(name) if name in order else len(order), name)


def table5(rows: Sequence[EpisodeRow]) -> Result:
    scope = [r for r in rows if committed_or_redelivery(r) and contract_class(r)]
    if not scope:
        return Skipped(ID, TITLE, "no fired committed-fault or redelivery episode with a "
                       "focal write")
    split = varying_variants(scope)

    def variant(r: EpisodeRow) -> tuple[str, ...]:
        return (r.contract, r.condition, *variant_values(r, split))

    variants = sorted({variant(r) for r in scope},
                      key=lambda v: (v[:2], variant_rank(v[2:], split)))
    classes = sorted({contract_class(r) or "" for r in scope}, key=_class_rank)
    book = book_of(rows)
    columns = [Column("contract_class", "contract class")]
    columns += [Column("|".join(v), " / ".join(v), "rate") for v in variants]
    table = Table(ID, TITLE, "Duplicate rate under committed faults and redelivery (fired), "
                  "by the native contract class of the focal write (rows) and contract variant "
                  "/ condition (columns); agents pooled.", columns)
    for name in [*classes, ALL]:
        members = scope if name == ALL else [r for r in scope if contract_class(r) == name]
        cells: dict = {"contract_class": name}
        for v in variants:
            cells["|".join(v)] = rate([r for r in members if variant(r) == v], DUPLICATE, book)
        table.rows.append(cells)
    agents = len({r.agent for r in scope})
    table.notes.append(f"{agents} agent(s) pooled. " + icc_note(book, DUPLICATE))
    return table
