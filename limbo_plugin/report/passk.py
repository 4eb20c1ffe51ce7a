"""pass^k over repeated runs (``--limbo-repeat K``), as tau2-bench defines it.

An episode run ``n`` times that passed ``c`` of them passes ``k`` runs drawn without replacement
with probability ``C(c, k) / C(n, k)``; pass^k is the mean of that over the episodes run at
least ``k`` times. pass^1 is the plain pass rate; pass^k falls with ``k`` as far as an agent is
unreliable on the same world, which a single run cannot show. Runs with an infrastructure error
are not counted (the episode then has fewer runs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb
from typing import Protocol

from limbo_plugin.records import run_fingerprint
from limbo_plugin.report.aggregate import ALL_FAULTED, config_label
from limbo_plugin.store.read import GradedEpisode


class Repeated(Protocol):
    @property
    def episode_id(self) -> str: ...
    @property
    def family(self) -> str: ...
    @property
    def passed(self) -> bool: ...


def pass_hat_k(runs: Iterable[tuple[int, int]], k: int) -> float | None:
    """The mean of ``C(c, k) / C(n, k)`` over the ``(n, c)`` (runs, passes) of the episodes run
    at least ``k`` times; ``None`` when none was."""
    values = [comb(c, k) / comb(n, k) for n, c in runs if n >= k]
    return sum(values) / len(values) if values else None


@dataclass
class PassRow:
    family: str
    episodes: int
    """Episodes (world and configuration) with at least one counted run."""
    pass_k: list[float | None]
    """pass^1 … pass^K."""


def pass_k_rows(records: Iterable[Repeated], *, family_order: Sequence[str] = ()
                ) -> tuple[int, list[PassRow]]:
    """The largest number of runs of any episode, and per family (then over all) pass^1 …
    pass^that."""
    runs: dict[tuple[str, str], list[bool]] = defaultdict(list)
    family_of: dict[tuple[str, str], str] = {}
    for record in records:
        if getattr(record, "error", None) is not None:  # report rows hold no errors
            continue
        key = (record.episode_id, run_fingerprint(record))
        runs[key].append(record.passed)
        family_of[key] = record.family
    most = max((len(v) for v in runs.values()), default=0)
    rank = {name: i for i, name in enumerate(family_order)}
    families = sorted(set(family_of.values()), key=lambda f: (rank.get(f, len(rank)), f))
    rows = []
    faulted = [f for f in families if f != "none"]
    for family in [*families, ALL_FAULTED] if len(faulted) > 1 else families:
        counts = [(len(v), sum(v)) for key, v in runs.items()
                  if family_of[key] == family or (family == ALL_FAULTED
                                                  and family_of[key] != "none")]
        rows.append(PassRow(family, len(counts),
                            [pass_hat_k(counts, k) for k in range(1, most + 1)]))
    return most, rows


def render_text(records: Iterable[GradedEpisode], *, family_order: Sequence[str] = ()
                ) -> list[str]:
    """The pass^k table of each configuration, or nothing when no episode ran more than
    once."""
    groups: dict[str, list[GradedEpisode]] = defaultdict(list)
    for record in records:
        groups[config_label(record)].append(record)
    lines: list[str] = []
    for label in sorted(groups):
        table = _table(groups[label], family_order)
        if table:
            lines += ([label] if len(groups) > 1 else []) + table
    if lines:
        lines.insert(0, "pass^k: the chance that k runs of the same episode all pass "
                     "(tau2-bench's definition), over the runs of --limbo-repeat:")
    return lines


def _table(records: Sequence[GradedEpisode], family_order: Sequence[str]) -> list[str]:
    most, rows = pass_k_rows(records, family_order=family_order)
    if most < 2:
        return []
    header = ("family", "episodes", *(f"pass^{k}" for k in range(1, most + 1)))
    table = [header] + [(r.family, str(r.episodes),
                         *("—" if v is None else f"{100 * v:.1f}%" for v in r.pass_k))
                        for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for i, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w)
                               for j, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
