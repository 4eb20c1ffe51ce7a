"""pass^k over declared repeat runs (``--limbo-repeat K``), as tau2-bench defines it: per
configuration and family, the chance that k runs of the same episode all pass (see
:mod:`limbo_plugin.report.passk`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from limbo_plugin.records import RUN_FIELDS
from limbo_plugin.report.passk import pass_k_rows
from limbo_plugin.report.tables.base import Column, Result, Skipped, Table
from limbo_plugin.store.view import EpisodeView

ID = "pass_k"
TITLE = "pass^k over repeated runs"


def table_pass_k(rows: Sequence[EpisodeView], repeats: Sequence[EpisodeView]) -> Result:
    if not repeats:
        return Skipped(ID, TITLE, "no declared repeat runs (run the experiment with "
                       "--limbo-repeat K)")
    groups: dict[str, list[EpisodeView]] = defaultdict(list)
    for row in [*rows, *repeats]:
        groups[" ".join(f"{name}={getattr(row, name)}" for name in RUN_FIELDS)].append(row)
    order = {row.family: row.family_rank for row in rows}
    families = sorted(order, key=lambda f: (order[f], f))
    tables = {label: pass_k_rows(group, family_order=families)
              for label, group in sorted(groups.items())}
    most = max(k for k, _ in tables.values())
    columns = [Column("configuration", "configuration"), Column("family", "family"),
               Column("episodes", "episodes", "int"),
               *(Column(f"pass_{k}", f"pass^{k}", "percent") for k in range(1, most + 1))]
    table = Table(ID, TITLE, "The chance that k runs of the same episode all pass: per episode "
                  "run n times with c passes, C(c, k) / C(n, k), averaged over the episodes run "
                  "at least k times (tau2-bench's pass^k). pass^1 is the pass rate.", columns)
    for label, (_, family_rows) in tables.items():
        for entry in family_rows:
            table.rows.append({"configuration": label, "family": entry.family,
                               "episodes": entry.episodes,
                               **{f"pass_{k + 1}": value
                                  for k, value in enumerate(entry.pass_k)}})
    return table
