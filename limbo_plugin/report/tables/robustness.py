"""E4 (paper §6.6): each robustness variant against its reference, on matched worlds only.

E4 probes one dimension at a time and compares "with matched E2 episodes (same worlds, models,
contract; only the probed dimension differs)": tool descriptions without consistency statements
or with explicit warnings against the default documentation, the three paraphrases of the
system prompt against ``vanilla``, an operator who never answers against the truthful one, and
the guard with one component removed against the whole ``guard``. A variant's *reference* is
its configuration with the probed dimension put back — documentation ``default``, operator
``truthful``, a paraphrase's condition ``vanilla``, an ablation's ``guard`` (the condition
modules' own lists, :data:`~limbo_plugin.conditions.wording.CONDITIONS` and
:data:`~limbo_plugin.conditions.guard.GUARD_COMPONENTS`) — with the same agent, contract and
instruction. Each variant episode is paired with the reference episode of the same world, in
every experiment that ran the reference (E2 beside E4: one block "against e2"; E1 too: a second
block, never a mixture). Only pairs enter the rates, and the table says how many episodes on
either side had no partner. The duplicate rates use the summary's ρ; the paired difference is
tested with the exact McNemar test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from limbo_plugin.conditions.guard import GUARD_COMPONENTS
from limbo_plugin.conditions.wording import CONDITIONS as WORDING
from limbo_plugin.report.facets import VARIANTS, pooled, unpooled_note
from limbo_plugin.report.icc import DUPLICATE, IccBook, book_of
from limbo_plugin.report.tables.base import (
    Cell,
    Column,
    Result,
    Skipped,
    Table,
    group,
    icc_note,
    rate,
)
from limbo_plugin.report.tables.conditions import experiment_name
from limbo_plugin.stats import mcnemar_exact
from limbo_plugin.store.view import EpisodeView

ID = "e4_matched"
TITLE = "E4: robustness variants against their reference on matched worlds"
ALL_AGENTS = "all agents"
REFERENCE_CONDITION = {**{c.name: "vanilla" for c in WORDING},
                       **{f"guard-no-{c}": "guard" for c in GUARD_COMPONENTS}}
"""A probed condition and the condition it varies (a paraphrase: vanilla; an ablation: guard)."""
PROBED = ("docs", "operator", "condition")


@dataclass(frozen=True)
class Probe:
    """A variant configuration (without the agent) and its reference."""

    experiment: str
    arm: str
    contract: str
    instruction: str
    values: tuple[str, str, str]
    """The variant's docs, operator and condition."""
    reference: tuple[str, str, str]

    @property
    def variant_label(self) -> str:
        return _label(self.values, self.reference)

    @property
    def reference_label(self) -> str:
        return _label(self.reference, self.values)


def _label(mine: tuple[str, str, str], other: tuple[str, str, str]) -> str:
    """The probed fields, and the condition when it is the same on both sides but not
    vanilla (the operator arm runs vanilla and guard)."""
    parts = [f"{name} {value}" for name, value, theirs in zip(PROBED, mine, other, strict=True)
             if value != theirs]
    condition = mine[2]
    if condition == other[2] and condition != "vanilla":
        parts.append(f"condition {condition}")
    return ", ".join(parts)


def reference_values(row: EpisodeView) -> tuple[str, str, str]:
    return (VARIANTS["docs"], VARIANTS["operator"],
            REFERENCE_CONDITION.get(row.condition, row.condition))


def values_of(row: EpisodeView) -> tuple[str, str, str]:
    return (row.docs, row.operator, row.condition)


def probe_of(row: EpisodeView) -> Probe | None:
    """The row's probe, or ``None`` for a configuration that is its own reference."""
    reference = reference_values(row)
    if values_of(row) == reference:
        return None
    return Probe(experiment_name(row), row.arm or "—", row.contract, row.instruction,
                 values_of(row), reference)


def _partner_key(row: EpisodeView, values: tuple[str, str, str]) -> tuple[str, ...]:
    return (row.agent, row.contract, row.instruction, *values, row.episode_id)


@dataclass
class Block:
    pairs: list[tuple[EpisodeView, EpisodeView]]
    unmatched_variant: int
    unmatched_reference: int


def table_robustness(rows: Sequence[EpisodeView]) -> Result:
    faulted = [r for r in rows if r.faulted]
    probes: dict[Probe, list[EpisodeView]] = {}
    for r in faulted:
        if (probe := probe_of(r)) is not None:
            probes.setdefault(probe, []).append(r)
    if not probes:
        return Skipped(ID, TITLE, "no robustness variant (documentation, system-prompt "
                       "paraphrase, unresponsive operator or guard ablation; E4)")
    # every fired faulted episode, by (agent, contract, instruction, docs, operator, condition,
    # world) within its experiment: the reference candidates
    by_experiment: dict[str, dict[tuple[str, ...], EpisodeView]] = {}
    for r in faulted:
        by_experiment.setdefault(experiment_name(r), {})[_partner_key(r, values_of(r))] = r
    book = book_of(rows)
    columns = [Column("experiment", "experiment"), Column("arm", "arm"),
               Column("variant", "variant"), Column("reference", "against"),
               Column("reference_experiment", "reference from"), Column("agent", "agent"),
               Column("pairs", "matched worlds", "int"),
               Column("dup_variant", "variant: duplicated", "rate"),
               Column("dup_reference", "reference: duplicated", "rate"),
               Column("difference", "difference (pp)", "float"),
               Column("only_variant", "duplicated only in the variant", "int"),
               Column("only_reference", "duplicated only in the reference", "int"),
               Column("p", "McNemar p", "pvalue"),
               Column("dropped_variant", "fired variant episodes without a partner", "int"),
               Column("dropped_reference", "fired reference episodes without a partner",
                      "int")]
    table = Table(ID, TITLE, "Each E4 variant paired with its reference configuration (the "
                  "probed dimension put back: default documentation, truthful operator, "
                  "vanilla for a paraphrase, the whole guard for an ablation; same agent, "
                  "contract and instruction) on the same worlds, per experiment that ran the "
                  "reference: duplicate rates over the matched worlds only, the exact McNemar "
                  "test of the paired difference, and the episodes left without a partner.",
                  columns)
    dropped_total = 0
    for probe, members in sorted(probes.items(), key=lambda kv: _order(kv[0])):
        for ref_experiment, partners in sorted(by_experiment.items()):
            blocks = _blocks(members, probe, partners, faulted, ref_experiment)
            if not any(b.pairs for b in blocks.values()):
                continue
            agents = sorted(blocks)
            for agent in [*agents, ALL_AGENTS] if len(agents) > 1 else agents:
                chosen = ([b for a, b in blocks.items() if pooled(b.pairs[0][0])]
                          if agent == ALL_AGENTS else [blocks[agent]])
                pairs = [p for b in chosen for p in b.pairs]
                if not pairs:
                    continue
                cells = _cells(pairs, book)
                cells.update({
                    "experiment": probe.experiment, "arm": probe.arm,
                    "variant": probe.variant_label, "reference": probe.reference_label,
                    "reference_experiment": ref_experiment, "agent": agent,
                    "dropped_variant": sum(b.unmatched_variant for b in chosen),
                    "dropped_reference": sum(b.unmatched_reference for b in chosen)})
                if agent != ALL_AGENTS:
                    dropped_total += blocks[agent].unmatched_variant
                table.rows.append(cells)
    if not table.rows:
        return Skipped(ID, TITLE, "no robustness variant has its reference configuration on the "
                       "same worlds (run E2 beside E4: its vanilla and guard, same agents)")
    outside = [r for r in rows if not r.faulted and probe_of(r) is not None]
    fault_free = sum(1 for r in outside if r.family == "none")
    table.notes.append(icc_note(book, DUPLICATE) + " Rates are over matched worlds only; "
                       f"{dropped_total} fired variant episode(s) had no reference partner and "
                       "are left out (counted per row). Only episodes whose fault fired are "
                       f"paired or counted, here and in the 'without a partner' columns: the "
                       f"variants' {fault_free} fault-free episode(s) and "
                       f"{len(outside) - fault_free} whose fault never fired are outside "
                       "every count.")
    if (note := unpooled_note([r for members in probes.values() for r in members])) is not None:
        table.notes.append(note)
    return table


def _order(probe: Probe) -> tuple[str, int, str, tuple[str, str, str]]:
    """The paper's order: documentation, wording, operator, guard ablations."""
    docs, operator, condition = probe.values
    kind = (0 if docs != probe.reference[0] else
            2 if operator != probe.reference[1] else
            1 if REFERENCE_CONDITION.get(condition) == "vanilla" else 3)
    return (probe.experiment, kind, probe.contract + "|" + probe.instruction, probe.values)


def _blocks(members: Sequence[EpisodeView], probe: Probe,
            partners: dict[tuple[str, ...], EpisodeView], faulted: Sequence[EpisodeView],
            ref_experiment: str) -> dict[str, Block]:
    """Per agent: the variant's episodes paired with ``ref_experiment``'s reference episodes."""
    out: dict[str, Block] = {}
    for agent, mine in group(members, lambda r: r.agent).items():
        pairs = [(r, partners[key]) for r in mine
                 if (key := _partner_key(r, probe.reference)) in partners]
        if not pairs:
            continue
        worlds = {r.episode_id for r in mine}
        reference_runs = [r for r in faulted if experiment_name(r) == ref_experiment
                          and r.agent == agent and r.contract == probe.contract
                          and r.instruction == probe.instruction
                          and values_of(r) == probe.reference]
        out[agent] = Block(pairs=pairs, unmatched_variant=len(mine) - len(pairs),
                           unmatched_reference=sum(1 for r in reference_runs
                                                   if r.episode_id not in worlds))
    return out


def _cells(pairs: Sequence[tuple[EpisodeView, EpisodeView]], book: IccBook) -> dict[str, Cell]:
    variant = [v for v, _ in pairs]
    reference = [r for _, r in pairs]
    only_v = sum(1 for v, r in pairs if v.duplicated and not r.duplicated)
    only_r = sum(1 for v, r in pairs if r.duplicated and not v.duplicated)
    return {"pairs": len(pairs),
            "dup_variant": rate(variant, DUPLICATE, book),
            "dup_reference": rate(reference, DUPLICATE, book),
            "difference": 100 * (only_v - only_r) / len(pairs),
            "only_variant": only_v, "only_reference": only_r,
            "p": mcnemar_exact(only_v, only_r)}
