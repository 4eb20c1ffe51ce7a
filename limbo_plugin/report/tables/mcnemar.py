"""Appendix B: each condition against vanilla on paired episodes, exact McNemar, Holm.

Within an experiment, for each agent, every condition is paired with the vanilla episode of the
same world, contract and documentation, instruction and operator variant (fired faulted
episodes both have). The outcome is exactly-once success (Table 7's headline); the discordant
counts give the exact McNemar p-value, Holm-corrected over the agent's conditions (the family).
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.tables.base import Cell, Column, Result, Skipped, Table, group
from limbo_plugin.report.tables.conditions import condition_rank, experiment_name
from limbo_plugin.stats import holm, mcnemar_exact
from limbo_plugin.store.view import EpisodeView

ID = "appendix_b_mcnemar"
TITLE = "Appendix B: each condition against vanilla (exact McNemar, Holm)"
REFERENCE = "vanilla"


def _twin(row: EpisodeView) -> tuple[str, ...]:
    return (row.episode_id, row.contract, row.docs, row.instruction, row.operator)


def table_appendix_b(rows: Sequence[EpisodeView]) -> Result:
    faulted = [r for r in rows if r.faulted]
    columns = [Column("experiment", "experiment"), Column("agent", "agent"),
               Column("condition", "condition"), Column("pairs", "pairs", "int"),
               Column("eos_vanilla", "EOS vanilla", "percent"),
               Column("eos_condition", "EOS condition", "percent"),
               Column("only_vanilla", "EOS only with vanilla", "int"),
               Column("only_condition", "EOS only with the condition", "int"),
               Column("p", "McNemar p", "pvalue"), Column("p_holm", "Holm p", "pvalue")]
    table = Table(ID, TITLE, "Every condition paired with vanilla on the same worlds (same "
                  "agent, contract and variants; fired faulted episodes both ran): "
                  "exactly-once success, discordant pairs, exact McNemar p and Holm-corrected "
                  "p over each agent's conditions.", columns)
    for experiment, members in sorted(group(faulted, experiment_name).items()):
        for agent, mine in sorted(group(members, lambda r: r.agent).items()):
            vanilla = {_twin(r): r for r in mine if r.condition == REFERENCE}
            conditions = sorted({r.condition for r in mine} - {REFERENCE}, key=condition_rank)
            block: list[dict[str, Cell]] = []
            raw: list[float] = []
            for condition in conditions:
                pairs = [(vanilla[_twin(r)], r) for r in mine
                         if r.condition == condition and _twin(r) in vanilla]
                if not pairs:
                    continue
                only_v = sum(1 for a, b in pairs if a.eos and not b.eos)
                only_c = sum(1 for a, b in pairs if b.eos and not a.eos)
                p = mcnemar_exact(only_v, only_c)
                raw.append(p)
                block.append({"experiment": experiment, "agent": agent,
                              "condition": condition, "pairs": len(pairs),
                              "eos_vanilla": sum(bool(a.eos) for a, _ in pairs) / len(pairs),
                              "eos_condition": sum(bool(b.eos) for _, b in pairs) / len(pairs),
                              "only_vanilla": only_v, "only_condition": only_c, "p": p})
            for cells, adjusted in zip(block, holm(raw) if raw else [], strict=True):
                cells["p_holm"] = adjusted
            table.rows += block
    if not table.rows:
        return Skipped(ID, TITLE, "no condition has vanilla episodes on the same worlds "
                       "(run vanilla beside it, as E2 does)")
    return table
