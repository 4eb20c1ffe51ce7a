"""Table 6: waiting versus keys under late commits (paper §6.3, E5).

One row per delay distribution (``fixed``: timeout_late, 90 s; ``tail``: timeout_late_tail,
log-uniform 40 s–2 h) × contract variant × condition, agents pooled. ``time`` is the mean
agent-visible episode time in simulated minutes. ``P(δ ≤ Δ)`` is, for a ``wait_<Δ>`` condition,
the share of the row's worlds whose recorded in-flight delay (``fault.delay_s``) does not exceed
the bound Δ the condition assumes: where it does not, every re-issue duplicates. Documentation,
instruction and operator variants, when several are present, split the rows too.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import (
    variant_rank,
    variant_values,
    varying_variants,
    wait_bound,
)
from limbo_plugin.report.icc import DUPLICATE, EOS, book_of
from limbo_plugin.report.tables.base import (
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

ID = "table6_waiting"
TITLE = "Table 6: waiting versus keys under late commits"
DELAYS = {"fixed": "fixed", "log_uniform": "tail"}
"""How each late-delay kind of the fault spec is named in the table."""


def delay_of(row: EpisodeView) -> str | None:
    """``fixed`` or ``tail`` for a fired late commit (hidden outcome ``late``), else None."""
    if not row.fired or row.hidden_outcome != "late":
        return None
    return DELAYS.get(row.late_delay or "", row.late_delay)
CONDITION_ORDER = ("vanilla", "guard", "state_oracle", "outcome_oracle")


def condition_rank(condition: str) -> tuple[int, int, str]:
    bound = wait_bound(condition)
    if condition == "vanilla":
        return (0, 0, condition)
    if bound is not None:
        return (1, bound, condition)
    if condition in CONDITION_ORDER:
        return (2, CONDITION_ORDER.index(condition), condition)
    return (3, 0, condition)


def compared(condition: str) -> bool:
    """The paper's Table 6 rows: vanilla, the wait_<Δ> family, the guard and the oracles (E2's
    other conditions under late commits are Table 7's)."""
    return condition in CONDITION_ORDER or wait_bound(condition) is not None


def share_within_bound(rows: Sequence[EpisodeView], bound: int) -> float | None:
    worlds = {r.episode_id: r.delay_s for r in rows if r.delay_s is not None}
    if not worlds:
        return None
    return sum(1 for d in worlds.values() if d <= bound) / len(worlds)


def table6(rows: Sequence[EpisodeView]) -> Result:
    late = [r for r in rows if delay_of(r) is not None]
    scope = [r for r in late if compared(r.condition)]
    if not scope:
        return Skipped(ID, TITLE, "no fired late-commit episode (hidden outcome 'late') "
                       "under vanilla, wait_<Δ>, the guard or an oracle")
    book = book_of(rows)
    variants = varying_variants(scope)
    columns = [Column("delay", "delay"), Column("contract", "contract"),
               Column("condition", "condition"), *(Column(name, name) for name in variants),
               Column("episodes", "episodes", "int"),
               Column("eos", "EOS", "rate"), Column("duplicate_rate", "duplicate rate", "rate"),
               Column("time_min", "time (sim. min)", "float"),
               Column("p_delay_within_bound", "P(δ ≤ Δ)", "percent")]
    table = Table(ID, TITLE, "Late-commit episodes by delay distribution, contract variant and "
                  "condition (agents pooled): exactly-once success, duplicate rate, mean "
                  "simulated episode time and, for wait_<Δ>, the share of worlds whose in-flight "
                  "delay is within the assumed bound.", columns)
    groups = group(scope, lambda r: (delay_of(r) or "", r.contract, r.condition,
                                     variant_values(r, variants)))
    order = sorted(groups, key=lambda k: (k[0], k[1] != "native", k[1], condition_rank(k[2]),
                                          variant_rank(k[3], variants)))
    for key in order:
        delay, contract, condition, values = key
        members = groups[key]
        bound = wait_bound(condition)
        time = mean(r.sim_seconds for r in members)
        table.rows.append({
            "delay": delay, "contract": contract, "condition": condition,
            **dict(zip(variants, values, strict=True)),
            "episodes": len(members), "eos": rate(members, EOS, book),
            "duplicate_rate": rate(members, DUPLICATE, book),
            "time_min": None if time is None else time / 60.0,
            "p_delay_within_bound": None if bound is None else share_within_bound(members,
                                                                                   bound),
        })
    agents = len({r.agent for r in scope})
    others = sorted({r.condition for r in late} - {r.condition for r in scope})
    if others:
        table.notes.append("Late-commit episodes of other conditions are in Table 7: "
                           + ", ".join(others) + ".")
    table.notes.append(f"{agents} agent(s) pooled. " + icc_note(book, EOS, DUPLICATE))
    return table
