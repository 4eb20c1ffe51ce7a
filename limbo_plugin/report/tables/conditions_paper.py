"""Table 7 in the paper's layout: conditions side by side, costs pooled in the bottom rows.

The paper's Table 7 (§6.5) has one column per recovery condition; its rows give each model's
EOS, duplicate rate and TS over fired faulted episodes, and "the bottom rows report mean cost
per episode over all four models": tool calls, operator minutes (escalations × 15 simulated
minutes) and tokens, over every episode of the condition, fault-free ones included, as costs
are, pooled over the agents pooled statistics include. :mod:`conditions` keeps the per-agent
view (one row per condition and agent, costs per agent) as ``table7_conditions``. Conditions are
compared on the worlds they share, within one experiment and contract (one block each when
several are present).
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import pooled, unpooled_note
from limbo_plugin.report.icc import DUPLICATE, EOS, TS, Measure, book_of
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
from limbo_plugin.report.tables.conditions import (
    OPERATOR_MINUTES,
    condition_rank,
    experiment_name,
)
from limbo_plugin.store.view import EpisodeView

ID = "table7_paper"
TITLE = "Table 7: recovery conditions (the paper's layout)"
POOLED = "all agents (pooled)"
MEASURES: tuple[tuple[str, Measure], ...] = (("EOS", EOS), ("duplicate rate", DUPLICATE),
                                              ("TS", TS))
COSTS = ("tool calls", "operator min", "tokens")


def table7_paper(rows: Sequence[EpisodeView]) -> Result:
    blocks = {key: members for key, members in sorted(
        group(rows, lambda r: (experiment_name(r), r.contract)).items())
        if len({r.condition for r in members}) > 1}
    if not blocks:
        return Skipped(ID, TITLE, "needs episodes under at least two conditions in one "
                       "experiment and contract")
    book = book_of(rows)
    conditions = sorted({r.condition for members in blocks.values() for r in members},
                        key=condition_rank)
    several = len(blocks) > 1
    columns = ([Column("experiment", "experiment"), Column("contract", "contract")]
               if several else [])
    columns += [Column("agent", "agent"), Column("measure", "")]
    columns += [Column(c, c, "rate") for c in conditions]
    table = Table(ID, TITLE, "Each condition in its own column: per agent, EOS, duplicate rate "
                  "and TS over fired faulted episodes; the bottom rows, mean cost per episode "
                  "(tool calls, operator minutes, tokens) over every episode, pooled over the "
                  "agents. Conditions compared on the worlds they share.", columns)
    for (experiment, contract), members in blocks.items():
        label: dict[str, Cell] = ({"experiment": experiment, "contract": contract}
                                  if several else {})
        matched = on_shared_worlds(members, lambda r: r.condition)
        kept = matched.rows
        for agent in sorted({r.agent for r in kept}):
            mine = [r for r in kept if r.agent == agent and r.faulted]
            for name, measure in MEASURES:
                cells: dict[str, Cell] = {**label, "agent": agent, "measure": name}
                for condition in conditions:
                    hit = [r for r in mine if r.condition == condition]
                    cells[condition] = rate(hit, measure, book) if hit else None
                table.rows.append(cells)
        everyone = [r for r in kept if pooled(r)]
        for name in COSTS:
            cost: dict[str, Cell] = {**label, "agent": POOLED, "measure": name}
            for condition in conditions:
                cost[condition] = _cost(name, [r for r in everyone if r.condition == condition])
            table.rows.append(cost)
        prefix = f"{experiment}, {contract}: " if several else ""
        table.notes.append(prefix + matched.note("condition"))
    table.notes.append(icc_note(book, EOS, DUPLICATE, TS) + " Costs: tool calls and operator "
                       f"minutes (escalations × {OPERATOR_MINUTES:g}) per episode, and tokens "
                       "per episode where the agent recorded usage (model agents), never as "
                       "zero. The per-agent view is table7_conditions.")
    if (note := unpooled_note(rows)) is not None:
        table.notes.append(note)
    return table


def _cost(name: str, rows: Sequence[EpisodeView]) -> float | None:
    if name == "tool calls":
        return mean(float(r.tool_calls) for r in rows)
    if name == "operator min":
        return mean(r.escalations * OPERATOR_MINUTES for r in rows)
    return mean(float(r.tokens) for r in rows if r.tokens is not None)
