"""Observation equivalence and run-to-run stability (paper §6.1).

*Matched worlds* differ only in the hidden outcome of the focal write: two modes of one
observation-equivalence group with an error answer (the fault spec's groups T and E), of the same
template, instance, focal write, experiment and configuration. A pair is the world in which the
request never executed (hidden outcome ``absent``) and the one in which it committed
(``committed``): one pair per world and group, so the pairs are independent (a timeout triple
would give three pairs sharing their worlds, which the permutation test would count as three
independent ones). If no information leaks, the agent's first action after the fault should agree
across matched worlds as often as it agrees across *repeat runs* of one world (the same episode
and configuration in two record files), and the total-variation distance between the two worlds'
first-action distributions should match what exchanging the labels within pairs gives.
Stability: Cohen's κ of the duplicate outcome across repeat runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from limbo_plugin.report.facets import ambiguous
from limbo_plugin.report.tables.base import Column, Result, Skipped, Table, group, quiet_fit
from limbo_plugin.store.view import EpisodeView

ID_EQ = "observation_equivalence"
TITLE_EQ = "Observation equivalence: first action after the fault"
ID_ST = "stability"
TITLE_ST = "Stability across repeat runs"
PAIRED_OUTCOMES = ("absent", "committed")
"""The two hidden outcomes a matched pair sets against each other."""
ALL_AGENTS = "all agents"
Pair = tuple[Hashable, Hashable]


def matched_pairs(rows: Sequence[EpisodeView]) -> dict[str, list[Pair]]:
    """First-action pairs across matched worlds, by agent (ordered by mode name within a pair)."""
    out: dict[str, list[Pair]] = {}
    worlds = group([r for r in rows if matched_world(r)],
                   lambda r: (r.experiment or "", r.template, r.instance, r.focal_write,
                              r.fingerprint(), r.group or ""))
    for key in sorted(worlds):
        by_outcome = {r.hidden_outcome: r for r in worlds[key]}
        if all(o in by_outcome for o in PAIRED_OUTCOMES):
            first, second = (by_outcome[o] for o in PAIRED_OUTCOMES)
            out.setdefault(first.agent, []).append((first.first_action, second.first_action))
    return out


def matched_world(row: EpisodeView) -> bool:
    """A fired world of an ambiguous-error group, absent or committed, with a first action."""
    return (ambiguous(row) and row.hidden_outcome in PAIRED_OUTCOMES
            and row.first_action is not None)


def repeat_pairs(rows: Sequence[EpisodeView], repeats: Sequence[EpisodeView]
                 ) -> list[tuple[EpisodeView, EpisodeView]]:
    """(first run, repeat) pairs: declared repeats of one experiment's episode (same
    experiment, arm, world and configuration, another ``repeat`` number)."""
    primary = {r.run_key: r for r in rows}
    return [(primary[r.run_key], r) for r in repeats if r.run_key in primary]


def _with_pooled(by_agent: dict[str, list[Pair]]) -> list[tuple[str, list[Pair]]]:
    entries = sorted(by_agent.items())
    if len(entries) > 1:
        entries.append((ALL_AGENTS, [p for _, ps in entries for p in ps]))
    return entries


def table_equivalence(rows: Sequence[EpisodeView], repeats: Sequence[EpisodeView]) -> Result:
    matched = matched_pairs(rows)
    if not matched:
        return Skipped(ID_EQ, TITLE_EQ, "no matched worlds (the absent and the committed "
                       "world of one error group, e.g. timeout_pre/post or http500_pre/post, of "
                       "one focal write under one configuration) with a first action after the "
                       "fault")
    try:
        from limbo_plugin.stats import first_action_agreement, permutation_tv_test
    except ImportError:
        return Skipped(ID_EQ, TITLE_EQ, "this installation's limbo_plugin.stats has no "
                       "first_action_agreement / permutation_tv_test")
    again: dict[str, list[Pair]] = {}
    for first, second in repeat_pairs(rows, repeats):
        if matched_world(first) and second.first_action:
            again.setdefault(first.agent, []).append((first.first_action, second.first_action))
    columns = [Column("agent", "agent"), Column("matched_pairs", "matched pairs", "int"),
               Column("matched_agreement", "agreement (matched worlds)", "percent"),
               Column("repeat_pairs", "repeat pairs", "int"),
               Column("repeat_agreement", "agreement (repeat runs)", "percent"),
               Column("tv", "TV distance", "float", digits=3),
               Column("tv_null", "TV under exchange", "float", digits=3),
               Column("p", "permutation p", "pvalue")]
    table = Table(ID_EQ, TITLE_EQ, "The agent's first call after the fault (its tool, or "
                  "'reissue'): agreement across matched worlds against agreement across repeat "
                  "runs, and a within-pair permutation test of the total-variation distance.",
                  columns)
    pooled_again = [p for ps in again.values() for p in ps]
    for agent, pairs in _with_pooled(matched):
        mine = pooled_again if agent == ALL_AGENTS else again.get(agent, [])
        with quiet_fit():
            test = permutation_tv_test(pairs)
        table.rows.append({
            "agent": agent, "matched_pairs": len(pairs),
            "matched_agreement": first_action_agreement(pairs),
            "repeat_pairs": len(mine),
            "repeat_agreement": first_action_agreement(mine) if mine else None,
            "tv": test.statistic, "tv_null": test.null_mean, "p": test.pvalue,
        })
    if not pooled_again:
        table.notes.append("No declared repeat runs: run the experiment with --limbo-repeat to "
                           "compare with run-to-run agreement.")
    table.notes.append("Permutation test: 10,000 within-pair label exchanges, seed 0.")
    return table


def table_stability(rows: Sequence[EpisodeView], repeats: Sequence[EpisodeView]) -> Result:
    both = repeat_pairs(rows, repeats)
    if not both:
        return Skipped(ID_ST, TITLE_ST, "no declared repeat runs (the same experiment's "
                       "episode and configuration with another repeat number: run it with "
                       "--limbo-repeat)")
    try:
        from limbo_plugin.stats import cohens_kappa
    except ImportError:
        return Skipped(ID_ST, TITLE_ST, "this installation's limbo_plugin.stats has no "
                       "cohens_kappa")
    by_agent: dict[str, list[tuple[EpisodeView, EpisodeView]]] = {}
    for first, second in both:
        by_agent.setdefault(first.agent, []).append((first, second))
    entries = sorted(by_agent.items())
    if len(entries) > 1:
        entries.append((ALL_AGENTS, both))
    columns = [Column("agent", "agent"), Column("repeat_pairs", "repeat pairs", "int"),
               Column("agreement", "duplicate outcome agrees", "percent"),
               Column("kappa", "Cohen's κ", "float", digits=2)]
    table = Table(ID_ST, TITLE_ST, "Duplicate outcomes of the same episodes run twice: raw "
                  "agreement and Cohen's κ.", columns)
    for agent, pairs in entries:
        x = [a.duplicated for a, _ in pairs]
        y = [b.duplicated for _, b in pairs]
        table.rows.append({"agent": agent, "repeat_pairs": len(pairs),
                           "agreement": sum(a == b for a, b in zip(x, y, strict=True))
                           / len(pairs),
                           "kappa": cohens_kappa(x, y)})
    table.notes.append("κ is undefined (shown as —) when both runs have a single outcome.")
    return table
