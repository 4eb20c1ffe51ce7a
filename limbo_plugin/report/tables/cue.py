"""Table 10: the "exactly once" cue ablation on paired episodes (paper §6.6, E6).

An episode with the ``no_cue`` instruction is paired with the ``default`` episode of the same world
and the same configuration otherwise. For each agent (and all agents pooled) and fault group
(resolvable faults, late commits, redelivery, and the other families present) the table gives
both duplicate rates, the discordant counts and the exact McNemar p-value, Holm-corrected over
every test in the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from limbo_plugin.report.facets import family_ranks, pooled, tier_label, tiers_of, unpooled_note
from limbo_plugin.report.icc import DUPLICATE, book_of
from limbo_plugin.report.tables.base import (
    Column,
    Result,
    Skipped,
    Table,
    icc_note,
    rate,
)
from limbo_plugin.stats import holm, mcnemar_exact, paired_counts
from limbo_plugin.store.view import EpisodeView

ID = "table10_cue"
TITLE = "Table 10: cue ablation (default vs no_cue instruction)"
ALL_AGENTS = "all agents"


def fault_group(row: EpisodeView) -> str:
    return "resolvable" if row.fault_class == "resolvable" else row.family


def pairs(rows: Sequence[EpisodeView]) -> list[tuple[EpisodeView, EpisodeView]]:
    """(default, no_cue) pairs of fired faulted episodes on the same world and configuration."""
    def pair_key(r: EpisodeView) -> tuple[str, ...]:
        return (r.episode_id, r.agent, r.contract, r.docs, r.condition, r.operator)

    cued = {pair_key(r): r for r in rows if r.instruction == "default" and r.faulted}
    out = []
    for row in rows:
        if row.instruction == "no_cue" and row.faulted:
            match = cued.get(pair_key(row))
            if match is not None:
                out.append((match, row))
    return sorted(out, key=lambda p: (p[0].agent, p[0].episode_id, p[0].condition))


def _is_agent(agent: str) -> Callable[[EpisodeView], bool]:
    return lambda r: r.agent == agent


def _in_tier(tier: str) -> Callable[[EpisodeView], bool]:
    return lambda r: pooled(r) and r.tier == tier


def table10(rows: Sequence[EpisodeView]) -> Result:
    if not any(r.instruction == "no_cue" for r in rows):
        return Skipped(ID, TITLE, "no episode with the no_cue instruction")
    matched = pairs(rows)
    if not matched:
        return Skipped(ID, TITLE, "no no_cue episode has a default-instruction counterpart on "
                       "the same world and configuration")
    book = book_of(rows)
    agents = sorted({a.agent for a, _ in matched})
    ranks = family_ranks(rows)
    groups = sorted({fault_group(a) for a, _ in matched},
                    key=lambda name: (-1 if name == "resolvable" else ranks[name], name))
    columns = [Column("agent", "agent"), Column("faults", "faults"),
               Column("pairs", "pairs", "int"),
               Column("dup_default", "dup default", "rate"),
               Column("dup_no_cue", "dup no_cue", "rate"),
               Column("only_default", "dup only with cue", "int"),
               Column("only_no_cue", "dup only without cue", "int"),
               Column("p", "McNemar p", "pvalue"), Column("p_holm", "Holm p", "pvalue")]
    table = Table(ID, TITLE, "Paired episodes with and without the closing \"Make sure each "
                  "action happens exactly once.\" sentence: duplicate rates, discordant pairs "
                  "and exact McNemar tests (Holm-corrected over the table).", columns)
    # per agent; each tier's models pooled (the paper's "frontier models move from 4% to 7%",
    # the experiment spec's labels); all agents pooled. Pooled rows leave out pooled: false.
    selectors: dict[str, Callable[[EpisodeView], bool]] = {
        agent: _is_agent(agent) for agent in agents}
    if len(agents) > 1:
        for tier in tiers_of([a for a, _ in matched]):
            selectors[tier_label(tier, [a for a, _ in matched])] = _in_tier(tier)
        selectors[ALL_AGENTS] = pooled
    raw: list[float] = []
    for agent, selected in selectors.items():
        for name in groups:
            chosen = [(a, b) for a, b in matched if fault_group(a) == name and selected(a)]
            if not chosen:
                continue
            _, b, c, _ = paired_counts((a.duplicated, z.duplicated) for a, z in chosen)
            p = mcnemar_exact(b, c)
            raw.append(p)
            table.rows.append({
                "agent": agent, "faults": name, "pairs": len(chosen),
                "dup_default": rate([a for a, _ in chosen], DUPLICATE, book),
                "dup_no_cue": rate([z for _, z in chosen], DUPLICATE, book),
                "only_default": b, "only_no_cue": c, "p": p,
            })
    for row, adjusted in zip(table.rows, holm(raw), strict=True):
        row["p_holm"] = adjusted
    table.notes.append(icc_note(book, DUPLICATE))
    if (note := unpooled_note([a for a, _ in matched])) is not None and len(agents) > 1:
        table.notes.append(note)
    return table
