"""Table 5 and Figure 3's table: what the tool contract changes.

**Table 5** (paper §6.2 "Changing the contract", E2 + E2k): the duplicate rate by fault family
under committed faults and redelivery, one column per contract variant (native first) and
condition, agents pooled; then the share of those episodes in which the agent's own faulted call
carried an idempotency key, and exactly-once success over every fired faulted episode. Only the
conditions run under *every* contract variant present are columns (E2's other seven conditions
have no keys-everywhere counterpart), only default documentation, instruction and operator
(E4's variants are not E2's), and each agent's columns are compared on the worlds they all have.

**Contract classes** (Figure 3): the duplicate rate by the focal write's *native* contract class
(rows line up across variants: a write that gains a key under keys everywhere keeps its class),
unmitigated episodes only, one column per contract variant.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import (
    CONTRACT_CLASS_ORDER,
    committed_or_redelivery,
    contract_class,
    ordered_families,
    unmitigated,
)
from limbo_plugin.report.icc import DUPLICATE, EOS, Measure, book_of
from limbo_plugin.report.matching import on_shared_worlds
from limbo_plugin.report.tables.base import (
    Cell,
    Column,
    Result,
    Skipped,
    Table,
    icc_note,
    rate,
)
from limbo_plugin.store.view import EpisodeView

ID = "table5_contracts"
TITLE = "Table 5: duplicate rate by contract variant and condition"
ID_CLASSES = "contract_classes"
TITLE_CLASSES = "Figure 3: duplicate rate by contract class of the focal write"
ALL = "all classes"
ALL_FAULTS = "committed faults and redelivery"
KEYED = "key attached (agent's faulted call)"
EOS_ROW = "EOS (all fired faulted episodes)"


def keyed(row: EpisodeView) -> bool:
    return bool(row.focal_keyed)


KEY_ATTACHED = Measure("key attached", keyed, committed_or_redelivery)


def _contract_rank(contract: str) -> tuple[bool, str]:
    return (contract != "native", contract)


def _condition_rank(condition: str) -> tuple[bool, str]:
    return (condition != "vanilla", condition)


def table5(rows: Sequence[EpisodeView]) -> Result:
    plain = [r for r in rows if r.docs == "default" and r.instruction == "default"
             and r.operator == "truthful"]
    contracts = sorted({r.contract for r in plain}, key=_contract_rank)
    if len(contracts) < 2:
        return Skipped(ID, TITLE, "needs episodes under at least two contract variants (found "
                       f"{', '.join(contracts) or 'none'}): run E2 and E2k")
    shared = set.intersection(*({r.condition for r in plain if r.contract == c}
                                for c in contracts))
    if not shared:
        return Skipped(ID, TITLE, "no condition was run under every contract variant")
    conditions = sorted(shared, key=_condition_rank)
    columns_of = [(c, k) for c in contracts for k in conditions]
    chosen = [r for r in plain if r.condition in shared]
    matched = on_shared_worlds(chosen, lambda r: (r.contract, r.condition))
    scope = [r for r in matched.rows if committed_or_redelivery(r)]
    if not scope:
        return Skipped(ID, TITLE, "no fired committed-fault or redelivery episode")
    book = book_of(rows)
    columns = [Column("faults", "faults")]
    columns += [Column(f"{c}|{k}", f"{c} / {k}", "rate") for c, k in columns_of]
    table = Table(ID, TITLE, "Duplicate rate by fault family under committed faults and "
                  "redelivery (fired), by contract variant and condition, agents pooled; the "
                  "share of those episodes whose faulted call the agent sent with an "
                  "idempotency key; exactly-once success over every fired faulted episode.",
                  columns)

    def column(r: EpisodeView) -> str:
        return f"{r.contract}|{r.condition}"

    def row(label: str, members: Sequence[EpisodeView], measure: Measure) -> None:
        cells: dict[str, Cell] = {"faults": label}
        for c, k in columns_of:
            cells[f"{c}|{k}"] = rate([r for r in members if column(r) == f"{c}|{k}"], measure,
                                     book)
        table.rows.append(cells)

    for family in ordered_families(scope):
        row(family, [r for r in scope if r.family == family], DUPLICATE)
    row(ALL_FAULTS, scope, DUPLICATE)
    row(KEYED, scope, KEY_ATTACHED)
    row(EOS_ROW, [r for r in matched.rows if r.faulted], EOS)
    agents = len({r.agent for r in scope})
    table.notes.append(f"{agents} agent(s) pooled. " + matched.note("column") + " "
                       + icc_note(book, DUPLICATE, KEY_ATTACHED, EOS))
    return table


def _class_rank(name: str) -> tuple[int, str]:
    order = CONTRACT_CLASS_ORDER
    return (order.index(name) if name in order else len(order), name)


def table_contract_classes(rows: Sequence[EpisodeView]) -> Result:
    scope = [r for r in rows if committed_or_redelivery(r) and contract_class(r)
             and unmitigated(r)]
    if not scope:
        return Skipped(ID_CLASSES, TITLE_CLASSES, "no fired committed-fault or redelivery "
                       "episode with a focal write in the vanilla condition")
    contracts = sorted({r.contract for r in scope}, key=_contract_rank)
    classes = sorted({contract_class(r) or "" for r in scope}, key=_class_rank)
    book = book_of(rows)
    columns = [Column("contract_class", "contract class")]
    columns += [Column(c, c, "rate") for c in contracts]
    table = Table(ID_CLASSES, TITLE_CLASSES, "Duplicate rate under committed faults and "
                  "redelivery (fired, vanilla condition), by the native contract class of the "
                  "focal write (rows) and contract variant (columns); agents pooled.", columns)
    for name in [*classes, ALL]:
        members = scope if name == ALL else [r for r in scope if contract_class(r) == name]
        cells: dict[str, Cell] = {"contract_class": name}
        for c in contracts:
            cells[c] = rate([r for r in members if r.contract == c], DUPLICATE, book)
        table.rows.append(cells)
    agents = len({r.agent for r in scope})
    table.notes.append(f"{agents} agent(s) pooled. " + icc_note(book, DUPLICATE))
    return table
