"""Table 7: recovery conditions — EOS, duplicate rate, TS, tool calls, operator time, tokens.

EOS, duplicate rate and TS are over fired faulted episodes; tool calls, operator minutes
(escalations × 15 simulated minutes) and tokens are means per episode over every episode of the
row, fault-free ones included, as costs are. Each condition (× contract variant, and ×
documentation, instruction and operator variant, when several are present) has one row per
agent and, with several agents, a pooled row. The paper's own layout (conditions as columns,
costs pooled in the bottom rows) is :mod:`~limbo_plugin.report.tables.conditions_paper`.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import (
    variant_rank,
    variant_values,
    varying_variants,
    wait_bound,
)
from limbo_plugin.report.icc import DUPLICATE, EOS, TS, IccBook, book_of
from limbo_plugin.report.matching import on_shared_worlds
from limbo_plugin.report.tables.base import (
    Cell,
    Column,
    Result,
    Skipped,
    Table,
    group,
    icc_note,
    mean,
    rate,
)
from limbo_plugin.store.view import EpisodeView

ID = "table7_conditions"
TITLE = "Table 7 per agent: recovery conditions with each agent's costs"
ORDER = ("vanilla", "aware", "reflect", "paraphrase_1", "paraphrase_2", "paraphrase_3",
         "sdk_retry", "rules", "vbr", "wait", "guard", "guard-no-key", "guard-no-consistency",
         "guard-no-block", "guard-no-annotate", "guard-no-promise", "state_oracle",
         "outcome_oracle")
OPERATOR_MINUTES = 15.0
ALL_AGENTS = "all agents"


def condition_rank(condition: str) -> tuple[int, int, str]:
    bound = wait_bound(condition)
    if bound is not None:
        return (ORDER.index("wait"), bound, condition)
    return (ORDER.index(condition) if condition in ORDER else len(ORDER), 0, condition)


def experiment_name(row: EpisodeView) -> str:
    return row.experiment or "—"


def table7(rows: Sequence[EpisodeView]) -> Result:
    """One block per experiment (a condition is compared with the conditions its experiment ran
    on the same worlds, never with another experiment's), each on the worlds every compared
    configuration of an agent has."""
    blocks = {name: members for name, members in sorted(group(rows, experiment_name).items())
              if len({r.condition for r in members}) > 1}
    if not blocks:
        conditions = sorted({r.condition for r in rows}, key=condition_rank)
        return Skipped(ID, TITLE, "needs episodes under at least two conditions (found only "
                       f"{', '.join(conditions) or 'none'})")
    book = book_of(rows)
    scope = [r for members in blocks.values() for r in members]
    contracts = sorted({r.contract for r in scope}, key=lambda c: (c != "native", c))
    variants = varying_variants(scope)
    columns = [Column("experiment", "experiment")] if len(blocks) > 1 else []
    columns.append(Column("condition", "condition"))
    if len(contracts) > 1:
        columns.append(Column("contract", "contract"))
    columns += [Column(name, name) for name in variants]
    columns += [Column("agent", "agent"), Column("episodes", "episodes", "int"),
                Column("eos", "EOS", "rate"), Column("duplicate_rate", "duplicate rate", "rate"),
                Column("ts", "TS", "rate"), Column("tool_calls", "tool calls", "float"),
                Column("operator_min", "operator min", "float"),
                Column("tokens", "tokens", "float", digits=0)]
    table = Table(ID, TITLE, "Per condition: exactly-once success, duplicate rate and task "
                  "success over fired faulted episodes; mean tool calls, operator minutes "
                  "(escalations × 15) and tokens per episode. Each experiment's conditions are "
                  "compared on the worlds they share.", columns)
    for experiment, members in blocks.items():
        matched = on_shared_worlds(members, lambda r: (r.condition, r.contract,
                                                       variant_values(r, variants)))
        _block(table, matched.rows, book, contracts, variants,
               {"experiment": experiment} if len(blocks) > 1 else {})
        prefix = f"{experiment}: " if len(blocks) > 1 else ""
        table.notes.append(prefix + matched.note("configuration"))
    skipped = sorted(set(group(rows, experiment_name)) - set(blocks))
    if skipped:
        table.notes.append("Experiments with a single condition are not in this table: "
                           + ", ".join(skipped) + ".")
    table.notes.append(icc_note(book, EOS, DUPLICATE, TS) + " Tokens are shown where the "
                       "agent recorded usage (model agents), never as zero.")
    return table


def _block(table: Table, rows: Sequence[EpisodeView], book: IccBook, contracts: Sequence[str],
           variants: Sequence[str], label: dict[str, str]) -> None:
    conditions = sorted({r.condition for r in rows}, key=condition_rank)
    agents = sorted({r.agent for r in rows})
    by_cell = group(rows, lambda r: (r.condition, r.contract, variant_values(r, variants)))
    combinations = sorted({v for _, _, v in by_cell}, key=lambda v: variant_rank(v, variants))
    for condition, contract, values in ((c, k, v) for c in conditions for k in contracts
                                        for v in combinations):
        members = by_cell.get((condition, contract, values), [])
        if not members:
            continue
        present = [a for a in agents if any(r.agent == a for r in members)]
        labels = [*present, ALL_AGENTS] if len(present) > 1 else present
        for agent in labels:
            mine = members if agent == ALL_AGENTS else [r for r in members if r.agent == agent]
            hit = [r for r in mine if r.faulted]
            tokens = [r.tokens for r in mine if r.tokens is not None]
            cells: dict[str, Cell] = {**label, "condition": condition, "agent": agent,
                           "episodes": len(mine),
                           "eos": rate(hit, EOS, book),
                           "duplicate_rate": rate(hit, DUPLICATE, book),
                           "ts": rate(hit, TS, book),
                           "tool_calls": mean(r.tool_calls for r in mine),
                           "operator_min": mean(r.escalations * OPERATOR_MINUTES for r in mine),
                           "tokens": mean(float(t) for t in tokens)}
            if len(contracts) > 1:
                cells["contract"] = contract
            cells.update(zip(variants, values, strict=True))
            table.rows.append(cells)
