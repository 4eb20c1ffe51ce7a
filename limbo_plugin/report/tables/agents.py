"""Table 3: per agent and configuration, duplicate rate by fault family, TS, EOS and overclaim.

Duplicate rates are conditional on the fault having fired (the fault-free family counts every
episode); TS (not executed) is task success in the ``_pre`` worlds, where the request provably
never ran and the only right move is to do it; EOS and overclaim are over every fired faulted
episode. Configurations sit side by side: one row each, labelled by the configuration fields that
vary in the data.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import config_labeller, ordered_families
from limbo_plugin.report.icc import DUPLICATE, EOS, OVERCLAIM, TS, book_of
from limbo_plugin.report.load import EpisodeRow
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
from limbo_plugin.report.tables.conditions import condition_rank

ID = "table3_agents"
TITLE = "Table 3: results by agent"


def counted(row: EpisodeRow) -> bool:
    return row.family == "none" or row.fired


def is_pre(row: EpisodeRow) -> bool:
    return row.faulted and row.fault_mode.endswith("_pre")


def table3(rows: Sequence[EpisodeRow]) -> Result:
    faulted = [r for r in rows if r.faulted]
    if not faulted:
        return Skipped(ID, TITLE, "no episode with a fired fault")
    names, label = config_labeller(rows)
    families = ordered_families([r for r in rows if counted(r)])
    book = book_of(rows)
    columns = [Column(n, n) for n in names] + [Column("faulted", "faulted episodes", "int")]
    columns += [Column(f"dup_{f}", f"dup {f}", "rate") for f in families]
    columns += [Column("ts_not_executed", "TS (not executed)", "rate"),
                Column("eos", "EOS", "rate"), Column("overclaim", "overclaim", "rate")]
    table = Table(ID, TITLE, "Duplicate rate by fault family (over fired episodes), task "
                  "success in the _pre worlds, exactly-once success and overclaim over fired "
                  "faulted episodes, one row per configuration.", columns)
    def order(item: tuple[tuple[str, ...], list[EpisodeRow]]) -> tuple[object, ...]:
        """Configurations by their fields' values, conditions as Table 7 orders them (vanilla
        first, wait_<Δ> by Δ as a number)."""
        return tuple(condition_rank(v) if n == "condition" else v
                     for n, v in zip(names, item[0], strict=True))

    for config, members in sorted(group(rows, label).items(), key=order):
        cells: dict[str, Cell] = dict(zip(names, config, strict=True))
        mine = [r for r in members if r.faulted]
        cells["faulted"] = len(mine)
        for family in families:
            cells[f"dup_{family}"] = rate([r for r in members if counted(r) and
                                           r.family == family], DUPLICATE, book)
        cells["ts_not_executed"] = rate([r for r in members if is_pre(r)], TS, book)
        cells["eos"] = rate(mine, EOS, book)
        cells["overclaim"] = rate(mine, OVERCLAIM, book)
        table.rows.append(cells)
    table.notes.append(icc_note(book, DUPLICATE, TS, EOS, OVERCLAIM))
    return table
