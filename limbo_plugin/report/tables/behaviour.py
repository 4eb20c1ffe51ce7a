"""The recovery-behaviour distribution: what each configuration did after the focal fault.

Shares of fired faulted episodes by the coder's class (SPEC §5), one row per configuration and
fault class (resolvable, unresolvable, and the other faulted families together), so that "they
verify when a read-back can resolve the fault" and "they verify in vain under late commits" are
visible side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.grading.behaviour import BEHAVIOURS
from limbo_plugin.report.facets import config_labeller, fault_class
from limbo_plugin.report.tables.base import Cell, Column, Result, Skipped, Table, group
from limbo_plugin.store.view import EpisodeView

ID = "behaviour"
TITLE = "Recovery behaviour after the focal fault"
CLASS_ORDER = ("resolvable", "unresolvable", "other")
UNCODED = "uncoded"


def behaviour_class(row: EpisodeView) -> str:
    return fault_class(row) or "other"


def table_behaviour(rows: Sequence[EpisodeView]) -> Result:
    scope = [r for r in rows if r.faulted]
    if not any(r.behaviour for r in scope):
        return Skipped(ID, TITLE, "no fired faulted episode has a coded recovery behaviour")
    names, label = config_labeller(scope)
    present = [b for b in BEHAVIOURS if any(r.behaviour == b for r in scope)]
    if any(r.behaviour is None for r in scope):
        present.append(UNCODED)
    columns = [Column(n, n) for n in names]
    columns += [Column("faults", "faults"), Column("episodes", "episodes", "int")]
    columns += [Column(b, b, "percent") for b in present]
    table = Table(ID, TITLE, "Share of fired faulted episodes in each recovery-behaviour class, "
                  "by configuration and fault class (resolvable: lost_ack, misleading_500, "
                  "partial_batch; unresolvable: late_commit, redelivery).", columns)
    for config, members in sorted(group(scope, label).items()):
        classes = group(members, behaviour_class)
        for name in CLASS_ORDER:
            mine = classes.get(name, [])
            if not mine:
                continue
            cells: dict[str, Cell] = dict(zip(names, config, strict=True))
            cells["faults"], cells["episodes"] = name, len(mine)
            for behaviour in present:
                wanted = None if behaviour == UNCODED else behaviour
                cells[behaviour] = sum(1 for r in mine if r.behaviour == wanted) / len(mine)
            table.rows.append(cells)
    return table
